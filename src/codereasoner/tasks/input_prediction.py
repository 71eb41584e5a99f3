"""Input prediction (CRUXEval-I): given a program and an output, find a call producing it.

Graded by running the benchmark's own program on the predicted arguments in the sandbox (all
literal calls of one item in one batch) and comparing the returned value here.
"""

from __future__ import annotations

from collections.abc import Sequence

from codereasoner.execution import Pool
from codereasoner.tasks import extraction
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
from codereasoner.tasks.grading import official_assertion, strict_call
from codereasoner.tasks.plans import Job, Plan, build_plan, run_plans, verdict

_TEMPLATES = {Style.DIRECT: "cruxeval/input_direct.txt", Style.COT: "cruxeval/input_cot.txt"}


class InputPrediction:
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for CRUXEval-I."""

    name = "input_prediction"
    styles = tuple(_TEMPLATES)

    def __init__(self, entry: str = "f") -> None:
        self.entry = entry

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return fill(_TEMPLATES[check_style(style, self.styles)], item.fields)

    def extract(
        self,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        cot = check_style(style, self.styles) is Style.COT
        chosen = Extraction(mode)
        if chosen is Extraction.ROBUST:
            found = extraction.robust_call(text, self.entry)
            return Answer(found) if found is not None else ParseFailure("no call found", text)
        openai = chosen is Extraction.OFFICIAL_OPENAI
        return Answer(extraction.cruxeval_input(text, cot=cot, openai=openai))

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.OFFICIAL
    ) -> Plan:
        official = Grading(grading) is Grading.OFFICIAL

        def grade(sample: int, text: str) -> Score | Job:
            if not official:
                return strict_call(item, sample, text)
            if f"{item.entry}(" not in text:  # upstream's anti-copy rule: the sample is skipped
                return verdict(item, sample, text, Reason.COPIED, skipped=True)
            return official_assertion(item, sample, text, call_entry=True)

        return build_plan(item, answers, grade)

    def score(
        self,
        item: Item,
        answer: Extracted,
        pool: Pool | None = None,
        grading: Grading | str = Grading.OFFICIAL,
    ) -> Score:
        """One verdict; the predicted call runs in ``pool``."""
        return run_plans(pool, [self.plan(item, [answer], grading)])[0][0]
