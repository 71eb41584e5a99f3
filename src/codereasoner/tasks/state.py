"""State (REval PSP): the value and type of a variable after line N, ``value; type`` or Nil.

Answers are parsed, never evaluated (see :mod:`codereasoner.tasks.state_answers`).
"""

from __future__ import annotations

from codereasoner.tasks import reval_extraction as rx
from codereasoner.tasks.base import Grading, Item, Reason, Score
from codereasoner.tasks.common import Grade, RevalKind
from codereasoner.tasks.plans import verdict
from codereasoner.tasks.state_answers import StateError, parse_state, state_verdict

__all__ = ["State"]


class State(RevalKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for REval state questions."""

    name = "state"
    missing = "no 'value; type' or Nil"
    official = staticmethod(rx.state_official)
    robust = staticmethod(rx.state_robust)

    def grader(self, item: Item, grading: Grading) -> Grade:
        truth = item.truth_value()

        def grade(sample: int, text: str) -> Score:
            parsed = parse_state(text.strip())
            right, why = state_verdict(parsed, truth)  # type: ignore[arg-type]
            if right:
                return verdict(item, sample, text, Reason.CORRECT)
            reason = Reason.NOT_LITERAL if isinstance(parsed, StateError) else Reason.WRONG
            return verdict(item, sample, text, reason, why)

        return grade
