"""Typed reports, one dataclass per metric family, and how each is built from verdicts.

``to_dict()`` is the JSON ``codereasoner score --json`` prints and the run store keeps (keys
listed in docs/evaluation.md); ``from_dict()`` reads it back; ``headline()`` is the few numbers
a summary shows; ``metrics()`` and ``breakdowns()`` are what the HTML report draws. Shared by
``codereasoner score`` (verdicts of a generations file) and the runner (verdicts from a store).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from codereasoner.benchmarks import Metrics
from codereasoner.evaluation.metrics import stderr_table, wilson_interval
from codereasoner.evaluation.scoring import Scored, sandbox_errors, strict_report

__all__ = [
    "ACCURACY_CONSISTENCY",
    "INVARIANCE_TRANSPARENCY",
    "PASS_AT_K",
    "Breakdown",
    "Metric",
    "PassReport",
    "Report",
    "pass_keys",
    "pass_report",
]

# Each report's ``kind`` is its metric family (``Benchmark.metrics``).
PASS_AT_K = Metrics.PASS_AT_K
ACCURACY_CONSISTENCY = Metrics.ACCURACY_CONSISTENCY
INVARIANCE_TRANSPARENCY = Metrics.INVARIANCE_TRANSPARENCY
PERCENT = "%"
FRACTION = "fraction"


@dataclass(frozen=True)
class Metric:
    """One headline number; higher is better for every metric a report shows. ``count``: the
    items a proportion is the mean of, which gives it a Wilson 95% interval (shown instead of
    the standard error, which collapses to 0 at 0% and 100%)."""

    name: str
    value: float | None
    unit: str = PERCENT
    stderr: float | None = None  # the value's standard error, in the same unit
    count: int | None = None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The Wilson 95% interval in the value's unit, for a proportion over ``count`` items."""
        if self.value is None or not self.count:
            return None
        scale = 100.0 if self.unit == PERCENT else 1.0
        low, high = wilson_interval(self.value / scale, self.count)
        return scale * low, scale * high

    def text(self) -> str:
        """The value with its 95% interval ``[low, high]`` where it is a proportion over known
        items, else with ``± se`` where a spread was measured."""
        if self.value is None:
            return "-"
        shown = self.number(self.value)
        interval = self.interval
        if interval is not None:
            return f"{shown} [{self.number(interval[0])}, {self.number(interval[1])}]"
        if not self.stderr:  # unknown, or 0: no spread measured is no certainty either
            return shown
        return f"{shown} \u00b1 {self.number(self.stderr)}"

    def number(self, value: float) -> str:
        return f"{value:.2f}" if self.unit == PERCENT else f"{value:.4f}"


@dataclass(frozen=True)
class Breakdown:
    """A per-category table: ``rows[category][column]``; ``counts`` is the size column."""

    title: str
    note: str
    columns: tuple[str, ...]
    unit: str
    rows: dict[str, dict[str, float | None]]
    counts: dict[str, int] = field(default_factory=dict)


class Report(Protocol):
    kind: ClassVar[str]  # its metric family: how the HTML report draws it

    def headline(self) -> dict[str, float]: ...

    def to_dict(self) -> dict[str, Any]: ...

    def metrics(self) -> tuple[Metric, ...]: ...

    def breakdowns(self) -> tuple[Breakdown, ...]: ...


