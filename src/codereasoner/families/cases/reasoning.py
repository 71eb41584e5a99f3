"""Reasoning about synthesized cases, both ways (CodeReasoner's distillation and RL tasks).

- ``case_forward``: given a function and a call, state the value it returns;
- ``case_backward``: given a function and a value, give a call that returns it.

The prompts are the project's own (CodeReasoner publishes none; its answers go in
``<Answer>`` tags): the ``reasoning`` style asks for ``<Reasoning>…</Reasoning>`` then
``<Answer>…</Answer>``, the ``direct`` style for the answer alone (the paper's direct ablation).
Unlike the benchmarks' official prompts they state the answer's form (a literal; a call with
literal arguments) and the tags, and may carry a hint, our exact trace of the call.

Extraction takes the last closed ``<Answer>…</Answer>`` (tag names in any case), whatever the
mode. Grading is strict, whatever is asked: a forward
answer is parsed as a literal and compared here; a backward answer is parsed as a call with
literal arguments and run in the sandbox, its value compared here. Nothing is evaluated.
"""

from __future__ import annotations

from enum import StrEnum

from codereasoner.tasks import extraction
from codereasoner.tasks.base import (
    Extracted,
    Extraction,
    Grading,
    Item,
    ParseFailure,
    check_style,
)
from codereasoner.tasks.common import Grade, PlannedTask, found_or_failure
from codereasoner.tasks.grading import strict_call, strict_value
from codereasoner.tasks.oracle import THOUGHT, style_name, truth_text

__all__ = [
    "BACKWARD_TASK",
    "DIRECTIONS",
    "FORWARD_TASK",
    "CaseBackward",
    "CaseForward",
    "ReasoningStyle",
]

FORWARD_TASK = "case_forward"
BACKWARD_TASK = "case_backward"
DIRECTIONS = {"forward": FORWARD_TASK, "backward": BACKWARD_TASK}  # direction -> task kind


class ReasoningStyle(StrEnum):
    REASONING = "reasoning"  # <Reasoning>…</Reasoning><Answer>…</Answer>
    DIRECT = "direct"  # <Answer>…</Answer> only


_CODE = "```python\n{code}\n```\n\n"
_HINT = (
    "An exact trace of this call, step by step, for reference (the answer is still checked by "
    "running the code):\n{hint}\n\n"
)
_ASKS = {
    (FORWARD_TASK, ReasoningStyle.REASONING): (
        "Reason step by step inside <Reasoning> and </Reasoning>, then give the returned value "
        "as a Python literal (no expressions, no function calls) inside <Answer> and </Answer>."
    ),
    (FORWARD_TASK, ReasoningStyle.DIRECT): (
        "Give only the returned value, as a Python literal (no expressions, no function calls), "
        "inside <Answer> and </Answer>."
    ),
    (BACKWARD_TASK, ReasoningStyle.REASONING): (
        "Reason step by step inside <Reasoning> and </Reasoning>, then give a call of {entry} "
        "with literal arguments that returns this value inside <Answer> and </Answer>."
    ),
    (BACKWARD_TASK, ReasoningStyle.DIRECT): (
        "Give only a call of {entry} with literal arguments that returns this value, inside "
        "<Answer> and </Answer>."
    ),
}
_QUESTIONS = {
    FORWARD_TASK: "You are given a Python function and a call of it. What does the call return?\n\n",
    BACKWARD_TASK: (
        "You are given a Python function and a value it returned. Find an input for which it "
        "returns exactly this value.\n\n"
    ),
}
_GIVEN = {FORWARD_TASK: "Call: {call}\n\n", BACKWARD_TASK: "Returned value: {output}\n\n"}


def last_answer(text: str) -> Extracted:
    """The stripped content of the last closed ``<Answer>…</Answer>``; a failure when there is
    none (a cut-off answer is none: rewards must not pay for it) or it is empty."""
    found = extraction.answer_tag_blocks(text, closed=True)
    if not found:
        return ParseFailure("no <Answer>…</Answer>", text)
    return found_or_failure(found[-1].strip(), "empty <Answer>", text, empty_ok=False)


class CaseKind(PlannedTask):
    name: str
    styles = tuple(ReasoningStyle)

    def prompt(self, item: Item, style: ReasoningStyle | str = ReasoningStyle.REASONING) -> str:
        chosen = check_style(style, self.styles)
        fields = {
            "code": item.program,
            "call": item.call,
            "output": item.truth,
            "entry": item.entry,
            "hint": item.fields.get("hint", ""),
        }
        parts = [_QUESTIONS[self.name], _CODE, _GIVEN[self.name]]
        if fields["hint"]:
            parts.append(_HINT)
        parts.append(_ASKS[(self.name, chosen)])
        # one pass over each part's own placeholders: the code may hold braces
        return "".join(part.format_map(fields) for part in parts) + "\n"

    def extract(
        self,
        item: Item,
        text: str,
        style: ReasoningStyle | str = ReasoningStyle.REASONING,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        check_style(style, self.styles)
        Extraction(mode)  # every mode reads the last <Answer>: the prompt asks for the tags
        return last_answer(text)

    def stated(self, item: Item) -> str:
        """What a right answer states (the oracle's answer)."""
        raise NotImplementedError

    def oracle(self, item: Item, style: ReasoningStyle | str = ReasoningStyle.REASONING) -> str:
        answer = f"<Answer>{self.stated(item)}</Answer>"
        if style_name(style) == ReasoningStyle.DIRECT:
            return answer
        return f"<Reasoning>{THOUGHT}</Reasoning>\n{answer}"


class CaseForward(CaseKind):
    """Input -> output: the answer is a literal, compared with the case's output."""

    name = FORWARD_TASK

    def stated(self, item: Item) -> str:
        return truth_text(item)

    def grader(self, item: Item, grading: Grading) -> Grade:
        return lambda sample, text: strict_value(item, sample, text)


class CaseBackward(CaseKind):
    """Output -> input: the answer is a literal call, run in the sandbox; any call returning
    the case's output is right."""

    name = BACKWARD_TASK

    def stated(self, item: Item) -> str:
        return item.call

    def grader(self, item: Item, grading: Grading) -> Grade:
        return lambda sample, text: strict_call(item, sample, text)


FORWARD = CaseForward()
BACKWARD = CaseBackward()
