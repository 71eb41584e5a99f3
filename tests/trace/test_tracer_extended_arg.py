"""Loops whose jump targets carry ``EXTENDED_ARG`` prefixes are counted like any other loop.

A ``for`` loop whose body is more than 255 code units long has ``EXTENDED_ARG`` before its
``FOR_ITER`` (the argument is the jump past the body), and the loop's back-jump lands on that
prefix, where the line event is then reported. The tracer once keyed its loop table by the
``FOR_ITER`` offset only, so every iteration of such a loop was reported as iteration 1 (both
engines). Here the programs count their own iterations (``k = k + 1`` first in each loop body,
the counter reset just before the loop) and every step's ``loops`` must agree with those counts;
comprehensions are checked against their loop variable's traced values. Every test runs with
the C fast path and with pure Python (conftest.py), in process and in the sandbox.
"""

from __future__ import annotations

import ast
import dis
import itertools
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from codereasoner.execution import Pool, Program, TraceOptions, parse_call
from codereasoner.trace import trace_call
from tests.trace import load_flat

tracer = load_flat("tracer")

PY311 = sys.version_info[:2] == (3, 11)
PAD = 60  # filler statements: 60 x 5 code units puts a loop's body past 255 code units


def _pad(indent: int, name: str) -> str:
    return "".join(f"{' ' * indent}z = {name} + 1\n" for _ in range(PAD))


# Each program: (source, arguments, header lines of loops whose header jumps carry EXTENDED_ARG).
PROGRAMS: dict[str, tuple[str, tuple[Any, ...], tuple[int, ...]]] = {
    "for": (
        "def f(n):\n"
        "    k = 0\n"
        "    for x in range(n):\n"
        "        k = k + 1\n"
        "        if x == 1:\n"
        "            continue\n" + _pad(8, "x") + "    return k\n",
        (4,),
        (3,),
    ),
    "for_else_break": (
        "def f(n):\n"
        "    k = 0\n"
        "    for x in range(10):\n"
        "        k = k + 1\n" + _pad(8, "x") + "        if x == n:\n"
        "            break\n"
        "    else:\n"
        "        k = -1\n"
        "    return k\n",
        (2,),
        (3,),
    ),
    "while": (
        "def f(n):\n"
        "    k = 0\n"
        "    while k < n:\n"
        "        k = k + 1\n" + _pad(8, "k") + "    return k\n",
        (3,),
        (3,),
    ),
    "nested_long_inner": (
        "def f(n):\n"
        "    j = 0\n"
        "    for y in range(n):\n"
        "        j = j + 1\n"
        "        k = 0\n"
        "        for x in range(y + 1):\n"
        "            k = k + 1\n" + _pad(12, "x") + "    return j\n",
        (3,),
        (3, 6),
    ),
    "nested_long_outer": (
        "def f(n):\n"
        "    j = 0\n"
        "    for y in range(n):\n"
        "        j = j + 1\n"
        "        k = 0\n"
        "        for x in range(2):\n"
        "            k = k + 1\n" + _pad(8, "y") + "    return j\n",
        (3,),
        (3,),
    ),
    "for_in_while": (
        "def f(n):\n"
        "    j = 0\n"
        "    while j < n:\n"
        "        j = j + 1\n"
        "        k = 0\n"
        "        for x in range(j):\n"
        "            k = k + 1\n" + _pad(12, "x") + "    return j\n",
        (3,),
        (3, 6),
    ),
    "one_line_for": (
        "def f(n):\n"
        "    k = 0\n"
        "    for x in range(n): k = k + 1; " + "; ".join(["z = x + 1"] * PAD) + "\n"
        "    return k\n",
        (3,),
        (3,),
    ),
}


