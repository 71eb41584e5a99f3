"""``codereasoner synth``: build a training set of concise execution cases (docs/synth.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from codereasoner.cli.common import console, error_console, fail


def register(app: typer.Typer) -> None:
    app.command("synth")(synth_command)


def synth_command(
    out: Annotated[
        Path,
        typer.Option(help="Output directory (resumed when it holds a run with the same settings)."),
    ],
    generator: Annotated[str, typer.Option(help="offline (built in, no model) or llm.")] = (
        "offline"
    ),
    n: Annotated[
        int,
        typer.Option(
            help="Original candidates to draw from the generator; each "
            "kept one adds up to --mutants mutants."
        ),
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Seed: the same seed gives byte-identical output.")] = 0,
    model: Annotated[
        str | None, typer.Option(help="Teacher for --generator llm, e.g. openai:NAME@URL.")
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Benchmark data for decontamination (default: the download cache)."),
    ] = None,
    max_output_chars: Annotated[
        int, typer.Option(help="Drop outputs whose canonical literal is longer than this.")
    ] = 50,
    mutants: Annotated[int, typer.Option(help="Mutants kept per original at most.")] = 2,
    workers: Annotated[
        int | None, typer.Option(help="Sandbox workers per pool (default: CPU count).")
    ] = None,
    chunk_size: Annotated[int, typer.Option(hidden=True)] = 256,
) -> None:
    """Generate, validate, deduplicate and decontaminate execution cases into OUT."""
    from codereasoner.benchmarks.programs import load_benchmark_programs
    from codereasoner.execution import SandboxUnavailable
    from codereasoner.models import BackendError, SpecError, load_backend
    from codereasoner.synth.decontam import BenchmarkIndex
    from codereasoner.synth.pipeline import SynthConfig, run
    from codereasoner.synth.writer import OutputError

    if generator not in ("offline", "llm"):
        fail(f"--generator {generator!r}: expected offline or llm")
    if generator == "llm" and not model:
        fail("--generator llm needs --model (e.g. openai:NAME@http://127.0.0.1:8000/v1)")
    if generator == "offline" and model:
        fail("--model applies to --generator llm only")
    if n < 1:
        fail(f"--n {n}: expected a positive number of candidates")
    if mutants < 0:
        fail(f"--mutants {mutants}: expected 0 or more")
    if max_output_chars < 1:
        fail(f"--max-output-chars {max_output_chars}: expected a positive number")
    if workers is not None and workers < 1:
        fail(f"--workers {workers}: expected a positive number")
    if data_dir is not None and not data_dir.is_dir():
        fail(f"--data-dir {data_dir}: not a directory")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: exists and is not a directory")
    config = SynthConfig(
        out=out,
        n=n,
        seed=seed,
        generator=generator,
        max_output_chars=max_output_chars,
        mutants=mutants,
        mutant_tries=max(2 * mutants, mutants),
        workers=workers,
        chunk_size=chunk_size,
    )
    progress = Progress(
        TextColumn("synth"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("candidates"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=error_console,
        disable=not error_console.is_terminal,
    )
    task = progress.add_task("synth", total=n)
    try:
        loaded = load_benchmark_programs(data_dir)
        index = (BenchmarkIndex(loaded.programs), loaded.checked)
        backend = load_backend(model) if model else None
        if backend is not None:
            backend.preflight()  # an unreachable teacher is one line, not n parse drops
        with progress:
            summary = run(config, lambda done, total: progress.update(task, completed=done),
                          decontam=index, backend=backend)  # fmt: skip
    except (OutputError, SpecError, BackendError, SandboxUnavailable, ValueError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    show_summary(summary.data, summary.elapsed_s, out)


def show_summary(data: dict, elapsed_s: float, out: Path) -> None:
    """The final table: counts by stage, top drop reasons, methods covered."""
    kept, originals = data["kept"], data["originals"]
    table = Table(title=escape(f"synth: {out}"), title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("count", justify="right")
    table.add_row("originals generated", f"{originals['generated']:,}")
    table.add_row("originals kept", f"{kept['originals']:,}")
    table.add_row("mutants kept", f"{kept['mutants']:,}")
    table.add_row("cases written", f"[green]{kept['total']:,}[/]")
    for stage, count in data["dropped_by_stage"].items():
        table.add_row(f"dropped at {stage}", f"{count:,}")
    methods = data["methods"]
    table.add_row("methods covered", f"{methods['covered']}/{methods['total']}")
    table.add_row("time", f"{elapsed_s:.1f} s")
    console.print(table)
    reasons = Table(title="top drop reasons", title_justify="left")
    reasons.add_column("stage/reason")
    reasons.add_column("count", justify="right")
    for reason, count in list(data["drop_reasons"].items())[:8]:
        reasons.add_row(escape(reason), f"{count:,}")
    console.print(reasons)
    if methods["missing"]:
        shown = ", ".join(methods["missing"][:10])
        more = f" (+{len(methods['missing']) - 10} more)" if len(methods["missing"]) > 10 else ""
        console.print(f"methods not covered: {escape(shown)}{more}", highlight=False)
    console.print(
        f"wrote {escape(str(out))}/cases.jsonl, dropped.jsonl, audit.jsonl, "
        "summary.json, summary.png",
        highlight=False,
    )
