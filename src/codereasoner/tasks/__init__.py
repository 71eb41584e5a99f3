"""Task kinds: ``prompt(item, style)``, ``extract(text)``, ``score(item, answer)``.

    from codereasoner.tasks import OutputPrediction
    task = OutputPrediction("cruxeval")
    text = task.prompt(item, "cot")
    score = task.score(item, task.extract(completion, "cot"), pool)

Many answers are graded together with ``task.plan(item, answers)`` and :func:`run_plans`, which
batches every item's sandbox work.
"""

from codereasoner.tasks.base import (
    Answer,
    Extracted,
    Extraction,
    Grading,
    Item,
    ParseFailure,
    Reason,
    Score,
    Style,
    TaskKind,
    template,
    template_sources,
)
from codereasoner.tasks.grading import truth_jobs
from codereasoner.tasks.input_prediction import InputPrediction
from codereasoner.tasks.output_prediction import OutputPrediction
from codereasoner.tasks.plans import OFFICIAL_LIMITS, Plan, run_plans
from codereasoner.tasks.test_output import TestOutputPrediction

__all__ = [
    "OFFICIAL_LIMITS",
    "Answer",
    "Extracted",
    "Extraction",
    "Grading",
    "InputPrediction",
    "Item",
    "OutputPrediction",
    "ParseFailure",
    "Plan",
    "Reason",
    "Score",
    "Style",
    "TaskKind",
    "TestOutputPrediction",
    "run_plans",
    "template",
    "template_sources",
    "truth_jobs",
]
