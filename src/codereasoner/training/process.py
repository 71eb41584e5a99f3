"""The process reward: a chain of thought gains credit for the computed intermediate values it
states rightly and loses for those it states wrongly; restating what the prompt shows earns
nothing.

Each RL row may carry a ``probes`` column (a JSON text, see :func:`probes_column`): per probed
variable of the case's call, its name, the probed line and truth, the distinct values the
variable takes in the entry frame of our trace (``history``, in order), right after each run of
the probed line (``at_line``), that line's value in each loop iteration (``runs``, by iteration
label such as ``2`` or ``2.3``), and the values that earn credit (``credited``). distill
computes it from the trace, the code and the call (:func:`probed_values`); at reward time
nothing runs.

**What earns.** A value is ``credited`` only when it is *computed*: a value the variable takes
after its first one (a first value is an argument, an initialisation or one expression of
them, all readable or nearly so from the prompt), and that is no literal visible in the code or
in the call (``0`` from ``total = 0``, ``1`` from ``i += 1``, ``'a'`` from ``f('abc', 'a')``, any
element of a literal shown). A variable with no credited value cannot earn; it can still cost.

A chain states a probed variable's value with ``name = <literal>``, ``name is <literal>``,
``name is now <literal>``, ``name becomes <literal>``, ``name equals <literal>`` or
``name: <literal>`` (the name may be in backticks); the literal is parsed, never evaluated, and a
statement whose literal continues as an expression (``total = 3 + 4``) is no statement. Only
the reasoning counts (the text before the last ``<Answer>``). A statement is **false** when the
variable never takes that value in the trace; when the chain's line names ``line N``, the
probed line of that variable, the value must be one it holds right after that line ran, and
when the line also names an iteration (``iteration 2``, ``iter 2.1``), the value it holds right
after that line ran in that iteration. Values are compared as
:func:`codereasoner.values.equal` leniently, as probe answers are graded. Statements about a
variable whose values were not all kept (a marker such as ``<Node object>``, or over the bounds)
are not counted: they cannot be checked.

Each checkable probed variable of the row is judged once, from all the chain says of it:
**false** when any statement of it is false (a variable stated with a true and a false value
counts as false); **true** when every statement of it is true and one of them states a
credited value; otherwise **restated** (only uncredited values, all true) or unstated. With
``creditable`` variables (checkable, with a credited value), ``true`` and ``false`` of them
judged so, and ``right`` whether the completion's final answer is right (the outcome reward's
verdict)::

    process = weight * clip((right * true - false) / creditable, -1, 1)

(the divisor is the checkable variables when none is creditable; 0 when nothing is probed).

- restating gains nothing: first values, arguments and literals of the prompt are true but
  earn 0, so a chain that restates them scores 0 at best;
- padding gains nothing: a variable earns once however often or in however many true values it
  is stated, unprobed variables earn nothing, and listing candidate values of a variable makes
  it false as soon as one of them is;
- a chain that states every creditable variable's computed values rightly, with a right answer,
  scores the maximum, ``+weight``;
- bounded in ``[-weight, +weight]``, and never positive unless the answer is right: without a
  right answer only the loss applies.

A backward chain is judged only when it answers the case's own call (another input has other
intermediate values). A column written before ``credited`` existed credits nothing (distil
again to get it). The term is summed with the outcome reward (TRL sums the recipe's rewards
with ``reward_weights``: :class:`codereasoner.training.rewards.ProcessReward` reads the code
reward's verdicts; verl's ``compute_score`` adds it, with its own verdict, when
``reward_kwargs.process_weight`` is set). Deterministic and bounded.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from codereasoner import values
from codereasoner.execution import CallSyntaxError, parse_call
from codereasoner.families.cases.reasoning import last_answer
from codereasoner.tasks import ParseFailure
from codereasoner.trace import ExecutionTrace, Step
from codereasoner.values import top_level_indexes

if TYPE_CHECKING:
    from codereasoner.programs.probes import Probe

__all__ = [
    "COLUMN",
    "ProbedValue",
    "ProcessVerdict",
    "Statement",
    "judge_chain",
    "parse_column",
    "probed_values",
    "probes_column",
    "process_score",
    "reasoning_text",
    "stated_values",
    "visible_literals",
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
    kept (not a literal, too long, too many), so statements about it are not judged;
    ``credited`` are the values that earn (see the module), ``runs`` the probed line's value by
    loop iteration label."""

    name: str
    line: int
    truth: str
    history: tuple[str, ...]
    at_line: tuple[str, ...]
    complete: bool = True
    credited: tuple[str, ...] = ()
    runs: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "line": self.line,
            "truth": self.truth,
            "history": list(self.history),
            "at_line": list(self.at_line),
            "complete": self.complete,
            "credited": list(self.credited),
            "runs": [list(run) for run in self.runs],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbedValue:
        """ValueError naming the field that is not of its type."""
        fields = {"name": str, "line": int, "truth": str, "history": list, "at_line": list}
        for key, kind in fields.items():
            if type(data.get(key)) is not kind:
                raise ValueError(f"probed value: field {key!r} expected {kind.__name__}")
        credited = data.get("credited", [])
        texts = [*data["history"], *data["at_line"], *(credited if type(credited) is list else [0])]
        if any(type(text) is not str for text in texts):
            raise ValueError("probed value: history, at_line and credited hold literal texts")
        runs = data.get("runs", [])
        if type(runs) is not list or not all(_is_run(run) for run in runs):
            raise ValueError("probed value: field 'runs' expected [iteration, literal] pairs")
        return cls(
            name=data["name"],
            line=data["line"],
            truth=data["truth"],
            history=tuple(data["history"]),
            at_line=tuple(data["at_line"]),
            complete=data.get("complete", True) is True,
            credited=tuple(credited),
            runs=tuple((run[0], run[1]) for run in runs),
        )