# `async for` has no FOR_ITER: the tracer counts it by lines, also in a frame whose other loops
# it counts at their FOR_ITER (it once did not: every iteration was 1 there), and with a body
# long enough to put EXTENDED_ARG before the loop's other jumps.
_AGEN = (
    "import asyncio\n"
    "async def agen(n):\n"
    "    i = 0\n"
    "    while i < n:\n"
    "        i = i + 1\n"
    "        yield i - 1\n"
)
ASYNC_PROGRAMS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "async_for_long": (
        _AGEN + "async def g(n):\n"
        "    k = 0\n"
        "    async for x in agen(n):\n"
        "        k = k + 1\n" + _pad(8, "x") + "    return k\n"
        "def f(n):\n"
        "    return asyncio.run(g(n))\n",
        (3,),
    ),
    "async_for_after_for": (
        _AGEN + "async def g(n):\n"
        "    j = 0\n"
        "    for y in range(2):\n"
        "        j = j + 1\n"
        "    k = 0\n"
        "    async for x in agen(n):\n"
        "        k = k + 1\n"
        "        m = 0\n"
        "        for y in range(x):\n"
        "            m = m + 1\n"
        "    return j + k\n"
        "def f(n):\n"
        "    return asyncio.run(g(n))\n",
        (3,),
    ),
}


@dataclass(frozen=True)
class _Loop:
    line: int  # the header line
    end: int  # the last line of the body
    counter: str  # the name the first statement of the body counts iterations with
    inline: bool  # the body is on the header line


def _loops(source: str) -> list[_Loop]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            first = node.body[0]
            assert isinstance(first, ast.Assign) and isinstance(first.targets[0], ast.Name)
            end = node.body[-1].end_lineno or node.body[-1].lineno
            found.append(_Loop(node.lineno, end, first.targets[0].id, first.lineno == node.lineno))
    return sorted(found, key=lambda loop: loop.line)


def _expected_loops(
    source: str, steps: Sequence[tuple[int, Mapping[str, str | None]]]
) -> list[tuple[tuple[int, int], ...]]:
    """Each step's enclosing loops and their iterations, from the program's own counters.

    A step in a loop's body belongs to the iteration the counter shows after it; a check at
    the header belongs to the next iteration if the frame goes on into the body, and otherwise
    (the check that leaves the loop) to the last one.
    """
    loops = _loops(source)
    counts = {loop.line: 0 for loop in loops}
    expected = []
    for position, (line, changes) in enumerate(steps):
        following = steps[position + 1][0] if position + 1 < len(steps) else None
        before = dict(counts)
        for loop in loops:  # a counter changes in its loop's body, or is reset before it
            value = changes.get(loop.counter)
            if value is not None:
                counts[loop.line] = int(value)
        nest = []
        for loop in loops:
            if not loop.line <= line <= loop.end:
                continue
            if loop.inline:
                iteration = max(1, counts[loop.line])
            elif line != loop.line:
                iteration = counts[loop.line]
            elif following is not None and loop.line < following <= loop.end:
                iteration = before[loop.line] + 1
            else:
                iteration = max(1, before[loop.line])
            nest.append((loop.line, iteration))
        expected.append(tuple(nest))
    return expected


def _function(source: str) -> types.FunctionType:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, "<program>", "exec"), namespace)
    function = namespace["f"]
    assert isinstance(function, types.FunctionType)
    return function


