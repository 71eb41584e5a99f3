"""How ``codereasoner score`` prints a report on the terminal: the pass@k family's table (each
pass@k with its Wilson 95% interval, the breakdown, the verdicts, the strict comparison), and any
family's ``metrics()`` and ``breakdowns()`` for a family that prints nothing of its own."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from codereasoner.evaluation.reports import PERCENT, Metric
from codereasoner.evaluation.terminal import console, print_plain, safe_cell

__all__ = ["print_metrics", "print_pass_report"]


def print_pass_report(report: dict[str, Any]) -> None:
    ks = [key for key in report if key.startswith("pass@")]
    how = f"{report['grading']} grading, copies: {report['copies']}"
    if "extraction" in report:
        how += f", {report['extraction']} extraction of {report['style']} completions"
    print_plain(
        f"{report['benchmark']}: {report['items']} items, {report['samples']} samples ({how})"
    )
    table = Table()
    table.add_column("metric")
    table.add_column("official", justify="right")
    if "strict" in report:
        table.add_column("strict", justify="right")
    for key in ks:
        row = [key, _with_interval(report, key, report["items"])]
        if "strict" in report:
            row.append(_with_interval(report["strict"], key, report["items"]))
        table.add_row(*row)
    console.print(table)
    breakdown = report["breakdown"]
    print_plain(f"by {breakdown['by']}: {breakdown['note']}")
    by = Table()
    for column in ["category", "items", *ks]:
        by.add_column(column, justify="left" if column == "category" else "right")
    for name, row in breakdown["rows"].items():
        by.add_row(safe_cell(name), str(row["items"]), *(f"{row[key]:.2f}" for key in ks))
    console.print(by)
    reasons = ", ".join(f"{name} {count}" for name, count in report["reasons"].items())
    print_plain(f"verdicts: {reasons}")
    if "strict" in report:
        _print_strict(report["strict"])
    console.print(
        f"[dim]pass@k in percent [Wilson 95% interval over items]; graded in "
        f"{report['wall_s']:.1f} s[/]"
    )


def _with_interval(part: dict[str, Any], key: str, items: int) -> str:
    """``pass@k`` with its Wilson 95% interval over the items (the report's JSON keeps the
    standard error too, as lm-evaluation-harness reports it)."""
    error = (part.get("stderr") or {}).get(key)
    return Metric(key, part[key], PERCENT, error, items or None).text()


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
            safe_cell(group["note"]),
            safe_cell(f"{example['id']}: {example['answer']}"),
        )
    console.print(table)


def print_metrics(typed: Any, report: dict[str, Any]) -> None:
    """Any metric family's report (``typed``: its report object), as its ``metrics()`` and
    ``breakdowns()`` give it."""
    print_plain(f"{report.get('benchmark', '')}: {typed.kind} metrics")
    table = Table()
    for column in ("metric", "value", "unit"):
        table.add_column(column, justify="left" if column != "value" else "right")
    for metric in typed.metrics():
        table.add_row(safe_cell(metric.name), metric.text(), safe_cell(metric.unit))
    console.print(table)
    for breakdown in typed.breakdowns():
        print_plain(f"{breakdown.title}: {breakdown.note}")
        rows = Table()
        for column in ("", *breakdown.columns):
            rows.add_column(safe_cell(column) or "category")
        for name, row in breakdown.rows.items():
            cells = ["-" if row.get(c) is None else f"{row[c]:.4g}" for c in breakdown.columns]
            rows.add_row(safe_cell(name), *cells)
        console.print(rows)