def _is_run(run: object) -> bool:
    return type(run) is list and len(run) == 2 and all(type(part) is str for part in run)


def probed_values(
    trace: ExecutionTrace, probes: Sequence[Probe], *, code: str = "", call: str = ""
) -> list[ProbedValue]:
    """The probed variables of ``trace`` (the entry frame instance, ``fid`` 0): one entry per
    probe that names a variable whose value its truth is (a count such as a loop's runs is no
    value of a variable), the first of each (name, line), at most ``MAX_ENTRIES``. ``code`` and
    ``call`` are what the prompt shows: their literals earn no credit."""
    found: list[ProbedValue] = []
    seen: set[tuple[str, int]] = set()
    shown = visible_literals(code, call)
    for probe in probes:
        if probe.name is None or (probe.name, probe.line) in seen:
            continue
        history, complete = _kept(_values_of(trace, probe.name, None))
        at_line, line_complete = _kept(_values_of(trace, probe.name, probe.line))
        if not any(_same(probe.truth, text) for text in history):
            continue
        seen.add((probe.name, probe.line))
        credited = tuple(text for text in history[1:] if not _shown(text, shown))
        entry = ProbedValue(
            probe.name,
            probe.line,
            probe.truth,
            history,
            at_line,
            complete and line_complete,
            credited,
            _runs(trace, probe.name, probe.line),
        )
        found.append(entry)
        if len(found) == MAX_ENTRIES:
            break
    return found


def visible_literals(code: str, call: str) -> list[object]:
    """Every literal the prompt shows: each constant, container display or negative number of
    ``code`` and ``call`` whose value is a literal, the elements inside them included."""
    shown: list[object] = []
    for text in (code, call):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in _literal_nodes(tree):
            try:
                shown.append(ast.literal_eval(node))
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                continue
    return shown


_LITERAL_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp)


def _literal_nodes(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, _LITERAL_NODES):
            yield node


def _shown(text: str, shown: Sequence[object]) -> bool:
    value = _literal(text)
    return any(values.equal(value, literal, "lenient") for literal in shown)


def _runs(trace: ExecutionTrace, name: str, line: int) -> tuple[tuple[str, str], ...]:
    """``name`` right after ``line`` ran in each loop iteration, by iteration label (``2``, or
    ``2.3`` for nested loops), the first ``MAX_VALUES`` iterations whose value is kept."""
    runs: dict[str, str] = {}
    for step, text in _after_runs(trace, name, line):
        if not step.loops or text is None:
            continue
        label = step.iteration_label
        # a loop's header runs once more, in its last iteration, to leave the loop: the
        # iteration's value is the first one
        if label not in runs and len(text) <= MAX_VALUE_CHARS and _literal(text) is not _NO_VALUE:
            runs[label] = text
            if len(runs) == MAX_VALUES:
                break
    return tuple(runs.items())


def _values_of(trace: ExecutionTrace, name: str, line: int | None) -> list[str | None]:
    """The texts ``name`` holds in the entry frame: every value it takes (``line`` None), or
    its value right after each run of ``line``."""
    if line is not None:
        return [text for _, text in _after_runs(trace, name, line)]
    texts: list[str | None] = []
    for step in trace.steps:
        if step.fid != 0:
            continue
        if step.args is not None and name in step.args:
            texts.append(step.args[name])
        if name in step.changes:
            texts.append(step.changes[name])
    return texts


