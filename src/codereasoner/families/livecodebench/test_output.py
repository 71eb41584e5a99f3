"""Test output prediction (LiveCodeBench): from a problem statement, a signature and a test
input, predict the test's output. No solution code exists; the gold output is JSON.
"""

from __future__ import annotations

import functools

from codereasoner.families.livecodebench import TEMPLATES
from codereasoner.families.livecodebench.extraction import lcb_assert_rhs, lcb_test_output
from codereasoner.tasks import extraction
from codereasoner.tasks.base import (
    Extracted,
    Extraction,
    Grading,
    Item,
    Reason,
    Score,
    Style,
    check_style,
)
from codereasoner.tasks.common import (
    ROBUST_MODES,
    Grade,
    PlannedTask,
    found_or_failure,
    robust_answer,
)
from codereasoner.tasks.grading import official_expression, strict_value
from codereasoner.tasks.oracle import truth_text
from codereasoner.tasks.plans import Job, verdict

TEMPLATE = "test_output.txt"
SYSTEM_GENERIC = "test_output_system_generic.txt"
SYSTEM_CODELLAMA = "test_output_system_cllama.txt"


class TestOutputPrediction(PlannedTask):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for LiveCodeBench test output
    prediction (``score``: a non-literal right-hand side is evaluated in ``pool``)."""

    __test__ = False  # not a pytest test class
    name = "test_output_prediction"
    styles = (Style.DIRECT,)

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        """The user content; the system message (SYSTEM_*) is the model wrapper's business."""
        check_style(style, self.styles)
        return TEMPLATES.fill(TEMPLATE, item.fields)

    def extract(
        self,
        item: Item,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
        *,
        codellama: bool = False,
    ) -> Extracted:
        """Upstream keeps the last ``assert`` line or the first fenced block (maybe multi-line)."""
        check_style(style, self.styles)
        chosen = Extraction(mode)
        if chosen in ROBUST_MODES:
            read = functools.partial(extraction.robust_value, last=True)
            return robust_answer(text, chosen, read, "no asserted value")
        found = lcb_test_output(text, codellama=codellama)
        return found_or_failure(found, "no assert line or code block", text, empty_ok=False)

    def oracle(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        """A fenced assertion, as upstream's prompt asks (the only style: direct)."""
        return f"```python\nassert {item.call} == {truth_text(item)}\n```"

    def grader(self, item: Item, grading: Grading) -> Grade:
        official = grading is Grading.OFFICIAL

        def grade(sample: int, text: str) -> Score | Job:
            if official:
                rhs = lcb_assert_rhs(text)
                return official_expression(item, sample, text, rhs)
            value = extraction.robust_value(text, last=True)
            if value is None:
                return verdict(item, sample, text, Reason.NO_ANSWER, "no asserted value")
            return strict_value(item, sample, value)

        return grade


KIND = TestOutputPrediction()
