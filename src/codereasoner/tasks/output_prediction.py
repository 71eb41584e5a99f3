"""Output prediction: given a program and a call, predict the returned value.

One kind per prompt dialect: CRUXEval-O (task kind ``output_prediction``) and LiveCodeBench code
execution (``lcb_execution``) are two instances, declared in their family folders, which differ
only in their templates, their upstream post-processing and nothing else (the anti-copy rule
looks for the question's call in both). A benchmark of output questions with prompts of its own
builds one more instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

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
from codereasoner.tasks.grading import strict_value
from codereasoner.tasks.oracle import style_name, tagged, truth_text

# upstream's post-processing of one completion: official(text, cot=..., openai=...)
OfficialRule = Callable[..., str]


class OutputPrediction(PlannedTask):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` of one output-prediction
    dialect (``score``: literal answers need no pool, anything else runs in ``pool``).

    ``prompts``: the template of each style the dialect supports (``{code}``, ``{input}``, ... of
    the item's fields; ``direct`` first); ``official``: its upstream post-processing, called as
    ``official(text, cot=..., openai=...)`` (by default CRUXEval-O's: the value after ``==``).
    """

    def __init__(
        self,
        name: str,
        prompts: Mapping[Style | str, str],
        official: OfficialRule = extraction.cruxeval_output,
    ) -> None:
        if Style.DIRECT not in {Style(style) for style in prompts}:
            raise ValueError(
                f"task kind {name!r}: needs a 'direct' prompt, the style every run has"
            )
        self.name = name
        self.templates = {Style(style): text for style, text in prompts.items()}
        self.styles = tuple(self.templates)
        self.official = official

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        return self.templates[check_style(style, self.styles)].format_map(dict(item.fields))

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
        openai = chosen is Extraction.OFFICIAL_OPENAI
        return Answer(self.official(text, cot=cot, openai=openai))

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
