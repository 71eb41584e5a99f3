"""REval ground truth from our tracer: upstream's "states" rebuilt from an ExecutionTrace.

Upstream (``dynamics.py``; docs/benchmark-rules.md) records one *state* per run of equal line numbers
over the ``line``, ``return`` and ``exception`` events of the benchmark code's frames, across
frames: a new state whenever the line differs from the previous state's, else the event merges
into it (a line event replaces the state's locals). How each REval definition maps onto our trace:

* Line events are our steps, one for one (the tracer records every ``line`` event of the
  ``<program>`` frames), so a state's locals are those of its *last* merged step's frame at that
  step's event: the frame's ``args`` plus the ``changes`` of its earlier steps. Our after-line
  ``changes`` are observed at the frame's next event, which is exactly that line event.
* ``return`` / ``exception`` events are not steps. A frame returns (or yields, or raises) after
  its step's callees have run: we place that event where the step's *span* ends, i.e. before the
  next step whose ``depth`` is not greater, innermost frames first. Such an event opens a new
  state (with no locals) when the previous state's line differs: e.g. ``return self.h(x)`` gives
  the states ``4, 9, 4``, so line 4 has two "next lines" and a state without locals.
* Coverage: the line is among the states' lines (the same as among the steps' lines).
* Path: for every state on the line, the next state's line, or -1 for the last state;
  ``{-1}`` for a line that never ran. A next state may be in another frame, also a method the
  test calls later (upstream: the next *traced* state, wherever it is).
* State: for every state on the line, the locals of the *next* state (the last state uses its
  own, i.e. the locals before it ran); the variable expression is evaluated over that list with
  upstream's rules (names collected across states, attributes, subscripts and tuples as
  cross products; unsupported syntax or an error gives Nil). Values come from our trace when
  the expression has no attribute access and every name involved has a literal rendering in
  those states; otherwise from the *probe* (reval_programs): a second sandboxed run that deep
  copies the named locals at exactly those step indices (checked by line number) and evaluates
  the same rules there, because the trace renders objects such as ``self`` as ``<A object>``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from codereasoner import values
from codereasoner.execution import Batch, Call, Executor, Limits, TraceOptions
from codereasoner.families.reval.programs import (
    CASE_ENTRY,
    PROBE_ENTRY,
    pair_program,
    probe_program,
)
from codereasoner.families.reval.vars import node_values
from codereasoner.trace import ExecutionTrace, TracedCall, trace_batches

__all__ = [
    "GT_LIMITS",
    "GT_TRACE",
    "Pair",
    "PairTruth",
    "StateSeq",
    "TruthError",
    "compute_truth",
    "evaluate_var",
    "reval_states",
]

MAX_VALUE_CHARS = 20_000
GT_TRACE = TraceOptions(
    max_steps=500_000, max_value_chars=MAX_VALUE_CHARS, max_trace_chars=200_000_000
)
GT_LIMITS = Limits(timeout_s=60.0, memory_mb=4096, max_value_chars=50_000_000)
Value = list[Any]  # [type name, rendered text or None]


class TruthError(Exception):
    """A reference run failed; the message is one line."""


@dataclass(frozen=True)
class Pair:
    """One (program, input) with its line questions ``(lineno, var)`` and output question."""

    row: Mapping[str, Any]
    input_idx: int
    questions: tuple[tuple[int, str], ...]
    output_pred: str

    @property
    def key(self) -> str:
        return f"{self.row['task_id']}/{self.input_idx}"


@dataclass(frozen=True)
class StateSeq:
    """Upstream's states: line numbers, and the step index of each state's last line event
    (``None`` for a state opened by a return or exception event that no line event joined)."""

    lines: tuple[int, ...]
    events: tuple[int | None, ...]

    def coverage(self, line: int) -> bool:
        return line in self.lines

    def next_lines(self, line: int) -> list[int]:
        found = {
            self.lines[k + 1] if k + 1 < len(self.lines) else -1
            for k, here in enumerate(self.lines)
            if here == line
        }
        return sorted(found or {-1})

    def after_events(self, line: int) -> list[int | None]:
        """For each state on ``line``: the last line event of the state after it (or its own)."""
        last = len(self.lines) - 1
        return [self.events[min(k + 1, last)] for k, here in enumerate(self.lines) if here == line]


def reval_states(trace: ExecutionTrace) -> StateSeq:
    """Rebuild upstream's state sequence from our steps (see the module docstring)."""
    lines: list[int] = []
    events: list[int | None] = []

    def add(line: int, step: int | None) -> None:
        if not lines or lines[-1] != line:
            lines.append(line)
            events.append(step)
        elif step is not None:
            events[-1] = step

    open_steps: list[tuple[int, int, bool]] = []  # (depth, line, the frame left after it)
    for index, step in enumerate(trace.steps):
        while open_steps and open_steps[-1][0] >= step.depth:
            _, line, leaves = open_steps.pop()
            if leaves:
                add(line, None)
        add(step.line, index)
        leaves = step.ret is not None or step.yielded is not None or step.exc is not None
        open_steps.append((step.depth, step.line, leaves))
    while open_steps:
        _, line, leaves = open_steps.pop()
        if leaves:
            add(line, None)
    return StateSeq(tuple(lines), tuple(events))


