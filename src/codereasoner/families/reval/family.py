"""REval's metric family: four question kinds graded per answer (output answers in the
sandbox), accuracies per kind, coverage F1 and Incremental Consistency
(:class:`~codereasoner.evaluation.families.MetricFamily`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.families import MetricFamily, PoolOpener, RunReport
from codereasoner.evaluation.generations import GenerationsError
from codereasoner.evaluation.reports import Report
from codereasoner.evaluation.score_options import ScoreOptions, ScoreOutcome
from codereasoner.evaluation.scoring import parse_failure_warning
from codereasoner.execution import Limits
from codereasoner.families.reval.printer import print_reval
from codereasoner.families.reval.report import RevalReport, reval_report
from codereasoner.families.reval.scoring import (
    RevalScored,
    read_reval_generations,
    score_reval,
    subset_hint,
    subset_items,
)
from codereasoner.tasks import Extracted, Grading, Item, Score
from codereasoner.tasks.plans import Memo

__all__ = ["FAMILY", "Reval"]


class Reval(MetricFamily):
    name = RevalReport.kind
    report_type = RevalReport
    strict_report = False
    pass_at_k = False
    marker_keys = ("avg_acc", "by_source")
    reads_folders = True

    def print_report(self, report: dict[str, Any]) -> None:
        print_reval(report)

    def report_figures(self, runs: Any, labels: Any, comparison: Any, kit: Any) -> list[str]:
        name = comparison.benchmark
        caption = f"{name}: accuracy per question kind (fractions)."
        return [kit.figure(kit.plots.reval_plot(runs, labels, name), caption)]

    def headline_metrics(self, result: Any) -> list[tuple[str, Any]]:
        """One accuracy per question kind (coverage: accuracy, not F1)."""
        return [(label, result.metric(label)) for label in RevalReport.ACCURACY_LABELS]

    def overview_metric(self, result: Any) -> tuple[str, Any]:
        """The average of the four accuracies (x100 in the overview plot)."""
        return "avg acc x100", result.metric("average acc")

    def grade(
        self,
        bench: Benchmark,
        items: Sequence[Item],
        answers: Mapping[str, Sequence[Extracted]],
        pool: PoolOpener,
        grading: Grading,
        limits: Limits,
        memo: Memo | None = None,
    ) -> dict[str, list[Score]]:
        return score_reval(items, answers, pool(), limits, grading, memo).scores

    def score_file(
        self, bench: Benchmark, items: Sequence[Item], options: ScoreOptions, pool: PoolOpener
    ) -> ScoreOutcome:
        """JSON Lines or REval's logs. With ``--subset``, the items of the groups
        (``Benchmark.group``: a program and input, as ``eval --limit`` keeps them) the file
        answers; every kind it gives must be whole in each."""
        chosen = subset_items(bench, options.generations, list(items)) if options.subset else items
        try:
            found = read_reval_generations(options.generations, chosen, options.extract)
        except GenerationsError as exc:
            hint = (
                ""
                if options.subset
                else subset_hint(bench, options.generations, list(items), options.extract)
            )
            raise GenerationsError(str(exc) + hint) from None
        started = time.perf_counter()
        scores = self.grade(bench, chosen, found.answers, pool, options.grading, options.limits)
        report = reval_report(
            bench,
            RevalScored(list(chosen), scores),
            found.logged,
            options.style,
            options.extraction,
            generations=str(options.generations),
            fmt=found.format,
            elapsed=time.perf_counter() - started,
        )
        warning = parse_failure_warning(bench, scores, found.format)
        return ScoreOutcome(report, scores, warnings=[warning] if warning else [])

    def report(
        self,
        bench: Benchmark,
        items: Sequence[Item],
        scores: Mapping[str, list[Score]],
        run: RunReport,
    ) -> Report:
        return reval_report(
            bench,
            RevalScored(list(items), dict(scores)),
            {},
            run.style,
            run.extraction,
            generations=run.generations,
            fmt=run.format,
            elapsed=run.elapsed,
        )


FAMILY = Reval()  # registered by name in codereasoner.evaluation.families
