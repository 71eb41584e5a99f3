"""State (REval PSP): the value and type of a variable after line N, ``value; type`` or Nil.

Official grading reads an answer as upstream does, its value evaluated in the sandbox where the
parent's parser cannot be sure of what ``eval`` gives (:mod:`codereasoner.families.reval.state_official`);
strict grading parses it and never evaluates it (:mod:`codereasoner.families.reval.state_answers`).
"""

from __future__ import annotations

from codereasoner.families.reval import extraction as rx
from codereasoner.families.reval.kind import RevalKind
from codereasoner.families.reval.state_answers import (
    StateError,
    parse_state,
    state_parts,
    state_verdict,
)
from codereasoner.families.reval.state_official import decided_in_parent, state_job
from codereasoner.tasks.base import Grading, Item, Reason, Score, Style
from codereasoner.tasks.common import Grade
from codereasoner.tasks.oracle import NoOracleAnswer, style_name, tagged
from codereasoner.tasks.plans import Job, verdict

__all__ = ["State"]


class State(RevalKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for REval state questions."""

    name = "state"
    missing = "no 'value; type' or Nil"
    official = staticmethod(rx.state_official)
    robust = staticmethod(rx.state_robust)

    def oracle(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        """``Nil``, or the first expected state written as ``value; type`` that grading accepts
        (a bytearray's recorded ``b'..'`` is bytes: it is written ``bytearray(b'..')``)."""
        chosen = style_name(style)
        truth = item.truth_value()
        if truth is None:
            return tagged("Nil", chosen)
        for kind, text in truth:  # type: ignore[attr-defined]
            if text is None:  # the trace recorded no readable value (an opaque object)
                continue
            written = [f"{text}; {kind}"]
            if kind == "bytearray":
                written.append(f"bytearray({text}); {kind}")
            for answer in written:
                if state_verdict(parse_state(answer), truth)[0]:  # type: ignore[arg-type]
                    return tagged(answer, chosen)
        kinds = ", ".join(str(kind) for kind, _ in truth)  # type: ignore[attr-defined]
        raise NoOracleAnswer(
            f"{item.id}: no expected state ({kinds}) has a value and a type that read back as "
            "'value; type'"
        )

    def grader(self, item: Item, grading: Grading) -> Grade:
        truth = item.truth_value()
        official = grading is Grading.OFFICIAL

        def grade(sample: int, text: str) -> Score | Job:
            parts = state_parts(text.strip())
            # a Nil truth takes only Nil: a value, whatever it reads as, is wrong (decided here)
            if official and truth is not None and isinstance(parts, tuple):
                value, kind = parts
                if not decided_in_parent(value, kind):
                    return state_job(item, sample, text, value, kind)
            parsed = parse_state(text.strip())
            right, why = state_verdict(parsed, truth)  # type: ignore[arg-type]
            if right:
                return verdict(item, sample, text, Reason.CORRECT)
            reason = Reason.NOT_LITERAL if isinstance(parsed, StateError) else Reason.WRONG
            return verdict(item, sample, text, reason, why)

        return grade


KIND = State()  # registered by name in codereasoner.tasks.registry
