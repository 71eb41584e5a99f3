"""Tests of the sandbox-side tracer (execution/sandboxed/tracer.py), imported as a flat module.

The corpus traces below were written by hand from Python's semantics (3.11 line events), not
copied from the tracer's output. The property tests compare the tracer with two independent
oracles: plain execution, and a naive settrace recorder that renders every local at every event.
"""

from __future__ import annotations

import json
import random
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from tests.trace import load_flat

tracer = load_flat("tracer")

# Every test runs with the C fast path and with the pure-Python line handler (conftest.py).
pytestmark = pytest.mark.usefixtures("tracer_engine")
values = load_flat("values")

PY311 = sys.version_info[:2] == (3, 11)
needs_311 = pytest.mark.skipif(not PY311, reason="line events and comprehension frames of 3.11")


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def load(source: str, name: str = "f") -> tuple[str, Callable[..., Any]]:
    source = textwrap.dedent(source).lstrip("\n")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, "<program>", "exec"), namespace)
    return source, eval(name, namespace)


def run(source: str, *args: Any, name: str = "f", **options: Any) -> dict:
    source, function = load(source, name)
    return tracer.Tracer(source=source, **options).call(function, args, {})


def compact(trace: dict) -> list[str]:
    """One string per step: frame:line @loop=iteration args(...) name=value ?cond !exc ret=."""
    out = []
    for step in trace["steps"]:
        text = ">" * step["depth"] + f"{step['frame']}:{step['line']}"
        if step["loops"]:
            text += " @" + ",".join(f"{line}={count}" for line, count in step["loops"])
        if "args" in step:
            text += " args(" + ", ".join(f"{k}={v}" for k, v in step["args"].items()) + ")"
        for name, value in sorted(step.get("changes", {}).items()):
            text += f" {name}={'<del>' if value is None else value}"
        if "cond" in step:
            text += " ?T" if step["cond"] else " ?F"
        if "exc" in step:
            text += f" !{step['exc']}"
        if "yield" in step:
            text += f" yield={step['yield']}"
        if "ret" in step:
            text += f" ret={step['ret']}"
        out.append(text)
    return out


def check(actual: list[str], expected: list[str]) -> None:
    if actual != expected:
        lines = [
            f"{'  ' if a == e else '!!'} {a:<60} | {e}"
            for a, e in zip(actual, expected, strict=False)
        ]
        lines += [f"!! {a:<60} | (missing)" for a in actual[len(expected) :]]
        lines += [f"!! {'(missing)':<60} | {e}" for e in expected[len(actual) :]]
        pytest.fail("trace differs (actual | expected):\n" + "\n".join(lines))


# ---------------------------------------------------------------------------------------
# hand-checked corpus
# ---------------------------------------------------------------------------------------

LOOPS = """
def f(n):
    out = []
    i = 0
    while i < n:
        i += 1
        if i == 2:
            continue
        out.append(i)
    else:
        out.append(0)
    for x in out:
        if x > 2:
            break
    else:
        x = -1
    return out, x
"""


@needs_311
def test_while_continue_else_for_break() -> None:
    check(
        compact(run(LOOPS, 3)),
        [
            "f:2 args(n=3) out=[]",
            "f:3 i=0",
            "f:4 @4=1 ?T",
            "f:5 @4=1 i=1",
            "f:6 @4=1 ?F",
            "f:8 @4=1 out=[1]",
            "f:4 @4=2 ?T",
            "f:5 @4=2 i=2",
            "f:6 @4=2 ?T",
            "f:7 @4=2",
            "f:4 @4=3 ?T",
            "f:5 @4=3 i=3",
            "f:6 @4=3 ?F",
            "f:8 @4=3 out=[1, 3]",
            "f:4 @4=3 ?F",  # the check that leaves the loop belongs to the last iteration
            "f:10 out=[1, 3, 0]",
            "f:11 @11=1 x=1",
            "f:12 @11=1 ?F",
            "f:11 @11=2 x=3",
            "f:12 @11=2 ?T",
            "f:13 @11=2",
            "f:16 ret=([1, 3, 0], 3)",
        ],
    )


NESTED_LOOPS = """
def f():
    total = 0
    for r in range(2):
        for c in range(2):
            total += c
    for c in range(1):
        total += 10
    return total
"""


