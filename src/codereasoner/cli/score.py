"""``codereasoner score``: grade a generations file against a benchmark and print its report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from codereasoner import benchmarks
from codereasoner.benchmarks import Metrics
from codereasoner.cli.common import DATA_DIR_OPTION, console, emit_report, fail, open_pool
from codereasoner.cli.score_options import ScoreOptions
from codereasoner.cli.score_reval import print_reval, score_reval_file
from codereasoner.evaluation import GenerationsError, check_ks, read_generations, score
from codereasoner.evaluation.core_metrics import report_lines as core_lines
from codereasoner.evaluation.families import Family, family_of
from codereasoner.evaluation.metrics import COPY_POLICIES
from codereasoner.evaluation.reports import (
    CoreReport,
    PassReport,
    Report,
    RevalReport,
    core_report,
    pass_report,
)
from codereasoner.evaluation.scoring import default_ks
from codereasoner.tasks import Grading, Item
from codereasoner.tasks.base import extraction_modes
from codereasoner.tasks.plans import Memo


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
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
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
    isolation: Annotated[str, typer.Option(help="auto, bubblewrap or fallback.")] = "auto",
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
    try:
        options = ScoreOptions(
            generations=generations,
            style=benchmark.choose_style(style),
            extraction=benchmark.choose_extraction(extraction),
            limits=benchmark.limits_for(timeout),
            grading=chosen_grading,
            ks=None if k is None else _parse_ks(k),
            copies=copies or "official",
            show_strict=show_strict,
            workers=workers,
            isolation=isolation,
        )
    except ValueError as exc:
        fail(str(exc))
    try:
        items = benchmark.load(data_dir)
    except benchmarks.DataUnavailable as exc:
        fail(str(exc))
    report = _SCORERS[family.name](benchmark, items, options)
    _PRINTERS[report.kind](report.to_dict(), as_json)


def _check_applies(bench: benchmarks.Benchmark, family: Family, **given: object) -> None:
    """Options the benchmark's metric family does not use are refused, not ignored."""
    unused = {
        "k": not family.pass_at_k,
        "copies": not family.pass_at_k,
        "grading": not family.uses_grading,
        "strict": not family.uses_grading,
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


def _score_pass(
    bench: benchmarks.Benchmark, items: list[Item], options: ScoreOptions
) -> PassReport:
    try:
        fmt, answers = read_generations(options.generations, items, options.extract)
        ks = options.ks or default_ks(answers)
        check_ks(ks, answers)
    except (GenerationsError, ValueError) as exc:
        fail(str(exc))
    started = time.perf_counter()
    limits = options.limits
    with open_pool(workers=options.workers, limits=limits, isolation=options.isolation) as pool:
        memo: Memo = {}
        official = score(
            bench,
            items,
            answers,
            pool,
            grading=options.grading,
            copies=options.copies,
            limits=limits,
            memo=memo,
        )
        strict = (
            score(bench, items, answers, pool, grading=Grading.STRICT, limits=limits, memo=memo)
            if options.show_strict
            else None
        )
    elapsed = time.perf_counter() - started
    extracted = fmt == "jsonl"  # completions were extracted here: say how
    return pass_report(
        official,
        strict,
        ks,
        str(options.generations),
        fmt,
        elapsed,
        style=options.style if extracted else None,
        extraction=options.extraction.value if extracted else None,
    )


def _score_core(
    bench: benchmarks.Benchmark, items: list[Item], options: ScoreOptions
) -> CoreReport:
    """Answers are literals compared here (no sandbox), under the project grading and the
    ancestor's."""

    try:
        fmt, answers = read_generations(options.generations, items, options.extract)
        return core_report(bench, items, answers, str(options.generations), fmt)
    except (GenerationsError, ValueError) as exc:
        fail(str(exc))


def _print_core(report: dict[str, Any]) -> None:
    variants = report["variants"]
    console.print(
        escape(
            f"{report['benchmark']}: {report['items']} items, {report['samples']} "
            f"samples, {variants['project']['runs']} run(s)"
        ),
        highlight=False,
    )
    for line in core_lines(variants):
        console.print(escape(line), highlight=False, soft_wrap=True)
    for name, variant in variants.items():
        reasons = ", ".join(f"{key} {count}" for key, count in variant["reasons"].items())
        console.print(escape(f"verdicts ({name}): {reasons}"), highlight=False, soft_wrap=True)


def _print(report: dict[str, Any]) -> None:
    ks = [key for key in report if key.startswith("pass@")]
    how = f"{report['grading']} grading, copies: {report['copies']}"
    if "extraction" in report:
        how += f", {report['extraction']} extraction of {report['style']} completions"
    title = f"{report['benchmark']}: {report['items']} items, {report['samples']} samples ({how})"
    console.print(escape(title), highlight=False)
    table = Table()
    table.add_column("metric")
    table.add_column("official", justify="right")
    if "strict" in report:
        table.add_column("strict", justify="right")
    for key in ks:
        row = [key, f"{report[key]:.4f}"]
        if "strict" in report:
            row.append(f"{report['strict'][key]:.4f}")
        table.add_row(*row)
    console.print(table)
    breakdown = report["breakdown"]
    console.print(escape(f"by {breakdown['by']}: {breakdown['note']}"), highlight=False)
    by = Table()
    for column in ["category", "items", *ks]:
        by.add_column(column, justify="left" if column == "category" else "right")
    for name, row in breakdown["rows"].items():
        by.add_row(escape(name), str(row["items"]), *(f"{row[key]:.2f}" for key in ks))
    console.print(by)
    reasons = ", ".join(f"{name} {count}" for name, count in report["reasons"].items())
    console.print(f"verdicts: {escape(reasons)}", highlight=False)
    if "strict" in report:
        _print_strict(report["strict"])
    console.print(f"[dim]pass@k in percent; graded in {report['wall_s']:.1f} s[/]")


def _print_strict(strict: dict[str, Any]) -> None:
    console.print(
        f"official vs strict grading: {strict['disagreements']} samples differ", highlight=False
    )
    if not strict["groups"]:
        return
    table = Table()
    for column in ("official", "strict", "samples", "items", "why", "example"):
        table.add_column(column, overflow="fold")
    for group in strict["groups"]:
        example = group["examples"][0]
        table.add_row(
            group["official"],
            group["strict"],
            str(group["count"]),
            str(group["items"]),
            escape(group["note"]),
            escape(f"{example['id']}: {example['answer']}"),
        )
    console.print(table)


_SCORERS: dict[str, Callable[[benchmarks.Benchmark, list[Item], ScoreOptions], Report]] = {
    Metrics.PASS_AT_K: _score_pass,
    Metrics.ACCURACY_CONSISTENCY: score_reval_file,
    Metrics.INVARIANCE_TRANSPARENCY: _score_core,
}


def _emit(show: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any], bool], None]:
    return lambda report, as_json: emit_report(report, as_json, show)


def _emit_core(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        _print_core(report)


_PRINTERS: dict[str, Callable[[dict[str, Any], bool], None]] = {
    PassReport.kind: _emit(_print),
    RevalReport.kind: _emit(print_reval),
    CoreReport.kind: _emit_core,
}


def register(app: typer.Typer) -> None:
    app.command("score")(score_command)
