"""Report plots as SVG text (matplotlib).

Figures are built directly (no pyplot): no GUI backend, no global figure state, safe in
threads and under any ``MPLBACKEND``; the SVG canvas renders them headless, as Agg would.

Every function returns a standalone ``<svg>`` element (no XML prolog), ready to inline in HTML,
or None when the runs hold nothing to plot. Output is deterministic: fixed hash salt, no date.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

from codereasoner.evaluation.report.data import (
    CORE,
    FRACTION,
    PASSK,
    REVAL,
    REVAL_METRICS,
    BenchmarkResult,
    Run,
    benchmark_names,
    pass_keys,
)
from codereasoner.evaluation.report.table3 import headline_scores

RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "codereasoner-report",
    "svg.fonttype": "none",
    "font.size": 9,
}
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip


def color(index: int) -> str:
    """The run's colour, the same in every plot."""
    return COLORS[index % len(COLORS)]


def safe_label(text: str) -> str:
    """Text shown literally by matplotlib: '$' would start mathtext."""
    return text.replace("\\", "\\\\").replace("$", r"\$")


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    with rc_context(RC):
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buffer.getvalue()
    # The RDF metadata block only names vocabularies; dropped, the page holds no other URLs.
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
    return text[text.index("<svg") :]


def scope_ids(svg: str, prefix: str) -> str:
    """Prefix the SVG's ids and its references to them, so that several plots inlined in one
    page keep unique ids (matplotlib numbers ``figure_1``, ``axes_1``... afresh in each)."""
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", svg)
    return re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', svg)


def _figure(width: float, height: float) -> Figure:
    with rc_context(RC):
        return Figure(figsize=(width, height), layout="constrained")


def headline(result: BenchmarkResult) -> tuple[str, float | None]:
    """The one number per benchmark in the overview plot, in percent: the Table 3 column
    (:func:`headline_scores`), REval's average accuracy for its four."""
    if result.kind == REVAL:
        metric = result.metric("average acc")
        value = metric.value if metric else None
        return "avg acc x100", None if value is None else 100 * value
    found = headline_scores(result)
    return found[0] if found else ("", None)


def _grouped_bars(
    axes: Axes,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    fmt: str = "%.1f",
) -> None:
    """Bars per group, one colour per series; missing values leave a gap."""
    width = 0.8 / max(len(series), 1)
    for index, (label, values) in enumerate(series):
        positions = [g + (index - (len(series) - 1) / 2) * width for g in range(len(groups))]
        shown = [(p, v) for p, v in zip(positions, values, strict=True) if v is not None]
        bars = axes.bar(
            [p for p, _ in shown],
            [v for _, v in shown],
            width,
            label=safe_label(label),
            color=color(index),
        )
        axes.bar_label(bars, fmt=fmt, fontsize=7, padding=1)
    axes.set_xticks(range(len(groups)), [safe_label(group) for group in groups])
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)


def scores_plot(runs: Sequence[Run], labels: Sequence[str]) -> str | None:
    """Every benchmark's headline number (percent), bars per run."""
    names = benchmark_names(runs)
    groups: list[str] = []
    series: list[tuple[str, list[float | None]]] = [(label, []) for label in labels]
    for name in names:
        found = [
            headline(run.benchmarks[name]) if name in run.benchmarks else ("", None) for run in runs
        ]
        if all(value is None for _, value in found):
            continue
        metric = next(label for label, value in found if value is not None)
        groups.append(f"{name}\n{metric}")
        for (_, values), (_, value) in zip(series, found, strict=True):
            values.append(value)
    if not groups:
        return None
    figure = _figure(max(4.0, 1.2 + 1.1 * len(groups) * max(1, len(runs)) ** 0.5), 3.2)
    axes = figure.add_subplot()
    _grouped_bars(axes, groups, series)
    axes.set_ylabel("percent")
    axes.set_ylim(0, 105)
    axes.set_title("Headline score per benchmark")
    axes.legend(fontsize=7, loc="upper right")
    return _svg(figure)