@needs_311
def test_nested_loops_restart_and_loop_reentered_later() -> None:
    check(
        compact(run(NESTED_LOOPS)),
        [
            "f:2 args() total=0",
            "f:3 @3=1 r=0",
            "f:4 @3=1,4=1 c=0",
            "f:5 @3=1,4=1",  # 0 + 0: total keeps its value
            "f:4 @3=1,4=2 c=1",
            "f:5 @3=1,4=2 total=1",
            "f:4 @3=1,4=2",
            "f:3 @3=2 r=1",
            "f:4 @3=2,4=1 c=0",
            "f:5 @3=2,4=1",
            "f:4 @3=2,4=2 c=1",
            "f:5 @3=2,4=2 total=2",
            "f:4 @3=2,4=2",
            "f:3 @3=2",
            "f:6 @6=1 c=0",
            "f:7 @6=1 total=12",
            "f:6 @6=1",
            "f:8 ret=12",
        ],
    )


WHILE_TRUE = """
def f(n):
    i = 0
    while True:
        i += 1
        if i >= n:
            break
    return i
"""


@needs_311
def test_while_true_with_break() -> None:
    check(
        compact(run(WHILE_TRUE, 2)),
        [
            "f:2 args(n=2) i=0",
            "f:3 @3=1 ?T",
            "f:4 @3=1 i=1",
            "f:5 @3=1 ?F",
            "f:3 @3=2 ?T",  # 3.11 reports the `while True` line again at each iteration
            "f:4 @3=2 i=2",
            "f:5 @3=2 ?T",
            "f:6 @3=2",
            "f:7 ret=2",
        ],
    )


RECURSION = """
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)
"""


def test_recursion_depth_frames_and_returns() -> None:
    trace = run(RECURSION, 3, name="fact")
    check(
        compact(trace),
        [
            "fact:2 args(n=3) ?F",
            "fact:4 ret=6",
            ">fact:2 args(n=2) ?F",
            ">fact:4 ret=2",
            ">>fact:2 args(n=1) ?T",
            ">>fact:3 ret=1",
        ],
    )
    assert [step["fid"] for step in trace["steps"]] == [0, 0, 1, 1, 2, 2]
    assert trace["return"] == "6" and trace["return_literal"] and not trace["partial"]


CLOSURES = """
def outer(xs):
    total = 0
    def add(v):
        nonlocal total
        total += v
        return total
    for x in xs:
        add(x)
    key = lambda p: -p
    return sorted(xs, key=key)
"""


def test_nested_function_closure_and_lambda() -> None:
    check(
        compact(run(CLOSURES, [2, 1], name="outer")),
        [
            "outer:2 args(xs=[2, 1]) total=0",
            "outer:3 add=<function object>",
            "outer:7 @7=1 x=2",
            "outer:8 @7=1 total=2",  # the closure cell changed by the call
            ">outer.<locals>.add:5 args(v=2, total=0) total=2",
            ">outer.<locals>.add:6 ret=2",
            "outer:7 @7=2 x=1",
            "outer:8 @7=2 total=3",
            ">outer.<locals>.add:5 args(v=1, total=2) total=3",
            ">outer.<locals>.add:6 ret=3",
            "outer:7 @7=2",
            "outer:9 key=<function object>",
            "outer:10 ret=[2, 1]",
            ">outer.<locals>.<lambda>:9 args(p=2) ret=-2",
            ">outer.<locals>.<lambda>:9 args(p=1) ret=-1",
        ],
    )


GENERATOR = """
def gen(n):
    for i in range(n):
        x = yield i * i
        if x:
            n += x

def f(n):
    g = gen(n)
    first = next(g)
    second = g.send(1)
    return [first, second] + list(g)
"""


def test_generator_yield_send_and_resume() -> None:
    check(
        compact(run(GENERATOR, 2)),
        [
            "f:8 args(n=2) g=<generator object>",
            "f:9 first=0",
            ">gen:2 @2=1 args(n=2) i=0",
            ">gen:3 @2=1 x=1 yield=0",  # x is set when the generator resumes
            "f:10 second=1",
            ">gen:4 @2=1 ?T",
            ">gen:5 @2=1 n=3",
            ">gen:2 @2=2 i=1",
            ">gen:3 @2=2 x=None yield=1",
            "f:11 ret=[0, 1]",
            ">gen:4 @2=2 ?F",
            ">gen:2 @2=2 ret=None",
        ],
    )


