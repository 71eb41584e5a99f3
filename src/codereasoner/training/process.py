"""The process reward: a chain of thought gains credit for the probed intermediate values it
states rightly and loses as much for those it states wrongly.

Each RL row may carry a ``probes`` column (a JSON text, see :func:`probes_column`): per probed
variable of the case's call, its name, the probed line and truth, the distinct values the
variable takes in the entry frame of our trace (``history``, in order) and right after each
run of the probed line (``at_line``). distill computes it from the trace (:func:`probed_values`);
at reward time nothing runs.

A chain states a probed variable's value with ``name = <literal>``, ``name is <literal>``,
``name is now <literal>``, ``name becomes <literal>``, ``name equals <literal>`` or
``name: <literal>`` (the name may be in backticks); the literal is parsed, never evaluated, and a
statement whose literal continues as an expression (``total = 3 + 4``) is no statement. Only
the reasoning counts (the text before the last ``<Answer>``). A statement is **false** when the
variable never takes that value in the trace; when the chain's line also names ``line N``, the
probed line of that variable, the value must be one it holds right after that line ran. Values
are compared as :func:`codereasoner.values.equal` leniently, as probe answers are graded.
Statements about a variable whose values were not all kept (a marker such as ``<Node object>``,
or over the bounds) are not counted: they cannot be checked.

Each checkable probed variable of the row is judged once, from all the chain says of it:
**false** when any statement of it is false (a variable stated with a true and a false value
counts as false), **true** when it is stated and every statement of it is true, otherwise
unstated. With ``probed`` checkable variables, ``true`` and ``false`` of them judged so, and
``right`` whether the completion's final answer is right (the outcome reward's verdict)::

    process = weight * (right * true - false) / probed        (0 when nothing is probed)

- symmetric: a true variable earns exactly what a false one costs (``weight / probed``);
- bounded in ``[-weight, +weight]`` (``true + false <= probed``);
- padding gains nothing: a variable earns once however often or in however many true values it
  is stated, unprobed variables earn nothing, and listing candidate values of a variable makes
  it false as soon as one of them is;
- never positive unless the answer is right: without a right answer only the loss applies, so
  a right answer reached through a false intermediate state scores strictly below the same
  answer with true ones, and a wrong answer never gains from its chain.

A backward chain is judged only when it answers the case's own call (another input has other
intermediate values). The term is summed with the outcome reward (TRL sums the recipe's rewards
with ``reward_weights``: :class:`codereasoner.training.rewards.ProcessReward` reads the code
reward's verdicts; verl's ``compute_score`` adds it, with its own verdict, when
``reward_kwargs.process_weight`` is set). Deterministic and bounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from codereasoner import values
from codereasoner.execution import CallSyntaxError, parse_call
from codereasoner.families.cases.reasoning import last_answer
from codereasoner.tasks import ParseFailure
from codereasoner.trace import ExecutionTrace
from codereasoner.values import top_level_indexes

if TYPE_CHECKING:
    from codereasoner.programs.probes import Probe

__all__ = [
    "COLUMN",
    "ProbedValue",
    "ProcessVerdict",
    "judge_chain",
    "parse_column",
    "probed_values",
    "probes_column",
    "process_score",
    "reasoning_text",
    "stated_values",
]

COLUMN = "probes"  # the RL rows' column, and the distilled records' field
BACKWARD = "backward"
MAX_ENTRIES = 8  # probed variables per row
MAX_VALUES = 24  # values kept per list (history, at_line)
MAX_VALUE_CHARS = 120  # a longer value is not kept (the entry is then incomplete)
MAX_COLUMN_CHARS = 8_000  # entries are dropped from the end until the JSON text fits


@dataclass(frozen=True)
class ProbedValue:
    """One probed variable of a call: ``complete`` is False when some of its values were not
    kept (not a literal, too long, too many), so statements about it are not judged."""

    name: str
    line: int
    truth: str
    history: tuple[str, ...]
    at_line: tuple[str, ...]
    complete: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "line": self.line,
            "truth": self.truth,
            "history": list(self.history),
            "at_line": list(self.at_line),
            "complete": self.complete,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbedValue:
        """ValueError naming the field that is not of its type."""
        fields = {"name": str, "line": int, "truth": str, "history": list, "at_line": list}
        for key, kind in fields.items():
            if type(data.get(key)) is not kind:
                raise ValueError(f"probed value: field {key!r} expected {kind.__name__}")
        texts = [*data["history"], *data["at_line"]]
        if any(type(text) is not str for text in texts):
            raise ValueError("probed value: history and at_line hold literal texts")
        return cls(
            name=data["name"],
            line=data["line"],
            truth=data["truth"],
            history=tuple(data["history"]),
            at_line=tuple(data["at_line"]),
            complete=data.get("complete", True) is True,
        )


def probed_values(trace: ExecutionTrace, probes: Sequence[Probe]) -> list[ProbedValue]:
    """The probed variables of ``trace`` (the entry frame instance, ``fid`` 0): one entry per
    probe that names a variable whose value its truth is (a count such as a loop's runs is no
    value of a variable), the first of each (name, line), at most ``MAX_ENTRIES``."""
    found: list[ProbedValue] = []
    seen: set[tuple[str, int]] = set()
    for probe in probes:
        if probe.name is None or (probe.name, probe.line) in seen:
            continue
        history, complete = _kept(_values_of(trace, probe.name, None))
        at_line, line_complete = _kept(_values_of(trace, probe.name, probe.line))
        if not any(_same(probe.truth, text) for text in history):
            continue
        seen.add((probe.name, probe.line))
        entry = ProbedValue(
            probe.name, probe.line, probe.truth, history, at_line, complete and line_complete
        )
        found.append(entry)
        if len(found) == MAX_ENTRIES:
            break
    return found


def _values_of(trace: ExecutionTrace, name: str, line: int | None) -> list[str | None]:
    """The texts ``name`` holds in the entry frame: every value it takes (``line`` None), or
    its value right after each run of ``line``."""
    state: dict[str, str | None] = {}
    texts: list[str | None] = []
    for step in trace.steps:
        if step.fid != 0:
            continue
        if step.args is not None:
            state = dict(step.args)
            if line is None and name in state:
                texts.append(state[name])
        state.update(step.changes)
        if line is None and name in step.changes:
            texts.append(step.changes[name])
        elif line is not None and step.line == line and name in state:
            texts.append(state[name])
    return texts


def _kept(texts: Sequence[str | None]) -> tuple[tuple[str, ...], bool]:
    """Distinct literal texts in order, and whether all of them were kept."""
    kept: list[str] = []
    complete = True
    for text in texts:
        if text is None or text in kept:
            continue  # None: the name was deleted
        if len(text) > MAX_VALUE_CHARS or _literal(text) is _NO_VALUE or len(kept) == MAX_VALUES:
            complete = False
            continue
        kept.append(text)
    return tuple(kept), complete


def probes_column(entries: Sequence[ProbedValue | Mapping[str, Any]]) -> str:
    """The JSON text of a row's ``probes`` column (bounded by ``MAX_COLUMN_CHARS``)."""
    dicts = [e.to_dict() if isinstance(e, ProbedValue) else dict(e) for e in entries]
    dicts = dicts[:MAX_ENTRIES]
    while True:
        text = json.dumps(dicts, ensure_ascii=False, separators=(",", ":"))
        if len(text) <= MAX_COLUMN_CHARS or not dicts:
            return text
        dicts.pop()


