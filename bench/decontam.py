"""Decontamination: checks per second against a brute-force near-duplicate pass (same run), and
the share of offline-generator cases flagged under each 10-gram rule (literal, specific).

    python bench/decontam.py [--data-dir ../shared/data] [--n 2000]

Ours: :meth:`BenchmarkIndex.check` (10-gram rule, short exact strings, near-duplicate pass with
prefix filtering), timed with the default (literal) rule. Baseline: the near-duplicate pass
alone done by brute force (Jaccard of token 5-gram shingles against every benchmark program), on
a tenth of the cases.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from codereasoner.benchmarks.programs import load_benchmark_programs
from codereasoner.synth.decontam import NGRAM_RULES, BenchmarkIndex, near_view
from codereasoner.synth.generators.offline import OfflineGenerator

SHINGLE = 5


def shingles(code: str) -> frozenset[tuple[str, ...]]:
    view = near_view(code)
    return frozenset(zip(*(view[i:] for i in range(SHINGLE)), strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    parser.add_argument("--data-dir", type=Path, default=default_data)
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()

    loaded = load_benchmark_programs(args.data_dir)
    if not loaded.checked:
        raise SystemExit(f"no benchmark data under {args.data_dir}: pass --data-dir")
    started = time.process_time()
    index = BenchmarkIndex(loaded.programs)
    print(
        f"index: {len(loaded.programs)} programs from {', '.join(loaded.checked) or 'none'} "
        f"(skipped: {', '.join(sorted(loaded.skipped)) or 'none'}), built in "
        f"{time.process_time() - started:.2f} s CPU"
    )
    generator = OfflineGenerator(0)
    cases = [generator.generate(i) for i in range(args.n)]

    started = time.process_time()
    results = [index.check(case.code, case.call) for case in cases]
    ours = len(cases) / (time.process_time() - started)

    benchmark_shingles = [shingles(program.code) for program in index.programs]
    subset = cases[: max(1, len(cases) // 10)]
    started = time.process_time()
    for case in subset:
        mine = shingles(case.code)
        max(
            (len(mine & theirs) / max(1, len(mine | theirs)) for theirs in benchmark_shingles),
            default=0.0,
        )
    brute = len(subset) / (time.process_time() - started)
    print(
        f"checks/s (CPU): ours {ours:,.0f}, brute-force near-duplicate pass alone {brute:,.0f}, "
        f"ratio {ours / brute:.1f}x"
    )

    for rule in NGRAM_RULES:
        if rule != index.rule:
            other = BenchmarkIndex(loaded.programs, rule=rule)
            results = [other.check(case.code, case.call) for case in cases]
        flagged = [matches for matches in results if matches]
        rules = Counter(name for matches in flagged for name in {match.rule for match in matches})
        print(
            f"offline generator, {rule} rule: {len(flagged)}/{len(cases)} flagged "
            f"({100 * len(flagged) / len(cases):.2f}%) {dict(sorted(rules.items()))}"
        )


if __name__ == "__main__":
    main()