EXCEPTIONS = """
def f(d):
    try:
        v = d["k"]
    except KeyError as e:
        v = 0
    finally:
        d["seen"] = True
    return v
"""


def test_exception_caught_inside_the_function() -> None:
    check(
        compact(run(EXCEPTIONS, {})),
        [
            "f:2 args(d={})",
            "f:3 !KeyError",
            "f:4 e=<KeyError object>",
            "f:5 e=<del> v=0",
            "f:7 d={'seen': True}",
            "f:8 ret=0",
        ],
    )


def test_exception_escaping_is_recorded_and_reraised() -> None:
    source, function = load(
        """
        def f(x):
            y = x + 1
            raise ValueError("bad", y)
        """
    )
    recorder = tracer.Tracer(source=source)
    with pytest.raises(ValueError):
        recorder.call(function, (1,), {})
    trace = recorder.last
    assert compact(trace) == ["f:2 args(x=1) y=2", "f:3 !ValueError"]
    assert trace["exception"] == {"type": "ValueError", "message": "('bad', 2)"}
    assert trace["return"] is None and not trace["partial"]


def test_exception_message_never_runs_program_code() -> None:
    source, function = load(
        """
        class Loud(Exception):
            def __str__(self):
                raise SystemExit("str() of the exception ran")

        class Thing:
            def __repr__(self):
                raise SystemExit("repr() ran")

        def f():
            raise Loud(Thing())
        """
    )
    recorder = tracer.Tracer(source=source)
    with pytest.raises(Exception) as caught:
        recorder.call(function, (), {})
    assert type(caught.value).__name__ == "Loud"
    assert recorder.last["exception"] == {
        "type": "Loud",
        "message": "<Loud with non-literal arguments>",
    }


MULTILINE = """
def f(a, b):
    total = (a +
             b)
    items = [
        a,
        b,
    ]
    return total, items
"""


@needs_311
def test_multiline_statements_report_each_line_python_reports() -> None:
    check(
        compact(run(MULTILINE, 1, 2)),
        [
            "f:2 args(a=1, b=2)",
            "f:3",
            "f:2 total=3",
            "f:5",
            "f:6",
            "f:4 items=[1, 2]",
            "f:8 ret=(3, [1, 2])",
        ],
    )


MUTATION = """
def f():
    d = {"k": []}
    alias = d["k"]
    alias.append(1)
    d["k"].append(2)
    d["n"] = {"m": [0]}
    d["n"]["m"][0] += 5
    grow = []
    grow += [1]
    return d
"""


def test_in_place_mutation_of_nested_containers_and_aliases() -> None:
    check(
        compact(run(MUTATION)),
        [
            "f:2 args() d={'k': []}",
            "f:3 alias=[]",
            "f:4 alias=[1] d={'k': [1]}",
            "f:5 alias=[1, 2] d={'k': [1, 2]}",
            "f:6 d={'k': [1, 2], 'n': {'m': [0]}}",
            "f:7 d={'k': [1, 2], 'n': {'m': [5]}}",
            "f:8 grow=[]",
            "f:9 grow=[1]",
            "f:10 ret={'k': [1, 2], 'n': {'m': [5]}}",
        ],
    )


SOLUTION = """
from typing import List

class Solution:
    def twoSum(self, nums: List[int], target: int) -> List[int]:
        seen = {}
        for i, x in enumerate(nums):
            if target - x in seen:
                return [seen[target - x], i]
            seen[x] = i
        return []
"""


def test_method_of_class_solution_with_return_inside_loop() -> None:
    check(
        compact(run(SOLUTION, [2, 7, 11], 9, name="Solution().twoSum")),
        [
            "Solution.twoSum:5 args(self=<Solution object>, nums=[2, 7, 11], target=9) seen={}",
            "Solution.twoSum:6 @6=1 i=0 x=2",
            "Solution.twoSum:7 @6=1 ?F",
            "Solution.twoSum:9 @6=1 seen={2: 0}",
            "Solution.twoSum:6 @6=2 i=1 x=7",
            "Solution.twoSum:7 @6=2 ?T",
            "Solution.twoSum:8 @6=2 ret=[0, 1]",
        ],
    )


COMPREHENSIONS = """
def f(xs):
    ys = [x * 2 for x in xs if x]
    pairs = [(a, b) for a in xs for b in xs if a < b]
    return ys, pairs
"""


