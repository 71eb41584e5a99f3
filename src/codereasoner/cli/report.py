"""``codereasoner report RUN [RUN...]``: one static HTML page and terminal tables over runs."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from codereasoner.cli.common import console, error_console, fail, flag_message, safe_markup

if TYPE_CHECKING:
    from codereasoner.evaluation.report import Run, Table3


def report_command(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Run directories (or their run.sqlite files); one column each (table3: a row).",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The HTML file to write (replaced atomically).")
    ] = Path("report.html"),
    examples: Annotated[
        int, typer.Option(help="Example failures shown per run, benchmark and category.")
    ] = 3,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the scores as JSON instead of tables.")
    ] = False,
    layout: Annotated[
        str,
        typer.Option(
            help="benchmarks (a row per benchmark and metric, a column per run) or table3 "
            "(CodeReasoner's Table 3: a row per run, each benchmark's headline score, their avg)."
        ),
    ] = "benchmarks",
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            help="A run's label, repeated in the order of the runs (the first --label names the "
            "first run); the others: the model (table3: the run's folder name).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write a self-contained HTML report (scores, pass@k, breakdowns, plots, failures)."""
    # Imported here: matplotlib should not slow down every other command's start.
    from codereasoner.evaluation.report import (
        LAYOUTS,
        ReportDataError,
        choose_labels,
        load_runs,
        table3,
        write_report,
    )

    if layout not in LAYOUTS:
        fail(f"--layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    if examples < 0:
        fail(f"--examples: expected 0 or more, got {examples}")
    _check_out(out, runs)
    spinner = (
        error_console.status("reading runs and plotting")
        if error_console.is_terminal
        else nullcontext()
    )
    with spinner:
        try:
            loaded = load_runs(runs, examples)
            named = choose_labels(loaded, labels or [], layout)
        except ReportDataError as exc:
            fail(flag_message(exc))
        table = table3(loaded, named) if layout == "table3" else None
        try:
            written = write_report(loaded, out, named, table)
        except OSError as exc:
            fail(f"--out {out}: cannot write the report ({exc.strerror or exc})")
    if as_json:
        typer.echo(json.dumps(summary(loaded, named, written, table), indent=2))
        return
    _print_runs(loaded, named)
    if table is None:
        _print_tables(loaded, named)
    else:
        _print_table3(table)
    console.print(f"report: {safe_markup(str(written))}", highlight=False, soft_wrap=True)


def _check_out(out: Path, runs: list[Path]) -> None:
    """Refuse (one line) an --out that is a folder, lies in a folder that does not exist (or is
    a file), or would replace a run's own file (its store, the store's journals, its
    results.json or lock): symlinks and '..' resolved."""
    from codereasoner.evaluation.runner import run_file_at
    from codereasoner.evaluation.store import store_path

    if out.is_dir():
        fail(f"--out {out}: is a directory; give the HTML file's path")
    parent = out.parent
    if not parent.exists():
        fail(f"--out {out}: folder {parent} does not exist")
    if not parent.is_dir():
        fail(f"--out {out}: {parent} is not a folder")
    for run in runs:
        kept = run_file_at(out, store_path(run).resolve())
        if kept is not None:
            fail(f"--out {out}: that is run {run}'s own file ({kept.name}); give another file")
    from codereasoner.files import OutputRefused, check_output_file

    try:
        check_output_file(out, "--out")  # another run's store, a run folder's own file, ...
    except OutputRefused as exc:
        fail(str(exc))


def summary(
    runs: list[Run], labels: list[str], written: Path, table: Table3 | None = None
) -> dict[str, Any]:
    """What the tables show, as JSON: scores per benchmark, metric and run; failure counts; the
    Table 3 layout (``table3``) when given."""
    from codereasoner.evaluation.report.compare import compare
    from codereasoner.evaluation.report.data import benchmark_names, metric_names

    scores: dict[str, Any] = {}
    errors: dict[str, Any] = {}
    common: dict[str, Any] = {}
    items: dict[str, Any] = {}
    failures: dict[str, Any] = {}
    for name in benchmark_names(runs):
        comparison = compare(runs, name)
        items[name] = comparison.to_dict(labels)
        scores[name], errors[name], common[name] = {}, {}, {}
        for metric in metric_names(runs, name):
            own = [
                run.benchmarks[name].metric(metric) if name in run.benchmarks else None
                for run in runs
            ]
            shown = [comparison.compared(runs, r, metric) for r in range(len(runs))]
            scores[name][metric] = {
                label: m.value if m else None for label, m in zip(labels, own, strict=True)
            }
            errors[name][metric] = {
                label: m.stderr if m else None for label, m in zip(labels, own, strict=True)
            }
            if not comparison.same:
                # a self-check holding exactly the common items: its own score is over them
                on_common = [
                    comparison.on_common[r] is not None
                    or (r in comparison.apart and not comparison.own_items(r))
                    for r in range(len(runs))
                ]
                common[name][metric] = {
                    label: m.value if m and on_common[r] else None
                    for r, (label, m) in enumerate(zip(labels, shown, strict=True))
                }
        failures[name] = {
            label: run.benchmarks[name].total_failures
            for label, run in zip(labels, runs, strict=True)
            if name in run.benchmarks
        }
    return {
        "report": str(written),
        "runs": [
            {
                "label": label,
                "model": run.model,
                "id": run.id,
                "path": str(run.path),
                "status": run.status,
                "self_check": run.self_check,
            }
            for label, run in zip(labels, runs, strict=True)
        ],
        "scores": scores,
        "stderr": errors,
        "items": items,
        "common_item_scores": {name: rows for name, rows in common.items() if rows},
        "failures": failures,
        **({} if table is None else {"table3": table.to_dict()}),
    }


def _print_runs(runs: list[Run], labels: list[str]) -> None:
    for label, run in zip(labels, runs, strict=True):
        state = "" if run.status == "done" else f" [yellow]({safe_markup(run.status)})[/]"
        console.print(f"{safe_markup(label)}: {safe_markup(str(run.path))}{state}", highlight=False)


def _print_table3(table: Table3) -> None:
    from codereasoner.evaluation.report.table3 import average_text, cell_text

    shown = Table(
        title="Table 3 layout: headline score per benchmark (percent [Wilson 95% interval]; the "
        "best of a column in bold only where a paired test separates it)",
        title_justify="left",
    )
    shown.add_column("run")
    for column in table.columns:
        shown.add_column(
            f"{safe_markup(column.benchmark)}\n{safe_markup(column.metric)}", justify="right"
        )
    shown.add_column("avg", justify="right")
    best, best_avg = table.best()
    for index, row in enumerate(table.rows):
        cells = [_bold(cell_text(row, c), index in best[c]) for c in range(len(row.scores))]
        label = safe_markup(row.label) + (" (SELF-CHECK)" if row.self_check else "")
        shown.add_row(label, *cells, _bold(average_text(row), index in best_avg))
    # Wider than the terminal rather than a cell cut short: every score must stay readable.
    needed = console.measure(shown, options=console.options.update_width(10_000)).maximum
    wide = Console(
        file=console.file,
        width=max(console.width, needed),
        force_terminal=console.is_terminal,
        color_system=console.color_system,  # type: ignore[arg-type]  # the names it accepts
        emoji=False,  # labels and run names are shown as typed
    )
    wide.print(shown)
    console.print(safe_markup(table.footnote()), highlight=False, soft_wrap=True)
    if any(row.self_check for row in table.rows):
        from codereasoner.evaluation.runner import SELF_CHECK

        console.print(safe_markup(SELF_CHECK), highlight=False, soft_wrap=True)


def _bold(text: str, best: bool) -> str:
    return f"[bold green]{text}[/]" if best else text


def _print_tables(runs: list[Run], labels: list[str]) -> None:
    from codereasoner.evaluation.report.compare import compare
    from codereasoner.evaluation.report.data import benchmark_names, metric_names

    table = Table(
        title="scores per benchmark [Wilson 95% interval] (best of each row in bold only where a "
        "paired sign test over common items separates it, p < 0.05; where runs "
        "hold different items, over the items they all hold)",
        title_justify="left",
    )
    table.add_column("benchmark")
    table.add_column("metric")
    for label, run in zip(labels, runs, strict=True):
        table.add_column(
            safe_markup(label) + (" (SELF-CHECK)" if run.self_check else ""), justify="right"
        )
    for name in benchmark_names(runs):
        comparison = compare(runs, name)
        counts = ["-" if count is None else str(count) for count in comparison.counts]
        note = "" if comparison.same else f", common: {comparison.common}"
        table.add_row(safe_markup(name), safe_markup(f"items{note}"), *counts)
        for metric in metric_names(runs, name):
            found = [comparison.compared(runs, r, metric) for r in range(len(runs))]
            best = comparison.best([m.value if m else None for m in found])
            cells = [
                (f"[bold green]{safe_markup(m.text())}[/]" if r in best else safe_markup(m.text()))
                if m
                else "-"
                for r, m in enumerate(found)
            ]
            unit = next((m.unit for m in found if m), "")
            table.add_row("", safe_markup(f"{metric} ({unit})"), *cells)
        table.add_section()
    console.print(table)
    if any(run.self_check for run in runs):
        from codereasoner.evaluation.runner import SELF_CHECK

        console.print(safe_markup(SELF_CHECK), highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
