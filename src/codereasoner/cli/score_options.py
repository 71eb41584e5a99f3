"""What ``codereasoner score`` resolved from its flags, handed to each metric family's scorer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codereasoner import tasks
from codereasoner.execution import Limits
from codereasoner.tasks import Extracted, Extraction, Grading, Item


@dataclass(frozen=True)
class ScoreOptions:
    generations: Path
    style: str
    extraction: Extraction
    limits: Limits
    grading: Grading
    ks: list[int] | None  # None: those the file has enough samples for
    copies: str
    show_strict: bool
    workers: int | None
    isolation: str

    def extract(self, item: Item, text: str) -> Extracted:
        """A completion's answer, by the item's task kind, in the chosen style and mode."""
        return tasks.get(item.task).extract(item, text, self.style, self.extraction)