@needs_311
def test_comprehension_frames_count_their_for_clauses() -> None:
    check(
        compact(run(COMPREHENSIONS, [0, 1])),
        [
            "f:2 args(xs=[0, 1]) ys=[2]",
            ">f.<locals>.<listcomp>:2 @2=1 args() x=0",
            ">f.<locals>.<listcomp>:2 @2=2 x=1",
            ">f.<locals>.<listcomp>:2 @2=2 ret=[2]",
            "f:3 pairs=[(0, 1)]",
            ">f.<locals>.<listcomp>:3 @3=1,3=1 args(xs=[0, 1]) a=0 b=0",  # xs: a free variable
            ">f.<locals>.<listcomp>:3 @3=1,3=2 b=1",
            ">f.<locals>.<listcomp>:3 @3=1,3=2",
            ">f.<locals>.<listcomp>:3 @3=2,3=1 a=1 b=0",
            ">f.<locals>.<listcomp>:3 @3=2,3=2 b=1",
            ">f.<locals>.<listcomp>:3 @3=2,3=2",
            ">f.<locals>.<listcomp>:3 @3=2 ret=[(0, 1)]",
            "f:4 ret=([2], [(0, 1)])",
        ],
    )


ONE_LINE_IFS = """
def f(x):
    if x > 0: return "pos"
    if x < 0: y = -x
    else: y = x
    return y
"""


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        (3, ["f:2 args(x=3) ?T ret='pos'"]),
        (-2, ["f:2 args(x=-2) ?F", "f:3 y=2 ?T", "f:5 ret=2"]),
        (0, ["f:2 args(x=0) ?F", "f:3 ?F", "f:4 y=0", "f:5 ret=0"]),
    ],
)
def test_one_line_if_conditions_from_bytecode(argument: int, expected: list[str]) -> None:
    actual = compact(run(ONE_LINE_IFS, argument))
    if not PY311:
        # 3.12+ may deliver no opcode events; a condition is then left out, never guessed.
        assert len(actual) == len(expected), actual
        for got, want in zip(actual, expected, strict=True):
            assert got in (want, want.replace(" ?T", "").replace(" ?F", "")), (got, want)
        return
    check(actual, expected)


def test_values_never_call_user_methods_and_markers() -> None:
    trace = run(
        """
        class Evil:
            def __repr__(self):
                raise SystemExit("repr ran")
            def __eq__(self, other):
                raise SystemExit("eq ran")
            __hash__ = None
            def __len__(self):
                raise SystemExit("len ran")

        def f():
            e = Evil()
            xs = [1, 2]
            xs[0] = e
            xs.pop(0)
            big = list(range(500))
            s = "x" * 300
            n = 10 ** 400
            return xs
        """
    )
    check(
        compact(trace),
        [
            "f:11 args() e=<Evil object>",
            "f:12 xs=[1, 2]",
            "f:13 xs=<list object>",
            "f:14 xs=[2]",
            "f:15 big=<list of 500 items, too large>",
            "f:16 s=<str of 300 chars, too large>",
            "f:17 n=<int, too large>",
            "f:18 ret=[2]",
        ],
    )


def test_rendering_matches_values_render() -> None:
    renderer = tracer.Renderer(200)
    samples: list[object] = [
        0,
        -1,
        10**14,
        -(10**15),
        10**15,
        2**70,
        True,
        None,
        0.1,
        -0.0,
        float("nan"),
        float("inf"),
        float("-inf"),
        1e300,
        1j,
        "",
        "a'b\"c",
        "\x00\n",
        "é" * 99,
        b"\xff",
        [],
        (),
        (1,),
        {},
        set(),
        frozenset({2, 1}),
        {"a": [1, (2, 3)]},
        [[[]]],
        [1.5, -0.0, None, True, b"x", "y"],
        {(1, "a"): [{"k": (None,)}]},
        [1, {3, 2}],
        ("é", ["\u2028"]),
        [float("nan")],
        (float("inf"),),
        [2**70],
        [1 + 2j],
        {1: {2: {3: 4}}},
        list(range(60)),
        ["abc"] * 30,
    ]
    for sample in samples:
        try:
            expected = values.render(sample, max_chars=200)
        except values.RenderLimitExceeded:
            expected = f"<list of {len(sample)} items, too large>"  # type: ignore[arg-type]
        assert renderer.text(sample) == expected, sample
    deep: list = []
    for _ in range(30):
        deep = [deep]
    assert renderer.text(deep) == values.render(deep, max_chars=200)
    cyclic: list = [1]
    cyclic.append(cyclic)
    assert renderer.text(cyclic) == "<list object>"


