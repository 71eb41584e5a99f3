"""One self-contained HTML page for one or more runs: inline CSS, inline SVG plots, no scripts.

Every text from a store (model output above all) is escaped: the page never runs or loads
anything, so it renders from ``file://`` with no server and no network. The same stores give
the same bytes (the only times shown are the runs' own).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from types import SimpleNamespace

from codereasoner.evaluation.families import family_named
from codereasoner.evaluation.report import plots
from codereasoner.evaluation.report.compare import Comparison, compare
from codereasoner.evaluation.report.data import (
    CORE,
    FRACTION,
    Breakdown,
    Failure,
    Run,
    benchmark_names,
    core_metrics,
    metric_names,
    run_labels,
)
from codereasoner.evaluation.report.paired import PAIRED_TEST
from codereasoner.evaluation.report.table3 import Table3, average_text, cell_text
from codereasoner.evaluation.runner import SELF_CHECK
from codereasoner.files import write_atomic

SHOWN_CHARS = 20_000  # longer prompts and completions are cut, saying so

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1200px; padding: 0 24px 48px; color: #1b1b1b; background: #fff; }
h1 { margin: 24px 0 4px; } h2 { border-bottom: 2px solid #dde; padding-bottom: 4px;
margin-top: 40px; } h3 { margin-top: 28px; } h4 { margin: 18px 0 6px; }
nav { background: #f4f5f9; padding: 8px 12px; border-radius: 6px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 10px 0 16px; }
th, td { border: 1px solid #d8d8e0; padding: 4px 10px; text-align: right; vertical-align: top; }
th { background: #eef0f6; } td.name, th.name { text-align: left; }
td.best { background: #e3f5e1; font-weight: 700; }
td.best::after { content: " \\2605"; color: #2a7a2a; font-weight: 400; }
.muted { color: #666; } .bad { color: #a11; }
figure { margin: 12px 0; } figure svg { max-width: 100%; height: auto; }
pre { white-space: pre-wrap; word-break: break-word; background: #f7f7f9; padding: 8px;
      border: 1px solid #e2e2ea; border-radius: 4px; max-height: 320px; overflow: auto;
      margin: 2px 0 8px; font-size: 12px; }
details.failure { border: 1px solid #e2e2ea; border-radius: 6px; padding: 6px 10px;
                  margin: 6px 0; }
details.failure summary { cursor: pointer; }
dt { font-weight: 700; margin-top: 6px; }
div.wide { max-width: 100%; overflow-x: auto; }
th.run { max-width: 11em; overflow-wrap: anywhere; font-size: 13px; }
.selfcheck { display: inline-block; background: #fff3cd; color: #7a5300; border: 1px solid
             #e0c36a; border-radius: 4px; padding: 0 4px; font-size: 11px; font-weight: 700; }
.own { display: block; color: #666; font-size: 11px; font-weight: 400; }
td.differs { background: #fdf1e6; }
tr.items td { background: #f7f7fb; }
"""

SELF_CHECK_TAG = '<span class="selfcheck" title="{note}">SELF-CHECK</span>'


def render(
    runs: Sequence[Run], labels: Sequence[str] | None = None, table: Table3 | None = None
) -> str:
    """The report page for ``runs`` (columns in the order given, named ``labels``: by default
    :func:`run_labels`), with ``table`` (the Table 3 layout) first when given."""
    labels = list(labels) if labels is not None else run_labels(runs)
    names = benchmark_names(runs)
    comparisons = {name: compare(runs, name) for name in names}
    anchors = _anchors(runs, names)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape('codereasoner report: ' + ', '.join(labels))}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>codereasoner report</h1>",
        f'<p class="muted">{len(runs)} run(s), {len(names)} benchmark(s). Every score links '
        "to example failures of that run and benchmark; [low, high] is a proportion's Wilson 95% "
        "interval over its items, \u00b1 a standard error where a score is not one. Higher "
        "is better for every score shown (a CoRE Cons is agreement, not skill: see its "
        "table); the best value of a row is marked \u2605 only where an "
        f"{PAIRED_TEST} separates it from every other run on the "
        "same items (where runs hold different items, scores are compared over the items "
        "they all hold) and never a SELF-CHECK run (the oracle: not a model score).</p>",
        _nav(names, table is not None),
        _table3_section(table) if table is not None else "",
        _runs_section(runs, labels),
        _scores_section(runs, labels, comparisons, anchors),
    ]
    parts += [
        _benchmark_section(runs, labels, comparisons[name], index, anchors)
        for index, name in enumerate(names)
    ]
    parts.append(_failures_section(runs, labels, names))
    parts.append("</body></html>\n")
    numbers = itertools.count(1)
    return re.sub(
        r"<svg\b.*?</svg>",
        lambda found: plots.scope_ids(found.group(0), f"plot{next(numbers)}"),
        "\n".join(parts),
        flags=re.S,
    )


