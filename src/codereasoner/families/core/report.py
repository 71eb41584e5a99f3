"""CoRE's report: I, Is, W, Ws, RCS and both Cons, under the project grading (primary) and the
ancestor's, with Ws by probe dimension and Is by code family."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.reports import (
    FRACTION,
    INVARIANCE_TRANSPARENCY,
    PERCENT,
    Breakdown,
    Metric,
    number,
)
from codereasoner.evaluation.scoring import score
from codereasoner.families.core.metrics import report as core_metrics_report
from codereasoner.tasks import Extracted, Grading, Item

__all__ = ["CORE_GRADINGS", "CoreReport", "core_report"]

CORE_METRICS = ("I", "Is", "W", "Ws", "RCS", "Cons_paper", "Cons_text")
CORE_HEADLINE = ("I", "Is", "W", "Ws", "RCS")
CORE_GRADINGS = {
    "project": "strict: JSON-aware literal comparison (docs/benchmark-rules.md), primary",
    "ancestor": "official: ast.literal_eval comparison of TnTWoW/code_reasoning",
}


@dataclass(frozen=True)
class CoreReport:
    kind: ClassVar[str] = INVARIANCE_TRANSPARENCY
    METRICS: ClassVar[tuple[str, ...]] = CORE_METRICS  # the HTML report's rows

    benchmark: str
    generations: str
    format: str
    items: int
    samples: int
    variants: dict[str, dict[str, Any]]  # "project" (primary) and "ancestor" gradings
    grading: dict[str, str] = field(default_factory=lambda: dict(CORE_GRADINGS))
    scale: str = "I, Is, Is_pairs, W, Ws, RCS in percent; Cons_paper, Cons_text as fractions"

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "generations": self.generations,
            "format": self.format,
            "items": self.items,
            "samples": self.samples,
            "scale": self.scale,
            "grading": self.grading,
            "variants": self.variants,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CoreReport:
        return cls(
            benchmark=str(data.get("benchmark", "")),
            generations=str(data.get("generations", "")),
            format=str(data.get("format", "")),
            items=int(data.get("items", 0)),
            samples=int(data.get("samples", 0)),
            variants=dict(data["variants"]),
            grading=dict(data.get("grading", CORE_GRADINGS)),
            scale=str(data.get("scale", cls.scale)),
        )

    @property
    def mean(self) -> dict[str, Any]:
        return dict(self.variants["project"]["mean"])

    def headline(self) -> dict[str, float]:
        mean = self.mean
        return {key: mean[key] for key in CORE_HEADLINE if mean.get(key) is not None}

    def metrics(self) -> tuple[Metric, ...]:
        mean = self.mean
        errors = mean.get("stderr") or {}
        return tuple(
            Metric(
                name,
                number(mean.get(name)),
                FRACTION if name.startswith("Cons") else PERCENT,
                number(errors.get(name)),
            )
            for name in CORE_METRICS
        )

    def breakdowns(self) -> tuple[Breakdown, ...]:
        mean = self.mean
        tables = []
        for key, title, column, size in (
            ("dimensions", "Ws by probe dimension", "Ws", "probes"),
            ("families", "Is by code family", "Is", "implementations"),
        ):
            table = mean.get(key) or {}
            rows = {str(name): {column: number(row.get(column))} for name, row in table.items()}
            counts = {str(name): int(row.get(size, 0)) for name, row in table.items()}
            note = f"project grading; size column: {size}"
            tables.append(Breakdown(title, note, (column,), PERCENT, rows, counts))
        return tuple(table for table in tables if table.rows)


def core_report(
    benchmark: Benchmark,
    items: Sequence[Item],
    answers: Mapping[str, Sequence[Extracted]],
    generations: str,
    fmt: str,
) -> CoreReport:
    """I, Is, W, Ws, RCS and both Cons under the project grading and the ancestor's.

    Answers are literals compared here (no sandbox); raises ValueError on inconsistent input.
    """
    variants = {}
    for name, grading in (("project", Grading.STRICT), ("ancestor", Grading.OFFICIAL)):
        scored = score(benchmark, items, answers, None, grading=grading)
        variants[name] = {**core_metrics_report(items, scored.scores), "reasons": scored.reasons()}
    return CoreReport(
        benchmark=benchmark.name,
        generations=generations,
        format=fmt,
        items=len(items),
        samples=sum(len(samples) for samples in answers.values()),
        variants=variants,
    )
