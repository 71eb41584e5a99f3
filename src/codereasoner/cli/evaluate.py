"""``codereasoner eval``: run benchmarks through a model into a resumable run store."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from codereasoner import benchmarks
from codereasoner.benchmarks.cache import LOCAL
from codereasoner.cli.common import (
    DATA_DIR_OPTION,
    ExecutorFlag,
    IsolationFlag,
    console,
    error_console,
    fail,
    flag_message,
    json_flag,
    safe_markup,
)
from codereasoner.cli.progress import LineProgress
from codereasoner.evaluation.api import open_backend
from codereasoner.evaluation.eval_options import IdsError, read_ids, with_chat_template
from codereasoner.evaluation.export_generations import ExportError, write_sample_log
from codereasoner.evaluation.gen_kwargs import GenKwargsError, parse_gen_kwargs, with_gen_kwargs
from codereasoner.evaluation.report.data import reported_items
from codereasoner.evaluation.runner import (
    ORACLE,
    SELF_CHECK,
    RunError,
    Runner,
    RunSettings,
    RunSummary,
    available,
    check_data_dir,
    default_run_dir,
    headline,
)
from codereasoner.evaluation.tracking import (
    DEFAULT_PROJECT,
    TrackerError,
    check_tracker,
    log_run,
)
from codereasoner.files import RUN_KEPT, OutputRefused, cache_root, check_output_file
from codereasoner.models import BackendError, Sampling, spec_help
from codereasoner.models.base import Backend, BackendUnavailable, backend_identity
from codereasoner.tasks.base import extraction_modes

SIGTERM_MESSAGE = "interrupted by SIGTERM"


class Bars:
    """One progress bar per (benchmark, phase) on a terminal; progress lines elsewhere."""

    def __init__(self) -> None:
        self.progress = LineProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[note]}", style="dim", markup=False),
            console=error_console,
        )
        self.tasks: dict[tuple[str, str], Any] = {}

    def start(self, benchmark: str, phase: str, total: int) -> None:
        label = f"{benchmark:<16} {phase}"
        self.tasks[(benchmark, phase)] = self.progress.add_task(label, total=total, note="")

    def advance(self, benchmark: str, phase: str, count: int = 1) -> None:
        self.progress.advance(self.tasks[(benchmark, phase)], count)

    def note(self, benchmark: str, phase: str, text: str) -> None:
        task = self.tasks.get((benchmark, phase))
        if task is not None:
            self.progress.update(task, note=text)

    def warn(self, text: str) -> None:
        self.progress.console.print(
            f"[yellow]warning:[/] {safe_markup(text)}", highlight=False, soft_wrap=True
        )


@contextlib.contextmanager
def sigterm_interrupts(runner: Runner) -> Iterator[None]:
    """While inside, SIGTERM (how SLURM and most schedulers stop a job) acts as Ctrl-C: through
    the current SIGINT handler (asyncio's cancels its tasks cleanly), the run marked failed with
    ``interrupted by SIGTERM``."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        runner.interruption = SIGTERM_MESSAGE
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _benchmarks(text: str | None, data_dir: Path | None) -> tuple[tuple[str, ...], list[str]]:
    """The benchmarks to run, and (without ``--bench``) those skipped for want of data."""
    if text is None:
        names = available(data_dir)
        if not names:
            where = data_dir if data_dir is not None else "the cache"
            fail(
                f"--bench: no benchmark data found in {where}; name benchmarks with --bench "
                "(they download), fetch them with `codereasoner bench fetch NAME`, or pass "
                "--data-dir"
            )
        return tuple(names), [name for name in benchmarks.names() if name not in names]
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in benchmarks.REGISTRY]
    if unknown or not names:
        fail(f"--bench {text!r}: expected a comma list of {', '.join(benchmarks.names())}")
    return tuple(dict.fromkeys(names)), []


