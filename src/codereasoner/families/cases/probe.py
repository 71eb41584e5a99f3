"""Process questions about synthesized cases: ``case_probe``, a question about an intermediate
state of a case's call (a variable after a line at some iteration, a condition's outcome, how
often a loop ran), with the exact answer our tracer recorded.

The prompt shows the code, the call and the question (``fields["question"]``), and asks, like
the other case kinds, for the answer as a literal in the last ``<Answer>…</Answer>``. Grading
needs no sandbox: the answer is matched against the probe's truth by the probe matcher CoRE's
probes use too (:func:`codereasoner.tasks.literal_answers.grade_probe`: a literal equal under
lenient comparison, a single ``name = value`` read as its value, a bare string for a string
truth).
"""

from __future__ import annotations

from codereasoner.families.cases.reasoning import CaseKind, ReasoningStyle
from codereasoner.tasks.base import Grading, Item, check_style
from codereasoner.tasks.common import Grade
from codereasoner.tasks.literal_answers import grade_probe
from codereasoner.tasks.oracle import truth_text

__all__ = ["PROBE_TASK", "CaseProbe"]

PROBE_TASK = "case_probe"

_HEAD = (
    "You are given a Python function, a call of it, and a question about the state of the "
    "program while the call runs. Line numbers count the lines of the code below from 1.\n\n"
    "```python\n{code}\n```\n\nCall: {call}\n\nQuestion: {question}\n\n"
)
_HINT = "An exact trace of this call, step by step, for reference:\n{hint}\n\n"
_ASKS = {
    ReasoningStyle.REASONING: (
        "Reason step by step inside <Reasoning> and </Reasoning>, then give the asked value as "
        "a Python literal (no expressions, no function calls) inside <Answer> and </Answer>."
    ),
    ReasoningStyle.DIRECT: (
        "Give only the asked value, as a Python literal (no expressions, no function calls), "
        "inside <Answer> and </Answer>."
    ),
}


class CaseProbe(CaseKind):
    """A probe of a case's call: the answer is a literal, matched against the traced truth."""

    name = PROBE_TASK

    def prompt(self, item: Item, style: ReasoningStyle | str = ReasoningStyle.REASONING) -> str:
        chosen = check_style(style, self.styles)
        fields = {
            "code": item.program,
            "call": item.call,
            "question": item.fields.get("question", ""),
            "hint": item.fields.get("hint", ""),
        }
        parts = [_HEAD, _HINT if fields["hint"] else "", _ASKS[chosen]]
        # one pass over each part's own placeholders: the code may hold braces
        return "".join(part.format_map(fields) for part in parts) + "\n"

    def stated(self, item: Item) -> str:
        return truth_text(item)

    def grader(self, item: Item, grading: Grading) -> Grade:
        return lambda sample, text: grade_probe(item, sample, text)


KIND = CaseProbe()
