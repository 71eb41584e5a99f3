"""``codereasoner score``: grade a generations file against a benchmark and print pass@k."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from codereasoner import benchmarks
from codereasoner.cli.common import console, emit_report, fail, open_pool
from codereasoner.cli.score_reval import score_reval_command
from codereasoner.evaluation import GenerationsError, check_ks, read_generations, score
from codereasoner.evaluation.core_metrics import report_lines as core_lines
from codereasoner.evaluation.metrics import COPY_POLICIES
from codereasoner.evaluation.reports import core_report, pass_report
from codereasoner.execution import Limits
from codereasoner.tasks import Extracted, Extraction, Grading
from codereasoner.tasks.base import check_style
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
            help='Official {id: [answers]} JSON, or JSON Lines {"id", "sample", "completion" | "answer"}.',
        ),
    ],
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Directory holding the benchmark's data files (default: the cache)."),
    ] = None,
    k: Annotated[str, typer.Option("--k", help="pass@k values, comma-separated.")] = "1,5",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    show_strict: Annotated[
        bool,
        typer.Option(
            "--strict-report",
            help="Also grade strictly (literals only, never evaluated) and report disagreements.",
        ),
    ] = False,
    style: Annotated[
        str, typer.Option(help="Prompt style of JSON Lines completions: direct, cot or phind.")
    ] = "direct",
    extraction: Annotated[
        str, typer.Option(help="Extraction of completions: official, official-openai or robust.")
    ] = "official",
    copies: Annotated[
        str, typer.Option(help="Anti-copy rule: official (skipped samples shrink n) or fail.")
    ] = "official",
    timeout: Annotated[
        float,
        typer.Option(
            help="Seconds per sandboxed evaluation: wall-clock for CRUXEval and LiveCodeBench "
            "(upstream: 3 s wall-clock), CPU for REval."
        ),
    ] = 3.0,
    workers: Annotated[
        int | None, typer.Option(help="Sandbox workers (default: one per core).")
    ] = None,
    isolation: Annotated[str, typer.Option(help="auto, bubblewrap or fallback.")] = "auto",
) -> None:
    """Score a generations file: pass@k, per-category breakdown, optional strict report."""
    try:
        benchmark = benchmarks.get(bench)
    except KeyError as exc:
        fail(f"--bench: {exc.args[0]}")
    if benchmark.name.startswith("core"):  # CoRE reports its own metrics, not pass@k
        _score_core(benchmark, generations, data_dir, as_json)
        return
    if benchmark.name == "reval":  # REval reports accuracies and Incremental Consistency
        score_reval_command(benchmark, generations, data_dir, style, extraction, as_json,
                            timeout, workers, isolation)  # fmt: skip
        return
    ks = _parse_ks(k)
    if copies not in COPY_POLICIES:
        fail(f"--copies: expected one of {', '.join(COPY_POLICIES)}, got {copies!r}")
    try:
        chosen_style = check_style(style, benchmark.task.styles)
        chosen_extraction = Extraction(extraction)
        limits = Limits(timeout_s=timeout, wall_timeout_s=timeout, memory_mb=1024)
    except ValueError as exc:
        fail(f"{exc} (check --style, --extraction and --timeout)")
    try:
        items = benchmark.load(data_dir)
    except benchmarks.DataUnavailable as exc:
        fail(str(exc))

    def extract(text: str) -> Extracted:
        return benchmark.task.extract(text, chosen_style, chosen_extraction)

    try:
        fmt, answers = read_generations(generations, items, extract)
        check_ks(ks, answers)
    except (GenerationsError, ValueError) as exc:
        fail(str(exc))
    started = time.perf_counter()
    with open_pool(workers=workers, limits=limits, isolation=isolation) as pool:
        memo: Memo = {}
        official = score(benchmark, items, answers, pool, copies=copies, limits=limits, memo=memo)
        strict = (
            score(benchmark, items, answers, pool, grading=Grading.STRICT, limits=limits, memo=memo)
            if show_strict
            else None
        )
    elapsed = time.perf_counter() - started
    report = pass_report(official, strict, ks, str(generations), fmt, elapsed)
    if fmt == "jsonl":  # completions were extracted here: say how
        report.update(style=chosen_style.value, extraction=chosen_extraction.value)
    emit_report(report, as_json, _print)


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
        table.add_row(group["official"], group["strict"], str(group["count"]), str(group["items"]),
                      escape(group["note"]), escape(f"{example['id']}: {example['answer']}"))  # fmt: skip
    console.print(table)


def _score_core(
    benchmark: benchmarks.Benchmark, path: Path, data_dir: Path | None, as_json: bool
) -> None:
    """CoRE: I, Is, W, Ws, RCS and both Cons, under the project grading and the ancestor's.

    Answers are literals compared here (no sandbox); completions are extracted with the
    project rule. --k, --style, --extraction, --copies and --timeout do not apply.
    """
    try:
        items = benchmark.load(data_dir)
        fmt, answers = read_generations(path, items, benchmark.task.extract)
        report = core_report(benchmark, items, answers, str(path), fmt)
    except (benchmarks.DataUnavailable, GenerationsError, ValueError) as exc:
        fail(str(exc))
    variants = report["variants"]
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    console.print(escape(f"{benchmark.name}: {report['items']} items, {report['samples']} "
                         f"samples, {variants['project']['runs']} run(s)"), highlight=False)  # fmt: skip
    for line in core_lines(variants):
        console.print(escape(line), highlight=False, soft_wrap=True)
    for name, variant in variants.items():
        reasons = ", ".join(f"{key} {count}" for key, count in variant["reasons"].items())
        console.print(escape(f"verdicts ({name}): {reasons}"), highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("score")(score_command)
