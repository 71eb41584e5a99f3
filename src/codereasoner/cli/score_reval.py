"""``codereasoner score`` for the REval family: accuracies per task, coverage F1, Incremental
Consistency."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from codereasoner import benchmarks
from codereasoner.cli.common import console, fail, open_pool, safe_cell
from codereasoner.cli.score_options import ScoreOptions, ScoreOutcome
from codereasoner.evaluation.generations import GenerationsError
from codereasoner.evaluation.reports import reval_report
from codereasoner.evaluation.reval_scoring import read_reval_generations, score_reval
from codereasoner.evaluation.scoring import parse_failure_warning
from codereasoner.tasks import Item

__all__ = ["print_reval", "score_reval_file"]


def score_reval_file(
    bench: benchmarks.Benchmark, items: list[Item], options: ScoreOptions
) -> ScoreOutcome:
    """Read and grade the generations (JSON Lines or REval's logs); exit 2 on bad input. With
    ``--subset``, the items of the groups (``Benchmark.group``: a program and input, as
    ``eval --limit`` keeps them) the file answers; every kind it gives must be whole in each."""

    chosen = subset_items(bench, options.generations, items) if options.subset else items
    try:
        found = read_reval_generations(options.generations, chosen, options.extract)
    except GenerationsError as exc:
        fail(str(exc) + ("" if options.subset else _subset_hint(bench, options, items)))
    started = time.perf_counter()
    limits = options.limits
    opened = open_pool(
        workers=options.workers, limits=limits, isolation=options.isolation, grading=True
    )
    with opened as pool:
        scored = score_reval(chosen, found.answers, pool, limits, options.grading)
    report = reval_report(
        bench,
        scored,
        found.logged,
        options.style,
        options.extraction,
        generations=str(options.generations),
        fmt=found.format,
        elapsed=time.perf_counter() - started,
    )
    warning = parse_failure_warning(bench, scored.scores, found.format)
    return ScoreOutcome(report, scored.scores, warnings=[warning] if warning else [])


def subset_items(bench: benchmarks.Benchmark, path: Path, items: list[Item]) -> list[Item]:
    """The items of every group the file names (JSON Lines ids, or the logs' programs and
    inputs): a first, lenient look; reading the file proper reports what is wrong with it."""
    by_id = {item.id: item for item in items}
    by_pair = {_pair(item): bench.group(item) for item in items}
    groups: set[str] = set()
    for file in sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]:
        try:
            lines = file.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        for line in filter(str.strip, lines):
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(record, dict):
                continue
            item_id, generation = record.get("id"), record.get("generation")
            if isinstance(item_id, str) and item_id in by_id:
                groups.add(bench.group(by_id[item_id]))
            for entry in generation if isinstance(generation, list) else []:
                index = entry.get("input_idx") if isinstance(entry, dict) else None
                pair = (str(record.get("task_id")), index)
                if isinstance(index, int) and pair in by_pair:
                    groups.add(by_pair[pair])
    return [item for item in items if bench.group(item) in groups]


def _subset_hint(bench: benchmarks.Benchmark, options: ScoreOptions, items: list[Item]) -> str:
    """The hint for a file refused for lacking items that ``--subset`` would score."""
    try:
        chosen = subset_items(bench, options.generations, items)
        read_reval_generations(options.generations, chosen, options.extract)
    except GenerationsError:
        return ""
    return "; score only the items the file has with --subset"


def _pair(item: Item) -> tuple[str, object]:
    """How REval's logs name an item's program and input."""
    return str(item.metadata.get("task_id")), item.metadata.get("input_idx")


def print_reval(report: dict[str, Any]) -> None:
    repeats = ", ".join(f"{kind} {count}" for kind, count in report["repeats"].items())
    title = (
        f"{report['benchmark']}: {report['extraction']} extraction of {report['style']} completions "
        f"({report['format']}; repeats: {repeats})"
    )
    console.print(safe_cell(title), highlight=False, soft_wrap=True)
    table = Table()
    # a source with no item is absent from the report, and so from the table
    sources = [name for name in ("humaneval", "classeval") if name in report["by_source"]]
    for column in ("metric", "all", *sources):
        table.add_column(column, justify="left" if column == "metric" else "right")
    rows = [("coverage acc", "coverage", "acc"), ("coverage precision", "coverage", "prec"),
            ("coverage recall", "coverage", "rec"), ("coverage F1", "coverage", "f1"),
            ("state acc", "state", None), ("path acc", "path", None),
            ("output acc", "output", None), ("average acc", "avg_acc", None),
            ("consistency (IC, %)", "consistency", None)]  # fmt: skip
    for label, key, inner in rows:
        cells = [
            _cell(part, key, inner)
            for part in (report, *(report["by_source"][name] for name in sources))
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
        console.print(safe_cell(f"{kind} verdicts: {text}"), highlight=False, soft_wrap=True)
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