def write_report(
    runs: Sequence[Run],
    out: Path,
    labels: Sequence[str] | None = None,
    table: Table3 | None = None,
) -> Path:
    """Render (see :func:`render`) and write atomically (a crash never leaves a half-written
    page); returns ``out``."""
    out = Path(out)
    write_atomic(out, render(runs, labels, table))
    return out


def benchmark_anchor(benchmark_index: int) -> str:
    return f"bench-{benchmark_index}"


def failures_anchor(run_index: int, benchmark_index: int, category_index: int | None = None) -> str:
    anchor = f"fail-r{run_index}-b{benchmark_index}"
    return anchor if category_index is None else f"{anchor}-c{category_index}"


def _categories(run: Run, name: str) -> list[str]:
    result = run.benchmarks.get(name)
    return sorted(result.failures) if result else []


def _anchors(runs: Sequence[Run], names: Sequence[str]) -> dict[tuple[int, str, str | None], str]:
    """(run, benchmark, category or None) -> the id of its failures heading."""
    anchors: dict[tuple[int, str, str | None], str] = {}
    for r, run in enumerate(runs):
        for b, name in enumerate(names):
            if name not in run.benchmarks:
                continue
            anchors[(r, name, None)] = failures_anchor(r, b)
            for c, category in enumerate(_categories(run, name)):
                anchors[(r, name, category)] = failures_anchor(r, b, c)
    return anchors


def _nav(names: Sequence[str], table3: bool = False) -> str:
    links = ['<a href="#table3">Table 3</a>'] if table3 else []
    links += ['<a href="#runs">Runs</a>', '<a href="#scores">Scores</a>']
    links += [
        f'<a href="#{benchmark_anchor(i)}">{escape(name)}</a>' for i, name in enumerate(names)
    ]
    links.append('<a href="#failures">Failures</a>')
    return f"<nav>{''.join(links)}</nav>"


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _table3_section(table: Table3) -> str:
    """Runs in rows, headline scores in columns, their average last (CodeReasoner's Table 3)."""
    head = "".join(
        f"<th>{escape(c.benchmark)}<br>{escape(c.metric)}"
        + ("" if c.common is None else f'<br><span class="muted">on {c.common} common</span>')
        + "</th>"
        for c in table.columns
    )
    best, best_avg = table.best()
    rows = []
    for index, row in enumerate(table.rows):
        cells = "".join(
            _cell(cell_text(row, column), None, index in best[column])
            for column in range(len(row.scores))
        )
        rows.append(
            f'<tr><td class="name" title="{escape(row.path)}">{escape(row.label)}'
            f"{_self_check_tag(row.self_check)}</td>{cells}"
            f"{_cell(average_text(row), None, index in best_avg)}</tr>"
        )
    return (
        '<section id="table3"><h2>Table 3</h2>'
        '<p class="muted">One row per run, each benchmark\'s headline score (percent) per '
        "column, as in CodeReasoner's Table 3; [low, high] is a Wilson 95% interval, \u00b1 a "
        "standard error.</p>"
        + _table(
            f'<table class="table3"><tr><th class="name">run</th>{head}<th>avg</th></tr>'
            f"{''.join(rows)}</table>"
        )
        + f'<p class="muted">{escape(table.footnote())}</p></section>'
    )


