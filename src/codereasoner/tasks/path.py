"""Path (REval EPP): which line runs next after line N? Answer a line of code, or -1.

An answer is mapped to every line number whose stripped text equals it (so duplicate lines all
count), ``-1`` stays ``-1``; it is right when one of those numbers is an expected next line.
"""

from __future__ import annotations

from codereasoner.tasks import reval_extraction as rx
from codereasoner.tasks.base import Extracted, Extraction, Grading, Item, Reason, Score, Style
from codereasoner.tasks.common import Grade, RevalKind
from codereasoner.tasks.plans import verdict

__all__ = ["Path", "answer_lines"]


def answer_lines(answer: str, code: str) -> list[int]:
    """Upstream's mapping of an extracted answer to 1-based line numbers ([-2]: no line)."""
    if answer in ("-1", "-2"):
        return [int(answer)]
    found = [number for number, line in enumerate(code.split("\n"), 1) if line.strip() == answer]
    return found or [-2]


class Path(RevalKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for REval path questions.

    Robust extraction needs the code to read line numbers; pass it as ``code``.
    """

    name = "path"
    missing = "no line of code"
    official = staticmethod(rx.path_official)

    def extract(
        self,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
        code: str = "",
    ) -> Extracted:
        return self._extract(text, style, mode, lambda reply: rx.path_robust(reply, code))

    def grader(self, item: Item, grading: Grading) -> Grade:
        expected = [int(line) for line in item.truth_value()]  # type: ignore[attr-defined]

        def grade(sample: int, text: str) -> Score:
            said = answer_lines(rx.path_official(text), item.program)
            right = any(line in expected for line in said)
            return verdict(item, sample, text, Reason.CORRECT if right else Reason.WRONG,
                           f"lines {said}, expected {expected}")  # fmt: skip

        return grade
