"""The tracer's two line handlers, the C fast path and pure Python, give identical traces.

The in-process tests of test_tracer.py and test_tracer_adversarial.py run under both engines
(conftest.py); here: the build itself, the fallback when the extension is missing, and the two
engines side by side in the sandbox on synthesized and benchmark programs.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from codereasoner.execution import (
    Call,
    ExecResult,
    Pool,
    Program,
    Status,
    TraceOptions,
    parse_call,
)
from codereasoner.execution.sandboxed import TRACER_MODULES
from codereasoner.synth.generators.offline import OfflineGenerator
from codereasoner.trace import trace_batches
from tests.trace import _FLAT_MODULES, load_flat, load_tracer_copy
from tests.trace.test_sandbox_trace import CORE, REVAL, _core_work, _reval_work
from tests.trace.test_tracer import _ProgramGenerator, load

tracer = load_flat("tracer")


def test_the_c_fast_path_is_built_and_chosen_by_default() -> None:
    assert tracer.ACCELERATOR is not None, "pip install -e . builds _tracecore (needs gcc)"
    assert tracer.Tracer().accelerated
    assert tracer.Tracer(engine="c").accelerated
    assert not tracer.Tracer(engine="python").accelerated
    with pytest.raises(ValueError, match="engine must be one of"):
        tracer.Tracer(engine="fast")
    with pytest.raises(ValueError, match="engine 'fast': expected auto, c or python"):
        TraceOptions(engine="fast")


def test_sandbox_workers_load_the_c_fast_path(pool: Pool) -> None:
    assert pool.worker_info["tracer_engine"] == "c"


def _module_without_extension(tmp_path: Path) -> ModuleType:
    """The tracer loaded from a folder with no _tracecore build beside its modules."""
    for name in TRACER_MODULES:
        shutil.copyfile(_FLAT_MODULES[name], tmp_path / f"{name}.py")
    return load_tracer_copy(tmp_path)


def _args(seed: int) -> tuple:
    return (seed % 5, seed % 3 - 1, [seed % 7, 2])  # fresh: the programs mutate the list


def test_without_the_extension_the_tracer_runs_in_pure_python_with_identical_traces(
    tmp_path: Path,
) -> None:
    pure = _module_without_extension(tmp_path)
    assert pure.ACCELERATOR is None
    # Plain classes, the first of them with all the fields as slots.
    assert pure.Frame.__mro__[-1] is object
    assert not any(base.__module__ == "_tracecore" for base in pure.Frame.__mro__)
    assert "snap" in pure.Frame.__mro__[-2].__slots__
    assert not pure.Tracer().accelerated
    with pytest.raises(ValueError, match="not built"):
        pure.Tracer(engine="c")
    for seed in range(120):
        source = _ProgramGenerator(seed).program()
        fast = tracer.Tracer(source=source, engine="c").call(load(source)[1], _args(seed), {})
        slow = pure.Tracer(source=source).call(load(source)[1], _args(seed), {})
        assert fast == slow, f"seed {seed}:\n{source}"
        assert fast["steps"], source


REINSTALL = """\
import sys

def f(n):
    xs = []
    for i in range(n):
        if i == 2:
            sys.settrace(sys.gettrace())
        xs.append(i * i)
    total = sum(xs)
    return total
"""


def test_a_program_reinstalling_the_hook_keeps_an_identical_trace() -> None:
    """After ``sys.settrace(sys.gettrace())`` the C engine's frames are called through Python's
    own trampoline; nothing may change."""
    fast = tracer.Tracer(source=REINSTALL, engine="c").call(load(REINSTALL)[1], (5,), {})
    slow = tracer.Tracer(source=REINSTALL, engine="python").call(load(REINSTALL)[1], (5,), {})
    assert fast == slow
    assert not fast["partial"] and fast["return"] == "30"
    assert [step["line"] for step in fast["steps"]].count(8) == 5


def _synthesized(count: int) -> list[tuple[Program, list[Call]]]:
    generator = OfflineGenerator(seed=11)
    work = []
    for index in range(count):
        candidate = generator.generate(index)
        work.append((Program(candidate.code), [parse_call(f"f({candidate.input_repr})")]))
    return work


def _benchmark_work() -> list[tuple[Program, list[Call]]]:
    work: list[tuple[Program, list[Call]]] = []
    if CORE.exists():
        work += _core_work(json.loads(CORE.read_text()))
    if REVAL.exists():
        rows = [json.loads(line) for line in REVAL.read_text().splitlines() if line.strip()]
        work += _reval_work(rows)[0]
    return work


def _results(pool: Pool, work: list, engine: str) -> list[list[ExecResult]]:
    options = TraceOptions(engine=engine, finish_untraced=True, max_steps=3_000)
    return [[traced.result for traced in results] for results in trace_batches(pool, work, options)]


def _traces(pool: Pool, work: list, engine: str) -> list[dict | None]:
    return [result.trace for results in _results(pool, work, engine) for result in results]


# Outcomes that depend on the machine's load, not on the engine.
LOAD_DEPENDENT = (Status.TIMEOUT, Status.SANDBOX_ERROR)


def _both_engines(pool: Pool, work: list) -> tuple[list[list[ExecResult]], list[list[ExecResult]]]:
    """Both engines' results; a program that hit a limit under either engine (a REval program
    importing gensim can, on a loaded machine) is traced again with both, up to twice, so that
    only the engines can make the traces differ."""
    fast, slow = _results(pool, work, "c"), _results(pool, work, "python")
    for _ in range(2):
        again = [
            index
            for index, (one, other) in enumerate(zip(fast, slow, strict=True))
            if any(result.status in LOAD_DEPENDENT for result in one + other)
        ]
        if not again:
            break
        programs = [work[index] for index in again]
        fresh = _results(pool, programs, "c"), _results(pool, programs, "python")
        for index, one, other in zip(again, *fresh, strict=True):
            fast[index], slow[index] = one, other
    return fast, slow


def test_both_engines_trace_synthesized_programs_identically_in_the_sandbox(pool: Pool) -> None:
    work = _synthesized(400)
    fast, slow = _traces(pool, work, "c"), _traces(pool, work, "python")
    assert sum(trace is not None and bool(trace["steps"]) for trace in fast) >= 390
    for (program, _), one, other in zip(work, fast, slow, strict=True):
        assert one == other, program.source


@pytest.mark.skipif(not CORE.exists(), reason="shared benchmark data not available")
def test_both_engines_trace_core_and_reval_programs_identically_in_the_sandbox(
    pool: Pool,
) -> None:
    work = _benchmark_work()
    fast, slow = _both_engines(pool, work)
    assert sum(result.trace is not None for results in fast for result in results) >= 1_000
    differ = [
        program.source[:200]
        for (program, _), one, other in zip(work, fast, slow, strict=True)
        if [result.trace for result in one] != [result.trace for result in other]
    ]
    assert not differ, "\n---\n".join(differ[:3])


FLIP = """\
def f(xs, big):
    for i in range(4):
        xs.append(i)
        xs.pop()
        xs.extend(big)
        del xs[len(xs) - len(big):]
        xs[0] = xs[0]
        xs[0] = -xs[0]
    return xs
