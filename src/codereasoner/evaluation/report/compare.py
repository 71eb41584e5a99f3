"""Which items runs share, and each run's scores over the items they all hold.

Runs made with different ``--limit`` hold different items; their own scores are not comparable.
A :class:`Comparison` counts each run's items and, where the item sets differ, recomputes every
run's metrics over the common items from its stored verdicts (never grading again), with the
benchmark's metric family. Where that is impossible (no common item, a benchmark no longer
declared, verdicts not stored), the runs are marked as not comparable and nothing is starred.

The oracle's self-check runs take no part: the common items are those the model runs share (a
10-item self-check never shrinks two 20-item model runs), and a self-check is always shown on
its own items, never starred. Only where every run holding a benchmark is a self-check are the
self-checks intersected among themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from codereasoner import benchmarks
from codereasoner.evaluation.families import FAMILIES, RunReport
from codereasoner.evaluation.report.data import BenchmarkResult, Metric, Run
from codereasoner.evaluation.report.paired import ItemScores, item_scores, paired_best
from codereasoner.tasks import Extraction, Grading

__all__ = ["Comparison", "compare"]

Choice = TypeVar("Choice", Extraction, Grading)


@dataclass(frozen=True)
class Comparison:
    """One benchmark across runs (index ``r``: the ``r``-th run)."""

    benchmark: str
    counts: tuple[int | None, ...]  # each run's items (None: the run lacks the benchmark)
    common: int  # the items every compared run (self-checks left out) holding it holds
    same: bool  # the compared runs all hold the same items
    on_common: tuple[tuple[Metric, ...] | None, ...]  # metrics over the common items
    self_checks: frozenset[int]  # runs of the oracle: never compared for "best"
    apart: frozenset[int] = frozenset()  # self-checks left out of the common items
    own: frozenset[int] = frozenset()  # those of them holding other items than the common ones
    scores: tuple[ItemScores | None, ...] = ()  # each run's per-item share correct, if stored

    @property
    def all_same(self) -> bool:
        """Every run holding the benchmark, the self-checks too, holds the same items."""
        return self.same and not self.own

    def own_items(self, run: int) -> bool:
        """The run is shown on its own items, unlike the others: a self-check left apart."""
        return run in self.own

    @property
    def compared_runs(self) -> list[int]:
        """The runs holding the benchmark whose items define the common ones."""
        return [
            r for r, count in enumerate(self.counts) if count is not None and r not in self.apart
        ]

    @property
    def comparable(self) -> bool:
        """Same items, or every compared run's metrics recomputed over the common ones."""
        return self.same or all(self.on_common[r] is not None for r in self.compared_runs)

    def compared(self, runs: Sequence[Run], run: int, name: str) -> Metric | None:
        """The metric the comparison shows for ``run``: over the common items when the item
        sets differ (and it could be recomputed), the run's own otherwise."""
        shown = self.on_common[run]
        if shown is not None:
            return next((metric for metric in shown if metric.name == name), None)
        result = runs[run].benchmarks.get(self.benchmark)
        return result.metric(name) if result else None

    def best(self, values: Sequence[float | None]) -> set[int]:
        """The run holding the best value, the self-checks left out, where a paired test over
        the common items separates it from every other run (:func:`paired_best`); none when
        not comparable."""
        if not self.comparable:
            return set()
        kept = [None if r in self.self_checks else value for r, value in enumerate(values)]
        return paired_best(kept, self.scores)

    def to_dict(self, labels: Sequence[str]) -> dict[str, Any]:
        return {
            "items": {
                label: count
                for label, count in zip(labels, self.counts, strict=True)
                if count is not None
            },
            "common_items": self.common,
            "same_items": self.same,
            "comparable": self.comparable,
            "own_items": [labels[r] for r in sorted(self.own)],
        }


def compare(runs: Sequence[Run], benchmark: str) -> Comparison:
    results = [run.benchmarks.get(benchmark) for run in runs]
    models = [
        r for r, result in enumerate(results) if result is not None and not runs[r].self_check
    ]
    apart = frozenset(
        r for r, result in enumerate(results) if result is not None and models and r not in models
    )
    held = [result for r, result in enumerate(results) if result is not None and r not in apart]
    sets = [frozenset(result.verdicts) for result in held]
    counts = [result.item_count for result in held]
    if all(sets):
        common = frozenset.intersection(*sets) if sets else frozenset()
        same, shared = len(set(sets)) <= 1, len(common)
    else:  # some run's verdicts are not stored: only its report's count is known
        common, same = frozenset(), len(set(counts)) <= 1
        shared = min(counts) if same else 0
    on_common: list[tuple[Metric, ...] | None] = [None] * len(runs)
    if not same and common:
        for r, (run, result) in enumerate(zip(runs, results, strict=True)):
            if result is not None and r not in apart:
                on_common[r] = _recompute(run, result, sorted(common))
    return Comparison(
        benchmark,
        tuple(None if result is None else result.item_count for result in results),
        shared,
        same,
        tuple(on_common),
        frozenset(r for r, run in enumerate(runs) if run.self_check),
        apart,
        frozenset(r for r in apart if not _holds(results[r], common, shared, same)),
        tuple(None if result is None else item_scores(result.verdicts) for result in results),
    )


def _holds(result: BenchmarkResult | None, common: frozenset[str], shared: int, same: bool) -> bool:
    """The (self-check's) result holds exactly the common items (by count where verdicts are
    not stored)."""
    if result is None:
        return False
    if result.verdicts and common:
        return frozenset(result.verdicts) == common
    return same and result.item_count == shared


def _recompute(run: Run, result: BenchmarkResult, ids: list[str]) -> tuple[Metric, ...] | None:
    """The run's metrics over ``ids`` from its stored verdicts; None where impossible."""
    family = FAMILIES.get(result.kind)
    if family is None or result.name not in benchmarks.REGISTRY:
        return None
    if any(item_id not in result.items for item_id in ids):
        return None
    samples = min(len(result.verdicts[item_id]) for item_id in ids)
    settings = RunReport(
        generations="",
        format="",
        style=str(run.config.get("style", "")),
        extraction=_choice(Extraction, run.config.get("extraction"), Extraction.OFFICIAL),
        grading=_choice(Grading, run.config.get("grading"), Grading.OFFICIAL),
        samples=samples,
        elapsed=0.0,
    )
    items = [result.items[item_id] for item_id in ids]
    scores = {item_id: list(result.verdicts[item_id]) for item_id in ids}
    try:
        report = family.verdict_report(benchmarks.get(result.name), items, scores, settings)
        return report.metrics()
    except (KeyError, TypeError, ValueError):  # items stored by other code, of another shape
        return None


def _choice(kind: type[Choice], value: Any, default: Choice) -> Choice:
    try:
        return kind(value)
    except ValueError:
        return default
