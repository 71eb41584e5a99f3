"""How ``codereasoner score`` prints an REval report: accuracies per task, coverage F1,
Incremental Consistency."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from codereasoner.evaluation.terminal import console, safe_cell

__all__ = ["print_reval"]


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