def number(value: Any) -> float | None:
    """A report's number; TypeError for anything else (a store of another shape)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def pass_keys(report: Mapping[str, Any]) -> list[str]:
    """``pass@k`` keys of a report, by k."""
    keys = [key for key in report if key.startswith("pass@") and key[5:].isdecimal()]
    return sorted(keys, key=lambda key: int(key[5:]))


# ---------------------------------------------------------------------------------------
# pass@k: CRUXEval, LiveCodeBench and any benchmark of that family
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PassReport:
    kind: ClassVar[str] = PASS_AT_K

    benchmark: str
    generations: str
    format: str
    grading: str
    copies: str
    items: int
    samples: int
    pass_at: dict[str, float]  # "pass@1" -> percent
    reasons: dict[str, int]
    breakdown: dict[str, Any]  # {"by", "note", "rows": {category: {"items", "pass@k"...}}}
    sandbox_errors: int
    wall_s: float
    strict: dict[str, Any] | None = None  # pass@k, reasons, disagreements, groups
    style: str | None = None  # set when completions were extracted (not official answers)
    extraction: str | None = None
    scale: str = "percent"
    stderr: dict[str, float | None] = field(default_factory=dict)  # "pass@1" -> percent

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "benchmark": self.benchmark,
            "generations": self.generations,
            "format": self.format,
            "grading": self.grading,
            "copies": self.copies,
            "scale": self.scale,
            "items": self.items,
            "samples": self.samples,
            **self.pass_at,
            "stderr": self.stderr,
            "reasons": self.reasons,
            "breakdown": self.breakdown,
            "sandbox_errors": self.sandbox_errors,
            "wall_s": self.wall_s,
        }
        if self.strict is not None:
            data["strict"] = self.strict
        if self.style is not None:
            data.update(style=self.style, extraction=self.extraction)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PassReport:
        return cls(
            benchmark=str(data.get("benchmark", "")),
            generations=str(data.get("generations", "")),
            format=str(data.get("format", "")),
            grading=str(data.get("grading", "")),
            copies=str(data.get("copies", "")),
            items=int(data.get("items", 0)),
            samples=int(data.get("samples", 0)),
            pass_at={key: data[key] for key in pass_keys(data)},
            reasons=dict(data.get("reasons", {})),
            breakdown=dict(data.get("breakdown") or {}),
            sandbox_errors=int(data.get("sandbox_errors", 0)),
            wall_s=float(data.get("wall_s", 0.0)),
            strict=data.get("strict"),
            style=data.get("style"),
            extraction=data.get("extraction"),
            scale=str(data.get("scale", "percent")),
            stderr=dict(data.get("stderr") or {}),
        )

    def headline(self) -> dict[str, float]:
        return dict(self.pass_at)

    def metrics(self) -> tuple[Metric, ...]:
        ks = pass_keys(self.pass_at)
        items = self.items or None
        found = [
            Metric(key, number(self.pass_at[key]), PERCENT, number(self.stderr.get(key)), items)
            for key in ks
        ]
        if isinstance(self.strict, dict):
            errors = self.strict.get("stderr") or {}
            found += [
                Metric(
                    f"strict {key}",
                    number(self.strict.get(key)),
                    PERCENT,
                    number(errors.get(key)),
                    items,
                )
                for key in ks
            ]
        return tuple(found)

    def breakdowns(self) -> tuple[Breakdown, ...]:
        ks = pass_keys(self.pass_at)
        table = self.breakdown.get("rows")
        if not ks or not isinstance(table, dict) or not table:
            return ()
        rows = {str(name): {key: number(row.get(key)) for key in ks} for name, row in table.items()}
        counts = {str(name): int(row.get("items", 0)) for name, row in table.items()}
        title = f"by {self.breakdown.get('by', 'category')}"
        note = str(self.breakdown.get("note", ""))
        return (Breakdown(title, note, tuple(ks), PERCENT, rows, counts),)


def pass_report(
    official: Scored,
    strict: Scored | None,
    ks: Sequence[int],
    generations: str,
    fmt: str,
    elapsed: float,
    *,
    style: str | None = None,
    extraction: str | None = None,
) -> PassReport:
    """pass@k, verdicts, breakdown, optional strict comparison."""
    bench = official.benchmark
    strict_part = None
    errors = sandbox_errors(official)
    if strict is not None:
        disagreements = strict_report(official, strict)
        strict_part = {
            **strict.pass_at(ks),
            "stderr": pass_stderr(strict, ks),
            "reasons": strict.reasons(),
            "disagreements": sum(row["count"] for row in disagreements),
            "groups": disagreements,
        }
        errors += sandbox_errors(strict)
    return PassReport(
        benchmark=bench.name,
        generations=generations,
        format=fmt,
        grading=official.grading.value,
        copies=official.copies,
        items=len(official.items),
        samples=sum(len(scores) for scores in official.scores.values()),
        pass_at=official.pass_at(ks),
        stderr=pass_stderr(official, ks),
        reasons=official.reasons(),
        breakdown={
            "by": bench.breakdown,
            "note": bench.breakdown_note,
            "rows": official.by_category(ks),
        },
        sandbox_errors=errors,
        wall_s=round(elapsed, 3),
        strict=strict_part,
        style=style,
        extraction=extraction,
    )


def pass_stderr(scored: Scored, ks: Sequence[int]) -> dict[str, float | None]:
    """The standard error of each pass@k over items, in percent (None: a single item)."""
    table = stderr_table(scored.counts, ks, small_n=scored.small_n)
    return {key: None if value is None else 100 * value for key, value in table.items()}
