"""CoRE metrics (paper §4; docs/benchmark-rules.md, "CoRE: metrics"), per problem P, then averaged over problems.

- ``I(P)``: 1 if every (implementation, test) output prediction of P is right, else 0.
- ``Is(P)``, literal reading (the default): the share of P's implementations whose tests are all
  right. ``Is_pairs(P)``, per-pair reading: the share of right (implementation, test) pairs.
- ``Ws(P)``: the share of P's probes answered right; ``W(P)``: 1 if ``Ws(P) == 1``, else 0.
- ``RCS(P) = I(P) * Ws(P)``.
- Two Cons, both reported: ``Cons_text = 1 - mean_P (I - Ws)^2`` (the paper's text, "1 - MSE")
  and ``Cons_paper = 1 - mean_P (I - W)^2`` (the only reading its Table 1 admits).

I, Is, W, Ws and RCS are percentages; Cons are fractions. Each comes with its standard error
over problems (``stderr``; several runs: the runs' standard errors averaged). I and Is average over problems with
output samples, W and Ws over problems with probes, RCS and Cons over problems with both.
Per-dimension Ws is the micro-accuracy over probe-dimension memberships (A/L/S/B, a probe counts
once per dimension); family Is is the share of a code-generator family's implementations whose
tests are all right. Several samples per item are runs (sample r belongs to run r): each run is
scored alone and the runs are averaged. Unparsable answers are wrong samples, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codereasoner.evaluation.metrics import standard_error
from codereasoner.families.core.output import OUTPUT_TASK
from codereasoner.families.core.probe import PROBE_TASK
from codereasoner.tasks import Item, Score

METRICS = ("I", "Is", "Is_pairs", "W", "Ws", "RCS", "Cons_paper", "Cons_text")


@dataclass(frozen=True)
class OutputOutcome:
    problem: str
    implementation: str
    family: str
    correct: bool


@dataclass(frozen=True)
class ProbeOutcome:
    problem: str
    dimensions: tuple[str, ...]
    correct: bool


@dataclass(frozen=True)
class ProblemScore:
    """One problem's scores as fractions; None where the problem has no outputs or no probes."""

    I: float | None = None  # noqa: E741  (the paper's name)
    Is: float | None = None
    Is_pairs: float | None = None
    W: float | None = None
    Ws: float | None = None

    @property
    def RCS(self) -> float | None:
        return None if self.I is None or self.Ws is None else self.I * self.Ws


def _mean(numbers: Iterable[float]) -> float | None:
    listed = list(numbers)
    return sum(listed) / len(listed) if listed else None


def problem_scores(
    outputs: Iterable[OutputOutcome], probes: Iterable[ProbeOutcome]
) -> dict[str, ProblemScore]:
    """I, Is, Is_pairs, W and Ws for every problem that has outputs or probes."""
    by_impl: dict[str, dict[str, list[bool]]] = {}
    for outcome in outputs:
        by_impl.setdefault(outcome.problem, {}).setdefault(outcome.implementation, []).append(
            outcome.correct
        )
    by_probe: dict[str, list[bool]] = {}
    for probe in probes:
        by_probe.setdefault(probe.problem, []).append(probe.correct)
    scores = {}
    for problem in sorted(by_impl.keys() | by_probe.keys()):
        impls, answers = by_impl.get(problem), by_probe.get(problem)
        fields: dict[str, float] = {}
        if impls:
            pairs = [flag for flags in impls.values() for flag in flags]
            fields["I"] = float(all(pairs))
            fields["Is"] = sum(all(flags) for flags in impls.values()) / len(impls)
            fields["Is_pairs"] = sum(pairs) / len(pairs)
        if answers:
            fields["Ws"] = sum(answers) / len(answers)
            fields["W"] = float(fields["Ws"] == 1)
        scores[problem] = ProblemScore(**fields)
    return scores


def summary(scores: Mapping[str, ProblemScore]) -> dict[str, Any]:
    """Means over problems: I, Is, Is_pairs, W, Ws, RCS in percent; Cons as fractions."""
    rows = list(scores.values())
    both = [row for row in rows if row.I is not None and row.Ws is not None]
    table: dict[str, Any] = {}
    for name in ("I", "Is", "Is_pairs", "W", "Ws", "RCS"):
        mean = _mean(value for row in rows if (value := getattr(row, name)) is not None)
        table[name] = None if mean is None else 100 * mean
    paper = _mean((row.I - row.W) ** 2 for row in both)  # type: ignore[operator]
    text = _mean((row.I - row.Ws) ** 2 for row in both)  # type: ignore[operator]
    table["Cons_paper"] = None if paper is None else 1 - paper
    table["Cons_text"] = None if text is None else 1 - text
    table["stderr"] = summary_stderr(rows)
    table["problems"] = {
        "outputs": sum(row.I is not None for row in rows),
        "probes": sum(row.Ws is not None for row in rows),
        "both": len(both),
    }
    return table


