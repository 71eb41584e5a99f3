"""Report plots as SVG text (matplotlib).

Figures are built directly (no pyplot): no GUI backend, no global figure state, safe in
threads and under any ``MPLBACKEND``; the SVG canvas renders them headless, as Agg would.

Every function returns a standalone ``<svg>`` element (no XML prolog), ready to inline in HTML,
or None when the runs hold nothing to plot. Output is deterministic: fixed hash salt, no date.
"""

from __future__ import annotations

import colorsys
import io
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

from codereasoner.evaluation.families import family_named
from codereasoner.evaluation.report.compare import Comparison, compare
from codereasoner.evaluation.report.data import (
    CORE,
    FRACTION,
    PASSK,
    REVAL,
    BenchmarkResult,
    Metric,
    Run,
    benchmark_names,
    pass_keys,
    reval_metrics,
)

RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "codereasoner-report",
    "svg.fonttype": "none",
    "font.size": 11,
}
BAR_LABEL_SIZE = 9
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip


def color(index: int) -> str:
    """The colour of the run at ``index`` of the report's runs, the same in every plot and
    never another run's: the palette first, then hues spread by the golden ratio."""
    if index < len(COLORS):
        return COLORS[index]
    hue = (0.61803398875 * index) % 1.0
    red, green, blue = colorsys.hsv_to_rgb(hue, 0.65, 0.55 + 0.3 * ((index // 7) % 2))
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


def safe_label(text: str) -> str:
    """Text shown literally by matplotlib: '$' would start mathtext, and a control character
    (from a run's name, say) is shown as its escape, not as a glyph the font lacks."""
    shown = "".join(
        char if char == "\n" or unicodedata.category(char) != "Cc" else f"\\x{ord(char):02x}"
        for char in text
    )
    return shown.replace("\\", "\\\\").replace("$", r"\$")


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


def _svg_or_none(figure: Figure | None) -> str | None:
    return None if figure is None else _svg(figure)


LEGEND_GID = "legend"  # the SVG id of each plot's legend (scoped per plot in the page)
MARK_GID = "mark"  # the SVG ids of the data marks: mark_RUN_N (bars, points)


def _legend(figure: Figure) -> None:
    """The runs' legend beside the axes, never over the data (it once hid a bar)."""
    with rc_context(RC):
        legend = figure.legend(loc="outside right upper", fontsize=10, frameon=False)
    legend.set_gid(LEGEND_GID)


def _mark_ids(artists: Sequence[Any], run: int) -> None:
    """Name the run's data marks in the SVG (``mark_RUN_N``), so that a page can find them."""
    for number, artist in enumerate(artists):
        artist.set_gid(f"{MARK_GID}_{run}_{number}")


def _holding(
    runs: Sequence[Run], labels: Sequence[str], benchmark: str, kind: str
) -> list[tuple[int, str, BenchmarkResult]]:
    """``(run index, label, result)`` of the runs holding ``benchmark`` with metrics of
    ``kind``: a per-benchmark plot shows those alone, each in its run's colour."""
    return [
        (index, label, result)
        for index, (label, run) in enumerate(zip(labels, runs, strict=True))
        if (result := run.benchmarks.get(benchmark)) is not None and result.kind == kind
    ]


def headline(result: BenchmarkResult) -> tuple[str, Metric | None]:
    """The one number per benchmark in the overview plot, from its metric family (the Table 3
    column; REval's average accuracy for its four)."""
    found: tuple[str, Metric | None] = family_named(result.kind).overview_metric(result)
    return found


def percent(metric: Metric | None) -> tuple[float | None, float | None]:
    """The metric's value and standard error in percent (fractions x100)."""
    if metric is None or metric.value is None:
        return None, None
    scale = 100 if metric.unit == FRACTION else 1
    return scale * metric.value, None if metric.stderr is None else scale * metric.stderr


Series = Sequence[tuple[str, Sequence[Metric | None]]]


def _error_bar(metric: Metric, scale: float) -> tuple[float, float]:
    """How far the bar's error line reaches below and above the value: its Wilson 95%
    interval for a proportion over known items, else one standard error each way."""
    value = metric.value or 0.0
    interval = metric.interval
    if interval is not None:
        return max(0.0, value - interval[0]) * scale, max(0.0, interval[1] - value) * scale
    error = (metric.stderr or 0.0) * scale
    return error, error


def _grouped_bars(
    axes: Axes,
    groups: Sequence[str],
    series: Series,
    fmt: str = "%.1f",
    scale: float = 1.0,
    runs: Sequence[int] | None = None,
) -> None:
    """Bars per group, one colour per series, an error bar on each (:func:`_error_bar`); missing values
    leave a gap. Values are ``metric.value * scale``. ``runs``: each series' run index (its
    colour and mark ids; default: the series' own position)."""
    width = 0.8 / max(len(series), 1)
    for position, (label, metrics) in enumerate(series):
        index = runs[position] if runs is not None else position
        positions = [g + (position - (len(series) - 1) / 2) * width for g in range(len(groups))]
        shown = [
            (p, m.value * scale, _error_bar(m, scale))
            for p, m in zip(positions, metrics, strict=True)
            if m is not None and m.value is not None
        ]
        bars = axes.bar(
            [p for p, _, _ in shown],
            [v for _, v, _ in shown],
            width,
            yerr=[[e[0] for _, _, e in shown], [e[1] for _, _, e in shown]],
            error_kw={"elinewidth": 1, "capsize": 2, "ecolor": "#333333"},
            label=safe_label(label),
            color=color(index),
        )
        _mark_ids(bars.patches, index)
        axes.bar_label(bars, fmt=fmt, fontsize=BAR_LABEL_SIZE, padding=2)
    axes.set_xticks(range(len(groups)), [safe_label(group) for group in groups])
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)


def scores_plot(runs: Sequence[Run], labels: Sequence[str]) -> str | None:
    return _svg_or_none(scores_figure(runs, labels))


def scores_figure(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Every benchmark's headline number (percent), bars per run, item counts under each; where
    the runs hold different items, their scores over the items they all hold."""
    groups: list[str] = []
    series: list[tuple[str, list[Metric | None]]] = [(label, []) for label in labels]
    for name in benchmark_names(runs):
        found = [
            headline(run.benchmarks[name]) if name in run.benchmarks else ("", None) for run in runs
        ]
        if all(percent(metric)[0] is None for _, metric in found):
            continue
        comparison = compare(runs, name)
        shown = [
            comparison.compared(runs, r, metric.name) if metric else None
            for r, (_, metric) in enumerate(found)
        ]
        title = next(label for label, metric in found if percent(metric)[0] is not None)
        groups.append(f"{name}\n{title}\n{_counts(comparison)}")
        for (_, values), metric in zip(series, shown, strict=True):
            values.append(_as_percent(metric))
    if not groups:
        return None
    figure = _figure(max(6.5, 2.5 + 1.3 * len(groups) * max(1, len(runs)) ** 0.5), 4.4)
    axes = figure.add_subplot()
    _grouped_bars(axes, groups, series)
    axes.set_ylabel("percent")
    axes.set_ylim(0, 112)
    axes.set_title("Headline score per benchmark (n: items per run, in legend order)")
    _legend(figure)
    return figure


def _counts(comparison: Comparison) -> str:
    """Each run's item count, in run order ('-': the run lacks the benchmark), and the common
    items' where the compared runs differ."""
    counts = ["-" if count is None else str(count) for count in comparison.counts]
    text = f"n={'/'.join(counts)}"
    return text if comparison.same else f"{text}\non {comparison.common} common"


def _as_percent(metric: Metric | None) -> Metric | None:
    value, error = percent(metric)
    if metric is None or value is None:
        return None
    return Metric(metric.name, value, "%", error, metric.count)


def passk_plot(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> str | None:
    return _svg_or_none(passk_figure(runs, labels, benchmark))


def passk_figure(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> Figure | None:
    """pass@k of one benchmark, bars per k and run (runs without it left out)."""
    present = _holding(runs, labels, benchmark, PASSK)
    keys: list[str] = []
    for _, _, result in present:
        keys += [key for key in pass_keys(result.report) if key not in keys]
    if not keys:
        return None
    keys.sort(key=lambda key: int(key[5:]))
    series = [(label, [result.metric(key) for key in keys]) for _, label, result in present]
    figure = _figure(max(5.5, 2.5 + 1.1 * len(keys) * max(1, len(present)) ** 0.5), 3.8)
    axes = figure.add_subplot()
    _grouped_bars(axes, keys, series, runs=[index for index, _, _ in present])
    axes.set_ylabel("percent")
    axes.set_ylim(0, 112)
    axes.set_title(safe_label(f"{benchmark}: pass@k"))
    _legend(figure)
    return figure


def breakdown_plot(
    runs: Sequence[Run], labels: Sequence[str], benchmark: str, index: int
) -> str | None:
    return _svg_or_none(breakdown_figure(runs, labels, benchmark, index))


def breakdown_figure(
    runs: Sequence[Run], labels: Sequence[str], benchmark: str, index: int
) -> Figure | None:
    """One per-category table of a benchmark: its first column, horizontal bars per run (runs
    without it left out)."""
    tables = [
        (run_index, label, run.benchmarks[benchmark].breakdowns[index])
        for run_index, (label, run) in enumerate(zip(labels, runs, strict=True))
        if benchmark in run.benchmarks and len(run.benchmarks[benchmark].breakdowns) > index
    ]
    if not tables:
        return None
    first = tables[0][2]
    column = first.columns[0]
    categories = sorted({name for _, _, table in tables for name in table.rows})
    figure = _figure(8.0, 1.4 + 0.3 * len(categories) * len(tables))
    axes = figure.add_subplot()
    height = 0.8 / len(tables)
    for position, (run_index, label, table) in enumerate(tables):
        shown = [
            (c, table.rows[name].get(column))
            for c, name in enumerate(categories)
            if name in table.rows
        ]
        present = [(c, value) for c, value in shown if value is not None]
        offset = (position - (len(tables) - 1) / 2) * height
        bars = axes.barh(
            [c + offset for c, _ in present],
            [value for _, value in present],
            height,
            label=safe_label(label),
            color=color(run_index),
        )
        _mark_ids(bars.patches, run_index)
    axes.set_yticks(range(len(categories)), [safe_label(name) for name in categories])
    axes.invert_yaxis()
    scale = "fraction" if first.unit == FRACTION else "percent"
    axes.set_xlabel(safe_label(f"{column} ({scale})"))
    axes.set_xlim(0, 1.05 if first.unit == FRACTION else 105)
    axes.grid(axis="x", alpha=0.3)
    axes.set_axisbelow(True)
    axes.set_title(safe_label(f"{benchmark}: {first.title}"))
    _legend(figure)
    return figure


def core_plot(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> str | None:
    return _svg_or_none(core_figure(runs, labels, benchmark))


def core_figure(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> Figure | None:
    """CoRE: invariance (I, Is) against process transparency (W, Ws), one colour per run.

    Circles are (W, I), squares (Ws, Is); points on the diagonal are as right about the
    process as about the result.
    """
    figure = _figure(8.0, 5.0)
    axes = figure.add_subplot()
    plotted = False
    for index, (label, run) in enumerate(zip(labels, runs, strict=True)):
        result = run.benchmarks.get(benchmark)
        if result is None or result.kind != CORE:
            continue
        values = {metric.name: metric.value for metric in result.metrics}
        values_se = {metric.name: metric.stderr for metric in result.metrics}
        for (x, y), marker in ((("W", "I"), "o"), (("Ws", "Is"), "s")):
            across, up = values.get(x), values.get(y)
            if across is None or up is None:
                continue
            axes.errorbar(
                across,
                up,
                xerr=values_se.get(x),
                yerr=values_se.get(y),
                fmt="none",
                ecolor=color(index),
                elinewidth=1,
                zorder=2,
            )
            points = axes.scatter(
                across,
                up,
                s=60,
                marker=marker,
                color=color(index),
                label=safe_label(f"{label}: {y} vs {x}"),
                zorder=3,
            )
            points.set_gid(f"{MARK_GID}_{index}_{'circle' if marker == 'o' else 'square'}")
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
    _legend(figure)
    return figure


def reval_plot(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> str | None:
    return _svg_or_none(reval_figure(runs, labels, benchmark))


def reval_figure(runs: Sequence[Run], labels: Sequence[str], benchmark: str) -> Figure | None:
    """REval accuracies per kind (fractions), bars per run (runs without it left out)."""
    kinds = [label for label, _, _, unit in reval_metrics() if unit == FRACTION]
    present = _holding(runs, labels, benchmark, REVAL)
    series = [(label, [result.metric(kind) for kind in kinds]) for _, label, result in present]
    if all(metric is None or metric.value is None for _, metrics in series for metric in metrics):
        return None
    figure = _figure(max(7.0, 2.5 + 1.0 * len(kinds) * max(1, len(present)) ** 0.5), 4.0)
    axes = figure.add_subplot()
    groups = [kind.replace(" ", "\n", 1) for kind in kinds]
    _grouped_bars(axes, groups, series, "%.2f", runs=[index for index, _, _ in present])
    axes.set_ylabel("fraction")
    axes.set_ylim(0, 1.18)
    axes.set_title(safe_label(f"{benchmark}: accuracy per kind"))
    _legend(figure)
    return figure
