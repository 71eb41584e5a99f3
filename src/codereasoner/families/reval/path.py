"""Path (REval EPP): which line runs next after line N? Answer a line of code, or -1.

An answer is mapped to every line number whose stripped text equals it (so duplicate lines all
count), ``-1`` stays ``-1``; it is right when one of those numbers is an expected next line.
"""

from __future__ import annotations

from codereasoner.families.reval import extraction as rx
from codereasoner.families.reval.kind import RevalKind
from codereasoner.tasks.base import Grading, Item, Reason, Score, Style
from codereasoner.tasks.common import Grade
from codereasoner.tasks.oracle import NoOracleAnswer, style_name, tagged
from codereasoner.tasks.plans import verdict

__all__ = ["PathPrediction", "answer_lines"]


def answer_lines(answer: str, code: str) -> list[int]:
    """Upstream's mapping of an extracted answer to 1-based line numbers ([-2]: no line)."""
    if answer in ("-1", "-2"):
        return [int(answer)]
    found = [number for number, line in enumerate(code.split("\n"), 1) if line.strip() == answer]
    return found or [-2]


class PathPrediction(RevalKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for REval path questions.

    Robust extraction reads line numbers in the item's code (``item.program``).
    """

    name = "path"
    missing = "no line of code"
    official = staticmethod(rx.path_official)

    def robust_for(self, item: Item, text: str) -> str | None:
        return rx.path_robust(text, item.program)

    def oracle(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        """``-1`` when the run may end there, else the first expected line that holds code."""
        lines = [int(line) for line in item.truth_value()]  # type: ignore[attr-defined]
        if -1 in lines:
            return tagged("-1", style_name(style))
        code = item.program.split("\n")
        for number in lines:
            if 1 <= number <= len(code) and code[number - 1].strip():
                return tagged(code[number - 1].strip(), style_name(style))
        raise NoOracleAnswer(f"{item.id}: expected lines {lines} hold no code")

    def grader(self, item: Item, grading: Grading) -> Grade:
        expected = [int(line) for line in item.truth_value()]  # type: ignore[attr-defined]

        def grade(sample: int, text: str) -> Score:
            said = answer_lines(rx.path_official(text), item.program)
            right = any(line in expected for line in said)
            reason = Reason.CORRECT if right else Reason.WRONG
            return verdict(item, sample, text, reason, f"lines {said}, expected {expected}")

        return grade


KIND = PathPrediction()  # registered by name in codereasoner.tasks.registry
