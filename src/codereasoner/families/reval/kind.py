"""What the four REval task kinds share: ``prompt`` and ``extract``, which differ only in their
template, their extraction functions and their failure message (the rules all four share, an
unfinished CoT and the ``[ANSWER]`` tags, are in each kind's functions, see
:mod:`codereasoner.families.reval.extraction`)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from codereasoner.families.reval import TEMPLATES
from codereasoner.tasks.base import Answer, Extracted, Extraction, Item, Style, check_style
from codereasoner.tasks.common import ROBUST_MODES, PlannedTask, robust_answer

__all__ = ["RevalKind"]


class RevalKind(PlannedTask):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for one REval task kind.

    The template is ``{style}_{name}.txt`` in the family's folder; official extraction is ``official(text,
    cot=...)``; robust extraction is ``robust(text)`` (:meth:`robust_for` when it needs the item)
    and fails with ``missing`` when it finds nothing (or an empty answer); answer-tag extraction
    is the robust one on the last ``<Answer>`` block.
    """

    name: str
    styles = (Style.DIRECT, Style.COT)
    missing: str
    official: Callable[..., str]
    robust: Callable[[str], str | None]

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        chosen = check_style(style, self.styles).value
        return TEMPLATES.fill(f"{chosen}_{self.name}.txt", item.fields)

    def extract(
        self,
        item: Item,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        cot = check_style(style, self.styles) is Style.COT
        chosen = Extraction(mode)
        if chosen in ROBUST_MODES:
            read = functools.partial(self.robust_for, item)
            return robust_answer(text, chosen, read, self.missing, empty_ok=False)
        return Answer(self.official(text, cot=cot))

    def robust_for(self, item: Item, text: str) -> str | None:
        """The robust answer (None: none); the kinds that read the item override this."""
        return self.robust(text)
