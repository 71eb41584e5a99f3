"""Executor throughput: our sandboxed pool (single calls and batches) against two baselines.

The same 1,000 CRUXEval-like calls (10 program templates x 100 random inputs, 5% with a wrong
expected output) run through:
  * ours, isolated single calls (one fork per call, full sandbox), all submitted at once;
  * ours, one call at a time (an idle pool: the latency of one isolated call);
  * ours, batched (one fork per batch of calls of one program), for each size of --sweep;
  * human-eval style: one multiprocessing.Process per sample, verdict from an assert in the child;
  * unsafe in-process exec (no isolation at all; an upper bound, not a design);
  * the fork floor: a bare fork/_exit/wait loop in the sandbox's interpreter with the worker's
    modules loaded, one loop per worker (no sandbox, no job: the physical limit of one process
    per call on this machine), for the lean image (which serves these programs: no import
    statement) and for the image with the pool's preloads (programs that import).
Every verdict is checked against the truth. Prints snippets/s, p50/p99 latency and ratios.

    python bench/executor.py [--runs 3] [--calls 1000] [--sweep 1,4,16,64] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import string
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from codereasoner import values
from codereasoner.execution import Batch, Call, Pool, Program
from codereasoner.execution.pool import DEFAULT_PRELOAD

TEMPLATES = [
    "def f(text):\n    return [c for c in text if c not in 'aeiou']",
    "def f(nums):\n    total = 0\n    for n in nums:\n        if n % 2 == 0:\n            total += n\n"
    "        else:\n            total -= 1\n    return total",
    "def f(text, sep):\n    parts = text.split(sep)\n    return sep.join(reversed(parts))",
    "def f(d):\n    out = {}\n    for k, v in d.items():\n        out[v] = k\n    return out",
    "def f(nums):\n    seen = []\n    for n in nums:\n        if n not in seen:\n            seen.append(n)\n"
    "    return sorted(seen)",
    "def f(text):\n    counts = {}\n    for c in text:\n        counts[c] = counts.get(c, 0) + 1\n"
    "    return max(counts.items(), key=lambda kv: (kv[1], kv[0])) if counts else None",
    "def f(nums, k):\n    return [x * k for x in nums if x > k][:5]",
    "def f(text):\n    words = text.split()\n    return ' '.join(w.capitalize() for w in words)",
    "def f(nums):\n    i = 0\n    while i < len(nums) and nums[i] >= 0:\n        i += 1\n    return i",
    "def f(s, n):\n    return s.center(n, '*').replace('a', 'A').strip('*')",
]


@dataclass(frozen=True)
class Case:
    template: int
    call: Call
    expected: object
    expected_is_correct: bool


def _random_input(template: int, rng: random.Random) -> tuple:
    word = "".join(rng.choice(string.ascii_lowercase + " ") for _ in range(rng.randint(3, 20)))
    nums = [rng.randint(-9, 9) for _ in range(rng.randint(0, 12))]
    return [
        (word,),
        (nums,),
        (word, rng.choice(" ae")),
        ({c: i for i, c in enumerate(word[:6])},),
        (nums,),
        (word,),
        (nums, rng.randint(-3, 3)),
        (word,),
        (nums,),
        (word, rng.randint(0, 30)),
    ][template]


def make_cases(count: int, seed: int = 0) -> list[Case]:
    rng = random.Random(seed)
    functions = []
    for source in TEMPLATES:
        namespace: dict = {}
        exec(source, namespace)  # our own templates, to compute the truth
        functions.append(namespace["f"])
    cases = []
    for index in range(count):
        template = index % len(TEMPLATES)
        args = _random_input(template, rng)
        expected = functions[template](*args)
        correct = rng.random() >= 0.05
        if not correct:
            expected = ["wrong", expected]
        cases.append(Case(template, Call("f", args), expected, correct))
    return cases


@dataclass
class Measurement:
    name: str
    seconds: float
    latencies_ms: list[float]
    verdicts_right: int
    total: int

    @property
    def rate(self) -> float:
        return self.total / self.seconds


def run_ours(pool: Pool, cases: list[Case], batch_size: int) -> Measurement:
    programs = [Program(source) for source in TEMPLATES]
    groups: dict[int, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.template, []).append(case)
    ordered: list[Case] = []
    batches: list[Batch] = []
    for template, members in groups.items():
        for start in range(0, len(members), batch_size):
            chunk = members[start : start + batch_size]
            ordered += chunk
            batches.append(Batch(programs[template], [case.call for case in chunk]))
    started = time.perf_counter()
    results = [result for batch in pool.map(batches) for result in batch]
    seconds = time.perf_counter() - started
    right = sum(
        result.matches(case.expected) == case.expected_is_correct
        for result, case in zip(results, ordered, strict=True)
    )
    latencies = [result.latency_ms for result in results]
    name = "ours, isolated single calls" if batch_size == 1 else f"ours, batched ({batch_size})"
    return Measurement(name, seconds, latencies, right, len(cases))


def _humaneval_child(program: str, results: list) -> None:
    try:
        exec(program, {})
        results.append("passed")
    except BaseException:
        results.append("failed")


def _humaneval_check(program: str) -> tuple[bool, float]:
    started = time.perf_counter()
    with multiprocessing.Manager() as manager:
        results = manager.list()
        process = multiprocessing.Process(target=_humaneval_child, args=(program, results))
        process.start()
        process.join(timeout=3)
        if process.is_alive():
            process.kill()
        passed = bool(results) and results[0] == "passed"
    return passed, (time.perf_counter() - started) * 1000


def run_humaneval_style(cases: list[Case], workers: int) -> Measurement:
    programs = [
        f"{TEMPLATES[case.template]}\nassert {case.call.render()} == {values.render(case.expected)}"
        for case in cases
    ]
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as executor:
        outcomes = list(executor.map(_humaneval_check, programs))
    seconds = time.perf_counter() - started
    right = sum(
        passed == case.expected_is_correct
        for (passed, _), case in zip(outcomes, cases, strict=True)
    )
    return Measurement(
        "human-eval style (Process per sample)",
        seconds,
        [latency for _, latency in outcomes],
        right,
        len(cases),
    )


def run_in_process(cases: list[Case]) -> Measurement:
    latencies = []
    right = 0
    started = time.perf_counter()
    for case in cases:
        begin = time.perf_counter()
        namespace: dict = {}
        exec(TEMPLATES[case.template], namespace)
        value = namespace["f"](*case.call.args)
        right += (value == case.expected) == case.expected_is_correct
        latencies.append((time.perf_counter() - begin) * 1000)
    seconds = time.perf_counter() - started
    return Measurement("unsafe in-process exec", seconds, latencies, right, len(cases))


def run_one_at_a_time(pool: Pool, cases: list[Case]) -> Measurement:
    programs = [Program(source) for source in TEMPLATES]
    latencies = []
    right = 0
    started = time.perf_counter()
    for case in cases:
        begin = time.perf_counter()
        result = pool.run(programs[case.template], case.call)
        latencies.append((time.perf_counter() - begin) * 1000)
        right += result.matches(case.expected) == case.expected_is_correct
    seconds = time.perf_counter() - started
    return Measurement("ours, one call at a time", seconds, latencies, right, len(cases))


# Run by the sandbox's interpreter with the staged worker modules importable: the worker's own
# imports and the pool's preloads, a frozen GC, then fork/_exit/wait as fast as it can.
_FORK_LOOP = """
import gc, json, os, sys, time
sys.path.insert(0, sys.argv[1])
import worker  # noqa: F401 (the worker's imports)
for name in json.loads(sys.argv[2]):
    try:
        __import__(name)
    except Exception:
        pass