def test_deleted_and_rebound_names() -> None:
    trace = run(
        """
        def f():
            x = [1]
            y = x
            del x
            y = 5
            y = 5
            return y
        """
    )
    assert compact(trace) == [
        "f:2 args() x=[1]",
        "f:3 y=[1]",
        "f:4 x=<del>",
        "f:5 y=5",
        "f:6",
        "f:7 ret=5",
    ]


# ---------------------------------------------------------------------------------------
# caps, removal, determinism
# ---------------------------------------------------------------------------------------

INFINITE = """
def f():
    i = 0
    while True:
        i += 1
"""


def test_max_steps_without_callback_returns_partial() -> None:
    source, function = load(INFINITE)
    recorder = tracer.Tracer(source=source, max_steps=50)
    with pytest.raises(KeyboardInterrupt):
        # Tracing stops at the cap and the loop runs on untraced; end it from outside.
        _run_with_alarm(lambda: recorder.call(function, (), {}), 0.5)
    trace = recorder.last
    assert trace["partial"] and trace["partial_reason"] == "max_steps"
    assert len(trace["steps"]) == 50


def _run_with_alarm(action: Callable[[], Any], seconds: float) -> Any:
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return action()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_max_steps_then_function_finishes_untraced() -> None:
    trace = run(
        """
        def f(n):
            total = 0
            for i in range(n):
                total += i
            return total
        """,
        100,
        max_steps=10,
    )
    assert trace["partial"] and trace["partial_reason"] == "max_steps"
    assert len(trace["steps"]) == 10
    assert trace["return"] == "4950"


def test_overflow_callback_receives_partial_trace() -> None:
    received: list[dict] = []

    class Stop(BaseException):
        pass

    def on_overflow(trace: dict) -> None:
        received.append(json.loads(json.dumps(trace)))
        raise Stop  # the sandbox calls os._exit here

    source, function = load(INFINITE)
    recorder = tracer.Tracer(source=source, max_steps=20, on_overflow=on_overflow)
    with pytest.raises(Stop):
        recorder.call(function, (), {})
    assert len(received) == 1
    assert received[0]["partial"] and received[0]["partial_reason"] == "max_steps"
    assert len(received[0]["steps"]) == 20
    assert sys.gettrace() is None


def test_max_trace_chars() -> None:
    trace = run(
        """
        def f(n):
            s = ""
            for i in range(n):
                s = str(i) * 50
            return len(s)
        """,
        10_000,
        max_trace_chars=20_000,
    )
    assert trace["partial"] and trace["partial_reason"] == "max_trace_chars"
    assert len(json.dumps(trace)) < 40_000
    assert trace["return"] == "200"


@pytest.mark.parametrize(
    "body",
    [
        "sys.settrace(None)",
        "sys._getframe().f_trace = None",
        "sys.settrace(lambda *a: None)",
    ],
)
def test_program_removing_the_tracer_gives_partial(body: str) -> None:
    trace = run(
        f"""
        import sys

        def f():
            x = 1
            {body}
            x = 2
            return x
        """
    )
    assert trace["partial"] and trace["partial_reason"] == "tracer_removed"
    assert trace["return"] == "2"


def test_program_swallowing_the_cap_cannot_hide_it() -> None:
    trace = run(
        """
        def f():
            n = 0
            try:
                for i in range(1000):
                    n += 1
            except BaseException:
                pass
            return n
        """,
        max_steps=30,
    )
    assert trace["partial"] and trace["partial_reason"] == "max_steps"
    assert trace["return"] == "1000"


def test_previous_trace_function_is_restored() -> None:
    def keep(*args: object) -> None:
        return None

    source, function = load("def f():\n    return 1\n")
    previous = sys.gettrace()
    sys.settrace(keep)
    try:
        tracer.Tracer(source=source).call(function, (), {})
        assert sys.gettrace() is keep
    finally:
        sys.settrace(previous)