def passk_plot(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> str | None:
    """pass@k of one benchmark, bars per k and run."""
    results = [run.benchmarks.get(benchmark) for run in runs]
    keys: list[str] = []
    for result in results:
        if result is not None and result.kind == PASSK:
            keys += [key for key in pass_keys(result.report) if key not in keys]
    if not keys:
        return None
    keys.sort(key=lambda key: int(key[5:]))
    series = []
    for label, result in zip(labels, results, strict=True):
        metrics = [result.metric(key) if result else None for key in keys]
        series.append((label, [metric.value if metric else None for metric in metrics]))
    figure = _figure(max(3.5, 1.5 + 0.9 * len(keys) * max(1, len(runs)) ** 0.5), 2.8)
    axes = figure.add_subplot()
    _grouped_bars(axes, keys, series)
    axes.set_ylabel("percent")
    axes.set_ylim(0, 105)
    axes.set_title(safe_label(f"{benchmark}: pass@k"))
    axes.legend(fontsize=7, loc="upper right")
    return _svg(figure)


def breakdown_plot(
    runs: Sequence[Run], labels: Sequence[str], benchmark: str, index: int
) -> str | None:
    """One per-category table of a benchmark: its first column, horizontal bars per run."""
    tables = [
        run.benchmarks[benchmark].breakdowns[index]
        if benchmark in run.benchmarks and len(run.benchmarks[benchmark].breakdowns) > index
        else None
        for run in runs
    ]
    first = next((table for table in tables if table is not None), None)
    if first is None:
        return None
    column = first.columns[0]
    categories = sorted({name for table in tables if table for name in table.rows})
    figure = _figure(6.0, 0.6 + 0.22 * len(categories) * max(1, len(runs)) + 0.6)
    axes = figure.add_subplot()
    height = 0.8 / len(runs)
    for position, (label, table) in enumerate(zip(labels, tables, strict=True)):
        shown = [
            (c, table.rows[name].get(column))
            for c, name in enumerate(categories)
            if table is not None and name in table.rows
        ]
        present = [(c, value) for c, value in shown if value is not None]
        offset = (position - (len(runs) - 1) / 2) * height
        axes.barh(
            [c + offset for c, _ in present],
            [value for _, value in present],
            height,
            label=safe_label(label),
            color=color(position),
        )
    axes.set_yticks(range(len(categories)), [safe_label(name) for name in categories])
    axes.invert_yaxis()
    scale = "fraction" if first.unit == FRACTION else "percent"
    axes.set_xlabel(safe_label(f"{column} ({scale})"))
    axes.set_xlim(0, 1.05 if first.unit == FRACTION else 105)
    axes.grid(axis="x", alpha=0.3)
    axes.set_axisbelow(True)
    axes.set_title(safe_label(f"{benchmark}: {first.title}"))
    axes.legend(fontsize=7, loc="lower right")
    return _svg(figure)


def core_plot(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> str | None:
    """CoRE: invariance (I, Is) against process transparency (W, Ws), one colour per run.

    Circles are (W, I), squares (Ws, Is); points on the diagonal are as right about the
    process as about the result.
    """
    figure = _figure(4.6, 4.2)
    axes = figure.add_subplot()
    plotted = False
    for index, (label, run) in enumerate(zip(labels, runs, strict=True)):
        result = run.benchmarks.get(benchmark)
        if result is None or result.kind != CORE:
            continue
        values = {metric.name: metric.value for metric in result.metrics}
        for (x, y), marker in ((("W", "I"), "o"), (("Ws", "Is"), "s")):
            across, up = values.get(x), values.get(y)
            if across is None or up is None:
                continue
            axes.scatter(
                across,
                up,
                s=60,
                marker=marker,
                color=color(index),
                label=safe_label(f"{label}: {y} vs {x}"),
                zorder=3,
            )
            plotted = True
    if not plotted:
        return None
    axes.plot([0, 100], [0, 100], linestyle="--", color="#999999", linewidth=1, zorder=1)
    axes.set_xlim(-3, 103)
    axes.set_ylim(-3, 103)
    axes.set_xlabel("process transparency: W (circles), Ws (squares), percent")
    axes.set_ylabel("invariance: I (circles), Is (squares), percent")
    axes.set_title(safe_label(f"{benchmark}: invariance vs process transparency"))
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper left")
    return _svg(figure)


def reval_plot(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> str | None:
    """REval accuracies per kind (fractions), bars per run."""
    kinds = [label for label, _, _, unit in REVAL_METRICS if unit == FRACTION]
    series = []
    for label, run in zip(labels, runs, strict=True):
        result = run.benchmarks.get(benchmark)
        metrics = [
            result.metric(kind) if result and result.kind == REVAL else None for kind in kinds
        ]
        series.append((label, [metric.value if metric else None for metric in metrics]))
    if all(value is None for _, values in series for value in values):
        return None
    figure = _figure(max(5.0, 1.0 + 0.9 * len(kinds) * max(1, len(runs)) ** 0.5), 3.0)
    axes = figure.add_subplot()
    _grouped_bars(axes, [kind.replace(" ", "\n", 1) for kind in kinds], series, "%.2f")
    axes.set_ylabel("fraction")
    axes.set_ylim(0, 1.1)
    axes.set_title(safe_label(f"{benchmark}: accuracy per kind"))
    axes.legend(fontsize=7, loc="upper right")
    return _svg(figure)
