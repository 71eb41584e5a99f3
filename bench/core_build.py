"""``core build`` throughput: CoRE's problems rebuilt, against one fresh interpreter per check.

Ours: ``codereasoner.families.core.build.build`` from ``--from core`` (tests and their mutants
run, rewrites drawn and checked equivalent in the sandbox, every implementation traced on every
test, set-cover minimisation, probes), on a warm pool. Counted: (implementation, test) pairs
checked, i.e. every implementation kept times the candidate tests it was run on, per second of
the whole build, and problems per minute.

Baseline, measured in the same run: only the equivalence check of the same pairs (each kept
implementation on each kept test), with one fresh sandboxed interpreter per call (a pool that
replaces its worker after every job, nothing preloaded), as a harness without batching does.

    python bench/core_build.py [--problems 60] [--runs 3] [--baseline 300] [--workers 2]
                               [--data-dir /work/shared/data]

Prints each run, the medians and the ratio of pairs per second (ours / baseline).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from codereasoner.execution import Batch, Limits, Pool, Program, parse_call
from codereasoner.families.core.build import HASH_SEEDS, PROBLEMS_FILE, BuildSettings, build
from codereasoner.families.core.programs import PREAMBLE
from codereasoner.families.core.sources import SourceProblems, read_problems


def run_ours(
    settings: BuildSettings, pools: tuple[Pool, Pool], problems: SourceProblems
) -> tuple[float, int, int, list[dict]]:
    """Seconds, pairs checked, probes, and the problem records."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        summary = build(settings, Path(tmp) / "gen", pools, problems=problems)
        seconds = time.perf_counter() - started
        lines = (Path(tmp) / "gen" / PROBLEMS_FILE).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    pairs = sum(
        len(r["implementations"]) * int(r["candidate_tests"])
        for r in records
        if r["status"] == "built"
    )
    return seconds, pairs, int(summary.data["probes"]["total"]), records


def run_baseline(records: list[dict], limit: int, workers: int) -> tuple[float, int]:
    """Seconds and pairs: each kept implementation on each kept test, a fresh interpreter each."""
    batches = []
    for record in records:
        if record["status"] != "built":
            continue
        for impl in record["implementations"]:
            program = Program(impl["code"], record["entry"], preamble=PREAMBLE)
            for arguments in record["tests"]:
                call = parse_call(f"{record['entry']}({arguments})")
                batches.append(Batch(program, [call]))
    batches = batches[:limit]
    limits = Limits(timeout_s=2.0, memory_mb=512)
    started = time.perf_counter()
    with Pool(workers, preload=(), recycle_after=1, limits=limits) as pool:
        for _ in pool.map(batches):
            pass
    return time.perf_counter() - started, len(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", type=int, default=300, help="pairs for the baseline")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()

    problems = read_problems("core", args.data_dir)
    ours_rates, minutes, base_rates = [], [], []
    with (
        Pool(args.workers, hash_seed=HASH_SEEDS[0]) as pool,
        Pool(1, hash_seed=HASH_SEEDS[1]) as other,
    ):
        for number in range(args.runs):
            settings = BuildSettings(source="core", seed=number, limit=args.problems)
            seconds, pairs, probes, records = run_ours(settings, (pool, other), problems)
            base_s, base_pairs = run_baseline(records, args.baseline, args.workers)
            built = sum(r["status"] == "built" for r in records)
            ours_rates.append(pairs / seconds)
            minutes.append(seconds / 60)
            base_rates.append(base_pairs / base_s)
            print(
                f"run {number + 1}: ours {built}/{len(records)} problems, {pairs} pairs checked, "
                f"{probes} probes in {seconds:.1f} s ({pairs / seconds:.0f} pairs/s); baseline "
                f"{base_pairs} pairs in {base_s:.1f} s ({base_pairs / base_s:.1f} pairs/s)"
            )
    ours, base, minute = (statistics.median(r) for r in (ours_rates, base_rates, minutes))
    count = min(args.problems, len(problems.problems))
    print(f"\nmedian of {args.runs}, {args.workers} workers, {count} problems:")
    print(f"  ours (the whole build): {ours:.0f} pairs/s; {minute:.2f} min per build")
    print(f"  baseline (equivalence only, fresh interpreter per call): {base:.1f} pairs/s")
    print(
        f"  ratio: {ours / base:.1f}x; target: 60 problems in < 5 min: "
        f"{'met' if minute < 5 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