gc.collect()
gc.freeze()
count = int(sys.argv[3])
latencies = []
started = time.perf_counter()
for _ in range(count):
    begin = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    latencies.append((time.perf_counter() - begin) * 1000)
print(json.dumps([time.perf_counter() - started, latencies]))
"""


def run_fork_floor(pool: Pool, count: int, workers: int, preload: tuple[str, ...]) -> Measurement:
    per_loop = count // workers
    command = [
        pool.plan.python,
        "-s",
        "-S",
        "-c",
        _FORK_LOOP,
        pool.stage_dir,
        json.dumps(list(preload)),
        str(per_loop),
    ]
    loops = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(workers)]
    outputs = [json.loads(loop.communicate()[0]) for loop in loops]
    seconds = max(output[0] for output in outputs)
    latencies = [latency for output in outputs for latency in output[1]]
    total = per_loop * workers
    image = "preloaded" if preload else "lean"
    name = f"fork floor, {image} image (fork/_exit/wait)"
    return Measurement(name, seconds, latencies, total, total)


def _percentile(data: list[float], q: float) -> float:
    ordered = sorted(data)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument(
        "--sweep", default="1,4,16,64", help="batch sizes (1 is the isolated single calls)"
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    sizes = sorted({int(size) for size in args.sweep.split(",")} | {1})
    cases = make_cases(args.calls)
    with Pool(args.workers) as pool:
        print(
            f"isolation: {pool.isolation}; sandbox Python {pool.plan.python_version}; "
            f"{args.workers} workers; {args.calls} calls; median of {args.runs} runs"
        )
        modes: list[tuple[str, Callable[[], Measurement]]] = [
            (f"batch{size}", lambda size=size: run_ours(pool, cases, size))  # type: ignore[misc]
            for size in sizes
        ]
        modes += [
            ("sequential", lambda: run_one_at_a_time(pool, cases)),
            ("humaneval", lambda: run_humaneval_style(cases, args.workers)),
            ("inprocess", lambda: run_in_process(cases)),
            ("floor", lambda: run_fork_floor(pool, args.calls, args.workers, ())),
            (
                "floor_preloaded",
                lambda: run_fork_floor(pool, args.calls, args.workers, DEFAULT_PRELOAD),
            ),
        ]
        runs: dict[str, list[Measurement]] = {key: [] for key, _ in modes}
        for _ in range(args.runs):
            for key, measure in modes:
                runs[key].append(measure())
    medians = {
        key: sorted(found, key=lambda m: m.rate)[len(found) // 2] for key, found in runs.items()
    }
    baseline = medians["humaneval"].rate
    floor = medians["floor"].rate  # the image these programs are served from
    print(
        f"{'design':40} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'verdicts':>10} "
        f"{'vs human-eval':>14} {'of fork floor':>14}"
    )
    for measurement in medians.values():
        print(
            f"{measurement.name:40} {measurement.rate:9.0f} "
            f"{statistics.median(measurement.latencies_ms):8.2f} "
            f"{_percentile(measurement.latencies_ms, 0.99):8.2f} "
            f"{measurement.verdicts_right:>5}/{measurement.total:<4} "
            f"{measurement.rate / baseline:13.1f}x {measurement.rate / floor:13.0%}"
        )
    all_right = all(m.verdicts_right == m.total for found in runs.values() for m in found)
    print("every verdict correct:", "yes" if all_right else "NO")
    if not all_right:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
