"""Tests of codereasoner.trace: the typed trace model and its text/JSON renderings."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

from codereasoner.trace import ExecutionTrace, Step, to_json, to_text
from tests.trace import load_flat

tracer = load_flat("tracer")


def trace_of(source: str, *args: Any, name: str = "f") -> tuple[str, ExecutionTrace]:
    source = textwrap.dedent(source).lstrip("\n")
    namespace: dict[str, Any] = {}
    exec(compile(source, "<program>", "exec"), namespace)
    wire = tracer.Tracer(source=source).call(namespace[name], args, {})
    return source, ExecutionTrace.from_wire(json.loads(json.dumps(wire)))


# A hand-written wire trace: f(2) calls g twice inside a loop.
#   1 def g(v):
#   2     return v * 10
#   3 def f(n):
#   4     out = []
#   5     for i in range(n):
#   6         out.append(g(i))
#   7     return out
WIRE: dict[str, Any] = {
    "steps": [
        {"line": 4, "frame": "f", "fid": 0, "depth": 0, "loops": [], "args": {"n": "2"},
         "changes": {"out": "[]"}},
        {"line": 5, "frame": "f", "fid": 0, "depth": 0, "loops": [[5, 1]], "changes": {"i": "0"}},
        {"line": 6, "frame": "f", "fid": 0, "depth": 0, "loops": [[5, 1]],
         "changes": {"out": "[0]"}},
        {"line": 2, "frame": "g", "fid": 1, "depth": 1, "loops": [], "args": {"v": "0"},
         "ret": "0"},
        {"line": 5, "frame": "f", "fid": 0, "depth": 0, "loops": [[5, 2]], "changes": {"i": "1"}},
        {"line": 6, "frame": "f", "fid": 0, "depth": 0, "loops": [[5, 2]],
         "changes": {"out": "[0, 10]"}},
        {"line": 2, "frame": "g", "fid": 2, "depth": 1, "loops": [], "args": {"v": "1"},
         "ret": "10"},
        {"line": 5, "frame": "f", "fid": 0, "depth": 0, "loops": [[5, 2]]},
        {"line": 7, "frame": "f", "fid": 0, "depth": 0, "loops": [], "ret": "[0, 10]"},
    ],
    "return": "[0, 10]",
    "return_literal": True,
    "exception": None,
    "partial": False,
    "partial_reason": None,
    "events": 15,
}  # fmt: skip


def test_from_wire_and_back() -> None:
    trace = ExecutionTrace.from_wire(WIRE)
    assert len(trace) == trace.line_count == 9
    assert trace.steps[1] == Step(
        line=5, frame="f", fid=0, depth=0, loops=((5, 1),), changes={"i": "0"}
    )
    assert trace.steps[1].iteration == 1 and trace.steps[0].iteration is None
    assert trace.return_value == "[0, 10]" and trace.exception is None and not trace.partial
    assert trace.to_dict() == WIRE
    assert ExecutionTrace.from_wire(trace.to_dict()) == trace


def test_views() -> None:
    trace = ExecutionTrace.from_wire(WIRE)
    assert trace.coverage() == {2, 4, 5, 6, 7}
    assert trace.coverage("g") == {2}
    assert trace.coverage_by_frame() == {"f": {4, 5, 6, 7}, "g": {2}}
    assert trace.path() == [
        (4, 5),
        (5, 6),
        (6, 5),
        (2, None),
        (5, 6),
        (6, 5),
        (2, None),
        (5, 7),
        (7, None),
    ]
    assert trace.path("g") == [(2, None), (2, None)]
    assert trace.values_at("out", 6) == ["[0]", "[0, 10]"]
    assert trace.values_at("i", 5) == ["0", "1", "1"]
    assert trace.values_at("v", 2, frame="g") == ["0", "1"]
    assert trace.values_at("missing", 6) == [None, None]
    assert trace.state_after(3) == {"v": "0"}
    assert trace.state_after(4) == {"n": "2", "out": "[0]", "i": "1"}
    assert trace.state_after(-1) == {"n": "2", "out": "[0, 10]", "i": "1"}
    assert trace.final_locals() == {"n": "2", "out": "[0, 10]", "i": "1"}
    with pytest.raises(IndexError):
        trace.state_after(9)


DELETION: dict[str, Any] = {"steps": [
    {"line": 1, "frame": "f", "fid": 0, "depth": 0, "loops": [], "args": {},
     "changes": {"x": "1"}},
    {"line": 2, "frame": "f", "fid": 0, "depth": 0, "loops": [], "changes": {"x": None}},
]}  # fmt: skip


def test_deleted_names_leave_the_state() -> None:
    trace = ExecutionTrace.from_wire(DELETION)
    assert trace.state_after(0) == {"x": "1"}
    assert trace.state_after(1) == {}
    assert trace.values_at("x", 2) == [None]


def test_to_text_plain_trace_with_calls() -> None:
    assert to_text(ExecutionTrace.from_wire(WIRE)) == "\n".join(
        [
            "call f(n=2)",
            "L4  -> out = []",
            "L5 [iter 1]  -> i = 0",
            "L6 [iter 1]  -> out = [0]",
            "  call g(v=0)",
            "  L2",
            "  return 0",
            "L5 [iter 2]  -> i = 1",
            "L6 [iter 2]  -> out = [0, 10]",
            "  call g(v=1)",
            "  L2",
            "  return 10",
            "L5 [iter 2]",
            "L7",
            "return [0, 10]",
        ]
    )


LOOP = """
def f(n):
    total = 0
    for i in range(n):
        total += i
    return total
