"""The layout of CodeReasoner's Table 3: runs in rows, headline scores in columns, their mean.

Each benchmark gives the columns its metric family chooses (``MetricFamily.headline_metrics``;
never by its name): pass@k its lowest pass@k (pass@1), REval one accuracy per question kind,
CoRE its I, a plugin's family its own; all in percent. A row's ``avg`` is the unweighted mean of the columns it has; a run
missing some (its benchmark not run, or no value) is averaged over the others and flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from codereasoner.evaluation.families import family_named
from codereasoner.evaluation.report.compare import Comparison, compare
from codereasoner.evaluation.report.data import (
    FRACTION,
    BenchmarkResult,
    Metric,
    ReportDataError,
    Run,
    benchmark_names,
    run_labels,
)
from codereasoner.evaluation.report.paired import PAIRED_TEST, ItemScores, merged, paired_best

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
    intervals: tuple[tuple[float, float] | None, ...] = ()  # each proportion's Wilson 95% (percent)
    items: Mapping[str, ItemScores | None] = field(default_factory=dict)  # per benchmark

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

    def interval(self, column: int) -> tuple[float, float] | None:
        """The 95% interval of the column's score (None: not a proportion over known items)."""
        if column >= len(self.intervals) or self.scores[column] is None:
            return None
        return self.intervals[column]


@dataclass(frozen=True)
class Table3:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]

    def best(self) -> tuple[list[set[int]], set[int]]:
        """The row holding each column's best score, and the one holding the best avg among
        the runs that have every column (a run lacking a hard benchmark would otherwise win the
        average by its absence); each only where a paired test separates it (:mod:`paired`)."""
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
        by_benchmark = [
            [row.items.get(column.benchmark) for row in rows] for column in self.columns
        ]
        every = [merged(row.items) if row.items else None for row in rows]
        columns = [
            paired_best(values, scores)
            for values, scores in zip(by_column, by_benchmark, strict=True)
        ]
        return columns, paired_best(averages, every)

    def missing(self, row: Row) -> list[str]:
        """The columns the row has no score for."""
        return [c.name for c, s in zip(self.columns, row.scores, strict=True) if s is None]

    def footnote(self) -> str:
        names = ", ".join(column.name for column in self.columns) or "none"
        scaled = ", ".join(column.name for column in self.columns if column.scaled)
        text = (
            f"avg: the unweighted mean of the headline scores in percent ({names}); "
            "[low, high]: a proportion's Wilson 95% interval over its items (\u00b1: a standard "
            "error, where a score is not one); the best of a column is marked only where an "
            f"{PAIRED_TEST} separates it from every other run."
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
                    "interval95": {
                        c.name: list(found) if (found := row.interval(i)) else None
                        for i, c in enumerate(self.columns)
                    },
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
    """The row's score in the column, with its 95% interval ``[low, high]`` where it is a
    proportion over known items, else ``\u00b1 se`` where a spread was measured."""
    value, interval, error = row.scores[column], row.interval(column), row.error(column)
    if value is None:
        return score_text(value)
    if interval is not None:
        return f"{value:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]"
    return score_text(value) + (f" \u00b1 {error:.2f}" if error else "")


def average_text(row: Row) -> str:
    """The row's avg, flagged when the run lacks some columns."""
    return score_text(row.average) + ("" if row.complete else MISSING_MARK)


def headline_metrics(result: BenchmarkResult) -> list[tuple[str, Metric | None]]:
    """The benchmark's Table 3 columns, ``(name, metric)``, from its metric family."""
    found: list[tuple[str, Metric | None]] = family_named(result.kind).headline_metrics(result)
    return found


def headline_scores(result: BenchmarkResult) -> list[tuple[str, float | None]]:
    """The benchmark's Table 3 columns, ``(name, score in percent)``."""
    return [(name, _percent(metric)) for name, metric in headline_metrics(result)]


def _percent(metric: Metric | None) -> float | None:
    if metric is None or metric.value is None:
        return None
    return 100 * metric.value if metric.unit == FRACTION else metric.value


def _percent_interval(metric: Metric | None) -> tuple[float, float] | None:
    found = None if metric is None else metric.interval
    if metric is None or found is None:
        return None
    scale = 100.0 if metric.unit == FRACTION else 1.0
    return scale * found[0], scale * found[1]


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
            tuple(_percent_interval(got.get((c.benchmark, c.metric))) for c in columns),
            {name: comparisons[name].scores[r] for name in comparisons if name in run.benchmarks},
        )
        for r, (label, run, got) in enumerate(zip(labels, runs, cells, strict=True))
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
