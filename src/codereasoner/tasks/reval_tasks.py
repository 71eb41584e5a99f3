"""The four REval task kinds behind one TaskKind: each item's ``task`` picks the kind.

    tasks = RevalTasks()
    text = tasks.prompt(item, "cot")                      # coverage, state, path or output
    answer = tasks.extract_for(item, completion, "cot")   # the kind's own extraction
    plan = tasks.plan(item, [answer])                     # graded by the kind

``extract`` without an item cannot know the kind: it only applies the rules all four share
(unfinished CoT, ``[ANSWER]`` tags); ``plan`` then applies the kind's rules, which are
idempotent on an already extracted answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from codereasoner.tasks import reval_extraction as rx
from codereasoner.tasks.base import (
    Answer,
    Extracted,
    Extraction,
    Grading,
    Item,
    ParseFailure,
    Style,
    check_style,
)
from codereasoner.tasks.common import PlannedTask
from codereasoner.tasks.coverage import Coverage
from codereasoner.tasks.path import Path
from codereasoner.tasks.plans import Plan
from codereasoner.tasks.reval_output import RevalOutput
from codereasoner.tasks.state import State

__all__ = ["KINDS", "RevalTasks"]

KINDS: dict[str, Coverage | State | Path | RevalOutput] = {
    "coverage": Coverage(),
    "state": State(),
    "path": Path(),
    "output": RevalOutput(),
}


class RevalTasks(PlannedTask):
    """Dispatches ``prompt``, ``plan`` and ``score`` to the item's kind."""

    name = "reval (coverage, state, path, output)"
    styles = (Style.DIRECT, Style.COT)

    def kind(self, item: Item) -> Coverage | State | Path | RevalOutput:
        try:
            return KINDS[item.task]
        except KeyError:
            raise ValueError(f"{item.id}: unknown REval task {item.task!r}") from None

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return self.kind(item).prompt(item, style)

    def extract(
        self,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        """The shared part only (see the module docstring); prefer :meth:`extract_for`."""
        cot = check_style(style, self.styles) is Style.COT
        if Extraction(mode) is Extraction.ROBUST:
            block = rx.robust_block(text)
            return Answer(block) if block.strip() else ParseFailure("no answer", text)
        if cot and rx.COT_END not in text:
            return ParseFailure("the [THOUGHT] block is not finished", text)
        return Answer(rx.cut(text))

    def extract_for(
        self,
        item: Item,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        """The item's kind's extraction (robust path extraction reads the item's code)."""
        kind = self.kind(item)
        if isinstance(kind, Path):
            return kind.extract(text, style, mode, code=item.program)
        return kind.extract(text, style, mode)

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.OFFICIAL
    ) -> Plan:
        return self.kind(item).plan(item, answers, grading)
