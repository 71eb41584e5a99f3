"""Exact intermediate-state probes from our traces, in CoRE's four dimensions.

CONTRACT (other modules rely on these names and fields):

    probes = probes_for(source, trace, frame="f", limit=8, rng=random.Random(0))

Every probe is phrased only with what a model sees: 1-based line numbers of ``source`` as
shown, the line's code quoted, and loop variables' values (or the ordinal of an iteration);
never trace step numbers. Its ``truth`` is read from the trace, never from a model.

Kinds (dimensions):

- ``loop_value`` (State): a variable right after a line runs, in a named loop iteration;
  ``value`` (State) the same outside loops;
- ``arithmetic`` (Arithmetic, plus State in a loop): such a line with two or more arithmetic
  operators or arithmetic in an index;
- ``condition`` (Logic; plus Arithmetic for an arithmetic test, Boundary for a ``while``
  test): the outcome of a test;
- ``accumulator`` (State): a variable after the k-th run of a line that updates it;
- ``after_loop`` (State, Boundary): a variable right after a loop finishes (not by ``return``);
- ``loop_exit`` (Boundary): how many iterations of a loop enter its body (left by ``break`` or
  ``return`` included);
- ``call_return`` (State, or Logic for a bool): what the k-th call of a helper returns;
- ``return`` (State, plus Arithmetic): what a ``return`` line of the entry returns.

``value`` and ``return`` are fallbacks, picked after every other kind ran out. Apart from
``call_return``, only the entry frame instance (``fid`` 0) is probed, and only lines that hold
one statement whose code (the header, for ``if``/``while``/``for``) fits on the line.

``locator`` tells an independent instrumentation where the truth is; occurrences count from 1
within the entry frame:

- ``{"event": "after_line", "line", "occurrence", "name"}``: ``name`` right after the
  occurrence-th run of the statement on ``line``;
- ``{"event": "condition", "line", "occurrence"}``: the occurrence-th evaluation of its test;
- ``{"event": "after_loop", "line", "occurrence", "name"}``: ``name`` right after the
  occurrence-th run of the loop statement on ``line``;
- ``{"event": "loop_count", "line", "occurrence"}``: body entries in that run of the loop;
- ``{"event": "return", "line", "occurrence": 1}``: the entry's return value;
- ``{"event": "call_return", "function", "occurrence"}``: the value the occurrence-th call of
  ``function`` (counting every call, the entry's own included) returns.
"""

from __future__ import annotations

import ast
import math
import random
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field

from codereasoner import values
from codereasoner.programs import probe_text as text
from codereasoner.programs.probe_source import Line, Source, analyse, names_of_loop
from codereasoner.trace import ExecutionTrace, Step

__all__ = ["DIMENSIONS", "FALLBACK_KINDS", "KINDS", "MAX_TRUTH_CHARS", "Probe", "probes_for"]

DIMENSIONS = ("Arithmetic", "Logic", "State", "Boundary")
KINDS: tuple[str, ...] = (
    "loop_value",
    "arithmetic",
    "condition",
    "after_loop",
    "accumulator",
    "loop_exit",
)
KINDS += ("call_return", "value", "return")
FALLBACK_KINDS = ("value", "return")
MAX_TRUTH_CHARS = 200
_MAX_NAMING_CHARS = 40  # a loop variable's value longer than this names no iteration
_JITTER = 0.6  # weight of chance against difficulty when ranking candidates (keeps a spread)
Loops = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Probe:
    kind: str  # e.g. loop_value, condition, after_loop, accumulator, loop_exit, arithmetic
    question: str
    truth: str  # canonical literal text (values.render); values.parse reads it
    dimensions: tuple[str, ...]  # a non-empty subset of DIMENSIONS, in that order
    line: int  # 1-based line of ``source`` the probe targets
    step: int  # 0-based index of the target step in the trace (hidden: never in the question)
    name: str | None = None  # the variable asked about, when there is one
    trace_distance: int = 0  # line events from the call's start to the target (step + 1)
    nesting_depth: int = 0  # loops and ifs enclosing the target line
    operators: int = 0  # operators in the target line's expression(s)
    # machine-readable locator for independent checks (instrumentation), e.g.
    # {"event": "after_line", "line": 6, "occurrence": 3, "name": "total"}
    locator: Mapping[str, object] = field(default_factory=dict)
    answer_type: str = ""  # the truth's type name: int, bool, list, ...

    def to_dict(self) -> dict[str, object]:
        """Every field, JSON-ready (``dimensions`` a list, ``locator`` a dict)."""
        out = asdict(self)
        out["dimensions"] = list(self.dimensions)
        out["locator"] = dict(self.locator)
        return out


