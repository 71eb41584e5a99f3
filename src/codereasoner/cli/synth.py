"""``codereasoner synth``: build a training set of concise execution cases (docs/synth.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from codereasoner.synth.decontam import Decontamination


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
        typer.Option(
            help="Benchmark data for decontamination: a folder holding cruxeval/, reval/, "
            "core/, livecodebench/ (default: the download cache, see 'codereasoner bench fetch')."
        ),
    ] = None,
    no_decontam: Annotated[
        bool,
        typer.Option(
            "--no-decontam",
            help="Build without decontamination (said on the terminal, in summary.json and in "
            "every record). Without it, synth refuses to run when no benchmark data is found.",
        ),
    ] = False,
    decontam_rule: Annotated[
        str | None,
        typer.Option(
            help="The 10-gram rule: literal (the paper's: any shared token 10-gram; default) "
            "or specific (only 10-grams holding distinctive tokens)."
        ),
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
    from codereasoner.benchmarks.cache import cache_root
    from codereasoner.benchmarks.programs import load_benchmark_programs
    from codereasoner.execution import SandboxUnavailable
    from codereasoner.models import BackendError, SpecError, load_backend
    from codereasoner.synth.decontam import DEFAULT_RULE, NGRAM_RULES, Decontamination
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
    if decontam_rule is not None and decontam_rule not in NGRAM_RULES:
        fail(f"--decontam-rule {decontam_rule!r}: expected {' or '.join(NGRAM_RULES)}")
    if no_decontam and (data_dir is not None or decontam_rule is not None):
        given = "--data-dir" if data_dir is not None else "--decontam-rule"
        fail(f"--no-decontam and {given} contradict each other: give one of them")
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
        backend = load_backend(model) if model else None  # a bad spec is reported first
        if no_decontam:
            decontam = Decontamination.skip("--no-decontam")
        else:
            loaded = load_benchmark_programs(data_dir)
            if not loaded.checked:
                where = str(data_dir) if data_dir is not None else f"the cache {cache_root()}"
                fail(
                    f"no benchmark data to decontaminate against in {where} (none of "
                    f"{', '.join(loaded.skipped)}): pass --data-dir DIR, fetch it with "
                    "'codereasoner bench fetch NAME', or pass --no-decontam to build without "
                    "decontamination"
                )
            decontam = Decontamination.against(loaded, decontam_rule or DEFAULT_RULE)
        # said before the run starts, so a long run's terminal states it from the beginning
        announce(decontam)
        if backend is not None:
            backend.preflight()  # an unreachable teacher is one line, not n parse drops
        with progress:
            summary = run(config, lambda done, total: progress.update(task, completed=done),
                          decontam=decontam, backend=backend)  # fmt: skip
    except (OutputError, SpecError, BackendError, SandboxUnavailable, ValueError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    show_summary(summary.data, summary.elapsed_s, out)


def announce(decontam: Decontamination) -> None:
    """One line on stderr: how this run decontaminates (and, on more lines, why a benchmark
    could not be checked)."""
    style = "bold yellow" if decontam.skipped or decontam.missing else "bold"
    error_console.print(
        f"[{style}]{escape(decontam.describe())}[/]", highlight=False, soft_wrap=True
    )
    for name, why in decontam.missing.items():
        error_console.print(f"  {escape(name)}: {escape(why)}", highlight=False, soft_wrap=True)


def decontam_line(data: dict) -> str:
    """How the run was decontaminated, from ``summary.json``."""
    info = data.get("decontam") or {}
    if info.get("skipped"):
        return f"SKIPPED ({info['skipped']})"
    text = f"{info.get('rule')} rule; checked {', '.join(info.get('checked', [])) or 'nothing'}"
    if info.get("missing"):
        text += f"; NOT checked (data missing): {', '.join(info['missing'])}"
    return text


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
    console.print(
        f"decontamination: {escape(decontam_line(data))}", highlight=False, soft_wrap=True
    )
    if methods["missing"]:
        shown = ", ".join(methods["missing"][:10])
        more = f" (+{len(methods['missing']) - 10} more)" if len(methods["missing"]) > 10 else ""
        console.print(f"methods not covered: {escape(shown)}{more}", highlight=False)
    console.print(
        f"wrote {escape(str(out))}/cases.jsonl, dropped.jsonl, audit.jsonl, "
        "summary.json, summary.png",
        highlight=False,
    )
