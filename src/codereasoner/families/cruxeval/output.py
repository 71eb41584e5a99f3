"""CRUXEval-O's task kind, ``output_prediction``: output prediction with CRUXEval's prompts."""

from __future__ import annotations

from codereasoner.families.cruxeval import TEMPLATES
from codereasoner.tasks.base import Style
from codereasoner.tasks.extraction import cruxeval_output
from codereasoner.tasks.output_prediction import OutputPrediction

__all__ = ["KIND"]

KIND = OutputPrediction(
    "output_prediction",
    {
        Style.DIRECT: TEMPLATES.text("output_direct.txt"),
        Style.COT: TEMPLATES.text("output_cot.txt"),
        Style.PHIND: TEMPLATES.text("output_phind.txt"),
    },
    cruxeval_output,
)
