"""Output prediction: given a program and a call, predict the returned value.

CRUXEval-O (task kind ``output_prediction``) and LiveCodeBench code execution (``lcb_execution``)
differ only in their templates, their upstream post-processing and the text the anti-copy rule
looks for (both: the question's call).
"""

from __future__ import annotations

from codereasoner.tasks import extraction
from codereasoner.tasks.base import (
    Answer,
    Extracted,
    Extraction,
    Grading,
    Item,
    Style,
    check_style,
    fill,
)
from codereasoner.tasks.common import (
    ROBUST_MODES,
    Grade,
    PlannedTask,
    anti_copy_grader,
    robust_answer,
)
from codereasoner.tasks.grading import strict_value
from codereasoner.tasks.oracle import style_name, tagged, truth_text

_NAMES = {"cruxeval": "output_prediction", "livecodebench": "lcb_execution"}
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


class OutputPrediction(PlannedTask):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for one benchmark dialect
    (``score``: literal answers need no pool, anything else runs in ``pool``); ``name`` is the
    dialect's task kind: ``output_prediction`` (CRUXEval) or ``lcb_execution`` (LiveCodeBench)."""

    def __init__(self, dialect: str = "cruxeval") -> None:
        if dialect not in _TEMPLATES:
            raise ValueError(
                f"unknown dialect {dialect!r}; expected one of {', '.join(_TEMPLATES)}"
            )
        self.dialect = dialect
        self.name = _NAMES[dialect]
        self.styles = tuple(_TEMPLATES[dialect])

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return fill(_TEMPLATES[self.dialect][check_style(style, self.styles)], item.fields)

    def extract(
        self,
        item: Item,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted:
        cot = check_style(style, self.styles) is Style.COT
        chosen = Extraction(mode)
        if chosen in ROBUST_MODES:
            return robust_answer(text, chosen, extraction.robust_value, "no asserted value")
        if self.dialect == "livecodebench":
            return Answer(extraction.lcb_execution(text, cot=cot))
        openai = chosen is Extraction.OFFICIAL_OPENAI
        return Answer(extraction.cruxeval_output(text, cot=cot, openai=openai))

    def oracle(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        truth, chosen = truth_text(item), style_name(style)
        if chosen == Style.PHIND:  # the prompt ends with "assert f(...) =="
            return f" {truth} # done"
        return tagged(f"assert {item.call} == {truth}", chosen)

    def grader(self, item: Item, grading: Grading) -> Grade:
        official = grading is Grading.OFFICIAL
        # upstream's rule, the substring, as upstream: the same call spelt otherwise (f (x))
        # passes the official assertion there too; strict grading takes literals only
        return anti_copy_grader(
            item, official, strict_value, lambda text: item.call in text, call_entry=False
        )
