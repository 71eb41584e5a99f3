"""Tracing overhead: plain execution against our tracer and a naive tracer, same programs.

* plain: the call with no tracing;
* ours: ``Tracer.call`` with full state capture (every changed local, exact, rendered), with
  the C fast path when it is built (``--engine python``: the pure-Python line handler);
* naive: ``sys.settrace`` that renders every local with a bounded ``reprlib.Repr`` at every line
  event (docs/tracing.md), recording (line, {name: text});
* floor (``--floor``): a lower bound for any tracer whose handler is a Python function and
  records changes (our C fast path is not one), not a tracer one could use: the callback,
  ``f_locals``, one step record per line event, and the ``repr``
  of the locals the previous line stored to whose identity changed; no loop iterations,
  conditions, in-place container changes, effects of calls, canonical rendering or size caps.

Reports, per program, the median time per call, the line events per call, the added cost per
line event ((traced - plain) / events, in µs), the slowdown (traced / plain) and the ratio of
the naive tracer's added cost to ours. Everything runs in one process, interleaved.

    python bench/tracer.py [--repeats 7] [--quick] [--floor] [--engine auto|c|python]
"""

from __future__ import annotations

import argparse
import dis
import gc
import importlib.util
import platform
import reprlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from codereasoner.execution.sandboxed import TRACER_MODULES

_SRC = Path(__file__).resolve().parents[1] / "src" / "codereasoner"


def _load_flat(name: str, path: Path) -> ModuleType:
    # The tracer runs as a flat module inside the sandbox; import it the same way.
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_load_flat("values", _SRC / "values.py")
for _name in TRACER_MODULES:  # each imports only those before it
    tracer = _load_flat(_name, _SRC / "execution" / "sandboxed" / f"{_name}.py")

# (name, source, entry, args, calls per timing): a loop-heavy snippet (docs/tracing.md)
# and CRUXEval-like functions.
PROGRAMS: list[tuple[str, str, str, tuple, int]] = [
    (
        "loop 20k, list grows every 50",
        "def f(n):\n    xs = []\n    total = 0\n    for i in range(n):\n        if i % 50 == 0:\n"
        "            xs.append(i)\n        else:\n            total += i\n    return total, len(xs)\n",
        "f",
        (20_000,),
        1,
    ),
    (
        "string filter",
        "def f(text):\n    out = ''\n    for c in text:\n        if c not in 'aeiou':\n"
        "            out += c.upper()\n        else:\n            out += '-'\n    return out\n",
        "f",
        ("the quick brown fox jumps over the lazy dog",),
        50,
    ),
    (
        "dict counting",
        "def f(words):\n    counts = {}\n    for w in words:\n        counts[w] = counts.get(w, 0) + 1\n"
        "    best = None\n    for w, c in counts.items():\n        if best is None or c > counts[best]:\n"
        "            best = w\n    return best, counts\n",
        "f",
        (["a", "b", "a", "c", "b", "a", "d", "e", "a", "c"] * 3,),
        50,
    ),
    (
        "two pointers",
        "def f(nums, target):\n    nums = sorted(nums)\n    lo, hi = 0, len(nums) - 1\n"
        "    while lo < hi:\n        s = nums[lo] + nums[hi]\n        if s == target:\n"
        "            return [lo, hi]\n        if s < target:\n            lo += 1\n        else:\n"
        "            hi -= 1\n    return []\n",
        "f",
        (list(range(0, 120, 3)), 200),
        50,
    ),
    (
        "nested lists, helper calls",
        "def add(row, v):\n    row.append(v)\n    return len(row)\n\n"
        "def f(n):\n    grid = [[] for _ in range(n)]\n    for r in range(n):\n        for c in range(n):\n"
        "            if (r + c) % 2:\n                add(grid[r], r * c)\n    return grid\n",
        "f",
        (6,),
        50,
    ),
    # Call-heavy code with few locals, where the naive tracer is cheapest and each call costs
    # ours a frame's state, its arguments, the return and a full check of the caller.
    (
        "recursion (fib 12)",
        "def f(n):\n    if n < 2:\n        return n\n    return f(n - 1) + f(n - 2)\n",
        "f",
        (12,),
        5,
    ),
    (
        "class with methods",
        "class C:\n    def __init__(self):\n        self.items = []\n    def add(self, x):\n"
        "        self.items.append(x)\n        return len(self.items)\n\n"
        "def f(n):\n    c = C()\n    total = 0\n    for i in range(n):\n        total += c.add(i)\n"
        "    return total\n",
        "f",
        (40,),
        20,
    ),
]


