"""CoRE output prediction: predict ``f(x)`` for each of several equivalent implementations.

Prompts are CoRE's IO, CoT and CoC templates (paper App. B.1, this folder's ``templates/``). Answers are
located by one project rule shared with the probes (:func:`extract_answer`), then read as a
literal (:func:`read_value`) and never evaluated. Two gradings (docs/benchmark-rules.md, "CoRE: gradings"):

- ``Grading.STRICT`` (the project's, CoRE's default): gold parsed as JSON, else as a Python
  literal; the answer as a Python literal or JSON spelling; tuples match lists, sets match as
  sets, floats within a tolerance, bools only bools (``values.equal(..., "lenient")``);
- ``Grading.OFFICIAL`` (ancestor-faithful, ``TnTWoW/code_reasoning``):
  ``safe_literal_eval(pred) == ast.literal_eval(gold)``, restated without evaluation: what
  ``ast.literal_eval`` rejects is read as the raw string, and a JSON gold it rejects (``true``,
  ``null``) is where upstream crashes, scored ``bad_truth`` (wrong).

``Extraction.OFFICIAL`` is the ancestor's regex (for its own fenced prompts); CoRE publishes no
extraction, so ``Extraction.ROBUST`` (the project rule) is the default. ``Extraction.ANSWER_TAG``
applies the project rule to the last ``<Answer>`` block, which may also hold the bare value.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from enum import StrEnum

from codereasoner import values
from codereasoner.execution import Executor, Program
from codereasoner.families.core import TEMPLATES
from codereasoner.families.core.programs import PREAMBLE
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
)
from codereasoner.tasks.common import NO_ANSWER_TAG, Grade, PlannedTask
from codereasoner.tasks.grading import is_python_literal
from codereasoner.tasks.literal_answers import read_value
from codereasoner.tasks.oracle import THOUGHT, style_name, truth_text
from codereasoner.tasks.plans import GradingPlan, verdict

OUTPUT_TASK = "core_output"


class CoreStyle(StrEnum):
    """CoRE's prompt styles: IO (direct), chain-of-thought, chain-of-code."""

    DIRECT = "direct"
    COT = "cot"
    COC = "coc"


_TAGS = re.compile(r"\[/?(?:ANSWER|PYTHON|THOUGHT)\]")
_LABEL = re.compile(r"^[#>*_`\s-]*(?:final\s+)?answer[\s*_`]*:(.*)$", re.IGNORECASE)
_ASSERT = re.compile(r"^assert\b")
_ANCESTOR = re.compile(r"==\s*(.*?)\s*```")
_FENCE_LANGUAGES = frozenset({"python", "python3", "py"})


def core_style(style: CoreStyle | str) -> CoreStyle:
    try:
        return CoreStyle(style)
    except ValueError:
        names = ", ".join(s.value for s in CoreStyle)
        raise ValueError(
            f"style {style!r} not supported by CoRE; expected one of {names}"
        ) from None


def oracle_preface(style: CoreStyle | str) -> str:
    """What the oracle writes before its answer: reasoning, except in the direct style."""
    return "" if style_name(style) == CoreStyle.DIRECT else f"{THOUGHT}\n\n"


def program(item: Item) -> Program:
    """A CoRE item's implementation as the sandbox runs it (``typing`` names in scope)."""
    return Program(item.program, item.entry, preamble=PREAMBLE)


# ---------------------------------------------------------------------------------------
# extraction
# ---------------------------------------------------------------------------------------


def _clean(line: str) -> str:
    text = line.strip().lstrip(">").strip().strip("`~").strip()
    return "" if text.lower() in _FENCE_LANGUAGES else text


def _tidy(text: str) -> str:
    """Without surrounding markdown (``**``, backticks) and a final full stop."""
    for _ in range(3):
        text = text.strip().strip("*_`").strip().removesuffix(".")
    return text.strip()


def _assertion(lines: list[str], start: int) -> str | None:
    """The right-hand side of the ``assert ... == X`` statement that starts on ``lines[start]``."""
    hit = extraction.find_assertion("\n".join(lines[start : start + 200]))
    head = lines[start][len("assert") :].lstrip()
    return hit[1] if hit is not None and head.startswith(hit[0]) else None


def extract_answer(text: str) -> Extracted:
    """The project rule for both CoRE task kinds: the last answer-bearing line wins.

    Answer-bearing: an ``assert ... == X`` statement (fenced or not, possibly multi-line; X is
    taken) or an ``Answer: X`` line (``# Answer:``, ``**Final answer:**``; X may be on the next
    line, or be an assertion itself). ``[ANSWER]``-style tags and fences are ignored. X is
    returned as written (a value, or several ``name = value`` parts); reading it is grading's job.
    """
    lines = [_clean(line) for line in _TAGS.sub("\n", text).split("\n")]
    found: str | None = None
    for index, line in enumerate(lines):
        label = _LABEL.match(line)
        if label:
            value = _tidy(label.group(1))
            if not value:
                following = next((ln for ln in lines[index + 1 :] if ln), "")
                if following and not _ASSERT.match(following):
                    found = following  # a bare label: the value is on the next line
                continue
            found = (_assertion([value], 0) or found) if _ASSERT.match(value) else value
        elif _ASSERT.match(line):
            found = _assertion(lines, index) or found
    if found is None:
        return ParseFailure("no 'assert ... == X' line and no 'Answer: X' line", text)
    return Answer(_tidy(found))


