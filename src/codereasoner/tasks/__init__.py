"""Task kinds, registered by name: ``prompt``, ``extract``, ``plan`` / ``score`` and ``oracle``.

    from codereasoner import tasks
    kind = tasks.get(item.task)  # e.g. "output_prediction", "lcb_execution", "coverage"
    text = kind.prompt(item, "cot")
    score = kind.score(item, kind.extract(item, completion, "cot"), pool)

Many answers are graded together with ``kind.plan(item, answers)`` (a :class:`GradingPlan`) and
:func:`run_plans`, which batches every item's sandbox work. ``names()`` lists the registered
kinds; ``register(kind)`` adds one (keyed by ``kind.name``).
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
    Templates,
)
from codereasoner.tasks.grading import truth_jobs
from codereasoner.tasks.output_prediction import OutputPrediction
from codereasoner.tasks.plans import OFFICIAL_LIMITS, GradingPlan, run_plans
from codereasoner.tasks.registry import get, names, register, unregister

__all__ = [
    "OFFICIAL_LIMITS",
    "Answer",
    "Extracted",
    "Extraction",
    "Grading",
    "GradingPlan",
    "Item",
    "OutputPrediction",
    "ParseFailure",
    "Reason",
    "Score",
    "Style",
    "TaskKind",
    "Templates",
    "get",
    "names",
    "register",
    "run_plans",
    "truth_jobs",
    "unregister",
]
