"""``codereasoner score`` for the REval family: accuracies per task, coverage F1, Incremental
Consistency."""

from __future__ import annotations

import time
from typing import Any

from rich.markup import escape
from rich.table import Table

from codereasoner import benchmarks
from codereasoner.cli.common import console, fail, open_pool
from codereasoner.cli.score_options import ScoreOptions
from codereasoner.evaluation.generations import GenerationsError
from codereasoner.evaluation.reports import RevalReport, reval_report
from codereasoner.evaluation.reval_scoring import read_reval_generations, score_reval
from codereasoner.tasks import Item

__all__ = ["print_reval", "score_reval_file"]


def score_reval_file(
    bench: benchmarks.Benchmark, items: list[Item], options: ScoreOptions
) -> RevalReport:
    """Read and grade the generations (JSON Lines or REval's logs); exit 2 on bad input."""

    try:
        found = read_reval_generations(options.generations, items, options.extract)
    except GenerationsError as exc:
        fail(str(exc))
    started = time.perf_counter()
    limits = options.limits
    with open_pool(workers=options.workers, limits=limits, isolation=options.isolation) as pool:
        scored = score_reval(items, found.answers, pool, limits)
    return reval_report(
        bench,
        scored,
        found.logged,
        options.style,
        options.extraction,
        generations=str(options.generations),
        fmt=found.format,
        elapsed=time.perf_counter() - started,
    )


def print_reval(report: dict[str, Any]) -> None:
    repeats = ", ".join(f"{kind} {count}" for kind, count in report["repeats"].items())
    title = (
        f"{report['benchmark']}: {report['extraction']} extraction of {report['style']} completions "
        f"({report['format']}; repeats: {repeats})"
    )
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
        console.print(
            f"output, {name}: {subset['acc']:.4f} on {subset['items']} questions", highlight=False
        )
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