def locals_at(trace: ExecutionTrace, wanted: Iterable[int]) -> dict[int, dict[str, str]]:
    """The rendered locals of each wanted step's frame at its line event (before it runs)."""
    wanted = set(wanted)
    frames: dict[int, dict[str, str | None]] = {}
    found: dict[int, dict[str, str]] = {}
    for index, step in enumerate(trace.steps):
        state = frames.get(step.fid)
        if state is None or step.args is not None:
            state = frames[step.fid] = dict(step.args or {})
        if index in wanted:
            found[index] = {name: text for name, text in state.items() if text is not None}
        state.update(step.changes)
    return found


def names_in(expression: str) -> list[str] | None:
    """Names the expression reads, or None if upstream's interpreter cannot evaluate it."""
    try:
        tree = ast.parse(expression)
    except (SyntaxError, ValueError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    return sorted({node.id for node in ast.walk(tree.body[0]) if isinstance(node, ast.Name)})


def _has_attribute(expression: str) -> bool:
    return any(isinstance(node, ast.Attribute) for node in ast.walk(ast.parse(expression)))


def evaluate_var(expression: str, after: Sequence[Mapping[str, object]]) -> list[object] | None:
    """Upstream's VarInterpreter over plain values; None is Nil."""
    try:
        return node_values(ast.parse(expression).body[0].value, after)  # type: ignore[attr-defined]
    except Exception:
        return None


def show(value: object) -> Value:
    kind = type(value)
    return [kind.__qualname__, values.render(value, max_chars=MAX_VALUE_CHARS)]


def unique(shown: Sequence[Value]) -> list[Value]:
    """Expected values without repeats, in first-seen order (only membership is graded)."""
    seen: set[tuple[str, str | None]] = set()
    out = []
    for kind, text in shown:
        if (kind, text) not in seen:
            seen.add((kind, text))
            out.append([kind, text])
    return out


@dataclass
class PairTruth:
    """Ground truth of one pair: per line question, and the traced output."""

    coverage: list[bool]
    path: list[list[int]]
    state: list[list[Value] | None]
    origin: list[str]  # "trace", "probe" or "not run"
    output: str | None  # HumanEval: the traced return value; ClassEval: None
    steps: int
    probe: dict[int, list[Any]] = field(default_factory=dict)  # question -> [var, events]
    event_lines: dict[int, int] = field(default_factory=dict)  # probed step -> traced line

    def to_json(self) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "path": self.path,
            "state": self.state,
            "origin": self.origin,
            "output": self.output,
            "steps": self.steps,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairTruth:
        return cls(
            list(data["coverage"]),
            [list(p) for p in data["path"]],
            list(data["state"]),
            list(data["origin"]),
            data["output"],
            int(data["steps"]),
        )


def from_trace(pair: Pair, traced: TracedCall) -> PairTruth:
    """Coverage, path and (where the trace suffices) state of one pair; the rest is planned
    for the probe in ``truth.probe``."""
    trace = traced.trace
    if not traced.result.ok or trace is None or trace.partial:
        reason = traced.result.describe() if not traced.result.ok else "the trace is incomplete"
        if trace is not None and trace.partial_reason:
            reason += f" ({trace.partial_reason})"
        raise TruthError(f"{pair.key}: the reference run failed: {reason}")
    states = reval_states(trace)
    output = trace.return_value if pair.row["test"] is None else None
    truth = PairTruth([], [], [], [], output, len(trace.steps))
    needed = {e for line, _ in pair.questions for e in states.after_events(line) if e is not None}
    known = locals_at(trace, needed)
    for number, (line, var) in enumerate(pair.questions):
        truth.coverage.append(states.coverage(line))
        truth.path.append(states.next_lines(line))
        events = [e for e in states.after_events(line) if e is not None]
        names = names_in(var)
        if not states.coverage(line) or names is None:
            truth.state.append(None)
            truth.origin.append("not run" if not states.coverage(line) else "trace")
            continue
        texts = [{n: known[e][n] for n in names if n in known[e]} for e in events]
        if _has_attribute(var) or any(t.startswith("<") for s in texts for t in s.values()):
            truth.state.append(None)
            truth.origin.append("probe")
            truth.probe[number] = [var, events]
            truth.event_lines.update((e, trace.steps[e].line) for e in events)
            continue
        after = [{name: values.parse(text) for name, text in s.items()} for s in texts]
        found = evaluate_var(var, after)
        truth.state.append(None if found is None else unique([show(value) for value in found]))
        truth.origin.append("trace")
    return truth


def probe_plan(pair: Pair, questions: Mapping[int, Sequence[Any]], record: bool) -> dict[str, Any]:
    """The probe's argument: which locals to copy at which step, and what to evaluate."""
    snap: dict[int, list[str]] = {}
    for var, events in questions.values():
        for event in events:
            snap[event] = sorted({*snap.get(event, []), *(names_in(var) or [])})
    return {
        "snap": snap,
        "record": record,
        "max_chars": MAX_VALUE_CHARS,
        "questions": [[number, var, list(events)] for number, (var, events) in questions.items()],
    }


def run_probe(
    pool: Executor, jobs: Sequence[tuple[Pair, dict[str, Any]]], limits: Limits = GT_LIMITS
) -> list[dict[str, Any]]:
    """Run the probe for each (pair, plan); one-line TruthError on any failure."""
    batches = [
        Batch(probe_program(pair.row, pair.input_idx), [Call(PROBE_ENTRY, (plan,))], limits)
        for pair, plan in jobs
    ]
    found: list[dict[str, Any]] = []
    for (pair, _), (result,) in zip(jobs, pool.map(batches), strict=True):
        if not result.ok or not result.is_literal:
            raise TruthError(f"{pair.key}: the state probe failed: {result.describe()}")
        text = result.value or ""
        parsed = values.parse(text, max_chars=limits.max_value_chars, max_nodes=10**7)
        if not isinstance(parsed, dict):
            raise TruthError(f"{pair.key}: the state probe returned {type(parsed).__name__}")
        found.append(parsed)
    return found


def compute_truth(
    pairs: Sequence[Pair], pool: Executor, limits: Limits = GT_LIMITS
) -> dict[str, PairTruth]:
    """Ground truth of every pair: one traced run each, then probes where needed."""
    work = [(pair_program(pair.row, pair.input_idx), [Call(CASE_ENTRY)]) for pair in pairs]
    truths: dict[str, PairTruth] = {}
    failures: list[str] = []
    for pair, (traced,) in zip(pairs, trace_batches(pool, work, GT_TRACE, limits), strict=True):
        try:
            truths[pair.key] = from_trace(pair, traced)
        except TruthError as exc:
            failures.append(str(exc))
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise TruthError(failures[0] + more)
    jobs = [(p, probe_plan(p, truths[p.key].probe, False)) for p in pairs if truths[p.key].probe]
    for (pair, plan), found in zip(jobs, run_probe(pool, jobs, limits), strict=True):
        truth = truths[pair.key]
        for event, line in found["lines"].items():
            expected = truth.event_lines.get(event)
            if line != expected:
                raise TruthError(
                    f"{pair.key}: the probe saw line {line} at step {event}, the "
                    f"trace line {expected}"
                )
        missing = set(plan["snap"]) - set(found["lines"])
        if missing:
            raise TruthError(f"{pair.key}: the probe never reached step {min(missing)}")
        for number in truth.probe:
            shown = found["values"][number]
            truth.state[number] = None if shown is None else unique(shown)
    return truths
