"""``codereasoner eval``: run benchmarks through a model into a resumable run store."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from codereasoner import benchmarks
from codereasoner.cli.common import DATA_DIR_OPTION, console, error_console, fail
from codereasoner.evaluation.runner import (
    ORACLE,
    SELF_CHECK,
    RunError,
    Runner,
    RunSettings,
    RunSummary,
    available,
    headline,
)
from codereasoner.models import (
    BackendError,
    Sampling,
    SpecError,
    load_backend,
    parse_spec,
    spec_help,
)
from codereasoner.tasks.base import extraction_modes


class Bars:
    """One progress bar per (benchmark, phase), on stderr when it is a terminal."""

    def __init__(self) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=error_console,
            disable=not error_console.is_terminal,
        )
        self.tasks: dict[tuple[str, str], Any] = {}

    def start(self, benchmark: str, phase: str, total: int) -> None:
        label = f"{benchmark:<16} {phase}"
        self.tasks[(benchmark, phase)] = self.progress.add_task(label, total=total)

    def advance(self, benchmark: str, phase: str, count: int = 1) -> None:
        self.progress.advance(self.tasks[(benchmark, phase)], count)


def default_out(model_id: str) -> Path:
    """``runs/<model slug>-<UTC date>``: re-running the same model the same day resumes."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id).strip("-")[:80] or "model"
    return Path("runs") / f"{slug}-{datetime.datetime.now(datetime.UTC):%Y%m%d}"


def _benchmarks(text: str | None, data_dir: Path | None) -> tuple[str, ...]:
    if text is None:
        names = available(data_dir)
        if not names:
            where = data_dir if data_dir is not None else "the cache"
            fail(
                f"--bench: no benchmark data found in {where}; pass --bench (it downloads) "
                "or --data-dir"
            )
        return tuple(names)
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in benchmarks.REGISTRY]
    if unknown or not names:
        fail(f"--bench {text!r}: expected a comma list of {', '.join(benchmarks.names())}")
    return tuple(dict.fromkeys(names))