def _runs_section(runs: Sequence[Run], labels: Sequence[str]) -> str:
    rows = []
    for label, run in zip(labels, runs, strict=True):
        status = escape(run.status) + (
            f' <span class="bad">{escape(run.message)}</span>' if run.message else ""
        )
        config = escape(json.dumps(run.config, indent=1, sort_keys=True))
        rows.append(
            f'<tr><td class="name">{_label(label, run)}</td><td class="name">{escape(run.model)}</td>'
            f'<td class="name">{escape(run.id)}</td><td class="name">{status}</td>'
            f"<td>{_time(run.created)}</td><td>{_time(run.updated)}</td>"
            f'<td class="name">{escape(str(run.path))}</td>'
            f'<td class="name"><details><summary>config</summary><pre>{config}</pre>'
            "</details></td></tr>"
        )
    head = "".join(
        f'<th class="name">{name}</th>'
        for name in ("run", "model", "id", "status", "created", "updated", "store", "config")
    )
    note = (
        f'<p><span class="selfcheck">{escape(SELF_CHECK)}</span></p>'
        if any(run.self_check for run in runs)
        else ""
    )
    table = f"<table><tr>{head}</tr>{''.join(rows)}</table>"
    return f'<section id="runs"><h2>Runs</h2>{_table(table)}{note}</section>'


def figure(svg: str | None, caption: str) -> str:
    if svg is None:
        return ""
    return f'<figure>{svg}<figcaption class="muted">{escape(caption)}</figcaption></figure>'


def _self_check_tag(self_check: bool) -> str:
    return " " + SELF_CHECK_TAG.format(note=escape(SELF_CHECK)) if self_check else ""


def _label(label: str, run: Run) -> str:
    """The run's label, tagged SELF-CHECK for the oracle's run."""
    return escape(label) + _self_check_tag(run.self_check)


def _label_cells(runs: Sequence[Run], labels: Sequence[str], span: int = 1) -> str:
    spanned = f' colspan="{span}"' if span > 1 else ""
    return "".join(
        f'<th class="run"{spanned} title="{escape(run.model)}">{_label(label, run)}</th>'
        for label, run in zip(labels, runs, strict=True)
    )


def _run_header(runs: Sequence[Run], labels: Sequence[str], first: str = "metric") -> str:
    return f'<tr><th class="name">{escape(first)}</th>{_label_cells(runs, labels)}</tr>'


def _cell(text: str, href: str | None, best: bool, extra: str = "", differs: bool = False) -> str:
    shown = f'<a href="#{href}">{escape(text)}</a>' if href and text != "-" else escape(text)
    kind = "best" if best else "differs" if differs else ""
    return f'<td class="{kind}">{shown}{extra}</td>' if kind else f"<td>{shown}{extra}</td>"


def _table(html: str) -> str:
    """A table that scrolls sideways inside the page rather than overflowing it."""
    return f'<div class="wide">{html}</div>'


def _items_row(comparison: Comparison, rowspan_head: str) -> str:
    """Each run's item count, and what the scores below are over."""
    if comparison.all_same:
        note = "every run holds the same items"
    elif comparison.same:
        note = "the model runs hold the same items"
    elif comparison.comparable:
        note = f"runs hold different items: scores over the {comparison.common} they all hold"
    else:
        note = "runs hold different items: not comparable (no \u2605)"
    if any(comparison.own_items(r) for r in range(len(comparison.counts))):
        note += "; a SELF-CHECK on its own items"
    cells = "".join(f"<td>{'-' if n is None else n}</td>" for n in comparison.counts)
    return (
        f'<tr class="items">{rowspan_head}<td class="name">items '
        f'<span class="muted">({escape(note)})</span></td>{cells}</tr>'
    )


def _own(comparison: Comparison, runs: Sequence[Run], run: int, name: str) -> str:
    """The run's own score on all its items, where the cell shows the common items'."""
    result = runs[run].benchmarks.get(comparison.benchmark)
    own = result.metric(name) if result else None
    if result is None or own is None or own.value is None:
        return ""
    if comparison.own_items(run):
        return f'<span class="own">on its own {result.item_count} items</span>'
    if comparison.same or run in comparison.apart:  # a self-check holding the common items
        return ""
    if comparison.on_common[run] is None:
        return '<span class="own">on its own items</span>'
    return f'<span class="own">own: {escape(own.text())} on {result.item_count} items</span>'


