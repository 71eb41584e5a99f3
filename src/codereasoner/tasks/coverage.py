"""Coverage (REval CCP): is line N executed for this input? Answer YES or NO.

Graded in the parent against the traced coverage; no sandbox work.
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

__all__ = ["Coverage"]


class Coverage:
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for REval coverage questions."""

    name = "coverage"
    styles = (Style.DIRECT, Style.COT)

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return fill(f"reval/{check_style(style, self.styles).value}_coverage.txt", item.fields)

    def extract(
        self,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        cot = check_style(style, self.styles) is Style.COT
        if Extraction(mode) is Extraction.ROBUST:
            found = rx.coverage_robust(text)
            return Answer(found) if found else ParseFailure("no YES or NO", text)
        return Answer(rx.coverage_official(text, cot=cot))

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.OFFICIAL
    ) -> Plan:
        Grading(grading)
        expected = bool(item.truth_value())

        def grade(sample: int, text: str) -> Score:
            said = rx.coverage_official(text) == "YES"  # idempotent on YES / NO
            reason = Reason.CORRECT if said == expected else Reason.WRONG
            return verdict(item, sample, text, reason, f"expected {'YES' if expected else 'NO'}")

        return build_plan(item, answers, grade)

    def score(
        self,
        item: Item,
        answer: Extracted,
        pool: Pool | None = None,
        grading: Grading | str = Grading.OFFICIAL,
    ) -> Score:
        return run_plans(pool, [self.plan(item, [answer], grading)])[0][0]
