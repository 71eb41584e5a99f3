"""The types every task kind shares, and the task-kind protocol.

A task kind is ``prompt(item, style) -> str``, ``extract(item, text) -> Answer | ParseFailure``
and ``score(item, answer) -> Score`` (scoring many answers goes through ``plan`` so that all the
sandbox work of a benchmark runs as a few batches), plus ``oracle(item, style)``: what a perfect
model writes. Kinds are registered by name (:mod:`codereasoner.tasks.registry`); an item's
``task`` is the name of its kind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from codereasoner import values

if TYPE_CHECKING:
    from codereasoner.execution import Executor
    from codereasoner.tasks.plans import GradingPlan


class Style(StrEnum):
    """Prompt styles; each task kind supports a subset."""

    DIRECT = "direct"
    COT = "cot"
    PHIND = "phind"  # CRUXEval output prediction, Phind-CodeLlama only


class Extraction(StrEnum):
    OFFICIAL = "official"  # upstream HF/vLLM post-processing, quirks included
    OFFICIAL_OPENAI = "official-openai"  # upstream OpenAI path (CRUXEval): last-line fallback
    ROBUST = "robust"  # project rules: first [ANSWER] block, parsed assertion, prose cut
    # models trained by ``codereasoner train``: the last <Answer>…</Answer> block, read by the
    # robust rules
    ANSWER_TAG = "answer-tag"


def extraction_modes() -> str:
    """The extraction modes as help texts list them: ``official, ..., robust or answer-tag``."""
    names = [mode.value for mode in Extraction]
    return f"{', '.join(names[:-1])} or {names[-1]}"


class Grading(StrEnum):
    # Reproduces upstream verdicts: the answer is judged as if spliced into the official
    # assertion; literals are compared here, anything else is evaluated in the sandbox.
    OFFICIAL = "official"
    # Answers must be literals (input prediction: a call with literal arguments); they are parsed,
    # never evaluated; copies of the question are plain failures.
    STRICT = "strict"


class Reason(StrEnum):
    CORRECT = "correct"
    WRONG = "wrong_value"
    NO_ANSWER = "no_answer"  # extraction found nothing
    TRUNCATED = "truncated"  # training: the completion was cut at the token limit
    NOT_LITERAL = "not_a_literal"  # strict grading: not a literal / not a literal call
    WRONG_ENTRY = "wrong_entry"  # strict grading: a call of another function
    SYNTAX_ERROR = "syntax_error"  # the official assertion does not compile
    ASSERTION_FAILED = "assertion_failed"
    # an official assertion whose verdict would not depend on the truth (``or``, ``if``/``else``,
    # ``not``, comparisons other than ``==``): graded wrong, see docs/evaluation.md
    UNSUPPORTED_ASSERTION = "unsupported_assertion"
    ANSWER_TOO_LONG = "answer_too_long"  # over MAX_ANSWER_CHARS: refused before any parsing
    NON_LITERAL_VALUE = "non_literal_value"  # evaluated to something that is not a literal
    COPIED = "copied"  # upstream anti-copy rule: the sample is skipped, not graded
    BAD_TRUTH = "bad_truth"  # the benchmark's own gold value does not parse
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT_LIMIT = "output_limit"
    KILLED = "killed"
    SANDBOX_ERROR = "sandbox_error"  # infrastructure failure, not the answer's fault


StyleT = TypeVar("StyleT", bound=StrEnum)


@dataclass(frozen=True)
class Item:
    """One benchmark question with its ground truth.

    ``program`` is the source the official harness runs before its assertion (benchmark code,
    trusted); ``call`` the question's call as text; ``truth`` the gold output as text, a Python
    literal or JSON (``truth_format``); ``fields`` the prompt template's substitutions.
    """

    id: str
    benchmark: str
    task: str
    program: str = ""
    entry: str = "f"
    call: str = ""
    truth: str = ""
    truth_format: str = "python"
    fields: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def truth_value(self) -> object:
        """The gold value, parsed (never evaluated); raises ValueError when it does not parse."""
        return _parse_truth(self.truth, self.truth_format)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["fields"], data["metadata"] = dict(self.fields), dict(self.metadata)
        return data


@cache
def _parse_truth(text: str, fmt: str) -> object:
    if fmt == "json":
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"gold output is not JSON: {exc}") from None
    return values.parse(text)


@dataclass(frozen=True)
class Answer:
    """The extracted answer text: a value (output prediction) or a call (input prediction)."""

    text: str


@dataclass(frozen=True)
class ParseFailure:
    """Extraction found no answer; graded as wrong, never dropped."""

    reason: str
    text: str = ""


Extracted = Answer | ParseFailure


@dataclass(frozen=True)
class Score:
    """The verdict on one sample; ``skipped`` marks upstream's anti-copy rule."""

    item_id: str
    sample: int
    answer: str | None
    correct: bool
    reason: Reason
    detail: str = ""
    skipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reason"] = self.reason.value
        return data


