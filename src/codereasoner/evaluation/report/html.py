"""One self-contained HTML page for one or more runs: inline CSS, inline SVG plots, no scripts.

Every text from a store (model output above all) is escaped: the page never runs or loads
anything, so it renders from ``file://`` with no server and no network. The same stores give
the same bytes (the only times shown are the runs' own).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from codereasoner.evaluation.report import plots
from codereasoner.evaluation.report.data import (
    CORE,
    CORE_METRICS,
    FRACTION,
    PASSK,
    REVAL,
    Breakdown,
    Failure,
    Run,
    benchmark_names,
    best_values,
    metric_names,
    run_labels,
)
from codereasoner.evaluation.report.table3 import Table3, average_text, score_text

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
"""


def render(
    runs: Sequence[Run], labels: Sequence[str] | None = None, table: Table3 | None = None
) -> str:
    """The report page for ``runs`` (columns in the order given, named ``labels``: by default
    :func:`run_labels`), with ``table`` (the Table 3 layout) first when given."""
    labels = list(labels) if labels is not None else run_labels(runs)
    names = benchmark_names(runs)
    anchors = _anchors(runs, names)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape('codereasoner report: ' + ', '.join(labels))}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>codereasoner report</h1>",
        f'<p class="muted">{len(runs)} run(s), {len(names)} benchmark(s). Every score links '
        "to example failures of that run and benchmark. Higher is better everywhere; the best "
        "value of a row is marked \u2605.</p>",
        _nav(names, table is not None),
        _table3_section(table) if table is not None else "",
        _runs_section(runs, labels),
        _scores_section(runs, labels, names, anchors),
    ]
    parts += [
        _benchmark_section(runs, labels, name, index, anchors) for index, name in enumerate(names)
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
    out.parent.mkdir(parents=True, exist_ok=True)
    text = render(runs, labels, table)
    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, out)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
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
    head = "".join(f"<th>{escape(c.benchmark)}<br>{escape(c.metric)}</th>" for c in table.columns)
    best, best_avg = table.best()
    rows = []
    for index, row in enumerate(table.rows):
        cells = "".join(
            _cell(score_text(score), None, index in best[column])
            for column, score in enumerate(row.scores)
        )
        rows.append(
            f'<tr><td class="name" title="{escape(row.path)}">{escape(row.label)}</td>{cells}'
            f"{_cell(average_text(row), None, index in best_avg)}</tr>"
        )
    return (
        '<section id="table3"><h2>Table 3</h2>'
        '<p class="muted">One row per run, each benchmark\'s headline score (percent) per '
        "column, as in CodeReasoner's Table 3.</p>"
        f'<table class="table3"><tr><th class="name">run</th>{head}<th>avg</th></tr>'
        f'{"".join(rows)}</table><p class="muted">{escape(table.footnote())}</p></section>'
    )