def summary_stderr(rows: Sequence[ProblemScore]) -> dict[str, float | None]:
    """The standard error over problems of each :func:`summary` metric, in its unit."""
    errors: dict[str, float | None] = {}
    for name in ("I", "Is", "Is_pairs", "W", "Ws", "RCS"):
        error = standard_error([value for row in rows if (value := getattr(row, name)) is not None])
        errors[name] = None if error is None else 100 * error
    both = [row for row in rows if row.I is not None and row.Ws is not None]
    errors["Cons_paper"] = standard_error([(row.I - row.W) ** 2 for row in both])  # type: ignore[operator]
    errors["Cons_text"] = standard_error([(row.I - row.Ws) ** 2 for row in both])  # type: ignore[operator]
    return errors


def dimension_ws(probes: Iterable[ProbeOutcome]) -> dict[str, dict[str, float]]:
    """Per dimension (sorted): probe memberships and Ws in percent (micro-accuracy)."""
    groups: dict[str, list[bool]] = {}
    for probe in probes:
        for dimension in probe.dimensions or ("none",):
            groups.setdefault(dimension, []).append(probe.correct)
    return {
        name: {"probes": len(flags), "Ws": 100 * sum(flags) / len(flags)}
        for name, flags in sorted(groups.items())
    }


def family_is(outputs: Iterable[OutputOutcome]) -> dict[str, dict[str, float]]:
    """Per code-generator family (sorted): implementations and Is in percent (micro)."""
    impls: dict[tuple[str, str], list[bool]] = {}
    for outcome in outputs:
        impls.setdefault((outcome.family, outcome.implementation), []).append(outcome.correct)
    groups: dict[str, list[bool]] = {}
    for (name, _), flags in impls.items():
        groups.setdefault(name, []).append(all(flags))
    return {
        name: {"implementations": len(flags), "Is": 100 * sum(flags) / len(flags)}
        for name, flags in sorted(groups.items())
    }


def outcomes(
    items: Sequence[Item], scores: Mapping[str, Sequence[Score]], run: int
) -> tuple[list[OutputOutcome], list[ProbeOutcome]]:
    """The run's verdicts (sample ``run`` of every item), as metric inputs."""
    outputs, probes = [], []
    for item in items:
        meta, correct = item.metadata, scores[item.id][run].correct
        if item.task == OUTPUT_TASK:
            outputs.append(
                OutputOutcome(
                    meta["problem"], meta["implementation"], meta.get("family", "other"), correct
                )
            )
        elif item.task == PROBE_TASK:
            probes.append(ProbeOutcome(meta["problem"], tuple(meta.get("dimensions", ())), correct))
        else:
            raise ValueError(f"{item.id}: task {item.task!r} is not a CoRE task")
    return outputs, probes


def runs(scores: Mapping[str, Sequence[object]]) -> int:
    """The number of runs: every item must have the same number of samples (ValueError
    otherwise)."""
    counts = {len(samples) for samples in scores.values()}
    if len(counts) != 1:
        fewest = min(scores, key=lambda key: len(scores[key]))
        raise ValueError(
            f"CoRE runs need the same number of samples per item; {fewest!r} has "
            f"{len(scores[fewest])}, others up to {max(counts)}"
        )
    return counts.pop()


def report(items: Sequence[Item], scores: Mapping[str, Sequence[Score]]) -> dict[str, Any]:
    """Every metric per run and their mean over runs, with dimension and family tables."""
    per_run = []
    for run in range(runs(scores)):
        outputs, probes = outcomes(items, scores, run)
        row = summary(problem_scores(outputs, probes))
        row["dimensions"] = dimension_ws(probes)
        row["families"] = family_is(outputs)
        per_run.append(row)
    mean: dict[str, Any] = {}
    for name in METRICS:
        values = [row[name] for row in per_run]
        mean[name] = None if None in values else sum(values) / len(values)
    mean["stderr"] = {
        name: _mean_or_none([row["stderr"][name] for row in per_run]) for name in METRICS
    }
    mean["problems"] = per_run[0]["problems"]
    mean["dimensions"] = _average_tables([row["dimensions"] for row in per_run], "Ws")
    mean["families"] = _average_tables([row["families"] for row in per_run], "Is")
    return {"runs": len(per_run), "mean": mean, "per_run": per_run}


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    """The mean of the runs' values (standard errors: averaged over runs); None if any is."""
    present = [value for value in values if value is not None]
    return None if len(present) < len(values) else _mean(present)


def _average_tables(tables: list[dict[str, dict[str, float]]], key: str) -> dict[str, Any]:
    return {
        name: {**row, key: sum(table[name][key] for table in tables) / len(tables)}
        for name, row in tables[0].items()
    }