# ---------------------------------------------------------------------------------------
# the trace: the entry frame's line events, the locals after each, its loops
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    index: int  # in trace.steps
    step: Step
    state: Mapping[str, str]  # locals right after the line ran
    context: Loops  # enclosing loop iterations, a loop header's own loop left out
    occurrence: int  # runs of this line in the frame so far, this one included
    local: int  # runs of this line in the same context so far, this one included


@dataclass
class _Run:
    """One run of a loop statement: its events and, per iteration, the header's locals."""

    first: int  # position in events
    last: int
    occurrence: int  # runs of this loop statement in the frame so far
    headers: dict[int, Mapping[str, str]] = field(default_factory=dict)
    entered: set[int] = field(default_factory=set)  # iterations that entered the body
    checks: int = 0  # header events so far
    numbered: bool = True  # iterations counted as they should be (see _Frame._count)


class _Frame:
    """The entry frame instance's events, with what naming its loop iterations needs."""

    def __init__(self, source: Source, trace: ExecutionTrace, frame: str) -> None:
        self.source = source
        self.events: list[_Event] = []
        self.runs: dict[tuple[Loops, int], _Run] = {}  # (outer iterations, loop line) -> run
        self.repeats: dict[tuple[int, Loops], int] = {}  # (line, context) -> runs there
        self.misnumbered: set[int] = set()  # loops whose iterations the trace counts wrongly
        # lines that raised at least once: whether a run that raised counts would be unclear
        self.raised = {step.line for step in trace.steps if step.fid == 0 and step.exc}
        state: dict[str, str | None] = {}
        overall: dict[int, int] = {}
        loop_runs: dict[int, int] = {}
        for index, step in enumerate(trace.steps):
            if step.fid != 0 or step.frame != frame:
                continue
            state = dict(step.args) if step.args is not None else state
            state.update(step.changes)
            own = bool(step.loops) and step.loops[-1][0] == step.line
            context = step.loops[:-1] if own else step.loops
            key = (step.line, context)
            self.repeats[key] = self.repeats.get(key, 0) + 1
            overall[step.line] = overall.get(step.line, 0) + 1
            after = {name: value for name, value in state.items() if value is not None}
            event = _Event(index, step, after, context, overall[step.line], self.repeats[key])
            self._enter_loops(event, len(self.events), loop_runs)
            self.events.append(event)
        # a cut trace may lack the effects of the frame's last line
        self.probed = len(self.events) - 1 if trace.partial else len(self.events)
        # iterations still running where a cut trace ends: what comes after is unknown
        self.open: Loops = self.events[-1].step.loops if trace.partial and self.events else ()

    def cut_short(self, context: Loops) -> bool:
        """Whether the trace ends inside the iteration ``context`` names, so that the lines
        that run in it may not all be seen."""
        return bool(context) and self.open[: len(context)] == context

    def _enter_loops(self, event: _Event, position: int, loop_runs: dict[int, int]) -> None:
        loops = event.step.loops
        for depth, (line, number) in enumerate(loops):
            key = (loops[:depth], line)
            run = self.runs.get(key)
            if run is None:
                loop_runs[line] = loop_runs.get(line, 0) + 1
                run = self.runs[key] = _Run(position, position, loop_runs[line])
            run.last = position
            header = event.step.line == line and depth == len(loops) - 1
            run.numbered = run.numbered and self._count(run, number, header)
            if header:
                run.headers.setdefault(number, event.state)
            else:
                run.entered.add(number)
            if not run.numbered:
                self.misnumbered.add(line)

    @staticmethod
    def _count(run: _Run, number: int, header: bool) -> bool:
        """Whether the tracer's iteration number is the expected one: the k-th header check
        starts iteration k, and only the last check (leaving the loop) may repeat the number of
        the one before; the body's lines share the number of the check before them. A loop
        miscounted once (as where bytecode needs EXTENDED_ARG before FOR_ITER) names no
        iteration."""
        if not header:
            return run.checks > 0 and number == len(run.headers)
        run.checks += 1
        if run.checks == 1:
            return number == 1
        left = run.checks - 1 > len(run.headers)  # an earlier check already repeated
        return not left and number in (len(run.headers), len(run.headers) + 1)

    def _naming(self, outer: Loops, line: int, run: _Run) -> str | None:
        """A loop variable whose value differs in every iteration that entered the body."""
        depth = len(outer)
        if len(self.open) > depth and self.open[:depth] == outer and self.open[depth][0] == line:
            return None  # the run is cut short: later iterations may repeat a value
        for name in self.source.loop_names.get(line, ()):
            seen = [run.headers.get(number, {}).get(name) for number in run.entered]
            if len(set(seen)) == len(seen) and all(
                value is not None and not value.startswith("<") and len(value) <= _MAX_NAMING_CHARS
                for value in seen
            ):
                return name
        return None

    def describe(self, context: Loops) -> text.Context | None:
        """How a question names the iterations of ``context`` (None: a loop it cannot quote)."""
        levels = []
        for depth, (line, number) in enumerate(context):
            info = self.source.lines.get(line)
            run = self.runs.get((context[:depth], line))
            if info is None or run is None or line in self.misnumbered:
                return None
            name = self._naming(context[:depth], line, run)
            value = None if name is None else run.headers.get(number, {}).get(name)
            levels.append(text.Iteration(line, info.code, number, name, value))
        return tuple(levels)


