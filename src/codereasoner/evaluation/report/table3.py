"""The layout of CodeReasoner's Table 3: runs in rows, headline scores in columns, their mean.

Each benchmark gives the columns of its metric family (never of its name): pass@k families
their lowest pass@k (pass@1), the REval family one accuracy per question kind, the CoRE family
its I; all in percent. A row's ``avg`` is the unweighted mean of the columns it has; a run
missing some (its benchmark not run, or no value) is averaged over the others and flagged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from codereasoner.evaluation.families import FAMILIES
from codereasoner.evaluation.report.compare import Comparison, compare
from codereasoner.evaluation.report.data import (
    CORE,
    FRACTION,
    PASSK,
    REVAL,
    BenchmarkResult,
    Metric,
    ReportDataError,
    Run,
    benchmark_names,
    best_values,
    run_labels,
)

__all__ = [
    "LAYOUTS",
    "Column",
    "Row",
    "Table3",
    "average_text",
    "cell_text",
    "choose_labels",
    "headline_metrics",
    "headline_scores",
    "score_text",
    "table3",
]

LAYOUTS = ("benchmarks", "table3")  # the default first
CORE_HEADLINE = "I"
PROBE_HEADLINE = "Ws"  # CoRE's probe benchmarks score the trace statements only
# one accuracy per REval question kind (coverage: accuracy, not F1)


def reval_columns() -> tuple[str, ...]:
    """One accuracy per REval question kind (coverage: accuracy, not F1), from its family."""
    labels: tuple[str, ...] = FAMILIES[REVAL].report_type.ACCURACY_LABELS
    return labels


MISSING_MARK = "*"


@dataclass(frozen=True)
class Column:
    benchmark: str
    metric: str
    scaled: bool = False  # stored as a fraction, shown x100
    common: int | None = None  # where the runs hold different items: the items they all hold
    comparable: bool = True  # False: different items, scores not recomputable over common ones

    @property
    def name(self) -> str:
        return f"{self.benchmark} {self.metric}"


@dataclass(frozen=True)
class Row:
    """One run: its score per column (percent; None where it has none)."""

    label: str
    path: str
    scores: tuple[float | None, ...]
    self_check: bool = False  # the oracle's run: shown, never the best
    errors: tuple[float | None, ...] = ()  # each score's standard error (percent), or None

    @property
    def average(self) -> float | None:
        present = [score for score in self.scores if score is not None]
        return fmean(present) if present else None

    @property
    def complete(self) -> bool:
        return all(score is not None for score in self.scores)

    def error(self, column: int) -> float | None:
        """The standard error of the column's score (None: unknown or no score)."""
        if column >= len(self.errors) or self.scores[column] is None:
            return None
        return self.errors[column]


@dataclass(frozen=True)
class Table3:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]

    def best(self) -> tuple[list[set[int]], set[int]]:
        """The rows holding each column's best score (:func:`best_values`), and those holding
        the best avg among the runs that have every column (a run lacking a hard benchmark
        would otherwise win the average by its absence)."""
        rows = self.rows
        by_column = [
            [None if row.self_check or not column.comparable else row.scores[index] for row in rows]
            for index, column in enumerate(self.columns)
        ]
        comparable = all(column.comparable for column in self.columns)
        averages = [
            row.average if row.complete and not row.self_check and comparable else None
            for row in rows
        ]
        return [best_values(scores) for scores in by_column], best_values(averages)

    def missing(self, row: Row) -> list[str]:
        """The columns the row has no score for."""
        return [c.name for c, s in zip(self.columns, row.scores, strict=True) if s is None]

    def footnote(self) -> str:
        names = ", ".join(column.name for column in self.columns) or "none"
        scaled = ", ".join(column.name for column in self.columns if column.scaled)
        text = (
            f"avg: the unweighted mean of the headline scores in percent ({names}); "
            "\u00b1: a score's standard error (none for avg)."
        )
        if scaled:
            text += f" Stored as fractions, shown x100: {scaled}."
        common = [c for c in self.columns if c.common is not None and c.comparable]
        if common:
            shown = ", ".join(f"{c.name} ({c.common})" for c in common)
            text += (
                f" Runs hold different items in {shown}: those scores are over the items they "
                "all hold."
            )
        apart = [c.name for c in self.columns if not c.comparable]
        if apart:
            text += f" Not comparable (different items, none marked best): {', '.join(apart)}."
        if not all(row.complete for row in self.rows):
            text += (
                f" {MISSING_MARK}: the run lacks some columns (shown -); its avg is over those "
                "it has."
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": [column.name for column in self.columns],
            "unit": "percent",
            "rows": [
                {
                    "label": row.label,
                    "path": row.path,
                    "scores": {c.name: s for c, s in zip(self.columns, row.scores, strict=True)},
                    "stderr": {c.name: row.error(i) for i, c in enumerate(self.columns)},
                    "avg": row.average,
                    "missing": self.missing(row),
                    "self_check": row.self_check,
                }
                for row in self.rows
            ],
            "note": self.footnote(),
        }