class TaskKind(Protocol):
    """What benchmarks, self-checks, rejection sampling and rewards share.

    ``name`` is the registry key and the ``Item.task`` of the items the kind handles. ``extract``
    reads a completion of the item's prompt (the item is there for rules that need it, e.g. REval
    path answers given as line numbers); ``oracle`` is the completion a perfect model writes
    after the prompt in ``style``, which ``extract`` (default mode) and ``score`` must accept,
    or :class:`~codereasoner.tasks.oracle.NoOracleAnswer` when the truth cannot be stated.
    """

    name: str

    @property
    def styles(self) -> tuple[StrEnum, ...]: ...  # Style, or CoreStyle for CoRE kinds

    def prompt(self, item: Item, style: Style | str = Style.DIRECT) -> str: ...

    def extract(
        self,
        item: Item,
        text: str,
        style: Style | str = Style.DIRECT,
        mode: Extraction | str = Extraction.OFFICIAL,
    ) -> Extracted: ...

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.OFFICIAL
    ) -> GradingPlan: ...

    def score(
        self,
        item: Item,
        answer: Extracted,
        pool: Executor | None = None,
        grading: Grading | str = Grading.OFFICIAL,
    ) -> Score: ...

    def oracle(self, item: Item, style: Style | str = Style.DIRECT) -> str: ...


@dataclass(frozen=True)
class Templates:
    """The official prompt templates of one package: byte-exact data files in its ``templates/``
    folder, each listed in the folder's SOURCES.json with where it comes from (repository,
    commit, file, function, fields, test vectors). A benchmark family's folder holds its own."""

    package: str

    def text(self, name: str) -> str:
        """A template by its path in the folder, e.g. ``output_direct.txt``."""
        return _template_text(self.package, name)

    def fill(self, name: str, fields: Mapping[str, str]) -> str:
        """Substitute ``{field}`` placeholders in one pass; values may contain braces."""
        return self.text(name).format_map(dict(fields))

    def sources(self) -> dict[str, Any]:
        """Where each template comes from, by its path in the folder."""
        text = self.folder().joinpath("SOURCES.json").read_text(encoding="utf-8")
        return {key: value for key, value in json.loads(text).items() if not key.startswith("_")}

    def folder(self) -> Traversable:
        return resources.files(self.package).joinpath("templates")


@cache
def _template_text(package: str, name: str) -> str:
    path = Templates(package).folder().joinpath(*name.split("/"))
    return path.read_bytes().decode("utf-8")


def check_style(style: StyleT | str, supported: tuple[StyleT, ...]) -> StyleT:
    """The style, as the enum ``supported`` is drawn from; ValueError naming the supported ones
    when it is not one of them."""
    value = str(getattr(style, "value", style))
    names = ", ".join(s.value for s in supported)
    try:
        chosen = type(supported[0])(value)
    except ValueError as exc:
        raise ValueError(f"{exc}; expected one of {names}") from None
    if chosen not in supported:
        raise ValueError(f"style {value!r} not supported here; expected one of {names}")
    return chosen


def one_line(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