def _scores_section(
    runs: Sequence[Run],
    labels: Sequence[str],
    comparisons: dict[str, Comparison],
    anchors: dict,
) -> str:
    names = list(comparisons)
    rows = []
    for name, comparison in comparisons.items():
        metrics = metric_names(runs, name)
        head = (
            f'<td class="name" rowspan="{1 + max(len(metrics), 1)}"><a href="#'
            f'{benchmark_anchor(names.index(name))}">{escape(name)}</a></td>'
        )
        rows.append(_items_row(comparison, head))
        for metric in metrics:
            found = [comparison.compared(runs, r, metric) for r in range(len(runs))]
            unit = next((m.unit for m in found if m), "")
            best = comparison.best([m.value if m else None for m in found])
            unit_text = "fraction" if unit == FRACTION else "percent"
            cells = "".join(
                _cell(
                    m.text() if m else "-",
                    anchors.get((r, name, None)),
                    r in best,
                    _own(comparison, runs, r, metric),
                    differs=not comparison.comparable and m is not None,
                )
                for r, m in enumerate(found)
            )
            rows.append(
                f'<tr><td class="name">{escape(metric)} '
                f'<span class="muted">({unit_text})</span></td>{cells}</tr>'
            )
        if not metrics:
            cells = "".join("<td>-</td>" for _ in runs)
            rows.append(f'<tr><td class="name muted">no result stored yet</td>{cells}</tr>')
    table = (
        f'<table class="scores"><tr><th class="name">benchmark</th><th class="name">metric'
        f"</th>{_label_cells(runs, labels)}</tr>{''.join(rows)}</table>"
    )
    return (
        '<section id="scores"><h2>Scores</h2>'
        + figure(
            plots.scores_plot(runs, labels),
            "Headline score per benchmark and run, in percent (pass@k families: pass@1; "
            "CoRE: I, or Ws where it has no output items; REval: average accuracy x100), "
            "with each run's item count; where runs hold different items, over the items "
            "they all hold. Error bars: one standard error.",
        )
        + '<p class="muted">Model-vs-model comparison: one column per run. Click a score for '
        "that run's example failures. The items row counts each run's items; where they "
        "differ, the scores are over the items every run holds, each run's own score "
        "below.</p>" + _table(table) + "</section>"
    )


def _benchmark_section(
    runs: Sequence[Run], labels: Sequence[str], comparison: Comparison, index: int, anchors: dict
) -> str:
    name = comparison.benchmark
    results = [run.benchmarks.get(name) for run in runs]
    kinds = {result.kind for result in results if result}
    parts = [f'<section id="{benchmark_anchor(index)}"><h2>{escape(name)}</h2>']
    for kind in sorted(kinds):  # each family's own figures and tables, asked of the family
        parts.extend(family_named(kind).report_figures(runs, labels, comparison, PAGE_KIT))
    count = max((len(result.breakdowns) for result in results if result), default=0)
    for table_index in range(count):
        parts.append(figure(plots.breakdown_plot(runs, labels, name, table_index), ""))
        parts.append(_breakdown_table(runs, labels, comparison, table_index, anchors))
    parts.append(_reasons_table(runs, labels, name))
    parts.append("</section>")
    return "\n".join(parts)


def _own_best(comparison: Comparison, values: Sequence[float | None]) -> set[int]:
    """Best of values over each run's own items: only when the runs hold the same items."""
    return comparison.best(values) if comparison.same else set()


def _breakdown_table(
    runs: Sequence[Run], labels: Sequence[str], comparison: Comparison, index: int, anchors: dict
) -> str:
    name = comparison.benchmark
    tables: list[Breakdown | None] = []
    for run in runs:
        result = run.benchmarks.get(name)
        tables.append(
            result.breakdowns[index] if result and len(result.breakdowns) > index else None
        )
    first = next(table for table in tables if table is not None)
    categories = sorted({category for table in tables if table for category in table.rows})
    held = [r for r, table in enumerate(tables) if table is not None]  # runs without it: no column
    head = _label_cells([runs[r] for r in held], [labels[r] for r in held], len(first.columns))
    sub = "".join(
        f'<th title="{escape(column)}">{escape(column.removesuffix(" acc"))}</th>'
        for _ in held
        for column in first.columns
    )
    sized = bool(first.counts)
    rows = []
    for category in categories:
        size = next((t.counts.get(category) for t in tables if t and category in t.counts), None)
        cells = []
        for column in first.columns:
            values = [t.rows.get(category, {}).get(column) if t else None for t in tables]
            best = _own_best(comparison, values)
            cells.append([(r, values[r], r in best) for r in range(len(runs))])
        row = []
        for r in held:
            for column_cells in cells:
                _, value, is_best = column_cells[r]
                text = (
                    "-"
                    if value is None
                    else (f"{value:.4f}" if first.unit == FRACTION else f"{value:.2f}")
                )
                href = anchors.get((r, name, category)) or anchors.get((r, name, None))
                row.append(_cell(text, href, is_best))
        size_cell = f"<td>{'' if size is None else size}</td>" if sized else ""
        rows.append(f'<tr><td class="name">{escape(category)}</td>{size_cell}{"".join(row)}</tr>')
    size_head = '<th rowspan="2">size</th>' if sized else ""
    note = f'<p class="muted">{escape(first.note)}</p>' if first.note else ""
    return f"<h3>{escape(first.title)}</h3>{note}" + _table(
        f'<table class="breakdown"><tr><th class="name" rowspan="2">category</th>'
        f"{size_head}{head}</tr><tr>{sub}</tr>{''.join(rows)}</table>"
    )