def _after_runs(trace: ExecutionTrace, name: str, line: int) -> Iterator[tuple[Step, str | None]]:
    """Each run of ``line`` in the entry frame where ``name`` is bound, with its text right
    after the run (None: deleted)."""
    state: dict[str, str | None] = {}
    for step in trace.steps:
        if step.fid != 0:
            continue
        if step.args is not None:
            state = dict(step.args)
        state.update(step.changes)
        if step.line == line and name in state:
            yield step, state[name]


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
_ITERATION = re.compile(r"\biter(?:ation)?\s+(\d+(?:\.\d+)*)\b", re.I)
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


class Statement(NamedTuple):
    """A value a chain states: the name, the literal's text, and the line and loop iteration
    the chain's line names (when it names exactly one)."""

    name: str
    literal: str
    line: int | None = None
    iteration: str | None = None


def stated_values(text: str, names: Sequence[str]) -> list[Statement]:
    """Each statement of a value of one of ``names`` in ``text``, in order."""
    if not names:
        return []
    pattern = _pattern(tuple(sorted(set(names))))
    found: list[Statement] = []
    for row in text.splitlines():
        if not any(name in row for name in names):
            continue
        numbers = {int(number) for number in _LINE_NUMBER.findall(row)}
        line = next(iter(numbers)) if len(numbers) == 1 else None
        labels = set(_ITERATION.findall(row))
        iteration = next(iter(labels)) if len(labels) == 1 else None
        for match in pattern.finditer(row):
            # a longer literal cannot be judged (no kept value is longer): the window bounds
            # the work per statement
            literal = _leading_literal(row[match.end() : match.end() + MAX_VALUE_CHARS + 1])
            if literal is not None:
                found.append(Statement(match.group(1), literal, line, iteration))
    return found


@dataclass(frozen=True)
class ProcessVerdict:
    """How a chain states the row's checkable probed variables (see the module)."""

    true: int  # variables stated, every statement true, one of them a credited value
    false: int  # variables with a false statement
    creditable: int  # checkable probed variables with a credited value
    checkable: int = 0  # checkable probed variables of the row
    restated: int = 0  # variables stated, every statement true, none credited

    @property
    def stated(self) -> int:
        return self.true + self.false + self.restated

    def score(self, weight: float, answer_right: bool) -> float:
        divisor = self.creditable or self.checkable
        if not divisor:
            return 0.0
        credit = self.true if answer_right else 0
        return weight * max(-1.0, min(1.0, (credit - self.false) / divisor))


def reasoning_text(completion: str) -> str:
    """The chain of thought: the completion before its last ``<Answer>`` (all of it when none)."""
    cut = completion.lower().rfind("<answer>")
    return completion if cut < 0 else completion[:cut]


def judge_chain(completion: str, entries: Sequence[ProbedValue]) -> ProcessVerdict:
    """Judge each checkable probed variable the chain states (see the module)."""
    by_name: dict[str, list[ProbedValue]] = {}
    for entry in entries:
        if entry.complete:
            by_name.setdefault(entry.name, []).append(entry)
    judged: dict[str, set[tuple[bool, bool]]] = {}  # name -> {(true, credited)}
    for statement in stated_values(reasoning_text(completion), list(by_name)):
        known = by_name[statement.name]
        allowed = _allowed(known, statement)
        held = any(_same(statement.literal, text) for text in allowed)
        earns = held and any(_same(statement.literal, text) for text in known[0].credited)
        judged.setdefault(statement.name, set()).add((held, earns))
    false = sum(any(not held for held, _ in found) for found in judged.values())
    true = sum(
        all(held for held, _ in found) and any(earns for _, earns in found)
        for found in judged.values()
    )
    creditable = sum(any(entry.credited for entry in known) for known in by_name.values())
    return ProcessVerdict(true, false, creditable, len(by_name), len(judged) - true - false)


def _allowed(known: Sequence[ProbedValue], statement: Statement) -> tuple[str, ...]:
    """The values a statement may state: right after the probed line it names (in the
    iteration it names, when that run was kept), else any the variable takes."""
    at_line = next((entry for entry in known if entry.line == statement.line), None)
    if at_line is None:
        return known[0].history
    run = dict(at_line.runs).get(statement.iteration or "")
    return (run,) if statement.iteration is not None and run is not None else at_line.at_line


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