def test_same_call_gives_identical_traces() -> None:
    source, function = load(CLOSURES, "outer")
    first = tracer.Tracer(source=source).call(function, ([3, 1, 2],), {})
    second = tracer.Tracer(source=source).call(function, ([3, 1, 2],), {})
    assert json.dumps(first) == json.dumps(second)


def test_trace_is_json_serialisable_and_untraced_code_is_ignored() -> None:
    source, function = load(
        """
        import json

        def f(d):
            return json.loads(json.dumps(d))
        """
    )
    trace = tracer.Tracer(source=source).call(function, ({"a": [1]},), {})
    assert json.loads(json.dumps(trace))["return"] == "{'a': [1]}"
    assert {step["frame"] for step in trace["steps"]} == {"f"}


# ---------------------------------------------------------------------------------------
# property tests: random programs against plain execution and a naive recorder
# ---------------------------------------------------------------------------------------


class _ProgramGenerator:
    """Small random functions over ints and lists: assignments, mutation, loops and ifs."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ints = ["a", "b"]
        self.lists = ["xs"]
        self.lines: list[str] = []

    def int_expr(self, depth: int = 0) -> str:
        rng = self.rng
        choice = rng.randrange(6 if depth < 2 else 3)
        if choice == 0:
            return str(rng.randint(-3, 9))
        if choice in (1, 2):
            return rng.choice(self.ints)
        if choice == 3:
            op = rng.choice(["+", "-", "*"])
            return f"({self.int_expr(depth + 1)} {op} {self.int_expr(depth + 1)})"
        if choice == 4:
            return f"({self.int_expr(depth + 1)} // (abs({self.int_expr(depth + 1)}) + 1))"
        return f"len({rng.choice(self.lists)})"

    def condition(self) -> str:
        op = self.rng.choice(["<", ">", "==", "!=", "<="])
        return f"{self.int_expr(1)} {op} {self.int_expr(1)}"

    def statement(self, indent: int, depth: int) -> None:
        rng = self.rng
        pad = "    " * indent
        kind = rng.randrange(10 if depth < 2 else 6)
        target_list = rng.choice([name for name in self.lists if name != "nested"])
        if kind == 0:
            name = rng.choice(["a", "b", "c", "d"])
            self.lines.append(f"{pad}{name} = {self.int_expr()}")
            if name not in self.ints:
                self.ints.append(name)
        elif kind == 1:
            self.lines.append(f"{pad}{rng.choice(self.ints)} += {self.int_expr(1)}")
        elif kind == 2:
            self.lines.append(f"{pad}if len({target_list}) < 12:")
            self.lines.append(f"{pad}    {target_list}.append({self.int_expr(1)})")
        elif kind == 3:
            self.lines.append(f"{pad}if {target_list}:")
            self.lines.append(
                f"{pad}    {target_list}[{self.int_expr(1)} % len({target_list})] = "
                f"{self.int_expr(1)}"
            )
        elif kind == 4:
            self.lines.append(f"{pad}if {target_list}:")
            self.lines.append(f"{pad}    {rng.choice(self.ints)} = {target_list}.pop()")
        elif kind == 5:
            name = rng.choice(["ys", "zs"])
            if name not in self.lists:
                self.lines.append(f"{pad}{name} = [{self.int_expr(1)}]")
                self.lists.append(name)
            else:
                self.lines.append(f"{pad}{name} = {rng.choice(self.lists)}")  # an alias
        elif kind == 6:
            loop_var = rng.choice(["i", "j"])
            self.lines.append(f"{pad}for {loop_var} in range({rng.randint(0, 4)}):")
            before = list(self.ints)
            self.ints.append(loop_var)
            self.block(indent + 1, depth + 1)
            self.ints = before  # unbound after a loop that did not run
        elif kind == 7:
            counter = f"k{len(self.lines)}"
            self.lines.append(f"{pad}{counter} = 0")
            self.lines.append(f"{pad}while {counter} < {rng.randint(0, 3)}:")
            self.lines.append(f"{pad}    {counter} += 1")
            self.block(indent + 1, depth + 1)
        elif kind == 8:
            self.lines.append(f"{pad}if {self.condition()}:")
            self.block(indent + 1, depth + 1)
            if rng.random() < 0.5:
                self.lines.append(f"{pad}else:")
                self.block(indent + 1, depth + 1)
        else:
            self.lines.append(f"{pad}nested = [[{self.int_expr(1)}], {target_list}]")
            self.lines.append(f"{pad}nested[0].append({self.int_expr(1)})")
            if "nested" not in self.lists:
                self.lists.append("nested")

    def block(self, indent: int, depth: int, size: int = 3) -> None:
        ints, lists = list(self.ints), list(self.lists)
        for _ in range(self.rng.randint(1, size)):
            self.statement(indent, depth)
        self.ints, self.lists = ints, lists  # names bound inside may not exist afterwards

    def program(self) -> str:
        self.lines = ["def f(a, b, xs):"]
        self.block(1, 0, size=8)
        self.lines.append("    return dict(locals())")
        return "\n".join(self.lines) + "\n"


def _policy_text(value: object, max_chars: int) -> str:
    """The documented rendering policy, written independently of the tracer's code."""
    kind = type(value)
    sized = kind in (list, tuple, dict, set, frozenset)
    if sized and len(value) > max_chars // 3:  # type: ignore[arg-type]
        return f"<{kind.__name__} of {len(value)} items, too large>"  # type: ignore[arg-type]
    try:
        return values.render(value, max_chars=max_chars)
    except values.NotALiteral:
        return f"<{values.type_name(value)} object>"
    except values.RenderLimitExceeded:
        if kind in (str, bytes):
            return f"<{kind.__name__} of {len(value)} chars, too large>"  # type: ignore[arg-type]
        if sized:
            return f"<{kind.__name__} of {len(value)} items, too large>"  # type: ignore[arg-type]
        return f"<{values.type_name(value)}, too large>"