"""


def test_to_text_compresses_long_loops() -> None:
    source, trace = trace_of(LOOP, 6)
    assert to_text(trace, source=source) == "\n".join(
        [
            "call f(n=6)",
            "L2  total = 0  -> total = 0",
            "L3 [iter 1]  for i in range(n):  -> i = 0",
            "L4 [iter 1]  total += i",
            "L3 [iter 2]  for i in range(n):  -> i = 1",
            "L4 [iter 2]  total += i  -> total = 1",
            "... 3 more iterations of the loop at line 3 ...",
            "L3 [iter 6]  for i in range(n):  -> i = 5",
            "L4 [iter 6]  total += i  -> total = 15",
            "L3 [iter 6]  for i in range(n):",
            "L5  return total",
            "return 15",
        ]
    )
    full = to_text(trace, first_iterations=10)
    assert "more iteration" not in full and full.count("\n") == len(trace) + 1
    assert "... 5 more iterations of the loop at line 3 ..." in to_text(
        trace, first_iterations=0, last_iterations=1
    )
    assert "... 1 more iteration of the loop at line 3 ..." in to_text(
        trace, first_iterations=3, last_iterations=2
    )


NESTED = """
def f(n):
    cells = 0
    for r in range(n):
        for c in range(n):
            cells += 1
    return cells
"""


def test_to_text_compresses_nested_loops_inside_shown_iterations() -> None:
    _, trace = trace_of(NESTED, 5)
    lines = to_text(trace, first_iterations=1, last_iterations=1).splitlines()
    assert lines.count("... 3 more iterations of the loop at line 3 ...") == 1
    # Inner loops are compressed in the two outer iterations that are shown.
    assert lines.count("... 3 more iterations of the loop at line 4 ...") == 2
    assert lines[1:4] == ["L2  -> cells = 0", "L3 [iter 1]  -> r = 0", "L4 [iter 1.1]  -> c = 0"]
    assert lines[-1] == "return 25"


def test_to_text_compresses_loops_of_called_frames() -> None:
    _, trace = trace_of(
        """
        def g(k):
            s = 0
            for j in range(k):
                s += j
            return s

        def f(n):
            return g(n) + g(2)
        """,
        6,
    )
    text = to_text(trace)
    assert "  ... 3 more iterations of the loop at line 3 ..." in text.splitlines()
    assert "  call g(k=6)" in text and "  return 15" in text and text.endswith("return 16")


RAISED: dict[str, Any] = {
    "steps": [{"line": 2, "frame": "f", "fid": 0, "depth": 0, "loops": [], "args": {},
               "exc": "ZeroDivisionError"}],
    "exception": {"type": "ZeroDivisionError", "message": "division by zero"},
    "partial": True, "partial_reason": "max_steps",
}  # fmt: skip


def test_to_text_exception_partial_and_max_chars() -> None:
    trace = ExecutionTrace.from_wire(RAISED)
    assert to_text(trace) == "\n".join(
        [
            "call f()",
            "L2  (raises ZeroDivisionError)",
            "(trace incomplete: max_steps)",
            "raises ZeroDivisionError: division by zero",
        ]
    )
    _, long = trace_of(LOOP, 50)
    cut = to_text(long, first_iterations=100, max_chars=120)
    assert len(cut) <= 120 and cut.endswith("... (trace truncated)")
    assert cut.splitlines()[0] == "call f(n=50)"
    assert len(to_text(long, max_chars=5)) <= 5


def test_to_json_round_trip() -> None:
    _, trace = trace_of(
        """
        def f(xs):
            seen = {}
            for i, x in enumerate(xs):
                if x in seen:
                    return [seen[x], i]
                seen[x] = i
            return None
        """,
        [3, 1, 3],
    )
    text = to_json(trace)
    assert ExecutionTrace.from_wire(json.loads(text)) == trace
    assert json.loads(text)["steps"][0]["args"] == {"xs": "[3, 1, 3]"}