def score_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def cell_text(row: Row, column: int) -> str:
    """The row's score in the column, with ``\u00b1 se`` when its standard error is known."""
    value, error = row.scores[column], row.error(column)
    return score_text(value) + ("" if value is None or error is None else f" \u00b1 {error:.2f}")


def average_text(row: Row) -> str:
    """The row's avg, flagged when the run lacks some columns."""
    return score_text(row.average) + ("" if row.complete else MISSING_MARK)


def headline_metrics(result: BenchmarkResult) -> list[tuple[str, Metric | None]]:
    """The benchmark's Table 3 columns, ``(name, metric)``, from its metric family."""
    if result.kind == PASSK:
        ks = [m for m in result.metrics if re.fullmatch(r"pass@\d+", m.name)]
        first = min(ks, key=lambda m: int(m.name.removeprefix("pass@")), default=None)
        return [(first.name, first)] if first else []
    if result.kind == REVAL:
        return [(label, result.metric(label)) for label in reval_columns()]
    if result.kind == CORE:
        headline = result.metric(CORE_HEADLINE)
        if headline is None or headline.value is None:  # probes: no invariance, only Ws
            return [(PROBE_HEADLINE, result.metric(PROBE_HEADLINE))]
        return [(CORE_HEADLINE, headline)]
    return []


def headline_scores(result: BenchmarkResult) -> list[tuple[str, float | None]]:
    """The benchmark's Table 3 columns, ``(name, score in percent)``."""
    return [(name, _percent(metric)) for name, metric in headline_metrics(result)]


def _percent(metric: Metric | None) -> float | None:
    if metric is None or metric.value is None:
        return None
    return 100 * metric.value if metric.unit == FRACTION else metric.value


def _percent_error(metric: Metric | None) -> float | None:
    if metric is None or metric.value is None or metric.stderr is None:
        return None
    return 100 * metric.stderr if metric.unit == FRACTION else metric.stderr


def table3(runs: Sequence[Run], labels: Sequence[str]) -> Table3:
    """The table of ``runs`` (rows in the order given, labelled ``labels``)."""
    comparisons = {name: compare(runs, name) for name in benchmark_names(runs)}
    cells = [
        {
            (name, metric): _compared(comparisons[name], runs, r, found)
            for name, result in run.benchmarks.items()
            for metric, found in headline_metrics(result)
        }
        for r, run in enumerate(runs)
    ]
    columns: list[Column] = []
    for name in benchmark_names(runs):
        for benchmark, metric in (key for run in cells for key in run):
            known = any((c.benchmark, c.metric) == (benchmark, metric) for c in columns)
            if benchmark == name and not known:
                units = {
                    got.unit
                    for run in cells
                    if (got := run.get((benchmark, metric))) is not None and got.value is not None
                }
                comparison = comparisons[name]
                common = None if comparison.same else comparison.common
                columns.append(
                    Column(name, metric, FRACTION in units, common, comparison.comparable)
                )
    rows = tuple(
        Row(
            label,
            str(run.path),
            tuple(_percent(got.get((c.benchmark, c.metric))) for c in columns),
            run.self_check,
            tuple(_percent_error(got.get((c.benchmark, c.metric))) for c in columns),
        )
        for label, run, got in zip(labels, runs, cells, strict=True)
    )
    return Table3(tuple(columns), rows)


def _compared(
    comparison: Comparison, runs: Sequence[Run], run: int, found: Metric | None
) -> Metric | None:
    """The run's metric over the items every run holds, where the runs' items differ."""
    if found is None or comparison.same:
        return found
    return comparison.compared(runs, run, found.name)


def choose_labels(runs: Sequence[Run], given: Sequence[str], layout: str) -> list[str]:
    """The runs' labels: ``given`` in the order of the runs, the rest by default (table3: the
    run's folder name; otherwise the model, with the folder where models repeat);
    ReportDataError for more labels than runs, an empty label or two runs labelled alike."""
    if layout not in LAYOUTS:
        raise ReportDataError(f"--layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    if len(given) > len(runs):
        raise ReportDataError(f"--label: {len(given)} labels for {len(runs)} run(s)")
    if any(not label.strip() for label in given):
        raise ReportDataError("--label: a label is empty")
    defaults = [run.folder for run in runs] if layout == "table3" else run_labels(runs)
    labels = [*given, *defaults[len(given) :]]
    for index, label in enumerate(labels):
        if label in labels[:index]:
            first = labels.index(label)
            raise ReportDataError(
                f"run label {label!r} names both {runs[first].path} and {runs[index].path}; "
                "give each run its own --label"
            )
    return labels
