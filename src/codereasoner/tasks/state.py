"""State (REval PSP): the value and type of a variable after line N, ``value; type`` or Nil.

Answers are parsed, never evaluated (see :mod:`codereasoner.tasks.state_answers`).
"""

from __future__ import annotations

from collections.abc import Sequence

from codereasoner.execution import Pool
from codereasoner.tasks import reval_extraction as rx
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
    check_style,
    fill,
)
from codereasoner.tasks.plans import Plan, build_plan, run_plans, verdict
from codereasoner.tasks.state_answers import StateError, parse_state, state_verdict

__all__ = ["State"]


class State:
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for REval state questions."""

    name = "state"
    styles = (Style.DIRECT, Style.COT)

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return fill(f"reval/{check_style(style, self.styles).value}_state.txt", item.fields)

    def extract(
        self,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        cot = check_style(style, self.styles) is Style.COT
        if Extraction(mode) is Extraction.ROBUST:
            found = rx.state_robust(text)
            return Answer(found) if found else ParseFailure("no 'value; type' or Nil", text)
        return Answer(rx.state_official(text, cot=cot))

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.OFFICIAL
    ) -> Plan:
        Grading(grading)
        truth = item.truth_value()

        def grade(sample: int, text: str) -> Score:
            parsed = parse_state(text.strip())
            right, why = state_verdict(parsed, truth)  # type: ignore[arg-type]
            if right:
                return verdict(item, sample, text, Reason.CORRECT)
            reason = Reason.NOT_LITERAL if isinstance(parsed, StateError) else Reason.WRONG
            return verdict(item, sample, text, reason, why)

        return build_plan(item, answers, grade)

    def score(
        self,
        item: Item,
        answer: Extracted,
        pool: Pool | None = None,
        grading: Grading | str = Grading.OFFICIAL,
    ) -> Score:
        return run_plans(pool, [self.plan(item, [answer], grading)])[0][0]
