"""``codereasoner export-generations RUN_DIR``: a run's completions as a generations file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from codereasoner.cli.common import error_console, fail, flag_message, safe_markup
from codereasoner.evaluation.export_generations import FORMATS, ExportError, export_generations


def export_generations_command(
    run_dir: Annotated[
        Path, typer.Argument(help="The run folder (holding run.sqlite), or the run.sqlite file.")
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="The generations file to write (atomically); an existing file is refused "
            "unless --force, and the run's own files (run.sqlite and its -wal/-shm, the lock, "
            "results.json) always.",
            show_default=False,
        ),
    ],
    bench: Annotated[
        str | None,
        typer.Option(
            "--bench", help="The benchmark to export (default: the run's only benchmark)."
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="jsonl: {id, sample, completion, prompt_hash} lines with the raw model text "
            "(the replay server's --completions reads them too); official: "
            "CRUXEval's {id: [answers]} with the run's extracted answers (pass@k benchmarks). "
            "One of: " + ", ".join(FORMATS) + ".",
        ),
    ] = "jsonl",
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out.")] = False,
) -> None:
    """Export a run store's samples as a generations file that 'codereasoner score' reads, and
    print the 'score' command (the run's style, extraction, grading, data folder; --subset for a
    --limit run) that reproduces the run's numbers."""
    try:
        exported = export_generations(run_dir, bench, out, fmt, force=force)
    except ExportError as exc:
        fail(flag_message(exc))
    error_console.print(
        f"{safe_markup(exported.benchmark)}: {exported.items} items x {exported.samples} "
        f"samples written to {safe_markup(exported.path)} ({exported.format})",
        highlight=False,
        soft_wrap=True,
    )
    error_console.print(
        f"score it with: {safe_markup(exported.score_command())}", highlight=False, soft_wrap=True
    )


def register(app: typer.Typer) -> None:
    app.command("export-generations")(export_generations_command)