@lru_cache(maxsize=4096)
def parse_column(text: str) -> tuple[ProbedValue, ...]:
    """A ``probes`` column back as entries; ValueError when it is not one we write."""
    try:
        data = json.loads(text or "[]")
    except json.JSONDecodeError as exc:
        raise ValueError(f"probes column: not JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise ValueError("probes column: expected a JSON array")
    return tuple(ProbedValue.from_dict(entry) for entry in data if isinstance(entry, dict))


# ---------------------------------------------------------------------------------------
# statements in a chain of thought
# ---------------------------------------------------------------------------------------

_NO_VALUE = object()
_SEPARATOR = r"(?:=(?!=)|:(?!=)|\bis\s+now\b|\bis\b(?!\s+not\b)|\bbecomes\b|\bequals\b)"
_LINE_NUMBER = re.compile(r"\bline\s+(\d+)\b", re.I)
# what makes a literal the start of an expression: an operator, a subscript or call, an
# attribute, a conditional or a comprehension (prose such as "and" or "so" does not)
_CONTINUES = re.compile(r"(?!</?[A-Za-z]+>)(?:[-+*/%<>=&|^@\[(]|\.\w|(?:if|else|for)\b)")
_WORD = re.compile(r"[A-Za-z_]\w*")
_BOUNDARY = " \t,;<"  # "<": a tag such as </Reasoning> may follow a literal at once


@lru_cache(maxsize=65_536)
def _literal(text: str) -> object:
    try:
        return values.parse(text)
    except values.ValueParseError:
        return _NO_VALUE


def _same(a: str, b: str) -> bool:
    return values.equal(_literal(a), _literal(b), "lenient")


@lru_cache(maxsize=1024)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in sorted(set(names), key=len, reverse=True))
    return re.compile(rf"(?<![\w.`'\"])`?({alternatives})`?(?![\w\[(.])\s*{_SEPARATOR}[ \t]*")


