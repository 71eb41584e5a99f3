"""What scoring a generations file is asked (``codereasoner score`` resolves it from its flags),
handed to the benchmark's metric family, and what the family hands back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codereasoner import tasks
from codereasoner.evaluation.reports import Report
from codereasoner.execution import Limits
from codereasoner.tasks import Extracted, Extraction, Grading, Item, Score


@dataclass(frozen=True)
class ScoreOptions:
    generations: Path
    data_dir: Path | None
    style: str
    extraction: Extraction
    limits: Limits
    grading: Grading
    ks: list[int] | None  # None: those the file has enough samples for
    copies: str
    show_strict: bool
    results: Path | None = None  # --results: per-sample verdicts (JSON Lines)
    subset: bool = False  # --subset: score the items the file has, not every item

    def extract(self, item: Item, text: str) -> Extracted:
        """A completion's answer, by the item's task kind, in the chosen style and mode."""
        return tasks.get(item.task).extract(item, text, self.style, self.extraction)


@dataclass
class ScoreOutcome:
    """A scorer's report, every sample's verdict (``also``: under other gradings, by name, for
    ``--results``) and warnings about the file as a whole."""

    report: Report
    scores: Mapping[str, Sequence[Score]]
    also: Mapping[str, Mapping[str, Sequence[Score]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
