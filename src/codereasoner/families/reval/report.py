"""The REval report: accuracies per question kind, coverage F1 and Incremental Consistency,
with jackknife standard errors over programs (what every report offers: see
:mod:`codereasoner.evaluation.reports`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.metrics import jackknife_stderr
from codereasoner.evaluation.reports import (
    ACCURACY_CONSISTENCY,
    FRACTION,
    PERCENT,
    Breakdown,
    Metric,
    number,
)
from codereasoner.families.reval.metrics import CoverageCounts
from codereasoner.families.reval.scoring import KINDS, RevalScored
from codereasoner.tasks import Extraction, Item, Style

__all__ = ["REVAL_KEYS", "REVAL_METRICS", "RevalReport", "reval_report"]

REVAL_METRICS = (  # (label, report key, inner key, unit)
    ("coverage acc", "coverage", "acc", FRACTION),
    ("coverage F1", "coverage", "f1", FRACTION),
    ("state acc", "state", None, FRACTION),
    ("path acc", "path", None, FRACTION),
    ("output acc", "output", None, FRACTION),
    ("average acc", "avg_acc", None, FRACTION),
    ("consistency (IC)", "consistency", None, PERCENT),
)
REVAL_KEYS = ("coverage", "state", "path", "output", "avg_acc", "consistency")


@dataclass(frozen=True)
class RevalReport:
    kind: ClassVar[str] = ACCURACY_CONSISTENCY
    # What the HTML report and table3 draw, read through the metric family (never imported)
    METRICS: ClassVar[tuple[tuple[str, str, str | None, str], ...]] = REVAL_METRICS
    ACCURACY_LABELS: ClassVar[tuple[str, ...]] = tuple(  # one accuracy per question kind
        label
        for label, key, inner, unit in REVAL_METRICS
        if key in KINDS and inner in (None, "acc") and unit == FRACTION
    )

    benchmark: str
    style: str
    extraction: str
    items: dict[str, int]  # per question kind
    repeats: dict[str, int]
    values: dict[str, Any]  # coverage {acc, prec, rec, f1}, state, path, output, avg_acc, IC
    by_source: dict[str, dict[str, Any]]
    output_subsets: dict[str, dict[str, Any]]
    reasons: dict[str, dict[str, int]]
    sandbox_errors: int
    generations: str = ""
    format: str = ""
    wall_s: float = 0.0
    log_verdicts_differing: int | None = None  # REval logs only: verdicts unlike the logs'
    scale: str = "accuracies as fractions, consistency in percent"
    stderr: dict[str, Any] = field(default_factory=dict)  # the shape of ``values``

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "benchmark": self.benchmark,
            "style": self.style,
            "extraction": self.extraction,
            "scale": self.scale,
            "items": self.items,
            "repeats": self.repeats,
            **self.values,
            "stderr": self.stderr,
            "by_source": self.by_source,
            "output_subsets": self.output_subsets,
            "reasons": self.reasons,
            "sandbox_errors": self.sandbox_errors,
        }
        if self.log_verdicts_differing is not None:
            data["log_verdicts_differing"] = self.log_verdicts_differing
        data.update(generations=self.generations, format=self.format, wall_s=self.wall_s)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RevalReport:
        return cls(
            benchmark=str(data.get("benchmark", "")),
            style=str(data.get("style", "")),
            extraction=str(data.get("extraction", "")),
            items=dict(data.get("items", {})),
            repeats=dict(data.get("repeats", {})),
            values={key: data[key] for key in REVAL_KEYS if key in data},
            by_source=dict(data.get("by_source") or {}),
            output_subsets=dict(data.get("output_subsets") or {}),
            reasons=dict(data.get("reasons", {})),
            sandbox_errors=int(data.get("sandbox_errors", 0)),
            generations=str(data.get("generations", "")),
            format=str(data.get("format", "")),
            wall_s=float(data.get("wall_s", 0.0)),
            log_verdicts_differing=data.get("log_verdicts_differing"),
            scale=str(data.get("scale", cls.scale)),
            stderr=dict(data.get("stderr") or {}),
        )

    def headline(self) -> dict[str, float]:
        found = {}
        for key in REVAL_KEYS:
            value = self.values.get(key)
            if isinstance(value, dict):
                value = value.get("acc")
            if value is not None:
                found[key] = value
        return found

    def metrics(self) -> tuple[Metric, ...]:
        return tuple(
            Metric(
                label,
                reval_value(self.values, key, inner),
                unit,
                reval_value(self.stderr, key, inner),
                self._count(key, inner, unit),
            )
            for label, key, inner, unit in REVAL_METRICS
        )

    def _count(self, key: str, inner: str | None, unit: str) -> int | None:
        """The questions an accuracy is the proportion of (None for F1, the average and IC)."""
        count = self.items.get(key) if key in KINDS and inner in (None, "acc") else None
        return count if unit == FRACTION and isinstance(count, int) and count > 0 else None

    def breakdowns(self) -> tuple[Breakdown, ...]:
        shown = [
            (label, key, inner) for label, key, inner, unit in REVAL_METRICS if unit == FRACTION
        ]
        rows = {
            str(source): {label: reval_value(part, key, inner) for label, key, inner in shown}
            for source, part in self.by_source.items()
            if isinstance(part, dict) and part
        }
        if not rows:
            return ()
        labels = tuple(label for label, _, _ in shown)
        return (Breakdown("by source", "accuracies as fractions", labels, FRACTION, rows),)


def reval_number(part: Mapping[str, Any], key: str, inner: str | None) -> float | None:
    """:func:`reval_value`, None for anything not a number too (a metric a part lacks)."""
    try:
        return reval_value(part, key, inner)
    except TypeError:
        return None


def reval_value(part: Mapping[str, Any], key: str, inner: str | None) -> float | None:
    """One REval metric from a report (or a ``by_source`` part); None where absent."""
    value = part.get(key)
    if isinstance(value, dict):
        value = value.get(inner) if inner else None
    return number(value)


def reval_report(
    bench: Benchmark,
    scored: RevalScored,
    logged: Mapping[str, list[bool]],
    style: Style | str,
    extraction: Extraction,
    *,
    generations: str = "",
    fmt: str = "",
    elapsed: float = 0.0,
) -> RevalReport:
    """Accuracies per task kind, coverage F1, Incremental Consistency, subsets."""
    items = [item for item in scored.items if item.id in scored.scores]
    outputs = [item for item in items if item.task == "output"]
    classeval = [item for item in outputs if item.metadata["source"] == "classeval"]
    subsets = {
        "classeval_leak": [i for i in classeval if i.metadata["leak"]],
        "classeval_assert_true_false": [i for i in classeval if i.metadata["bool_assert"]],
        "other": [i for i in outputs if not (i.metadata["leak"] or i.metadata["bool_assert"])],
    }
    differ = None
    if logged:
        differ = sum(
            score.correct != flag
            for item_id, flags in logged.items()
            for score, flag in zip(scored.scores[item_id], flags, strict=True)
        )
    return RevalReport(
        benchmark=bench.name,
        style=str(style),
        extraction=extraction.value,
        items={kind: sum(i.task == kind for i in items) for kind in KINDS},
        repeats={kind: scored.repeats(kind) for kind in scored.kinds()},
        values=scored.mean_metrics(),
        stderr=reval_stderr(scored, items),
        by_source={  # a source with no item is absent (its metrics would be made up)
            source: scored.mean_metrics(group)
            for source in ("humaneval", "classeval")
            if (group := [i for i in items if i.metadata["source"] == source])
        },
        output_subsets={
            name: {"items": len(group), "acc": scored.mean_metrics(group).get("output", 0.0)}
            for name, group in subsets.items()
            if group
        },
        reasons=scored.reasons(),
        sandbox_errors=scored.sandbox_errors(),
        generations=generations,
        format=fmt,
        wall_s=round(elapsed, 3),
        log_verdicts_differing=differ,
    )


def reval_stderr(scored: RevalScored, items: Sequence[Item]) -> dict[str, Any]:
    """Delete-one-program jackknife standard errors of every REval metric (a program's
    questions are not independent, and F1 and IC are not means over items), in the shape of
    ``mean_metrics()``. Each program's verdict counts are tallied once; leaving a program out
    subtracts its tally from the total."""
    groups: dict[str, list[Item]] = {}
    for item in items:
        if item.id in scored.scores:
            groups.setdefault(str(item.metadata["task_id"]), []).append(item)
    kinds = scored.kinds()
    if len(groups) < 2 or not kinds:
        return {}
    repeats = min(scored.repeats(kind) for kind in kinds)
    tallies = [[_tally(scored, group, r) for r in range(repeats)] for group in groups.values()]
    totals = [_combine([tally[r] for tally in tallies], 1) for r in range(repeats)]
    estimates = [
        [_tally_metrics(_combine([totals[r], tally[r]], -1)) for r in range(repeats)]
        for tally in tallies
    ]
    errors: dict[str, Any] = {}
    for key in REVAL_KEYS:
        inner = ("acc", "prec", "rec", "f1") if key == "coverage" else (None,)
        found = {name: _jackknife(estimates, key, name) for name in inner}
        kept = {name: error for name, error in found.items() if error is not None}
        if kept:
            errors[key] = kept if key == "coverage" else kept[None]
    return errors


Tally = dict[str, float]  # verdict counts: tp, fp, tn, fn, KIND_right, KIND_asked, weight, lines


def _tally(scored: RevalScored, group: Sequence[Item], repeat: int) -> Tally:
    """One program's verdict counts in one repeat (its IC weight sum and line questions)."""
    found = scored.metrics(repeat, group)
    tally: Tally = {}
    for kind in KINDS:
        asked = sum(item.task == kind for item in group)
        value = found.get(kind)
        if isinstance(value, dict):
            tally.update({key: value[key] for key in ("tp", "fp", "tn", "fn")})
        elif value is not None:
            tally[f"{kind}_right"], tally[f"{kind}_asked"] = round(value * asked), asked
    if "consistency" in found:
        lines = sum(item.task == KINDS[0] for item in group)
        tally["weight"], tally["lines"] = found["consistency"] / 100 * lines, lines
    return tally


