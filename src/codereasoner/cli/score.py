"""``codereasoner score``: grade a generations file against a benchmark and print its report."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer

from codereasoner import benchmarks
from codereasoner.cli.common import (
    DATA_DIR_OPTION,
    IsolationFlag,
    check_file,
    emit_report,
    error_console,
    fail,
    flag_message,
    json_flag,
    open_pool,
    print_plain,
    safe_cell,
    safe_markup,
)
from codereasoner.evaluation import GenerationsError
from codereasoner.evaluation.families import MetricFamily, ScoreOptions, ScoreOutcome, family_of
from codereasoner.evaluation.generations import check_generations_path
from codereasoner.evaluation.metrics import COPY_POLICIES
from codereasoner.evaluation.prompt_check import (
    IGNORE_FLAG,
    HashCheck,
    PromptMismatch,
    check_prompt_hashes,
)
from codereasoner.evaluation.scoring import sample_results, write_results
from codereasoner.execution import Executor, Limits
from codereasoner.execution.sandbox import ISOLATION_MODES
from codereasoner.settings import SettingError
from codereasoner.tasks import Grading, Item, Reason
from codereasoner.tasks.base import extraction_modes


def _parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        fail(f"--k: expected comma-separated integers such as 1,5, got {text!r}")
    if not ks or ks[0] < 1:
        fail(f"--k: give integers of at least 1, got {text!r}")
    return ks


def score_command(
    bench: Annotated[
        str, typer.Option("--bench", help=f"Benchmark: {', '.join(benchmarks.names())}.")
    ],
    generations: Annotated[
        Path,
        typer.Option(
            "--generations",
            "-g",
            help='Official JSON (id -> list of answers), or JSON Lines {"id", "sample", "completion" | '
            '"answer"}; REval also reads its own logs (a file or a folder of them).',
        ),
    ],
    data_dir: Annotated[Path | None, DATA_DIR_OPTION] = None,
    k: Annotated[
        str | None,
        typer.Option(
            "--k",
            help="pass@k values, comma-separated (default: 1 and 5, those the file has enough "
            "samples per item for).",
        ),
    ] = None,
    as_json: Annotated[bool, json_flag("the report")] = False,
    grading: Annotated[
        str | None,
        typer.Option(
            help="official (upstream verdicts: the answer spliced into the official assertion) "
            "or strict (literals only, never evaluated). pass@k benchmarks only."
        ),
    ] = None,
    show_strict: Annotated[
        bool,
        typer.Option(
            "--strict-report",
            help="Also grade strictly (literals only, never evaluated) and report disagreements.",
        ),
    ] = False,
    style: Annotated[
        str, typer.Option(help="Prompt style of JSON Lines completions: direct, cot, phind, coc.")
    ] = "direct",
    extraction: Annotated[
        str | None,
        typer.Option(
            help=f"Extraction of completions: {extraction_modes()} (default: the benchmark's, "
            "robust for CoRE, official elsewhere); answer-tag reads the last <Answer> block."
        ),
    ] = None,
    copies: Annotated[
        str | None,
        typer.Option(help="Anti-copy rule: official (skipped samples shrink n) or fail."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds per sandboxed evaluation: wall-clock for CRUXEval and LiveCodeBench "
            "(default 3, as upstream), CPU for REval (default 10)."
        ),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Sandbox workers (default: one per core).")
    ] = None,
    isolation: IsolationFlag = "auto",
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help="Also write every sample's verdict to this JSON Lines file (id, sample, task, "
            "answer, correct, reason, detail, skipped; strict or ancestor verdicts alongside).",
        ),
    ] = None,
    subset: Annotated[
        bool,
        typer.Option(
            "--subset",
            help="Score only the items the file has (e.g. exported from an eval --limit run) "
            "instead of refusing a file without every item; the report says how many of the "
            "benchmark's items it covers.",
        ),
    ] = False,
    ignore_prompt_hash: Annotated[
        bool,
        typer.Option(
            IGNORE_FLAG,
            help="Score records whose prompt_hash is none of this benchmark's prompts (a custom "
            "system message, say) instead of refusing them; the report says so.",
        ),
    ] = False,
) -> None:
    """Score a generations file: the benchmark's metrics (pass@k with breakdowns, REval's
    accuracies and consistency, or CoRE's I, Is, W, Ws, RCS), optional strict report."""
    try:
        benchmark = benchmarks.get(bench)
    except KeyError as exc:
        fail(f"--bench: {exc.args[0]}")
    family = family_of(benchmark)
    _check_applies(
        benchmark, family, k=k, copies=copies, grading=grading, strict=show_strict, timeout=timeout
    )
    if copies is not None and copies not in COPY_POLICIES:
        fail(f"--copies: expected one of {', '.join(COPY_POLICIES)}, got {copies!r}")
    try:
        chosen_grading = Grading(grading or Grading.OFFICIAL)
    except ValueError:
        fail(f"--grading {grading!r}: expected official or strict")
    if show_strict and chosen_grading is Grading.STRICT:
        fail("--strict-report compares official with strict grading; drop it with --grading strict")
    if workers is not None and workers < 1:
        fail(f"--workers {workers}: expected at least 1 sandbox worker")
    if isolation not in ISOLATION_MODES:
        fail(f"--isolation {isolation!r}: expected one of {', '.join(ISOLATION_MODES)}")
    try:  # before any data is loaded (or downloaded)
        check_generations_path(generations, folder=family.reads_folders)
    except GenerationsError as exc:
        fail(flag_message(exc))
    _check_results(results, generations)
    try:
        options = ScoreOptions(
            generations=generations,
            data_dir=data_dir,
            style=benchmark.choose_style(style),
            extraction=benchmark.choose_extraction(extraction),
            limits=benchmark.limits_for(timeout),
            grading=chosen_grading,
            ks=None if k is None else _parse_ks(k),
            copies=copies or "official",
            show_strict=show_strict,
            results=results,
            subset=subset,
        )
    except ValueError as exc:
        fail(flag_message(exc))
    try:
        items = benchmark.load(data_dir)
    except benchmarks.DataUnavailable as exc:
        fail(flag_message(exc))
    hashes = _checked_hashes(generations, benchmark, items, data_dir, ignore_prompt_hash)
    with ExitStack() as stack:
        pool = lazy_pool(stack, workers=workers, limits=options.limits, isolation=isolation)
        try:
            outcome = family.score_file(benchmark, items, options, pool)
        except (GenerationsError, SettingError) as exc:  # the file or a setting, not a fault
            fail(flag_message(exc))
    report = {**_conclude(items, outcome, options), "prompt_hashes": hashes.to_dict()}
    emit_report(report, as_json, _with_subset(family.print_report))


