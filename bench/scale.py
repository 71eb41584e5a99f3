"""Ray executor throughput: the Ray backend against the local pool, and a simulated scaling curve.

1. Overhead: the CRUXEval-like calls of ``bench/executor.py`` (10 templates x random inputs, 5%
   with a wrong expected output) as isolated single calls and as batches, through the local
   ``Pool`` and through ``RayPool`` with the same number of workers on this machine. Every
   result is checked identical between the two (timing fields aside) and every verdict against
   the truth. Prints calls/s and the overhead ratio local/ray (the target: at most 1.3x).
2. Scaling curve: calls whose cost is wall time, not CPU (``time.sleep``), so that more workers
   than cores still show how throughput grows with the number of workers, and where dispatch
   stops keeping up. Ray is started with as many logical CPUs as the largest worker count; the
   local pool with the same workers is shown beside it, and the ideal (workers / sleep).

    python bench/scale.py [--runs 3] [--calls 1000] [--batch 16] [--workers 2]
                          [--curve 1,2,4,8] [--curve-calls 200] [--sleep-ms 20]
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, replace

import ray

from codereasoner.execution import Batch, ExecResult, Pool, Program, parse_call
from codereasoner.execution.executor import Executor
from codereasoner.execution.ray_pool import RayPool
from executor import TEMPLATES, Case, make_cases  # bench/executor.py: the same workload


@dataclass
class Timed:
    seconds: float
    results: list[ExecResult]

    @property
    def rate(self) -> float:
        return len(self.results) / self.seconds


def grouped(cases: list[Case], batch_size: int) -> tuple[list[Batch], list[Case]]:
    """Batches of calls of one template (as ``bench/executor.py`` sends them), and the cases in
    the order of the results."""
    programs = [Program(source) for source in TEMPLATES]
    by_template: dict[int, list[Case]] = {}
    for case in cases:
        by_template.setdefault(case.template, []).append(case)
    batches: list[Batch] = []
    ordered: list[Case] = []
    for template, members in by_template.items():
        for start in range(0, len(members), batch_size):
            chunk = members[start : start + batch_size]
            ordered += chunk
            batches.append(Batch(programs[template], [case.call for case in chunk]))
    return batches, ordered


def timed(executor: Executor, batches: list[Batch]) -> Timed:
    started = time.perf_counter()
    results = [result for batch in executor.map(batches) for result in batch]
    return Timed(time.perf_counter() - started, results)


def paired_runs(
    runs: int, local: Executor, remote: Executor, batches: list[Batch]
) -> tuple[list[Timed], list[Timed]]:
    """Local and Ray runs taken in turn, so that both see the same load on a shared machine."""
    pairs = [(timed(local, batches), timed(remote, batches)) for _ in range(runs)]
    return [pair[0] for pair in pairs], [pair[1] for pair in pairs]


def median(found: list[Timed]) -> Timed:
    return sorted(found, key=lambda t: t.rate)[len(found) // 2]


def without_timing(results: list[ExecResult]) -> list[ExecResult]:
    return [replace(r, wall_ms=0.0, cpu_ms=0.0, max_rss_kb=0, latency_ms=0.0) for r in results]


def overhead(args: argparse.Namespace) -> bool:
    cases = make_cases(args.calls)
    started = time.perf_counter()
    with Pool(args.workers) as local, RayPool(args.workers) as remote:
        print(
            f"isolation: {local.isolation}; {args.workers} workers each; {args.calls} calls; "
            f"median of {args.runs} runs taken in turn (Ray actors started in "
            f"{time.perf_counter() - started:.1f} s)"
        )
        print(f"{'mode':28} {'local calls/s':>14} {'ray calls/s':>12} {'local/ray':>10}")
        all_same = True
        for batch_size in (1, args.batch):
            batches, ordered = grouped(cases, batch_size)
            local_runs, ray_runs = paired_runs(args.runs, local, remote, batches)
            ours, theirs = median(local_runs), median(ray_runs)
            expected = without_timing(local_runs[0].results)
            same = all(without_timing(t.results) == expected for t in local_runs + ray_runs)
            right = all(
                result.matches(case.expected) == case.expected_is_correct
                for result, case in zip(local_runs[0].results, ordered, strict=True)
            )
            all_same &= same and right
            mode = "isolated single calls" if batch_size == 1 else f"batches of {batch_size}"
            print(
                f"{mode:28} {ours.rate:14.0f} {theirs.rate:12.0f} {ours.rate / theirs.rate:9.2f}x"
            )
    return all_same


def curve(args: argparse.Namespace) -> bool:
    program = Program(
        f"import time\ndef f(n):\n    time.sleep({args.sleep_ms / 1000})\n    return n"
    )
    batches = [Batch(program, [parse_call(f"f({n})")]) for n in range(args.curve_calls)]
    print(
        f"\nscaling: {args.curve_calls} single calls of time.sleep({args.sleep_ms} ms), "
        f"{os.cpu_count()} cores, median of {args.runs} runs"
    )
    print(
        f"{'workers':>7} {'ideal/s':>8} {'local/s':>8} {'ray/s':>8} "
        f"{'ray speed-up':>13} {'ray/ideal':>10}"
    )
    base = 0.0
    all_same = True
    for workers in args.curve:
        with Pool(workers) as local, RayPool(workers) as remote:
            local_runs, ray_runs = paired_runs(args.runs, local, remote, batches)
            ours, theirs = median(local_runs), median(ray_runs)
        all_same &= [r.parsed_value() for r in theirs.results] == list(range(args.curve_calls))
        all_same &= without_timing(theirs.results) == without_timing(ours.results)
        base = base or theirs.rate
        ideal = workers * 1000 / args.sleep_ms
        print(
            f"{workers:7} {ideal:8.0f} {ours.rate:8.0f} {theirs.rate:8.0f} "
            f"{theirs.rate / base:12.2f}x {theirs.rate / ideal:9.0%}"
        )
    return all_same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--curve", type=lambda text: [int(n) for n in text.split(",")])
    parser.add_argument("--curve-calls", type=int, default=200)
    parser.add_argument("--sleep-ms", type=float, default=20.0)
    args = parser.parse_args()
    args.curve = args.curve or [1, 2, 4, 8]
    # Logical CPUs beyond the cores: the curve's calls sleep, so more workers than cores help.
    ray.init(
        num_cpus=max(args.workers, *args.curve),
        include_dashboard=False,
        object_store_memory=256 << 20,
        logging_level="warning",
    )
    try:
        same = overhead(args)
        same &= curve(args)
    finally:
        ray.shutdown()
    print(
        "every result identical to the local pool's, every verdict right:", "yes" if same else "NO"
    )
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