"""


def test_containers_changing_back_and_forth_are_seen_by_both_engines() -> None:
    """A list that changes and changes back (also across the size cap), so that a stale record
    of its former items would hide a change: every change shows, identically in both engines."""
    traces = {
        engine: tracer.Tracer(source=FLIP, max_value_chars=24, engine=engine).call(
            load(FLIP)[1], ([1, 2], list(range(20))), {}
        )
        for engine in ("c", "python")
    }
    assert traces["c"] == traces["python"]
    changes = [
        step["changes"]["xs"] for step in traces["c"]["steps"] if "xs" in step.get("changes", {})
    ]
    expected = []
    for i, sign in zip(range(4), (-1, 1, -1, 1), strict=True):
        first = -sign
        expected += [f"[{first}, 2, {i}]", f"[{first}, 2]", "<list of 22 items, too large>"]
        expected += [f"[{first}, 2]", f"[{-first}, 2]"]
    assert changes == expected


TAMPER = """\
import sys

def f(n, how):
    state = sys._getframe().f_trace
    owner = getattr(state, "__self__", state)
    if how == "entry":
        owner.snap["n"] = 7
    elif how == "snap":
        owner.snap = None
    elif how == "point":
        owner.point = 5
    elif how == "name":
        sys._getframe().f_locals[3] = 4
    n += 1
    xs = [n]
    xs.append(n)
    return xs
"""


@pytest.mark.parametrize("how", ["entry", "snap", "point", "name"])
def test_a_program_corrupting_the_tracer_state_gets_tracer_error_not_a_crash(how: str) -> None:
    """The program can reach the tracer's objects; breaking them ends tracing with a partial
    trace (tracer_error) in both engines, never an unchecked access in C."""
    for engine in ("c", "python"):
        source, function = load(TAMPER)
        trace = tracer.Tracer(source=source, engine=engine).call(function, (1, how), {})
        assert trace["partial"], (engine, how)
        assert trace["partial_reason"].startswith("tracer_error"), (engine, trace["partial_reason"])
        assert trace["return"] == "[2, 2]"


HOLDERS = """\
import weakref

made = []

class Marker:
    pass

def f(n):
    m = Marker()
    made.append(weakref.ref(m))
    s = {m, 1}
    d = {"k": m}
    xs = [m, n]
    ys = [1, 2]
    ys.append(n)
    s.add(n)
    d["j"] = n
    return len(s) + len(d) + len(xs) + len(ys)
"""


def test_tracing_leaks_no_object_of_the_program() -> None:
    """Every object the program made is freed once the trace and the program are gone (a
    reference kept by the C fast path would keep them alive)."""
    refs = []
    for engine in ("c", "python"):
        for _ in range(3):
            source, function = load(HOLDERS)
            trace = tracer.Tracer(source=source, engine=engine).call(function, (5,), {})
            assert trace["return"] == "10" and not trace["partial"]
            refs += function.__globals__["made"]
            del function, trace
    gc.collect()
    assert len(refs) == 6
    assert [ref() for ref in refs] == [None] * 6


CALLS = """\
def g(a, xs):
    xs.append(a)
    return a + 1

def gen(n):
    for i in range(n):
        yield i

def f(n):
    t = 0
    xs = []
    for i in range(n):
        t = g(t, xs)
    return t + sum(gen(n)) + len(xs)
"""


@pytest.mark.parametrize("engine", ["c", "python"])
def test_repeated_tracing_allocates_nothing_that_stays(engine: str) -> None:
    """Memory blocks before and after 60 traced calls (each with 12 frames): a leak of even one
    object per frame or per step would add hundreds."""
    source, function = load(CALLS)

    def trace_once() -> None:
        trace = tracer.Tracer(source=source, engine=engine).call(function, (5,), {})
        assert trace["return"] == "20" and not trace["partial"]

    for _ in range(5):
        trace_once()
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(60):
        trace_once()
    gc.collect()
    assert sys.getallocatedblocks() - before < 60
