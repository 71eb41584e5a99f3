"""Output prediction: given a program and a call, predict the returned value.

CRUXEval-O and LiveCodeBench code execution differ only in their templates, their upstream
post-processing and the text the anti-copy rule looks for (both: the question's call).
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
from codereasoner.tasks.grading import official_assertion, strict_value
from codereasoner.tasks.plans import Job, Plan, build_plan, run_plans, verdict

_TEMPLATES = {
    "cruxeval": {
        Style.DIRECT: "cruxeval/output_direct.txt",
        Style.COT: "cruxeval/output_cot.txt",
        Style.PHIND: "cruxeval/output_phind.txt",
    },
    "livecodebench": {
        Style.DIRECT: "livecodebench/execution_direct.txt",
        Style.COT: "livecodebench/execution_cot.txt",
    },
}


class OutputPrediction:
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for one benchmark dialect."""

    name = "output_prediction"

    def __init__(self, dialect: str = "cruxeval") -> None:
        if dialect not in _TEMPLATES:
            raise ValueError(
                f"unknown dialect {dialect!r}; expected one of {', '.join(_TEMPLATES)}"
            )
        self.dialect = dialect
        self.styles = tuple(_TEMPLATES[dialect])

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return fill(_TEMPLATES[self.dialect][check_style(style, self.styles)], item.fields)

    def extract(
        self,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        cot = check_style(style, self.styles) is Style.COT
        chosen = Extraction(mode)
        if chosen is Extraction.ROBUST:
            found = extraction.robust_value(text)
            return Answer(found) if found is not None else ParseFailure("no asserted value", text)
        if self.dialect == "livecodebench":
            return Answer(extraction.lcb_execution(text, cot=cot))
        openai = chosen is Extraction.OFFICIAL_OPENAI
        return Answer(extraction.cruxeval_output(text, cot=cot, openai=openai))

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.OFFICIAL
    ) -> Plan:
        official = Grading(grading) is Grading.OFFICIAL

        def grade(sample: int, text: str) -> Score | Job:
            if not official:
                return strict_value(item, sample, text)
            if item.call in text:  # upstream's anti-copy rule: the sample is skipped
                return verdict(item, sample, text, Reason.COPIED, skipped=True)
            return official_assertion(item, sample, text, call_entry=False)

        return build_plan(item, answers, grade)

    def score(
        self,
        item: Item,
        answer: Extracted,
        pool: Pool | None = None,
        grading: Grading | str = Grading.OFFICIAL,
    ) -> Score:
        """One verdict; literal answers need no pool, anything else runs in ``pool``."""
        return run_plans(pool, [self.plan(item, [answer], grading)])[0][0]