def _codes(code: types.CodeType) -> Iterable[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _prefixed_lines(source: str) -> set[int]:
    """Lines with an EXTENDED_ARG prefix before a jump or a FOR_ITER."""
    lines = set()
    for code in _codes(_function(source).__code__):
        instructions = list(dis.get_instructions(code))
        for ins, after in itertools.pairwise(instructions):
            if ins.opname == "EXTENDED_ARG" and (
                after.opname == "FOR_ITER" or "JUMP" in after.opname
            ):
                assert after.positions is not None and after.positions.lineno is not None
                lines.add(after.positions.lineno)
    return lines


def _check(source: str, steps: Sequence[tuple[int, Sequence[tuple[int, int]], Mapping]]) -> None:
    actual = [tuple(tuple(entry) for entry in loops) for _, loops, _ in steps]
    expected = _expected_loops(source, [(line, changes) for line, _, changes in steps])
    wrong = [
        f"step {index} (line {steps[index][0]}): loops {got}, expected {want}"
        for index, (got, want) in enumerate(zip(actual, expected, strict=True))
        if got != want
    ]
    assert not wrong, "\n".join(wrong[:10])


def _trace(source: str, args: tuple[Any, ...]) -> dict:
    return tracer.Tracer(source=source).call(_function(source), args, {})


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_programs_have_extended_arg_before_their_loop_jumps(name: str) -> None:
    source, _, prefixed = PROGRAMS[name]
    assert set(prefixed) <= _prefixed_lines(source)


ONE_LINE_313 = pytest.mark.skipif(
    sys.version_info >= (3, 13),
    reason="3.13 reports a one-line loop's back-jump at the jump, which the tracer does not count",
)
COUNTED = {
    **{name: (source, args) for name, (source, args, _) in PROGRAMS.items()},
    **ASYNC_PROGRAMS,
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=ONE_LINE_313) if name == "one_line_for" else name
        for name in COUNTED
    ],
)
def test_iterations_of_loops_behind_extended_arg_match_the_programs_own_counts(
    name: str, tracer_engine: str
) -> None:
    assert tracer.Tracer().accelerated is (tracer_engine == "c")
    source, args = COUNTED[name]
    trace = _trace(source, args)
    assert trace["return"] == repr(_function(source)(*args))
    frames = {step["frame"] for step in trace["steps"]}
    assert frames == ({"f", "g", "agen"} if name in ASYNC_PROGRAMS else {"f"})
    for frame in frames:  # one instance of each
        steps = [
            (s["line"], s["loops"], s.get("changes") or {})
            for s in trace["steps"]
            if s["frame"] == frame
        ]
        _check(source, steps)
    # The loops really ran more than once (the iterations reported are not all 1).
    assert max(step["loops"][-1][1] for step in trace["steps"] if step["loops"]) >= 3


COMPREHENSION = (
    "def f(n):\n"
    "    return [\n"
    "        " + " + ".join(["x"] * 150) + "\n"
    "        for x in range(n)\n"
    "    ]\n"
)


@pytest.mark.skipif(not PY311, reason="comprehensions are frames of their own on 3.11 only")
def test_comprehension_clause_behind_extended_arg_counts_from_its_loop_variable(
    tracer_engine: str,
) -> None:
    assert tracer.Tracer().accelerated is (tracer_engine == "c")
    assert 2 in _prefixed_lines(COMPREHENSION)  # 3.11 puts its FOR_ITER on the bracket's line
    trace = _trace(COMPREHENSION, (4,))
    assert trace["return"] == repr([150 * x for x in range(4)])
    inner = [step for step in trace["steps"] if step["frame"] != "f"]
    assert inner
    seen = []
    for step in inner:
        value = (step.get("changes") or {}).get("x")
        if value is not None:  # x = i: the step of iteration i + 1
            assert step["loops"][-1] == (4, int(value) + 1), step
            seen.append(int(value))
    assert seen == [0, 1, 2, 3]
    assert inner[-1]["loops"][-1] == (4, 4)  # the check that leaves belongs to the last


def test_both_engines_give_identical_traces_for_loops_behind_extended_arg() -> None:
    for source, args in [*COUNTED.values(), (COMPREHENSION, (4,))]:
        fast = tracer.Tracer(source=source, engine="c")
        slow = tracer.Tracer(source=source, engine="python")
        assert fast.accelerated and not slow.accelerated
        assert fast.call(_function(source), args, {}) == slow.call(_function(source), args, {})


def test_iterations_behind_extended_arg_in_the_sandbox_with_both_engines(pool: Pool) -> None:
    assert pool.worker_info["tracer_engine"] == "c"
    source, args, _ = PROGRAMS["nested_long_inner"]
    call = parse_call(f"f{args!r}")
    traces = []
    for engine in ("c", "python"):  # "c" fails where the extension is not built
        traced = trace_call(pool, Program(source, "f"), call, TraceOptions(engine=engine))
        assert traced.trace is not None
        steps = [(s.line, s.loops, s.changes) for s in traced.trace.steps]
        _check(source, steps)
        traces.append(steps)
    assert traces[0] == traces[1]
    assert max(loops[-1][1] for _, loops, _ in traces[0] if loops) == args[0]