def _naive_tracer(records: list) -> Callable:
    bounded = reprlib.Repr()
    bounded.maxlevel = 3
    bounded.maxlist = bounded.maxdict = bounded.maxset = bounded.maxtuple = 6
    bounded.maxstring = bounded.maxother = 40

    def local(frame: Any, event: str, arg: object) -> Any:
        if event == "line":
            records.append(
                (frame.f_lineno, {k: bounded.repr(v) for k, v in frame.f_locals.items()})
            )
        return local

    def hook(frame: Any, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename == "<program>" else None

    return hook


def _stored_names(code: Any) -> dict[int, tuple[int, tuple[str, ...]]]:
    """Offset of each instruction -> (its line, the locals that line stores to from there on)."""
    instructions = list(dis.get_instructions(code))
    table: dict[int, tuple[int, tuple[str, ...]]] = {}
    for index, ins in enumerate(instructions):
        line = ins.positions.lineno if ins.positions else None
        names = [
            later.argval
            for later in instructions[index:]
            if later.opname == "STORE_FAST"
            and (later.positions.lineno if later.positions else None) == line
        ]
        table[ins.offset] = (line or 0, tuple(dict.fromkeys(names)))
    return table


class _FloorFrame:
    """The lower-bound tracer's state for one frame (see the module docstring)."""

    __slots__ = ("fn", "names", "records", "seen", "table")

    def __init__(self, records: list, table: dict[int, tuple[int, tuple[str, ...]]]) -> None:
        self.records = records
        self.table = table
        self.seen: dict[str, tuple[object, str]] = {}
        self.names: tuple[str, ...] = ()
        self.fn = self.local

    def local(self, frame: Any, event: str, arg: object) -> Any:
        if event != "line":
            return self.fn
        names = self.names
        if names:
            values = frame.f_locals
            seen = self.seen
            changes = None
            for name in names:
                value = values.get(name)
                old = seen.get(name)
                if old is None or old[0] is not value:
                    text = repr(value)
                    seen[name] = (value, text)
                    if old is None or old[1] != text:
                        if changes is None:
                            changes = {name: text}
                        else:
                            changes[name] = text
            if changes is not None:
                self.records[-1][1] = changes
        line, self.names = self.table[frame.f_lasti]
        self.records.append([line, None])
        return self.fn


def _floor_tracer(records: list, tables: dict[Any, dict[int, tuple[int, tuple[str, ...]]]]):
    def hook(frame: Any, event: str, arg: object) -> Any:
        table = tables.get(frame.f_code)
        return None if table is None else _FloorFrame(records, table).fn

    return hook


def _time(action: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - start) / calls


def measure(
    source: str,
    entry: str,
    args: tuple,
    calls: int,
    repeats: int,
    floor: bool = False,
    engine: str = "auto",
) -> dict[str, float]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<program>", "exec"), namespace)
    function = namespace[entry]
    stored = {
        value.__code__: _stored_names(value.__code__)
        for value in namespace.values()
        if callable(value) and getattr(value, "__code__", None) is not None
    }
    recorder = tracer.Tracer(source=source, max_steps=10**7, max_trace_chars=10**10, engine=engine)
    events = len(recorder.call(function, args, {})["steps"])

    def plain() -> object:
        return function(*args)

    def ours() -> object:
        recorder.call(function, args, {})
        # Free the trace inside the timing, as naive() frees its records: a trace left alive
        # until the next call would be rescanned by the collector while the others run.
        recorder._reset()
        return None

    def naive() -> object:
        records: list = []
        sys.settrace(_naive_tracer(records))
        try:
            return function(*args)
        finally:
            sys.settrace(None)

    def floor_() -> object:
        records: list = []
        # The collector setting ours uses, so that the comparison is about the handlers.
        thresholds = gc.get_threshold()
        gc.set_threshold(thresholds[0] * 10, *thresholds[1:])
        sys.settrace(_floor_tracer(records, stored))
        try:
            return function(*args)
        finally:
            sys.settrace(None)
            gc.set_threshold(*thresholds)

    actions = [("plain", plain), ("ours", ours), ("naive", naive)]
    if floor:
        actions.append(("floor", floor_))
    times: dict[str, list[float]] = {name: [] for name, _ in actions}
    for _ in range(repeats):
        for name, action in actions:
            times[name].append(_time(action, calls))
    result = {name: statistics.median(values) for name, values in times.items()}
    result["events"] = events
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 repeats, for a smoke test")
    parser.add_argument(
        "--floor", action="store_true", help="also time the lower-bound tracer (see above)"
    )
    parser.add_argument(
        "--engine",
        choices=tracer.ENGINES,
        default="auto",
        help="our tracer's line handler (auto: the C fast path when built)",
    )
    options = parser.parse_args()
    repeats = 3 if options.quick else options.repeats
    used = "C fast path" if tracer.Tracer(engine=options.engine).accelerated else "pure Python"
    print(
        f"Python {platform.python_version()} ({sys.implementation.name}), medians of {repeats}, "
        f"our tracer: {used}"
    )
    header = (
        f"{'program':<30} {'events':>7} {'plain':>9} {'ours':>9} {'naive':>9} "
        f"{'ours us/ev':>10} {'naive us/ev':>11} {'ours x':>7} {'naive x':>8} {'naive/ours':>10}"
    )
    if options.floor:
        header += f" {'floor us/ev':>11} {'naive/floor':>11}"
    print(header)
    print("-" * len(header))
    ratios = []
    floor_ratios = []
    for name, source, entry, args, calls in PROGRAMS:
        r = measure(source, entry, args, calls, repeats, options.floor, options.engine)
        events = r["events"]
        ours_event = (r["ours"] - r["plain"]) / events * 1e6
        naive_event = (r["naive"] - r["plain"]) / events * 1e6
        ratios.append(naive_event / ours_event)
        row = (
            f"{name:<30} {events:>7.0f} {r['plain'] * 1e3:>7.3f}ms {r['ours'] * 1e3:>7.2f}ms "
            f"{r['naive'] * 1e3:>7.2f}ms {ours_event:>10.2f} {naive_event:>11.2f} "
            f"{r['ours'] / r['plain']:>6.0f}x {r['naive'] / r['plain']:>7.0f}x {ratios[-1]:>9.1f}x"
        )
        if options.floor:
            floor_event = (r["floor"] - r["plain"]) / events * 1e6
            floor_ratios.append(naive_event / floor_event)
            row += f" {floor_event:>11.2f} {floor_ratios[-1]:>10.1f}x"
        print(row)
    print(f"naive/ours added cost per event: median {statistics.median(ratios):.1f}x")
    if options.floor:
        print(f"naive/floor added cost per event: median {statistics.median(floor_ratios):.1f}x")


if __name__ == "__main__":
    main()
