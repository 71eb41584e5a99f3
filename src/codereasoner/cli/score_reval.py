"""``codereasoner score --bench reval``: accuracies per task, coverage F1, Incremental Consistency."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from codereasoner import benchmarks
from codereasoner.cli.common import console, emit_report, fail, open_pool
from codereasoner.evaluation.generations import GenerationsError
from codereasoner.evaluation.reports import reval_report
from codereasoner.evaluation.reval_scoring import LIMITS, read_reval_generations, score_reval
from codereasoner.execution import Limits
from codereasoner.tasks import Extracted, Extraction, Item
from codereasoner.tasks.base import check_style
from codereasoner.tasks.reval_tasks import RevalTasks

__all__ = ["reval_report", "score_reval_command"]


def score_reval_command(
    benchmark: benchmarks.Benchmark,
    generations: Path,
    data_dir: Path | None,
    style: str,
    extraction: str,
    as_json: bool,
    timeout: float,
    workers: int | None,
    isolation: str,
) -> None:
    """Load REval, read and grade the generations, print the report; exit 2 on bad input."""
    try:
        chosen_style = check_style(style, RevalTasks.styles)
        chosen_extraction = Extraction(extraction)
        if chosen_extraction is Extraction.OFFICIAL_OPENAI:
            raise ValueError("REval has no OpenAI-specific extraction")
        limits = Limits(timeout_s=timeout, wall_timeout_s=2 * timeout + 1,
                        memory_mb=LIMITS.memory_mb)  # fmt: skip
    except ValueError as exc:
        fail(f"{exc} (check --style, --extraction and --timeout)")
    try:
        items = benchmark.load(data_dir)
    except benchmarks.DataUnavailable as exc:
        fail(str(exc))
    tasks = RevalTasks()

    def extract(item: Item, text: str) -> Extracted:
        return tasks.extract_for(item, text, chosen_style, chosen_extraction)

    try:
        found = read_reval_generations(generations, items, extract)
    except GenerationsError as exc:
        fail(str(exc))
    started = time.perf_counter()
    with open_pool(workers=workers, limits=limits, isolation=isolation) as pool:
        scored = score_reval(items, found.answers, pool, limits)
    report = reval_report(scored, found.logged, chosen_style, chosen_extraction)
    report.update(generations=str(generations), format=found.format,
                  wall_s=round(time.perf_counter() - started, 3))  # fmt: skip
    emit_report(report, as_json, _print)


def _print(report: dict[str, Any]) -> None:
    repeats = ", ".join(f"{kind} {count}" for kind, count in report["repeats"].items())
    title = (f"reval: {report['extraction']} extraction of {report['style']} completions "
             f"({report['format']}; repeats: {repeats})")  # fmt: skip
    console.print(escape(title), highlight=False)
    table = Table()
    for column in ("metric", "all", "humaneval", "classeval"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    rows = [("coverage acc", "coverage", "acc"), ("coverage precision", "coverage", "prec"),
            ("coverage recall", "coverage", "rec"), ("coverage F1", "coverage", "f1"),
            ("state acc", "state", None), ("path acc", "path", None),
            ("output acc", "output", None), ("average acc", "avg_acc", None),
            ("consistency (IC, %)", "consistency", None)]  # fmt: skip
    for label, key, inner in rows:
        cells = [
            _cell(part, key, inner)
            for part in (report, report["by_source"]["humaneval"], report["by_source"]["classeval"])
        ]
        if any(cell != "-" for cell in cells):
            table.add_row(label, *cells)
    console.print(table)
    for name, subset in report["output_subsets"].items():
        console.print(f"output, {name}: {subset['acc']:.4f} on {subset['items']} questions",
                      highlight=False)  # fmt: skip
    for kind, reasons in report["reasons"].items():
        text = ", ".join(f"{name} {count}" for name, count in reasons.items())
        console.print(f"{kind} verdicts: {escape(text)}", highlight=False)
    if "log_verdicts_differing" in report:
        console.print(f"verdicts differing from the logs' own: {report['log_verdicts_differing']}")
    console.print(f"[dim]graded in {report['wall_s']:.1f} s[/]")


def _cell(part: dict[str, Any], key: str, inner: str | None) -> str:
    value = part.get(key)
    if value is None:
        return "-"
    if inner is not None:
        value = value.get(inner)
    return f"{value:.4f}" if isinstance(value, float) else str(value)