# ---------------------------------------------------------------------------------------
# candidates: cheap to list, phrased only when picked
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    kind: str
    dimensions: tuple[str, ...]
    score: float
    line: int  # the line asked about (a loop's header for loop-level kinds)
    event: _Event  # the step after which the truth holds
    locator: dict[str, object]
    name: str | None = None
    context: Loops = ()  # the iterations the question names
    repeat: int | None = None  # which run of the line in that context, when it runs repeatedly
    truth: str | None = None  # known without reading ``name`` from the state


def _canonical(value: str | None) -> str | None:
    if value is None or value.startswith("<") or len(value) > MAX_TRUTH_CHARS:
        return None
    try:
        rendered = values.render(values.parse(value))
    except (values.ValueParseError, values.NotALiteral, values.RenderLimitExceeded):
        return None
    return rendered if len(rendered) <= MAX_TRUTH_CHARS else None


def _score(event: _Event, info: Line) -> float:
    """Higher for what CoRE calls error-prone: far into the call, deep, many operators."""
    distance = min(1.0, math.log1p(event.index + 1) / math.log1p(400))
    return 0.4 * distance + 0.1 * min(info.depth, 3) + 0.075 * min(info.operators, 4)


def _line_targets(frame: _Frame) -> Iterator[_Target]:
    for event in frame.events[: frame.probed]:
        line, step = event.step.line, event.step
        info = frame.source.lines.get(line)
        if info is None or line in frame.raised or frame.cut_short(event.context):
            continue
        repeat = event.local if frame.repeats[line, event.context] > 1 else None
        score = _score(event, info) + 0.05 * len(event.context)
        if (
            step.cond is not None
            and isinstance(info.node, ast.If | ast.While)
            and not isinstance(info.node.test, ast.Constant)
        ):
            dims = ("Arithmetic",) * info.arithmetic + ("Logic",)
            dims += ("Boundary",) * isinstance(info.node, ast.While)
            locator = {"event": "condition", "line": line, "occurrence": event.occurrence}
            truth = str(step.cond)
            score += 0.3 * info.compound
            yield _Target(
                "condition", dims, score, line, event, locator, None, event.context, repeat, truth
            )
        if isinstance(info.node, ast.Return) and step.ret is not None:
            dims = ("Arithmetic", "State") if info.arithmetic else ("State",)
            locator = {"event": "return", "line": line, "occurrence": 1}
            yield _Target("return", dims, score, line, event, locator, truth=_canonical(step.ret))
        for name in info.targets:
            if name not in event.state:
                continue
            locator = {
                "event": "after_line",
                "line": line,
                "occurrence": event.occurrence,
                "name": name,
            }
            if info.arithmetic:
                kind, dims = (
                    "arithmetic",
                    ("Arithmetic", "State") if event.context else ("Arithmetic",),
                )
            else:
                kind, dims = ("loop_value" if event.context else "value"), ("State",)
            plain = score - 1.0 * info.constant
            yield _Target(kind, dims, plain, line, event, locator, name, event.context, repeat)
            if name in info.accumulates and event.occurrence > 1:
                bonus = 0.1 * min(event.occurrence, 5)
                yield _Target(
                    "accumulator",
                    ("State",),
                    score + bonus,
                    line,
                    event,
                    locator,
                    name,
                    (),
                    event.occurrence,
                )