def _runs_section(runs: Sequence[Run], labels: Sequence[str]) -> str:
    rows = []
    for label, run in zip(labels, runs, strict=True):
        status = escape(run.status) + (
            f' <span class="bad">{escape(run.message)}</span>' if run.message else ""
        )
        config = escape(json.dumps(run.config, indent=1, sort_keys=True))
        rows.append(
            f'<tr><td class="name">{escape(label)}</td><td class="name">{escape(run.model)}</td>'
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
    return (
        f'<section id="runs"><h2>Runs</h2><table><tr>{head}</tr>{"".join(rows)}</table></section>'
    )


def _figure(svg: str | None, caption: str) -> str:
    if svg is None:
        return ""
    return f'<figure>{svg}<figcaption class="muted">{escape(caption)}</figcaption></figure>'


def _run_header(labels: Sequence[str], first: str = "metric") -> str:
    cells = "".join(f"<th>{escape(label)}</th>" for label in labels)
    return f'<tr><th class="name">{escape(first)}</th>{cells}</tr>'


def _cell(text: str, href: str | None, best: bool) -> str:
    shown = f'<a href="#{href}">{escape(text)}</a>' if href and text != "-" else escape(text)
    return f'<td class="best">{shown}</td>' if best else f"<td>{shown}</td>"


def _scores_section(
    runs: Sequence[Run], labels: Sequence[str], names: Sequence[str], anchors: dict
) -> str:
    rows = []
    for name in names:
        metrics = metric_names(runs, name)
        for index, metric in enumerate(metrics):
            found = [
                run.benchmarks[name].metric(metric) if name in run.benchmarks else None
                for run in runs
            ]
            values = [m.value if m else None for m in found]
            unit = next((m.unit for m in found if m), "")
            best = best_values(values)
            head = (
                f'<td class="name" rowspan="{len(metrics)}"><a href="#'
                f'{benchmark_anchor(names.index(name))}">{escape(name)}</a></td>'
                if index == 0
                else ""
            )
            unit_text = "fraction" if unit == FRACTION else "percent"
            cells = "".join(
                _cell(m.text() if m else "-", anchors.get((r, name, None)), r in best)
                for r, m in enumerate(found)
            )
            rows.append(
                f'<tr>{head}<td class="name">{escape(metric)} '
                f'<span class="muted">({unit_text})</span></td>{cells}</tr>'
            )
        if not metrics:
            cells = "".join("<td>-</td>" for _ in runs)
            rows.append(
                f'<tr><td class="name">{escape(name)}</td><td class="name muted">'
                f"no result stored yet</td>{cells}</tr>"
            )
    header = "".join(f"<th>{escape(label)}</th>" for label in labels)
    table = (
        f'<table class="scores"><tr><th class="name">benchmark</th><th class="name">metric'
        f"</th>{header}</tr>{''.join(rows)}</table>"
    )
    return (
        '<section id="scores"><h2>Scores</h2>'
        + _figure(
            plots.scores_plot(runs, labels),
            "Headline score per benchmark and run (pass@1; CoRE: I; REval: average accuracy x100).",
        )
        + '<p class="muted">Model-vs-model comparison: one column per run. Click a score for '
        "that run's example failures.</p>" + table + "</section>"
    )


def _benchmark_section(
    runs: Sequence[Run], labels: Sequence[str], name: str, index: int, anchors: dict
) -> str:
    results = [run.benchmarks.get(name) for run in runs]
    kinds = {result.kind for result in results if result}
    parts = [f'<section id="{benchmark_anchor(index)}"><h2>{escape(name)}</h2>']
    if PASSK in kinds:
        parts.append(_figure(plots.passk_plot(runs, labels, name), f"{name}: pass@k per run."))
    if CORE in kinds:
        parts.append(
            _figure(
                plots.core_plot(runs, labels, name),
                "Invariance vs process transparency; on the dashed diagonal a model "
                "is as right about the process as about the result.",
            )
        )
        parts.append(_core_variants(runs, labels, name))
    if REVAL in kinds:
        parts.append(
            _figure(
                plots.reval_plot(runs, labels, name),
                f"{name}: accuracy per question kind (fractions).",
            )
        )
    count = max((len(result.breakdowns) for result in results if result), default=0)
    for table_index in range(count):
        parts.append(_figure(plots.breakdown_plot(runs, labels, name, table_index), ""))
        parts.append(_breakdown_table(runs, labels, name, table_index, anchors))
    parts.append(_reasons_table(runs, labels, name))
    parts.append("</section>")
    return "\n".join(parts)


def _breakdown_table(
    runs: Sequence[Run], labels: Sequence[str], name: str, index: int, anchors: dict
) -> str:
    tables: list[Breakdown | None] = []
    for run in runs:
        result = run.benchmarks.get(name)
        tables.append(
            result.breakdowns[index] if result and len(result.breakdowns) > index else None
        )
    first = next(table for table in tables if table is not None)
    categories = sorted({category for table in tables if table for category in table.rows})
    head = "".join(f'<th colspan="{len(first.columns)}">{escape(label)}</th>' for label in labels)
    sub = "".join(f"<th>{escape(column)}</th>" for _ in runs for column in first.columns)
    sized = bool(first.counts)
    rows = []
    for category in categories:
        size = next((t.counts.get(category) for t in tables if t and category in t.counts), None)
        cells = []
        for column in first.columns:
            values = [t.rows.get(category, {}).get(column) if t else None for t in tables]
            best = best_values(values)
            cells.append([(r, values[r], r in best) for r in range(len(runs))])
        row = []
        for r in range(len(runs)):
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
    return (
        f"<h3>{escape(first.title)}</h3>{note}<table><tr>"
        f'<th class="name" rowspan="2">category</th>{size_head}{head}</tr><tr>{sub}</tr>'
        f"{''.join(rows)}</table>"
    )


def _core_variants(runs: Sequence[Run], labels: Sequence[str], name: str) -> str:
    """Both CoRE gradings (project: strict, primary; ancestor: the original comparison)."""
    rows = []
    for variant in ("project", "ancestor"):
        for metric in CORE_METRICS:
            values = []
            for run in runs:
                result = run.benchmarks.get(name)
                mean = (
                    result.report.get("variants", {}).get(variant, {}).get("mean", {})
                    if result and result.kind == CORE
                    else {}
                )
                value = mean.get(metric)
                values.append(float(value) if isinstance(value, int | float) else None)
            best = best_values(values)
            cells = "".join(
                _cell(
                    "-" if v is None else (f"{v:.4f}" if metric.startswith("Cons") else f"{v:.2f}"),
                    None,
                    r in best,
                )
                for r, v in enumerate(values)
            )
            rows.append(
                f'<tr><td class="name">{variant}</td><td class="name">{metric}</td>{cells}</tr>'
            )
    header = "".join(f"<th>{escape(label)}</th>" for label in labels)
    return (
        '<h3>Both gradings</h3><p class="muted">project: strict literal comparison '
        "(primary); ancestor: the original harness's comparison. I, Is, W, Ws, RCS in "
        "percent; Cons as fractions.</p>"
        f'<table><tr><th class="name">grading</th><th class="name">metric</th>{header}</tr>'
        f"{''.join(rows)}</table>"
    )


def _reasons_table(runs: Sequence[Run], labels: Sequence[str], name: str) -> str:
    """Verdict counts per run (REval's and CoRE's nested per kind or grading are flattened)."""
    counts: list[dict[str, int] | None] = []
    for run in runs:
        result = run.benchmarks.get(name)
        if result is None:
            counts.append(None)
            continue
        report = result.report
        reasons = report.get("reasons")
        if result.kind == CORE:
            reasons = report.get("variants", {}).get("project", {}).get("reasons")
        flat: dict[str, int] = {}
        for key, value in (reasons or {}).items():
            if isinstance(value, dict):
                flat.update({f"{key}: {inner}": int(n) for inner, n in value.items()})
            elif isinstance(value, int):
                flat[key] = value
        counts.append(flat)
    keys = sorted({key for flat in counts if flat for key in flat})
    if not keys:
        return ""
    rows = "".join(
        f'<tr><td class="name">{escape(key)}</td>'
        + "".join(f"<td>{'-' if flat is None else flat.get(key, 0)}</td>" for flat in counts)
        + "</tr>"
        for key in keys
    )
    return f"<h3>Verdicts (samples)</h3><table>{_run_header(labels, 'verdict')}{rows}</table>"


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
                f'<h3 id="{failures_anchor(r, b)}">{escape(label)} \u2014 '
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


def _failure(failure: Failure, first: bool) -> str:
    verdict = failure.reason + (" (skipped: upstream anti-copy rule)" if failure.skipped else "")
    task = f" [{failure.task}]" if failure.task else ""
    return (
        f'<details class="failure"{" open" if first else ""}><summary>{escape(failure.item_id)}, sample {failure.sample}'
        f"{escape(task)}: <b>{escape(verdict)}</b></summary><dl>"
        f"<dt>prompt</dt><dd>{_text_block(failure.prompt, 'prompt not stored')}</dd>"
        f"<dt>completion</dt><dd>{_text_block(failure.completion, 'completion not stored')}</dd>"
        f"<dt>extracted answer</dt><dd>{_text_block(failure.answer, 'nothing extracted')}</dd>"
        f"<dt>expected</dt><dd>{_text_block(failure.expected, '')}</dd>"
        f"<dt>verdict</dt><dd>{escape(verdict)}"
        + (f"<pre>{escape(failure.detail)}</pre>" if failure.detail else "")
        + "</dd></dl></details>"
    )
