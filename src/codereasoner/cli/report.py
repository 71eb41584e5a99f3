"""``codereasoner report RUN [RUN...]``: one static HTML page and terminal tables over runs."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from codereasoner.cli.common import console, error_console, fail

if TYPE_CHECKING:
    from codereasoner.evaluation.report import Run


def report_command(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Run directories (or their run.sqlite files); one column each.", show_default=False
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
) -> None:
    """Write a self-contained HTML report (scores, pass@k, breakdowns, plots, failures)."""
    # Imported here: matplotlib should not slow down every other command's start.
    from codereasoner.evaluation.report import ReportDataError, load_runs, write_report

    if examples < 0:
        fail(f"--examples: expected 0 or more, got {examples}")
    if out.is_dir():
        fail(f"--out {out}: is a directory; give the HTML file's path")
    spinner = (
        error_console.status("reading runs and plotting")
        if error_console.is_terminal
        else nullcontext()
    )
    with spinner:
        try:
            loaded = load_runs(runs, examples)
        except ReportDataError as exc:
            fail(str(exc))
        try:
            written = write_report(loaded, out)
        except OSError as exc:
            fail(f"--out {out}: cannot write the report ({exc.strerror or exc})")
    if as_json:
        typer.echo(json.dumps(summary(loaded, written), indent=2))
        return
    _print_tables(loaded)
    console.print(f"report: {escape(str(written))}", highlight=False, soft_wrap=True)


def summary(runs: list[Run], written: Path) -> dict[str, Any]:
    """What the tables show, as JSON: scores per benchmark, metric and run; failure counts."""
    from codereasoner.evaluation.report.data import benchmark_names, metric_names, run_labels

    labels = run_labels(runs)
    scores: dict[str, Any] = {}
    failures: dict[str, Any] = {}
    for name in benchmark_names(runs):
        scores[name] = {}
        for metric in metric_names(runs, name):
            row = {}
            for label, run in zip(labels, runs, strict=True):
                found = run.benchmarks[name].metric(metric) if name in run.benchmarks else None
                row[label] = found.value if found else None
            scores[name][metric] = row
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
            }
            for label, run in zip(labels, runs, strict=True)
        ],
        "scores": scores,
        "failures": failures,
    }


def _print_tables(runs: list[Run]) -> None:
    from codereasoner.evaluation.report.data import (
        benchmark_names,
        best_values,
        metric_names,
        run_labels,
    )

    labels = run_labels(runs)
    for label, run in zip(labels, runs, strict=True):
        state = "" if run.status == "done" else f" [yellow]({escape(run.status)})[/]"
        console.print(f"{escape(label)}: {escape(str(run.path))}{state}", highlight=False)
    table = Table(title="scores per benchmark (best of each row in bold)", title_justify="left")
    table.add_column("benchmark")
    table.add_column("metric")
    for label in labels:
        table.add_column(escape(label), justify="right")
    for name in benchmark_names(runs):
        for index, metric in enumerate(metric_names(runs, name)):
            found = [
                run.benchmarks[name].metric(metric) if name in run.benchmarks else None
                for run in runs
            ]
            best = best_values([m.value if m else None for m in found])
            cells = [
                (f"[bold green]{m.text()}[/]" if r in best else m.text()) if m else "-"
                for r, m in enumerate(found)
            ]
            unit = next((m.unit for m in found if m), "")
            table.add_row(escape(name) if index == 0 else "", escape(f"{metric} ({unit})"), *cells)
        table.add_section()
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