def _loop_targets(frame: _Frame) -> Iterator[_Target]:
    for (outer, line), run in frame.runs.items():
        info = frame.source.lines.get(line)
        end = frame.events[run.last]
        if info is None or end.step.exc is not None or run.last >= frame.probed:
            continue
        returned = end.step.ret is not None
        if not returned and run.last + 1 >= frame.probed:
            continue  # the trace ends inside the loop
        score = _score(end, info) + 0.05 * len(outer)
        locator: dict[str, object] = {
            "event": "loop_count",
            "line": line,
            "occurrence": run.occurrence,
        }
        if line not in frame.misnumbered:
            count = str(len(run.entered))
            yield _Target(
                "loop_exit", ("Boundary",), score, line, end, locator, None, outer, truth=count
            )
        if returned or getattr(info.node, "orelse", None):
            continue  # an else block runs between the loop's last iteration and its end
        changed = dict.fromkeys(
            name for event in frame.events[run.first : run.last + 1] for name in event.step.changes
        )
        locator = {**locator, "event": "after_loop"}
        own = set(names_of_loop(info.node)) if isinstance(info.node, ast.For) else set()
        for name in changed:
            if name in own:
                continue  # its last value is the iterable's last element: no reasoning asked
            container = end.state.get(name, "")[:1] in ("[", "{", "(", "'", '"')
            dims = ("State", "Boundary")
            yield _Target(
                "after_loop",
                dims,
                score + 0.3 * container,
                line,
                end,
                {**locator, "name": name},
                name,
                outer,
            )


def _call_targets(frame: _Frame, trace: ExecutionTrace) -> Iterator[_Target]:
    """Returns of helpers' calls (frames of functions the source defines, not generators)."""
    calls: dict[str, int] = {}
    numbers: dict[int, int] = {}  # fid -> which call of its function it is
    generators: set[str] = set()
    returns: list[tuple[str, int, int, Step]] = []
    for index, step in enumerate(trace.steps):
        function = step.frame.rsplit(".", 1)[-1]
        if step.fid not in numbers:
            calls[function] = numbers[step.fid] = calls.get(function, 0) + 1
        if step.yielded is not None:
            generators.add(function)
        if step.ret is not None and step.fid != 0 and frame.source.functions.get(function) == 1:
            returns.append((function, numbers[step.fid], index, step))
    for function, number, index, step in returns:
        info = frame.source.lines.get(step.line)
        truth = _canonical(step.ret)
        if function in generators or info is None or truth is None:
            continue
        dims = ("Logic",) if truth in ("True", "False") else ("State",)
        locator = {"event": "call_return", "function": function, "occurrence": number}
        event = _Event(index, step, {}, (), number, number)
        yield _Target(
            "call_return",
            dims,
            _score(event, info) + 0.2,
            step.line,
            event,
            locator,
            function,
            truth=truth,
        )