def _note_skipped(skipped: list[str]) -> None:
    """One line naming the benchmarks the default list left out, and how to get their data."""
    fetchable = [
        name
        for name in skipped
        if any(source.kind != LOCAL for source in benchmarks.get(name).sources)
    ]
    local = [name for name in skipped if name not in fetchable]
    parts = []
    if fetchable:
        parts.append(
            f"{', '.join(fetchable)} (get it with `codereasoner bench fetch NAME` or --data-dir)"
        )
    if local:
        parts.append(f"{', '.join(local)} (no download: --data-dir only)")
    if parts:
        error_console.print(
            f"note: skipped for want of data: {'; '.join(parts)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


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
        typer.Option(
            help="Run directory; the same --out resumes (default runs/<model>-<hash of the "
            "settings a resume must keep>, so the same command resumes)."
        ),
    ] = None,
    n: Annotated[int, typer.Option("--n", help="Samples per item.")] = 1,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (>= 0).")] = 0.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling, in (0, 1].")] = 1.0,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            help="Most tokens per completion (default: per benchmark and style: 192 for direct "
            "answers, 1024 for reasoning styles)."
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Sampling seed (sample i uses seed + i).")
    ] = None,
    style: Annotated[
        str,
        typer.Option(help="direct, cot, phind, coc or reasoning where supported (else direct)."),
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
    skip: Annotated[
        int,
        typer.Option(
            help="Leave out the first N items of that fixed order first: --skip 200 --limit 100 "
            "is disjoint from --limit 200 (a validation set beside a test set)."
        ),
    ] = 0,
    ids: Annotated[
        str | None,
        typer.Option(
            "--ids",
            help="Only these items, comma-separated ids (as lm-eval's --samples); recorded in "
            "the run. Not with --limit or --skip.",
        ),
    ] = None,
    ids_file: Annotated[
        Path | None,
        typer.Option(
            "--ids-file",
            help="Only the items whose ids this file lists, one per line (# comments).",
        ),
    ] = None,
    gen_kwargs: Annotated[
        str | None,
        typer.Option(
            "--gen-kwargs",
            help="More generation options, key=value,... or JSON: top_k, repetition_penalty, "
            "stop (more stop sequences); part of the cache key.",
        ),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option(
            "--system",
            help="System message for chat prompts (with --chat), instead of the benchmark's.",
        ),
    ] = None,
    chat_template: Annotated[
        str | None,
        typer.Option(
            "--chat-template",
            help="A Jinja chat template file (hf and openai models), or the name of one of the "
            "tokenizer's own templates (hf); part of the model's identity.",
        ),
    ] = None,
    log_to: Annotated[
        str | None,
        typer.Option(
            "--log-to",
            help="Also log the finished run's settings and scores to an experiment tracker: "
            "wandb or trackio (installed apart; its own settings apply, e.g. WANDB_MODE=offline).",
        ),
    ] = None,
    log_project: Annotated[
        str, typer.Option("--log-project", help="The tracker's project (with --log-to).")
    ] = DEFAULT_PROJECT,
    data_dir: Annotated[Path | None, DATA_DIR_OPTION] = None,
    model_args: Annotated[
        str | None,
        typer.Option(
            "--model-args",
            help="Backend options as key=value,key=value (hf: batch_size, device, dtype, "
            "trust_remote_code; vllm: batch_size, dtype, tensor_parallel_size, "
            "gpu_memory_utilization, max_model_len, ...; openai: concurrency, timeout_s, ...).",
        ),
    ] = None,
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
    isolation: IsolationFlag = "auto",
    executor: ExecutorFlag = None,
    as_json: Annotated[bool, json_flag("the summary")] = False,
    log_samples: Annotated[
        Path | None,
        typer.Option(
            "--log-samples",
            help="Also write every graded sample as JSON Lines to this file: benchmark, id, "
            "sample, prompt, completion, extracted answer and verdict.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Evaluate a model: generate, extract, grade and report, resumably (docs/evaluation.md).

    Every completion and verdict is stored in RUN_DIR/run.sqlite as soon as it exists, and
    the summary in RUN_DIR/results.json at the end (a failed run's too, status failed).
    Re-running the same command (or with the same --out) skips finished work (after a crash,
    kill -9 or SIGTERM too). A re-run keeps the model (its server URL may change) and settings;
    it may add benchmarks or change --n.
    """
    try:
        check_tracker(log_to)
        chosen_ids = read_ids(ids, ids_file)
        options = parse_gen_kwargs(gen_kwargs) if gen_kwargs is not None else {}
        model_options = with_chat_template(model, model_args, chat_template)
        backend = open_backend(model, concurrency, request_timeout, model_options)
        check_data_dir(data_dir)
    except (RunError, GenKwargsError, IdsError, TrackerError) as exc:
        fail(flag_message(exc))
    try:
        sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
        sampling = with_gen_kwargs(sampling, options)
        names, skipped = _benchmarks(bench, data_dir)
        settings = RunSettings(
            names,
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
            executor=executor,
            skip=skip,
            ids=chosen_ids,
            system=system,
        )
        if log_samples is not None:
            _check_sample_log(log_samples, out, data_dir)
        summary = _run(model, backend, settings, out, skipped)
    finally:
        backend.close()
    if log_samples is not None:
        try:
            logged = write_sample_log(summary.run_dir, log_samples, flag="--log-samples")
        except ExportError as exc:
            fail(flag_message(exc))
        error_console.print(
            f"samples logged: {safe_markup(str(log_samples))} ({logged:,} lines)",
            highlight=False,
            soft_wrap=True,
        )
    if log_to is not None:
        _log_to_tracker(log_to, log_project, summary, settings)
    _show(summary, as_json)


def _log_to_tracker(name: str, project: str, summary: RunSummary, settings: RunSettings) -> None:
    """The run is stored whatever the tracker does: its failure is a warning line."""
    try:
        logged = log_run(name, project, summary, settings.config())
    except TrackerError as exc:
        error_console.print(f"[yellow]warning:[/] {safe_markup(str(exc))}", soft_wrap=True)
        return
    error_console.print(
        f"logged to {name}: {len(logged)} values in project {safe_markup(project)}",
        highlight=False,
        soft_wrap=True,
    )


def _check_sample_log(log: Path, out: Path | None, data_dir: Path | None) -> None:
    """Before anything runs: ``--log-samples`` may not be a file of the run folder, the data
    it reads or a database (another run's store), and its folder must be writable."""
    if out is not None and log.name in RUN_KEPT and log.resolve().parent == out.resolve():
        fail(f"--log-samples {log}: is the run folder's own {log.name}; choose another file")
    protected = [cache_root(), *([data_dir] if data_dir is not None else [])]
    try:
        check_output_file(log, "--log-samples", protected=protected)
    except OutputRefused as exc:
        fail(str(exc))


def _prepare(backend: Backend, settings: RunSettings, out: Path | None) -> tuple[Runner, Bars]:
    """The runner, every option and the folder checked, and the folder's lock taken when it
    exists already (so a busy folder is refused before any request); creates nothing."""
    try:
        run_dir = out if out is not None else default_run_dir(backend_identity(backend), settings)
        bars = Bars()
        runner = Runner(run_dir, backend, settings, bars)
        runner.check_resumable()
        if run_dir.is_dir():
            runner.lock()
    except RunError as exc:
        fail(flag_message(exc))
    return runner, bars


def _run(
    model: str, backend: Backend, settings: RunSettings, out: Path | None, skipped: list[str]
) -> RunSummary:
    runner, bars = _prepare(backend, settings, out)
    with runner:
        try:
            backend.preflight()  # a packaged model's one-time conversion says so (a note)
        except BackendError as exc:
            fail(f"--model {model}: {_without_spec(str(exc), model, backend.model_id)}")
        try:
            runner.lock()
        except RunError as exc:
            fail(flag_message(exc))
        _note_skipped(skipped)
        if out is None:  # the default: say where it is
            error_console.print(f"run folder: {safe_markup(runner.run_dir)}", highlight=False)
        marked = f"run marked failed in {runner.run_dir}"
        resume = f"{marked}; re-run the same command to resume"
        try:
            with sigterm_interrupts(runner), bars.progress:
                return runner.run()
        except BackendUnavailable as exc:  # the server went away: a re-run can get past it
            fail(f"{exc} ({resume})")
        except (RunError, BackendError) as exc:  # a re-run would fail the same way
            fail(f"{flag_message(exc)} ({marked})")
        except KeyboardInterrupt:
            terminated = runner.interruption == SIGTERM_MESSAGE
            fail(f"{runner.interruption} ({resume})", 143 if terminated else 130)


def _without_spec(message: str, *specs: str) -> str:
    """A backend's message without the model spec it starts with (the error line names it)."""
    for spec in specs:
        if message.startswith(f"{spec}: "):
            return message[len(spec) + 2 :]
    return message


def _show(summary: RunSummary, as_json: bool) -> None:
    if as_json:
        typer.echo(summary.to_json())
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
    table = Table(title=safe_markup(f"{summary.model}: {summary.run_dir}"), title_justify="left")
    for column in ("benchmark", "items", "samples", "main metrics", "generated", "cached"):
        table.add_column(
            column, justify="left" if column in ("benchmark", "main metrics") else "right"
        )
    for name, report in summary.reports.items():
        count = reported_items(report)  # a stored report may be any shape
        samples = report.get("samples", count)
        table.add_row(
            name,
            str(count),
            str(samples),
            safe_markup(_metrics(headline(name, report))),
            str(summary.generated.get(name, 0)),
            str(summary.cached.get(name, 0)),
        )
    console.print(table)
    if summary.self_check is not None:
        _print_self_check(summary.self_check)
    console.print(
        "[dim]pass@k and CoRE I/Is/W/Ws/RCS in percent; REval accuracies as fractions, "
        "consistency in percent. Full reports: codereasoner eval --json, RUN_DIR/results.json "
        "or the run store's results table.[/]"
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
                safe_markup(
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