def _naive_states(
    function: Callable[..., Any], args: tuple, max_chars: int = 10_000
) -> list[tuple[str, dict]]:
    """(event, rendered locals) at every event of the entry frame, by brute force."""
    seen: list[tuple[str, dict]] = []
    entry_code = function.__code__

    def local(frame: Any, event: str, arg: object) -> Any:
        if event in ("line", "return"):
            state = {
                name: _policy_text(value, max_chars)
                for name, value in frame.f_locals.items()
                if name != "__class__"
            }
            seen.append((event, state))
        return local

    def hook(frame: Any, event: str, arg: object) -> Any:
        return local if frame.f_code is entry_code else None

    sys.settrace(hook)
    try:
        function(*args)
    finally:
        sys.settrace(None)
    return seen


def _replayed_states(trace: dict) -> list[dict]:
    """Locals of the entry frame after each of its steps, replaying args and changes."""
    state: dict[str, str] = {}
    out = []
    for step in trace["steps"]:
        if step["fid"] != 0:
            continue
        if "args" in step:
            state = dict(step["args"])
        for name, text in step.get("changes", {}).items():
            if text is None:
                state.pop(name, None)
            else:
                state[name] = text
        out.append(dict(state))
    return out


@pytest.mark.parametrize("block", range(6))
def test_random_programs_against_plain_execution_and_naive_recorder(block: int) -> None:
    for seed in range(block * 50, block * 50 + 50):
        source = _ProgramGenerator(seed).program()
        args = (seed % 5, seed % 3 - 1, [seed % 7, 2])
        _, plain_function = load(source)
        expected = plain_function(*json.loads(json.dumps(args)))
        _, function = load(source)
        trace = tracer.Tracer(source=source, max_value_chars=10_000).call(
            function, json.loads(json.dumps(args)), {}
        )
        context = f"seed {seed}:\n{source}"
        assert not trace["partial"], context
        # Parsed, not as text: under any f_locals-reading tracer (3.11), locals() lists names in
        # the order they were first bound, not in the code's order.
        assert values.parse(trace["return"]) == expected, context
        replayed = _replayed_states(trace)
        assert replayed[-1] == {
            name: values.render(value, max_chars=10_000) for name, value in expected.items()
        }, context
        # After-line policy: the state after step k is what the next event of the frame sees.
        naive = _naive_states(load(source)[1], json.loads(json.dumps(args)))
        assert len(naive) == len(replayed) + 1, context
        assert [state for _, state in naive[1:]] == replayed, context
        assert naive[0][1] == trace["steps"][0]["args"], context