# Each Cons and the transparency score it compares I with.
DEGENERATE_WITH = {"Cons_paper": "W", "Cons_text": "Ws"}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _degenerate(mean: Mapping[str, object], metric: str) -> bool:
    """True when the run's I and the W its Cons compares with are both 0 (or absent)."""
    return not _number(mean.get("I")) and not _number(mean.get(DEGENERATE_WITH[metric]))


def core_variants(runs: Sequence[Run], labels: Sequence[str], comparison: Comparison) -> str:
    """Both CoRE gradings (project: strict, primary; ancestor: the original comparison), each
    run on its own items."""
    name = comparison.benchmark
    held = [
        r
        for r, run in enumerate(runs)
        if (result := run.benchmarks.get(name)) is not None and result.kind == CORE
    ]  # runs without it: no column
    rows = []
    for variant in ("project", "ancestor"):
        means = [
            runs[r].benchmarks[name].report.get("variants", {}).get(variant, {}).get("mean", {})
            for r in held
        ]
        for metric in core_metrics():
            values = [_number(mean.get(metric)) for mean in means]
            # A Cons of a run with nothing right (I and its W both 0) is 1 by construction:
            # agreement about nothing, never the best.
            rivals = [
                None if metric in DEGENERATE_WITH and _degenerate(mean, metric) else value
                for mean, value in zip(means, values, strict=True)
            ]
            by_run: list[float | None] = [None] * len(runs)
            for r, rival in zip(held, rivals, strict=True):
                by_run[r] = rival
            best = _own_best(comparison, by_run)
            cells = "".join(
                _cell(
                    "-" if v is None else (f"{v:.4f}" if metric.startswith("Cons") else f"{v:.2f}"),
                    None,
                    r in best,
                )
                for r, v in zip(held, values, strict=True)
            )
            rows.append(
                f'<tr><td class="name">{variant}</td><td class="name">{metric}</td>{cells}</tr>'
            )
    header = _label_cells([runs[r] for r in held], [labels[r] for r in held])
    return (
        '<h3>Both gradings</h3><p class="muted">project: strict literal comparison '
        "(primary); ancestor: the original harness's comparison. I, Is, W, Ws, RCS in "
        "percent; Cons as fractions (agreement between I and W or Ws: a run with nothing "
        "right has Cons 1 by construction, and is never marked best).</p>"
        f'<table><tr><th class="name">grading</th><th class="name">metric</th>{header}</tr>'
        f"{''.join(rows)}</table>"
    )


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _reasons_table(runs: Sequence[Run], labels: Sequence[str], name: str) -> str:
    """Verdict counts per run (REval's and CoRE's nested per kind or grading are flattened)."""
    counts: list[dict[str, int] | None] = []
    for run in runs:
        result = run.benchmarks.get(name)
        if result is None:
            counts.append(None)
            continue
        reasons = family_named(result.kind).verdict_counts(result.report)
        flat: dict[str, int] = {}
        for key, value in (reasons if isinstance(reasons, dict) else {}).items():
            if isinstance(value, dict):  # a store's counts are numbers; anything else is skipped
                flat.update({f"{key}: {inner}": n for inner, n in value.items() if _count(n)})
            elif _count(value):
                flat[key] = value
        counts.append(flat)
    keys = sorted({key for flat in counts if flat for key in flat})
    if not keys:
        return ""
    held = [r for r, flat in enumerate(counts) if flat is not None]  # runs without it: no column
    rows = "".join(
        f'<tr><td class="name">{escape(key)}</td>'
        + "".join(f"<td>{counts[r].get(key, 0)}</td>" for r in held)  # type: ignore[union-attr]
        + "</tr>"
        for key in keys
    )
    header = _run_header([runs[r] for r in held], [labels[r] for r in held], "verdict")
    table = f"<table>{header}{rows}</table>"
    return f"<h3>Verdicts (samples)</h3>{_table(table)}"


