"""Input prediction (CRUXEval-I): given a program and an output, find a call producing it.

Graded by running the benchmark's own program on the predicted arguments in the sandbox (all
literal calls of one item in one batch) and comparing the returned value here.
"""

from __future__ import annotations

import functools

from codereasoner.families.cruxeval import TEMPLATES
from codereasoner.families.cruxeval.extraction import cruxeval_input
from codereasoner.tasks import extraction
from codereasoner.tasks.base import (
    Answer,
    Extracted,
    Extraction,
    Grading,
    Item,
    Style,
    check_style,
)
from codereasoner.tasks.common import (
    ROBUST_MODES,
    Grade,
    PlannedTask,
    anti_copy_grader,
    robust_answer,
)
from codereasoner.tasks.grading import strict_call
from codereasoner.tasks.oracle import style_name, tagged, truth_text

_TEMPLATES = {Style.DIRECT: "input_direct.txt", Style.COT: "input_cot.txt"}


class InputPrediction(PlannedTask):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for CRUXEval-I (``score``: the
    predicted call runs in ``pool``)."""

    name = "input_prediction"
    styles = tuple(_TEMPLATES)

    def __init__(self, entry: str = "f") -> None:
        self.entry = entry

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return TEMPLATES.fill(_TEMPLATES[check_style(style, self.styles)], item.fields)

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
            read = functools.partial(extraction.robust_call, entry=self.entry)
            return robust_answer(text, chosen, read, "no call found")
        openai = chosen is Extraction.OFFICIAL_OPENAI
        return Answer(cruxeval_input(text, cot=cot, openai=openai))

    def oracle(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return tagged(f"assert {item.call} == {truth_text(item)}", style_name(style))

    def grader(self, item: Item, grading: Grading) -> Grade:
        official = grading is Grading.OFFICIAL
        copied = f"{item.entry}("  # a call of the entry is missing: a copy of the question
        return anti_copy_grader(
            item, official, strict_call, lambda text: copied not in text, call_entry=True
        )


KIND = InputPrediction()