def extract_tagged(text: str) -> Extracted:
    """The answer-tag rule for both CoRE task kinds: :func:`extract_answer` on the last
    ``<Answer>`` block; a block with no assertion and no ``Answer:`` line is the answer itself
    (models trained in the project's format state the bare value there)."""
    block = extraction.answer_tag_block(text)
    if block is None:
        return ParseFailure(NO_ANSWER_TAG, text)
    found = extract_answer(block)
    return found if isinstance(found, Answer) else Answer(_tidy(block))


def extract_core(text: str, mode: Extraction) -> Extracted:
    """The project rule (``ROBUST``, and ``OFFICIAL`` for the probes: the ancestor has none) or
    the answer-tag rule."""
    return extract_tagged(text) if mode is Extraction.ANSWER_TAG else extract_answer(text)


def ancestor_output(text: str) -> Extracted:
    """The ancestor's rule: the last match of ``==\\s*(.*?)\\s*```` ``, else ``""``."""
    matches = _ANCESTOR.findall(text)
    return Answer(matches[-1] if matches else "")


# ---------------------------------------------------------------------------------------
# grading
# ---------------------------------------------------------------------------------------


def grade_project(item: Item, sample: int, text: str) -> Score:
    try:
        truth = item.truth_value()
    except ValueError as exc:
        return verdict(item, sample, text, Reason.BAD_TRUTH, str(exc))
    ok, value = read_value(text)
    if not ok:
        return verdict(item, sample, text, Reason.NOT_LITERAL, "no literal in the answer")
    same = values.equal(truth, value, "lenient")
    return verdict(item, sample, text, Reason.CORRECT if same else Reason.WRONG)


def _ancestor_accepts(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):  # ast.literal_eval also accepts set()
        func = node.func
        return isinstance(func, ast.Name) and func.id == "set" and not node.args + node.keywords
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_ancestor_accepts(element) for element in node.elts)
    if isinstance(node, ast.Dict):
        keys_ok = all(key is not None and _ancestor_accepts(key) for key in node.keys)
        return keys_ok and all(_ancestor_accepts(item) for item in node.values)
    return is_python_literal(node)


def ancestor_literal(text: str) -> tuple[bool, object]:
    """What ``ast.literal_eval(text)`` returns, read with :func:`values.parse` (never run)."""
    try:
        tree = ast.parse(text.lstrip(" \t"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False, None
    if not _ancestor_accepts(tree.body):
        return False, None
    try:
        return True, values.parse(text)
    except values.ValueParseError:
        return False, None


def grade_ancestor(item: Item, sample: int, text: str) -> Score:
    gold_ok, gold = ancestor_literal(item.truth)
    if not gold_ok:
        why = f"ast.literal_eval rejects the gold {item.truth!r} (upstream crashes)"
        return verdict(item, sample, text, Reason.BAD_TRUTH, why)
    ok, value = ancestor_literal(text)
    same = values.equal(gold, value if ok else text, "strict")
    return verdict(item, sample, text, Reason.CORRECT if same else Reason.WRONG)


class CoreKind(PlannedTask):
    """``prompt`` from the folder's ``{template_prefix}_{style}.txt`` templates, one per CoRE style;
    ``plan`` and ``score`` as every task kind's, with CoRE's default grading (strict)."""

    styles = tuple(CoreStyle)
    template_prefix: str  # "output" or "probe"

    def prompt(self, item: Item, style: CoreStyle | str = CoreStyle.DIRECT) -> str:
        return TEMPLATES.fill(f"{self.template_prefix}_{core_style(style).value}.txt", item.fields)

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.STRICT
    ) -> GradingPlan:
        return super().plan(item, answers, grading)

    def score(
        self,
        item: Item,
        answer: Extracted,
        pool: Executor | None = None,
        grading: Grading | str = Grading.STRICT,
    ) -> Score:
        """One verdict; CoRE answers are literals, so no pool is needed."""
        return super().score(item, answer, pool, grading)


class CoreOutput(CoreKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for CoRE output prediction."""

    name = OUTPUT_TASK
    template_prefix = "output"

    def extract(
        self,
        item: Item,
        text: str,
        style: CoreStyle | str = CoreStyle.DIRECT,
        mode: Extraction | str = Extraction.ROBUST,
    ) -> Extracted:
        core_style(style)
        chosen = Extraction(mode)
        if chosen is Extraction.OFFICIAL_OPENAI:
            raise ValueError(
                "CoRE extraction: 'robust' (project rule), 'answer-tag' or 'official' (ancestor)"
            )
        if chosen is Extraction.OFFICIAL:
            return ancestor_output(text)
        return extract_core(text, chosen)

    def oracle(self, item: Item, style: CoreStyle | str = CoreStyle.DIRECT) -> str:
        # Fenced so the ancestor's regex (``== X`` then a fence) finds it too.
        assertion = f"assert {item.call} == {truth_text(item)}"
        return f"{oracle_preface(style)}```python\n{assertion}\n```\n"

    def grader(self, item: Item, grading: Grading) -> Grade:
        grade = grade_ancestor if grading is Grading.OFFICIAL else grade_project
        return lambda sample, text: grade(item, sample, text)


KIND = CoreOutput()