def _end(text: str) -> int:
    """Where a literal at the start of ``text`` ends: before the first top-level space, comma,
    semicolon or ``<``, or a sentence's full stop (a literal has none of them outside its
    brackets and quotes), else at the end."""
    for index in top_level_indexes(text):
        char = text[index]
        stop = char in ".!?" and text[index + 1 : index + 2] in ("", " ", "\t", "<", ")")
        if index and (char in _BOUNDARY or stop):
            return index
    return len(text)


def _leading_literal(text: str) -> str | None:
    """The literal ``text`` starts with, when what follows does not continue it as an
    expression; None otherwise (prose, a name, an expression)."""
    end = _end(text)
    candidate = text[:end].strip("`")
    if not candidate or (_WORD.fullmatch(candidate) and candidate not in _KEYWORDS):
        return None
    rest = text[end:]
    after = rest.lstrip(" \t`")
    aside = rest[:1] in (" ", "\t") and after[:1] == "("  # "[1] (after line 7)": prose
    if _literal(candidate) is _NO_VALUE or (_CONTINUES.match(after) and not aside):
        return None
    return candidate


_KEYWORDS = frozenset({"True", "False", "None"})


def stated_values(text: str, names: Sequence[str]) -> list[tuple[str, str, int | None]]:
    """Each statement of a value of one of ``names`` in ``text``: (name, literal text, the
    line number the chain's line names, if exactly one), in order."""
    if not names:
        return []
    pattern = _pattern(tuple(sorted(set(names))))
    found: list[tuple[str, str, int | None]] = []
    for row in text.splitlines():
        if not any(name in row for name in names):
            continue
        numbers = {int(number) for number in _LINE_NUMBER.findall(row)}
        line = next(iter(numbers)) if len(numbers) == 1 else None
        for match in pattern.finditer(row):
            # a longer literal cannot be judged (no kept value is longer): the window bounds
            # the work per statement
            literal = _leading_literal(row[match.end() : match.end() + MAX_VALUE_CHARS + 1])
            if literal is not None:
                found.append((match.group(1), literal, line))
    return found


@dataclass(frozen=True)
class ProcessVerdict:
    """How a chain states the row's checkable probed variables (see the module)."""

    true: int  # variables stated, every statement of them true
    false: int  # variables with a false statement
    probed: int  # checkable probed variables of the row

    @property
    def stated(self) -> int:
        return self.true + self.false

    def score(self, weight: float, answer_right: bool) -> float:
        credit = self.true if answer_right else 0
        return weight * (credit - self.false) / self.probed if self.probed else 0.0


def reasoning_text(completion: str) -> str:
    """The chain of thought: the completion before its last ``<Answer>`` (all of it when none)."""
    cut = completion.lower().rfind("<answer>")
    return completion if cut < 0 else completion[:cut]


def judge_chain(completion: str, entries: Sequence[ProbedValue]) -> ProcessVerdict:
    """Judge each checkable probed variable the chain states (see the module)."""
    checkable = [entry for entry in entries if entry.complete]
    by_name: dict[str, list[ProbedValue]] = {}
    for entry in checkable:
        by_name.setdefault(entry.name, []).append(entry)
    truths: dict[str, set[bool]] = {}
    for name, literal, line in stated_values(reasoning_text(completion), list(by_name)):
        known = by_name[name]
        at_line = next((entry for entry in known if entry.line == line), None)
        allowed = at_line.at_line if at_line is not None else known[0].history
        truths.setdefault(name, set()).add(any(_same(literal, text) for text in allowed))
    false = sum(False in judged for judged in truths.values())
    return ProcessVerdict(len(truths) - false, false, len(by_name))


def process_score(
    completion: str,
    column: str,
    weight: float = 1.0,
    *,
    answer_right: bool,
    direction: str | None = None,
    call: str | None = None,
) -> float:
    """The process term of one completion given its row's ``probes`` column and whether its
    final answer is right (see the module).

    The probed values are those of the case's call: a backward chain that answers another
    call reasons about other values, so it is judged only when it answers the case's call
    (``direction`` and ``call``: the row's)."""
    if direction == BACKWARD and not _answers_call(completion, call or ""):
        return 0.0
    return judge_chain(completion, parse_column(column)).score(weight, answer_right)


def _answers_call(completion: str, call: str) -> bool:
    answer = last_answer(completion)
    if isinstance(answer, ParseFailure):
        return False
    try:
        return parse_call(answer.text).render() == parse_call(call).render()
    except CallSyntaxError:
        return False