VALUE_PROGRAMS = [
    """
def f(parts):
    out = ""
    for p in parts:
        out += p
        c = p * 3
        b = p.encode()
        pair = (p, [len(p)], {p: None})
    return out
""",
    """
class Node:
    def __init__(self, v):
        self.v = v

def f(parts):
    items = []
    for i in range(70):
        items.append(i if i % 7 else Node(i))
        if len(items) > 3 and i % 5 == 0:
            items.pop(0)
        kind = {1.5, -0.0, i} if i % 2 else frozenset({"b", "a", str(i)})
        x = float("nan") if i % 3 == 0 else i / 7
        big = 7 ** i
        nested = [[[i]], (i,), {"k": [float("inf")]}]
    return len(items)
""",
    """
def f(parts):
    d = {}
    for p in parts:
        d.setdefault(len(p), []).append(p)
        view = d.get(len(p))
        view.append("!")
        del view
    s = set()
    for p in parts:
        s.add(p[:1])
        s |= {p[-1:]}
    return d
""",
]
VALUE_ARGS = (["a", "\x00\n", "\u00e9\U0001f600", "", "q" * 70, "'\"", "xyz" * 5],)


@pytest.mark.parametrize("max_chars", [16, 64, 200])
@pytest.mark.parametrize("source", VALUE_PROGRAMS)
def test_value_texts_against_naive_recorder(source: str, max_chars: int) -> None:
    """Strings, bytes, floats, sets, big ints, foreign objects, markers: every state is exact."""
    source, function = load(source)
    trace = tracer.Tracer(source=source, max_value_chars=max_chars).call(
        function, json.loads(json.dumps(VALUE_ARGS)), {}
    )
    naive = _naive_states(load(source)[1], json.loads(json.dumps(VALUE_ARGS)), max_chars)
    replayed = _replayed_states(trace)
    assert naive[0][1] == trace["steps"][0]["args"]
    assert [state for _, state in naive[1:]] == replayed


FINGERPRINT_PROGRAM = """
import array

def f(parts):
    items = [
        float("nan"), 1.5, -0.0, float("inf"), 2j, complex(float("inf"), 1), ..., StopIteration,
        (lambda: 0).__code__, bytearray(b"ab"), memoryview(b"q"), array.array("i", [7]),
        frozenset({9, 10}), {9, 10}, set(), frozenset(), 10**15, -(10**15), 2**70, 2**14400 - 1, "a<b",
        "nan", "s", b"", True, None, (1,), ((),), {(1, 2): "x"}, list(range(62)), parts,
    ]
    box = []
    for item in items:
        box.append(item)
        pair = [item, 0]
        pair[1] = [item]
        if len(box) > 3:
            box.pop(0)
    deep = []
    cur = deep
    for _ in range(103):
        cur.append([])
        cur = cur[0]
    cur.append(1)
    return len(box)
"""


@pytest.mark.parametrize("max_chars", [16, 64, 200, 1000])
def test_container_texts_taking_the_fingerprint_shortcut(max_chars: int) -> None:
    """Containers re-rendered after in-place changes: values whose C repr is not the canonical
    rendering (nan, sets, bytes-like, code objects, ...), payload bytes that look like type
    codes, nesting past render's depth limit: every state matches the independent policy."""
    source, function = load(FINGERPRINT_PROGRAM)
    args = (json.loads(json.dumps(VALUE_ARGS[0])),)
    trace = tracer.Tracer(source=source, max_value_chars=max_chars).call(function, args, {})
    assert not trace["partial"]
    naive = _naive_states(load(FINGERPRINT_PROGRAM)[1], args, max_chars)
    replayed = _replayed_states(trace)
    assert [state for _, state in naive[1:]] == replayed
    texts = {text for state in replayed for text in state.values()}
    assert "<list object>" in texts  # a list holding a bytearray, a code object, ...


def test_random_programs_line_sequence_matches_raw_settrace() -> None:
    for seed in range(300, 340):
        source = _ProgramGenerator(seed).program()
        _, function = load(source)
        lines: list[int] = []

        def local(frame: Any, event: str, arg: object, lines: list[int] = lines) -> Any:
            if event == "line":
                lines.append(frame.f_lineno)
            return local

        def hook(frame: Any, event: str, arg: object) -> Any:
            return local if frame.f_code.co_filename == "<program>" else None

        sys.settrace(hook)
        try:
            function(1, 2, [3])
        finally:
            sys.settrace(None)
        trace = tracer.Tracer(source=source).call(load(source)[1], (1, 2, [3]), {})
        assert [step["line"] for step in trace["steps"]] == lines, source