def _failures_section(runs: Sequence[Run], labels: Sequence[str], names: Sequence[str]) -> str:
    parts = [
        '<section id="failures"><h2>Example failures</h2>',
        '<p class="muted">Per run, benchmark and category: the first failing samples (in '
        "item order), with the prompt, the model's completion, the extracted answer, the "
        "expected value and the verdict.</p>",
    ]
    for r, (label, run) in enumerate(zip(labels, runs, strict=True)):
        for b, name in enumerate(names):
            result = run.benchmarks.get(name)
            if result is None:
                continue
            parts.append(
                f'<h3 id="{failures_anchor(r, b)}">{_label(label, run)} \u2014 '
                f"{escape(name)}: {result.total_failures} failing of "
                f"{result.scored_samples} scored samples</h3>"
            )
            if not result.failures:
                parts.append('<p class="muted">No failures stored.</p>')
            for c, category in enumerate(_categories(run, name)):
                shown = result.failures[category]
                parts.append(
                    f'<h4 id="{failures_anchor(r, b, c)}">{escape(category)} '
                    f'<span class="muted">({len(shown)} of '
                    f"{result.failure_counts[category]} shown)</span></h4>"
                )
                parts += [_failure(failure, first=i == 0) for i, failure in enumerate(shown)]
    parts.append("</section>")
    return "\n".join(parts)


def _text_block(text: str | None, missing: str) -> str:
    if text is None:
        return f'<p class="muted">{escape(missing)}</p>'
    cut = len(text) > SHOWN_CHARS
    shown = text[:SHOWN_CHARS]
    note = f'<p class="muted">(cut at {SHOWN_CHARS:,} of {len(text):,} characters)</p>'
    return f"<pre>{escape(shown)}</pre>" + (note if cut else "")


def _prompt(failure: Failure) -> str:
    """The item's own question first; the whole prompt (few-shot examples included) folded."""
    if failure.prompt is None or not failure.preamble:
        return f"<dt>prompt</dt><dd>{_text_block(failure.prompt, 'prompt not stored')}</dd>"
    return (
        '<dt>question <span class="muted">(the prompt after the few-shot examples every '
        f'prompt shares)</span></dt><dd class="question">{_text_block(failure.question, "")}'
        "</dd><dt>full prompt</dt><dd><details><summary>the whole prompt "
        f"({len(failure.prompt):,} characters)</summary>"
        f"{_text_block(failure.prompt, '')}</details></dd>"
    )


def _failure(failure: Failure, first: bool) -> str:
    verdict = failure.reason + (" (skipped: upstream anti-copy rule)" if failure.skipped else "")
    task = f" [{failure.task}]" if failure.task else ""
    return (
        f'<details class="failure"{" open" if first else ""}><summary>'
        f"{escape(failure.item_id)}, sample {failure.sample}"
        f"{escape(task)}: <b>{escape(verdict)}</b></summary><dl>"
        + _prompt(failure)
        + f"<dt>completion</dt><dd>{_text_block(failure.completion, 'completion not stored')}</dd>"
        f"<dt>extracted answer</dt><dd>{_text_block(failure.answer, 'nothing extracted')}</dd>"
        f"<dt>expected</dt><dd>{_text_block(failure.expected, '')}</dd>"
        f"<dt>verdict</dt><dd>{escape(verdict)}"
        + (f"<pre>{escape(failure.detail)}</pre>" if failure.detail else "")
        + "</dd></dl></details>"
    )


# What a metric family draws its section with (``MetricFamily.report_figures``): the page's
# helpers and plots, handed over so that the families never import the page.
PAGE_KIT = SimpleNamespace(figure=figure, plots=plots, core_variants=core_variants)