def _checked_hashes(
    generations: Path,
    bench: benchmarks.Benchmark,
    items: list[Item],
    data_dir: Path | None,
    ignore: bool,
) -> HashCheck:
    """Every record's prompt_hash is one of the benchmark's prompts for its id, or the run
    stops here, before grading (a folder of REval logs carries no hashes)."""
    if ignore:
        error_console.print(
            f"[yellow]warning:[/] {IGNORE_FLAG}: prompt hashes not checked", soft_wrap=True
        )
        return HashCheck(ignored=True)
    if generations.is_dir():
        return HashCheck(absent=len(items))
    try:
        return check_prompt_hashes(generations, bench, items, data_dir)
    except PromptMismatch as exc:
        fail(str(exc))


def lazy_pool(
    stack: ExitStack, *, workers: int | None, limits: Limits, isolation: str
) -> Callable[[], Executor]:
    """The grading sandbox pool, opened on first use (never, for literals compared here) and
    closed with ``stack``."""
    opened: list[Executor] = []

    def pool() -> Executor:
        if not opened:
            grading = open_pool(workers=workers, limits=limits, isolation=isolation, grading=True)
            opened.append(stack.enter_context(grading))
        return opened[0]

    return pool


def _conclude(items: list[Item], outcome: ScoreOutcome, options: ScoreOptions) -> dict[str, Any]:
    """The report with its warnings (also printed to stderr), with ``--subset`` how many of the
    benchmark's items it covers, and with ``--results`` where the per-sample verdicts went."""
    report = {**outcome.report.to_dict(), "warnings": outcome.warnings}
    if "sandbox_errors" not in report:  # a family whose report does not count them itself
        report["sandbox_errors"] = sum(
            score.reason is Reason.SANDBOX_ERROR
            for scores in outcome.scores.values()
            for score in scores
        )
    if options.subset:
        report["subset"] = {"items": len(outcome.scores), "of": len(items)}
    results = options.results
    for warning in outcome.warnings:
        error_console.print(f"[yellow]warning:[/] {safe_markup(warning)}", soft_wrap=True)
    if results is not None:
        records = _write_results(items, outcome, results)
        report["results"] = {"path": str(results), "records": records}
        error_console.print(
            safe_cell(f"per-sample results: {results} ({records:,} records)"), soft_wrap=True
        )
    return report


def _check_results(results: Path | None, generations: Path) -> None:
    """``--results`` must be a new or replaceable file in an existing folder, never the
    generations it is read from (checked before anything is read or graded)."""
    if results is None:
        return
    check_file("--results", results)
    if not results.parent.is_dir():
        fail(f"--results {results}: folder {results.parent} does not exist")
    target, source = results.resolve(), generations.resolve()
    inside = source.is_dir() and target.is_relative_to(source)
    same = target == source or (
        results.exists() and generations.exists() and os.path.samefile(results, generations)
    )
    if inside or same:
        fail(f"--results {results}: that is where --generations reads from; give another file")


def _write_results(items: list[Item], outcome: ScoreOutcome, path: Path) -> int:
    records = sample_results(items, outcome.scores, outcome.also)
    try:
        return write_results(path, records)
    except OSError as exc:
        fail(f"--results {path}: cannot write ({exc.strerror or exc})")


def _check_applies(bench: benchmarks.Benchmark, family: MetricFamily, **given: object) -> None:
    """Options the benchmark's metric family does not use are refused, not ignored."""
    unused = {
        "k": not family.pass_at_k,
        "copies": not family.pass_at_k,
        "grading": not family.uses_grading,
        "strict": not (family.uses_grading and family.strict_report),
        "timeout": not family.uses_sandbox,
    }
    flags = {"strict": "--strict-report"}
    for key, value in given.items():
        if unused[key] and value not in (None, False):
            why = (
                "its answers are literals compared without a sandbox"
                if key == "timeout"
                else f"it reports {family.name} metrics, graded by its own rule"
            )
            fail(f"{flags.get(key, '--' + key)} does not apply to {bench.name} ({why})")


def _with_subset(show: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``show``, after a line saying a ``--subset`` report covers only some of the items."""

    def shown(report: dict[str, Any]) -> None:
        part = report.get("subset")
        if part is not None:
            print_plain(
                f"subset: {part['items']:,} of {part['of']:,} {report['benchmark']} items (those "
                "in the generations file, --subset); not comparable with scores on other items"
            )
        show(report)

    return shown


def register(app: typer.Typer) -> None:
    app.command("score")(score_command)
