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

from codereasoner.benchmarks import Benchmark, Metrics
from codereasoner.evaluation.core_metrics import report as core_metrics_report
from codereasoner.evaluation.metrics import jackknife_stderr, stderr_table
from codereasoner.evaluation.reval_metrics import CoverageCounts
from codereasoner.evaluation.reval_scoring import KINDS, RevalScored
from codereasoner.evaluation.scoring import Scored, sandbox_errors, score, strict_report
from codereasoner.tasks import Extracted, Extraction, Grading, Item, Style

__all__ = [
    "ACCURACY_CONSISTENCY",
    "CORE_GRADINGS",
    "INVARIANCE_TRANSPARENCY",
    "PASS_AT_K",
    "Breakdown",
    "CoreReport",
    "Metric",
    "PassReport",
    "Report",
    "RevalReport",
    "core_report",
    "pass_keys",
    "pass_report",
    "reval_report",
]

# Each report's ``kind`` is its metric family (``Benchmark.metrics``).
PASS_AT_K = Metrics.PASS_AT_K
ACCURACY_CONSISTENCY = Metrics.ACCURACY_CONSISTENCY
INVARIANCE_TRANSPARENCY = Metrics.INVARIANCE_TRANSPARENCY
PERCENT = "%"
FRACTION = "fraction"
CORE_METRICS = ("I", "Is", "W", "Ws", "RCS", "Cons_paper", "Cons_text")
CORE_HEADLINE = ("I", "Is", "W", "Ws", "RCS")
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
CORE_GRADINGS = {
    "project": "strict: JSON-aware literal comparison (docs/benchmark-rules.md), primary",
    "ancestor": "official: ast.literal_eval comparison of TnTWoW/code_reasoning",
}


@dataclass(frozen=True)
class Metric:
    """One headline number; higher is better for every metric a report shows."""

    name: str
    value: float | None
    unit: str = PERCENT
    stderr: float | None = None  # the value's standard error, in the same unit

    def text(self) -> str:
        """The value, with ``± se`` when its standard error is known."""
        if self.value is None:
            return "-"
        shown = self.number(self.value)
        return shown if self.stderr is None else f"{shown} \u00b1 {self.number(self.stderr)}"

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
    keys = [key for key in report if key.startswith("pass@") and key[5:].isdigit()]
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
        found = [
            Metric(key, number(self.pass_at[key]), PERCENT, number(self.stderr.get(key)))
            for key in ks
        ]
        if isinstance(self.strict, dict):
            errors = self.strict.get("stderr") or {}
            found += [
                Metric(
                    f"strict {key}", number(self.strict.get(key)), PERCENT, number(errors.get(key))
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


# ---------------------------------------------------------------------------------------
# REval: accuracies per question kind and Incremental Consistency
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RevalReport:
    kind: ClassVar[str] = ACCURACY_CONSISTENCY

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
            )
            for label, key, inner, unit in REVAL_METRICS
        )

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


# ---------------------------------------------------------------------------------------
# CoRE: implementation invariance and process transparency
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CoreReport:
    kind: ClassVar[str] = INVARIANCE_TRANSPARENCY

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
