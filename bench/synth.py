"""Synthesis throughput: the pipeline's full validation against one fresh interpreter per case.

Ours: ``codereasoner.synth.pipeline.run`` with the offline generator (generation, static filter,
dedup, decontamination against the benchmark programs found under --data-dir, mutants, traced
sandboxed execution in batches, result filters, the second hash seed, records, summary and plot),
on warm pools. Counted: candidates validated (originals and mutants that ran in the sandbox and
were judged) and cases kept, per second.

Baseline, measured in the same run: the same judgement of the first --baseline executable
candidates with one fresh sandboxed interpreter per validation (a pool that replaces its worker
after every job, nothing preloaded), once per hash seed, one call per job, no tracing.

    python bench/synth.py [--n 1000] [--runs 3] [--baseline 60] [--workers 2]
                          [--data-dir /work/shared/data]

Prints each run and the medians, and the ratio of validated cases per second (ours / baseline).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from codereasoner.benchmarks.programs import load_benchmark_programs
from codereasoner.execution import Batch, Limits, Pool, Program, parse_call
from codereasoner.synth.decontam import BenchmarkIndex
from codereasoner.synth.filters import FilterConfig, check_determinism, check_result, check_static
from codereasoner.synth.generators.offline import OfflineGenerator
from codereasoner.synth.pipeline import HASH_SEEDS, SynthConfig, run

EXECUTED_STAGES = ("execution", "determinism", "mutation")


def run_ours(
    n: int, seed: int, pools: tuple[Pool, Pool], index: tuple, workers: int
) -> tuple[float, int, int]:
    """Seconds, candidates validated, cases kept."""
    with tempfile.TemporaryDirectory() as tmp:
        config = SynthConfig(out=Path(tmp) / "run", n=n, seed=seed, workers=workers)
        started = time.perf_counter()
        summary = run(config, pools=pools, decontam=index)
        seconds = time.perf_counter() - started
        executed = summary.kept
        with open(Path(tmp) / "run" / "dropped.jsonl") as handle:
            for line in handle:
                drop = json.loads(line)
                executed += drop["stage"] in EXECUTED_STAGES and drop["reason"] != "parent_dropped"
    return seconds, executed, summary.kept


def run_baseline(cases: list, workers: int) -> tuple[float, int, int]:
    """Seconds, candidates validated, cases kept: a fresh sandboxed interpreter per run."""
    config = FilterConfig()
    limits = Limits(timeout_s=1.0, memory_mb=256)
    started = time.perf_counter()
    results = []
    for seed in HASH_SEEDS:
        with Pool(workers, hash_seed=seed, preload=(), recycle_after=1, limits=limits) as pool:
            batches = [
                Batch(Program(case.code, case.entry_point), [parse_call(case.call)])
                for case in cases
            ]
            results.append([batch[0] for batch in pool.map(batches)])
    kept = 0
    for case, first, second in zip(cases, *results, strict=True):
        if (
            check_result(case, first, config) is None
            and check_determinism(case, first, second) is None
        ):
            kept += 1
    return time.perf_counter() - started, len(cases), kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="original candidates per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", type=int, default=60, help="candidates for the baseline")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()

    started = time.perf_counter()
    programs, checked = load_benchmark_programs(args.data_dir)
    index = (BenchmarkIndex(programs), checked)
    print(
        f"decontamination index: {len(programs)} programs from {', '.join(checked) or 'none'} "
        f"({time.perf_counter() - started:.1f} s, not counted)"
    )
    generator = OfflineGenerator(0)
    sample = []
    position = 0
    while len(sample) < args.baseline:
        candidate = generator.generate(position)
        position += 1
        if check_static(candidate) is None:
            sample.append(candidate)

    ours_rates, kept_rates, base_rates = [], [], []
    with (
        Pool(args.workers, hash_seed=HASH_SEEDS[0]) as first,
        Pool(args.workers, hash_seed=HASH_SEEDS[1]) as second,
    ):
        for number in range(args.runs):
            seconds, validated, kept = run_ours(
                args.n, number, (first, second), index, args.workers
            )
            base_s, base_validated, base_kept = run_baseline(sample, args.workers)
            ours_rates.append(validated / seconds)
            kept_rates.append(kept / seconds)
            base_rates.append(base_validated / base_s)
            print(
                f"run {number + 1}: ours {validated} validated, {kept} kept in {seconds:.2f} s "
                f"({validated / seconds:.0f} validated/s, {kept / seconds:.0f} kept/s); "
                f"baseline {base_validated} validated, {base_kept} kept in {base_s:.2f} s "
                f"({base_validated / base_s:.1f}/s)"
            )
    ours, kept_rate, base = (statistics.median(r) for r in (ours_rates, kept_rates, base_rates))
    print(f"\nmedian of {args.runs}, {args.workers} workers, n={args.n} originals per run:")
    print(
        f"  ours (full validation, traced, two hash seeds): {ours:.0f} validated cases/s, "
        f"{kept_rate:.0f} kept cases/s"
    )
    print(f"  baseline (fresh sandboxed interpreter per validation): {base:.1f} validated cases/s")
    print(
        f"  ratio: {ours / base:.1f}x; target >= 200 validated cases/s: "
        f"{'met' if ours >= 200 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
