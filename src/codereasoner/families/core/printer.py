"""How ``codereasoner score`` prints a CoRE report: each metric under both gradings, the problems
counted, Ws by probe dimension, Is by code family, and the verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codereasoner.evaluation.terminal import print_plain

__all__ = ["print_core", "report_lines"]


def print_core(report: dict[str, Any]) -> None:
    variants = report["variants"]
    print_plain(
        f"{report['benchmark']}: {report['items']} items, {report['samples']} "
        f"samples, {variants['project']['runs']} run(s)"
    )
    for line in report_lines(variants):
        print_plain(line)
    for name, variant in variants.items():
        reasons = ", ".join(f"{key} {count}" for key, count in variant["reasons"].items())
        print_plain(f"verdicts ({name}): {reasons}")


def report_lines(variants: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Plain-text tables of ``{variant: report}``: a row per metric, in the report's order (the
    keys of its standard errors)."""
    names = list(variants)
    first = variants[names[0]]["mean"]
    lines = ["metric      " + "".join(f"{name:>12}" for name in names)]
    for metric in first["stderr"]:
        cells = [variants[name]["mean"][metric] for name in names]
        lines.append(
            f"{metric:<12}"
            + "".join(f"{'-':>12}" if cell is None else f"{cell:>12.4f}" for cell in cells)
        )
    lines.append("problems: " + ", ".join(f"{k} {v}" for k, v in first["problems"].items()))
    for title, table, key in (
        ("Ws by dimension", "dimensions", "Ws"),
        ("Is by code family", "families", "Is"),
    ):
        rows = [f"{name} {row[key]:.2f}" for name, row in first[table].items()]
        lines.append(f"{title} ({names[0]}): " + (", ".join(rows) or "-"))
    return lines