def eval_command(
    model: Annotated[
        str,
        typer.Option("--model", help=f"Model spec: {spec_help(summaries=True)}."),
    ],
    bench: Annotated[
        str | None,
        typer.Option(help="Comma list of benchmarks (default: all whose data is available)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Run directory; the same --out resumes (default runs/<model>-<date>)."),
    ] = None,
    n: Annotated[int, typer.Option("--n", help="Samples per item.")] = 1,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling.")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Most tokens per completion.")] = 1024,
    seed: Annotated[
        int | None, typer.Option(help="Sampling seed (sample i uses seed + i).")
    ] = None,
    style: Annotated[
        str, typer.Option(help="direct, cot, phind or coc where supported (else direct).")
    ] = "direct",
    extraction: Annotated[
        str | None,
        typer.Option(
            help=f"{extraction_modes()} (default: official; CoRE: robust); answer-tag reads "
            "the last <Answer> block, for models trained by codereasoner train."
        ),
    ] = None,
    grading: Annotated[
        str,
        typer.Option(
            help="official (upstream verdicts) or strict (literals only, never evaluated); "
            "pass@k benchmarks only, the others grade by their own rule."
        ),
    ] = "official",
    chat: Annotated[
        bool, typer.Option("--chat/--raw", help="Chat messages, or raw completion prompts.")
    ] = False,
    limit: Annotated[
        int | None, typer.Option(help="About N items per benchmark, a fixed subset.")
    ] = None,
    data_dir: Annotated[Path | None, DATA_DIR_OPTION] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Requests in flight (server backends).")
    ] = None,
    request_timeout: Annotated[
        float | None, typer.Option(help="Seconds per HTTP request (server backends).")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds per sandboxed evaluation: wall-clock for CRUXEval and LiveCodeBench "
            "(upstream: 3), CPU for REval (default: each benchmark's own)."
        ),
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Sandbox workers (default: cores).")] = None,
    isolation: Annotated[str, typer.Option(help="auto, bubblewrap or fallback.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Evaluate a model: generate, extract, grade and report, resumably (docs/evaluation.md).

    Every completion and verdict is stored in RUN_DIR/run.sqlite as soon as it exists.
    Re-running with the same --out skips finished work (after a crash or kill -9 too).
    A re-run keeps the model and settings; it may add benchmarks or change --n.
    """
    try:
        spec = parse_spec(model)
        options = {"concurrency": concurrency, "timeout_s": request_timeout}
        backend = load_backend(spec, **options)
    except (SpecError, BackendError) as exc:
        fail(f"--model: {exc}")
    try:
        sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
        settings = RunSettings(
            _benchmarks(bench, data_dir),
            n=n,
            sampling=sampling,
            style=style,
            extraction=extraction,
            grading=grading,
            chat=chat,
            limit=limit,
            data_dir=data_dir,
            timeout=timeout,
            workers=workers,
            isolation=isolation,
        )
        run_dir = out if out is not None else default_out(backend.model_id)
        bars = Bars()
        runner = Runner(run_dir, backend, settings, bars)
        runner.check_resumable()
    except RunError as exc:
        fail(str(exc))
    try:
        backend.preflight()
    except BackendError as exc:
        fail(f"--model {model}: {exc}")
    try:
        with runner, bars.progress:
            summary = runner.run()
    except (RunError, BackendError) as exc:
        fail(f"{exc} (run marked failed in {runner.run_dir}; re-run to resume)")
    except KeyboardInterrupt:
        fail(f"interrupted (run marked failed in {runner.run_dir}; re-run to resume)", 130)
    finally:
        backend.close()
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
    else:
        _print(summary)
    problems = sum(report.get("sandbox_errors", 0) for report in summary.reports.values())
    if problems:
        error_console.print(
            f"[yellow]warning:[/] {problems} samples hit sandbox errors "
            "(infrastructure, not the answers); the scores are incomplete"
        )
    failed_check = summary.self_check is not None and not all(
        check["passed"] for check in summary.self_check.values()
    )
    if problems or failed_check:
        raise typer.Exit(1)


def _metrics(values: dict[str, float]) -> str:
    return ", ".join(f"{key} {value:.4g}" for key, value in values.items())


def _print(summary: RunSummary) -> None:
    oracle = summary.model == ORACLE
    if oracle:
        console.print(f"[bold yellow]{SELF_CHECK}[/]", highlight=False)
    table = Table(title=escape(f"{summary.model}: {summary.run_dir}"), title_justify="left")
    for column in ("benchmark", "items", "samples", "main metrics", "generated", "cached"):
        table.add_column(
            column, justify="left" if column in ("benchmark", "main metrics") else "right"
        )
    for name, report in summary.reports.items():
        items = report["items"]
        count = sum(items.values()) if isinstance(items, dict) else items
        samples = report.get("samples", count)
        table.add_row(
            name,
            str(count),
            str(samples),
            escape(_metrics(headline(name, report))),
            str(summary.generated.get(name, 0)),
            str(summary.cached.get(name, 0)),
        )
    console.print(table)
    if summary.self_check is not None:
        _print_self_check(summary.self_check)
    console.print(
        "[dim]pass@k and CoRE I/Is/W/Ws/RCS in percent; REval accuracies as fractions, "
        "consistency in percent. Full reports: codereasoner eval --json, or the run "
        "store's results table.[/]"
    )


def _print_self_check(checks: dict[str, dict[str, Any]]) -> None:
    table = Table(title="self-check (oracle)", title_justify="left")
    for column in ("benchmark", "result", "items", "cannot state", "ambiguous prompt", "wrong"):
        table.add_column(column, justify="left" if column in ("benchmark", "result") else "right")
    for name, check in checks.items():
        result = "[green]pass[/]" if check["passed"] else "[red]FAIL[/]"
        ambiguous = f"{len(check['ambiguous'])} ({len(check['ambiguous_missed'])} missed)"
        table.add_row(
            name,
            result,
            str(check["items"]),
            str(len(check["no_truth"])),
            ambiguous,
            str(len(check["graded_wrong"])),
        )
    console.print(table)
    for name, check in checks.items():
        for miss in check["graded_wrong"][:5]:
            console.print(
                escape(
                    f"{name}: {miss['id']} sample {miss['sample']}: {miss['reason']} "
                    f"{miss['detail']}"
                ),
                highlight=False,
            )
    console.print(
        "[dim]cannot state: truths with no answer form (e.g. a state of a type the "
        "grader cannot resolve); ambiguous: the same prompt asked of items with "
        "different truths (one completion cannot answer both). Only 'wrong' counts "
        "as a failure: a grading bug.[/]"
    )


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