def _phrase(frame: _Frame, target: _Target) -> str | None:
    context = frame.describe(target.context)
    if context is None:
        return None
    code = frame.source.lines[target.line].code
    kind, line, name = target.kind, target.line, target.name or ""
    if kind == "condition":
        return text.condition_question(line, code, context, target.repeat)
    if kind == "after_loop":
        return text.after_loop_question(name, line, code, context)
    if kind == "loop_exit":
        return text.count_question(line, code, context)
    if kind == "return":
        return text.return_question(line, code)
    if kind == "call_return":
        return text.call_return_question(name, target.event.occurrence)
    return text.value_question(name, line, code, context, target.repeat)


def _trivial(target: _Target, truth: str, question: str) -> bool:
    """A question that states its answer: a counter asked after its k-th update (k), or a
    variable asked in the iteration that the question names by that variable's value."""
    if target.kind == "accumulator" and truth == str(target.repeat):
        return True
    return target.name is not None and f"`{target.name}` is {truth}" in question


def _build(frame: _Frame, target: _Target) -> Probe | None:
    truth = target.truth
    if truth is None and target.name is not None:
        truth = _canonical(target.event.state.get(target.name))
    question = None if truth is None else _phrase(frame, target)
    if truth is None or question is None or _trivial(target, truth, question):
        return None
    info = frame.source.lines[target.line]
    return Probe(
        kind=target.kind,
        question=question,
        truth=truth,
        dimensions=target.dimensions,
        line=target.line,
        step=target.event.index,
        name=None if target.kind == "call_return" else target.name,
        trace_distance=target.event.index + 1,
        nesting_depth=info.depth,
        operators=info.operators,
        locator=target.locator,
        answer_type=values.type_name(values.parse(truth)),
    )


# ---------------------------------------------------------------------------------------
# choosing
# ---------------------------------------------------------------------------------------


def _ranked(targets: list[_Target], rng: random.Random) -> Iterator[_Target]:
    """Best first with some chance mixed in, and each line's (and name's) best before any
    second one, so that picks spread over the program."""
    keyed = sorted(
        ((t.score + _JITTER * rng.random(), n, t) for n, t in enumerate(targets)), reverse=True
    )
    seen: set[tuple[int, str | None]] = set()
    again = []
    for _, _, target in keyed:
        signature = (target.line, target.name)
        if signature in seen:
            again.append(target)
        else:
            seen.add(signature)
            yield target
    yield from again


def probes_for(
    source: str, trace: ExecutionTrace, *, frame: str, limit: int, rng: random.Random
) -> list[Probe]:
    """Up to ``limit`` probes about ``trace`` (a call of ``frame`` in ``source``), varied in
    kind and dimension, deterministic for a given ``rng`` state.

    ``frame`` is the entry's qualified name as the tracer records it (``f``,
    ``Solution.method``); ``Solution().method`` is read as the latter. Kinds take turns (in an
    order drawn from ``rng``), the fallback kinds after the others ran out."""
    frame = frame.replace("()", "")
    analysed = analyse(source, frame)
    if analysed is None or limit <= 0:
        return []
    entry = _Frame(analysed, trace, frame)
    by_kind: dict[str, list[_Target]] = {kind: [] for kind in KINDS}
    for target in (*_line_targets(entry), *_loop_targets(entry), *_call_targets(entry, trace)):
        by_kind[target.kind].append(target)
    queues = {kind: _ranked(by_kind[kind], rng) for kind in KINDS}
    main = [kind for kind in KINDS if kind not in FALLBACK_KINDS]
    rng.shuffle(main)
    chosen: list[Probe] = []
    questions: set[str] = set()
    for turns in (main, list(FALLBACK_KINDS)):
        while turns and len(chosen) < limit:
            for kind in list(turns):
                probe = _next_probe(entry, queues[kind], questions)
                if probe is None:
                    turns.remove(kind)
                    continue
                chosen.append(probe)
                questions.add(probe.question)
                if len(chosen) == limit:
                    break
    return chosen


def _next_probe(frame: _Frame, queue: Iterator[_Target], questions: set[str]) -> Probe | None:
    for target in queue:
        probe = _build(frame, target)
        if probe is not None and probe.question not in questions:
            return probe
    return None
