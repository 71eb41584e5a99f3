"""LiveCodeBench code execution's task kind, ``lcb_execution``: output prediction with
LiveCodeBench's prompts and post-processing."""

from __future__ import annotations

from codereasoner.families.livecodebench import TEMPLATES
from codereasoner.families.livecodebench.extraction import lcb_execution
from codereasoner.tasks.base import Style
from codereasoner.tasks.output_prediction import OutputPrediction

__all__ = ["KIND"]

KIND = OutputPrediction(
    "lcb_execution",
    {
        Style.DIRECT: TEMPLATES.text("execution_direct.txt"),
        Style.COT: TEMPLATES.text("execution_cot.txt"),
    },
    lcb_execution,
)
