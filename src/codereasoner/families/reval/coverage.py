"""Coverage (REval CCP): is line N executed for this input? Answer YES or NO.

Graded in the parent against the traced coverage; no sandbox work.
"""

from __future__ import annotations

from codereasoner.families.reval import extraction as rx
from codereasoner.families.reval.kind import RevalKind
from codereasoner.tasks.base import Grading, Item, Reason, Score, Style
from codereasoner.tasks.common import Grade
from codereasoner.tasks.oracle import style_name, tagged
from codereasoner.tasks.plans import verdict

__all__ = ["Coverage"]


class Coverage(RevalKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for REval coverage questions."""

    name = "coverage"
    missing = "no YES or NO"
    official = staticmethod(rx.coverage_official)
    robust = staticmethod(rx.coverage_robust)

    def oracle(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return tagged("YES" if item.truth_value() else "NO", style_name(style))

    def grader(self, item: Item, grading: Grading) -> Grade:
        expected = bool(item.truth_value())

        def grade(sample: int, text: str) -> Score:
            said = rx.coverage_official(text) == "YES"  # idempotent on YES / NO
            reason = Reason.CORRECT if said == expected else Reason.WRONG
            return verdict(item, sample, text, reason, f"expected {'YES' if expected else 'NO'}")

        return grade


KIND = Coverage()  # registered by name in codereasoner.tasks.registry
