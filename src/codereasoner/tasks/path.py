"""Path (REval EPP): which line runs next after line N? Answer a line of code, or -1.

An answer is mapped to every line number whose stripped text equals it (so duplicate lines all
count), ``-1`` stays ``-1``; it is right when one of those numbers is an expected next line.
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

__all__ = ["Path", "answer_lines"]


def answer_lines(answer: str, code: str) -> list[int]:
    """Upstream's mapping of an extracted answer to 1-based line numbers ([-2]: no line)."""
    if answer in ("-1", "-2"):
        return [int(answer)]
    found = [number for number, line in enumerate(code.split("\n"), 1) if line.strip() == answer]
    return found or [-2]


class Path:
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for REval path questions.

    Robust extraction needs the code to read line numbers; pass it as ``code``.
    """

    name = "path"
    styles = (Style.DIRECT, Style.COT)

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return fill(f"reval/{check_style(style, self.styles).value}_path.txt", item.fields)

    def extract(
        self,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
        code: str = "",
    ) -> Extracted:
        cot = check_style(style, self.styles) is Style.COT
        if Extraction(mode) is Extraction.ROBUST:
            found = rx.path_robust(text, code)
            return Answer(found) if found else ParseFailure("no line of code", text)
        return Answer(rx.path_official(text, cot=cot))

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.OFFICIAL
    ) -> Plan:
        Grading(grading)
        expected = [int(line) for line in item.truth_value()]  # type: ignore[attr-defined]

        def grade(sample: int, text: str) -> Score:
            said = answer_lines(rx.path_official(text), item.program)
            right = any(line in expected for line in said)
            return verdict(item, sample, text, Reason.CORRECT if right else Reason.WRONG,
                           f"lines {said}, expected {expected}")  # fmt: skip

        return build_plan(item, answers, grade)

    def score(
        self,
        item: Item,
        answer: Extracted,
        pool: Pool | None = None,
        grading: Grading | str = Grading.OFFICIAL,
    ) -> Score:
        return run_plans(pool, [self.plan(item, [answer], grading)])[0][0]
