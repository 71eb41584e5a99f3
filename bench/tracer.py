"""Tracing overhead: plain execution against our tracer and a naive tracer, same programs.

* plain: the call with no tracing;
* ours: ``Tracer.call`` with full state capture (every changed local, exact, rendered);
* naive: ``sys.settrace`` that renders every local with a bounded ``reprlib.Repr`` at every line
  event (execution.md 7.1/7.3), recording (line, {name: text}).

Reports, per program, the median time per call, the line events per call, the added cost per
line event ((traced - plain) / events, in µs), the slowdown (traced / plain) and the ratio of
the naive tracer's added cost to ours. Everything runs in one process, interleaved.

    python bench/tracer.py [--repeats 7] [--quick]
"""

from __future__ import annotations

import argparse
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
tracer = _load_flat("tracer", _SRC / "execution" / "sandboxed" / "tracer.py")

# (name, source, entry, args, calls per timing): a loop-heavy snippet (execution.md 7.1)
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


def _time(action: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - start) / calls


def measure(source: str, entry: str, args: tuple, calls: int, repeats: int) -> dict[str, float]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<program>", "exec"), namespace)
    function = namespace[entry]
    recorder = tracer.Tracer(source=source, max_steps=10**7, max_trace_chars=10**10)
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

    times: dict[str, list[float]] = {"plain": [], "ours": [], "naive": []}
    for _ in range(repeats):
        for name, action in (("plain", plain), ("ours", ours), ("naive", naive)):
            times[name].append(_time(action, calls))
    result = {name: statistics.median(values) for name, values in times.items()}
    result["events"] = events
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 repeats, for a smoke test")
    options = parser.parse_args()
    repeats = 3 if options.quick else options.repeats
    print(f"Python {platform.python_version()} ({sys.implementation.name}), medians of {repeats}")
    header = (
        f"{'program':<30} {'events':>7} {'plain':>9} {'ours':>9} {'naive':>9} "
        f"{'ours us/ev':>10} {'naive us/ev':>11} {'ours x':>7} {'naive x':>8} {'naive/ours':>10}"
    )
    print(header)
    print("-" * len(header))
    ratios = []
    for name, source, entry, args, calls in PROGRAMS:
        r = measure(source, entry, args, calls, repeats)
        events = r["events"]
        ours_event = (r["ours"] - r["plain"]) / events * 1e6
        naive_event = (r["naive"] - r["plain"]) / events * 1e6
        ratios.append(naive_event / ours_event)
        print(
            f"{name:<30} {events:>7.0f} {r['plain'] * 1e3:>7.3f}ms {r['ours'] * 1e3:>7.2f}ms "
            f"{r['naive'] * 1e3:>7.2f}ms {ours_event:>10.2f} {naive_event:>11.2f} "
            f"{r['ours'] / r['plain']:>6.0f}x {r['naive'] / r['plain']:>7.0f}x {ratios[-1]:>9.1f}x"
        )
    print(f"naive/ours added cost per event: median {statistics.median(ratios):.1f}x")


if __name__ == "__main__":
    main()