def _combine(tallies: Sequence[Tally], sign: int) -> Tally:
    """The first tally plus (``sign`` 1) or minus (-1) the others."""
    total = dict(tallies[0])
    for tally in tallies[1:]:
        for key, value in tally.items():
            total[key] = total.get(key, 0) + sign * value
    return total


def _tally_metrics(tally: Tally) -> dict[str, Any]:
    """``RevalScored.metrics()`` from verdict counts."""
    out: dict[str, Any] = {}
    if any(key in tally for key in ("tp", "fp", "tn", "fn")):
        counts = {key: int(tally.get(key, 0)) for key in ("tp", "fp", "tn", "fn")}
        out[KINDS[0]] = CoverageCounts(**counts).to_dict()
    for kind in KINDS[1:]:
        if tally.get(f"{kind}_asked"):
            out[kind] = tally[f"{kind}_right"] / tally[f"{kind}_asked"]
    if len(out) == len(KINDS):
        out["avg_acc"] = (out[KINDS[0]]["acc"] + sum(out[k] for k in KINDS[1:])) / len(KINDS)
    if tally.get("lines"):
        out["consistency"] = 100 * tally["weight"] / tally["lines"]
    return out


def _jackknife(
    estimates: Sequence[Sequence[Mapping[str, Any]]], key: str, inner: str | None
) -> float | None:
    """The jackknife standard error of one metric, each estimate averaged over repeats."""
    values = []
    for repeats in estimates:
        found = [reval_number(estimate, key, inner) for estimate in repeats]
        numbers = [value for value in found if value is not None]
        if not numbers or len(numbers) < len(found):
            return None
        values.append(sum(numbers) / len(numbers))
    return jackknife_stderr(values)
