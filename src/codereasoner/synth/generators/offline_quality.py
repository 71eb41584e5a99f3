"""Quality figures of the offline generator, measured by running its cases in the sandbox pool.

``python -m codereasoner.synth.generators.offline_quality --n 20000 --seed 0`` prints: the share
of candidates that return a literal rendering in at most 50 characters, the share unique after
AST-normalised dedup, catalog coverage, constraint violations, generation speed, and the
distributions of methods, depth and lines.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codereasoner.execution import (
    Batch,
    ExecResult,
    Executor,
    Limits,
    Pool,
    Program,
    TraceOptions,
    parse_call,
)
from codereasoner.synth.case import Candidate
from codereasoner.synth.catalog import catalog
from codereasoner.synth.constraints import violations
from codereasoner.synth.generators.offline import OfflineGenerator
from codereasoner.trace import ExecutionTrace

MAX_OUTPUT_CHARS = 50
TRIVIAL = frozenset(
    {"[]", "()", "{}", "''", "b''", "0", "0.0", "False", "None", "set()", "frozenset()"}
)


def outcome(result: ExecResult, max_chars: int = MAX_OUTPUT_CHARS) -> str:
    """``ok``, ``long`` (literal but too long), ``non_literal``, or the failure status/type."""
    if not result.ok:
        return result.exception_type or result.status.value
    if not result.is_literal or result.value is None:
        return "non_literal"
    return "ok" if len(result.value) <= max_chars else "long"


def run_candidates(
    pool: Executor, candidates: Sequence[Candidate], trace: bool = False
) -> list[ExecResult]:
    """Run each candidate's call once in the pool, in order (traced when ``trace``)."""
    options = TraceOptions(max_steps=5000) if trace else None
    batches = [
        Batch(Program(c.code, c.entry_point), [parse_call(c.call)], None, options)
        for c in candidates
    ]
    return [results[0] for results in pool.map(batches)]


def unique_share(candidates: Sequence[Candidate]) -> float:
    """Share of candidates not duplicating an earlier one (exact or AST-normalised)."""
    from codereasoner.synth.dedup import Deduper

    deduper = Deduper()
    duplicates = sum(1 for c in candidates if deduper.seen(c) is not None)
    return 1 - duplicates / max(1, len(candidates))


@dataclass
class Report:
    """What :func:`measure` found."""

    n: int
    per_second: float
    outcomes: Counter[str]
    unique: float
    covered: int
    catalog_size: int
    violating: int
    methods: Counter[str] = field(default_factory=Counter)
    depths: Counter[int] = field(default_factory=Counter)
    lines: Counter[int] = field(default_factory=Counter)
    failing_methods: Counter[str] = field(default_factory=Counter)
    trivial: int = 0
    steps: list[int] = field(default_factory=list)
    line_coverage: list[float] = field(default_factory=list)

    @property
    def ok_share(self) -> float:
        return self.outcomes["ok"] / max(1, self.n)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "candidates_per_second": round(self.per_second),
            "ok_share": round(self.ok_share, 4),
            "unique_share": round(self.unique, 4),
            "covered_methods": self.covered,
            "catalog_size": self.catalog_size,
            "constraint_violations": self.violating,
            "outcomes": dict(self.outcomes.most_common()),
            "trivial_output_share": round(self.trivial / max(1, self.n), 4),
            "trace_steps": _quantiles(self.steps),
            "line_coverage": _quantiles(self.line_coverage),
            "depth": dict(sorted(self.depths.items())),
            "lines": dict(sorted(self.lines.items())),
            "top_methods": dict(self.methods.most_common(15)),
            "least_methods": dict(sorted(self.methods.items(), key=lambda kv: kv[1])[:10]),
            "most_failing_methods": dict(self.failing_methods.most_common(15)),
        }


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    pick = {"p10": 0.1, "p50": 0.5, "p90": 0.9, "max": 1.0}
    return {
        name: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)
        for name, q in pick.items()
    } | {"mean": round(sum(ordered) / len(ordered), 3)}


def measure(pool: Executor | None, n: int, seed: int = 0, start: int = 0) -> Report:
    """Generate ``n`` candidates and measure them (execution only when ``pool`` is given)."""
    generator = OfflineGenerator(seed)
    began = time.perf_counter()
    candidates = [generator.generate(index) for index in range(start, start + n)]
    per_second = n / max(1e-9, time.perf_counter() - began)
    outcomes: Counter[str] = Counter()
    failing: Counter[str] = Counter()
    trivial, steps, coverage = 0, [], []
    if pool is not None:
        results = run_candidates(pool, candidates, trace=True)
        for candidate, result in zip(candidates, results, strict=True):
            kind = outcome(result)
            outcomes[kind] += 1
            if kind != "ok":
                failing[candidate.method] += 1
            trivial += result.value in TRIVIAL
            if result.trace is not None:
                trace = ExecutionTrace.from_wire(result.trace)
                steps.append(len(trace))
                body = candidate.code.count("\n")  # lines after the def line
                coverage.append(len(trace.coverage() - {1}) / max(1, body))
    violating = sum(1 for c in candidates if violations(c.code, c.constraints, c.method))
    return Report(
        n=n,
        per_second=per_second,
        outcomes=outcomes,
        unique=unique_share(candidates),
        covered=len({c.method for c in candidates}),
        catalog_size=len(catalog()),
        violating=violating,
        methods=Counter(c.method for c in candidates),
        depths=Counter(c.constraints.depth for c in candidates),
        lines=Counter(c.code.count("\n") + 1 for c in candidates),
        failing_methods=failing,
        trivial=trivial,
        steps=steps,
        line_coverage=coverage,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-run", action="store_true", help="skip sandbox execution")
    options = parser.parse_args(argv)
    if options.no_run:
        report = measure(None, options.n, options.seed)
    else:
        limits = Limits(timeout_s=1.0, memory_mb=256)
        with Pool(options.workers, limits=limits) as pool:
            report = measure(pool, options.n, options.seed)
    print(json.dumps(report.to_dict(), indent=1))


if __name__ == "__main__":
    main()
