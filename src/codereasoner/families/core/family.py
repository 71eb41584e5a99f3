"""CoRE's metric family: literal comparisons (no sandbox) under the project grading, which the
stored verdicts hold, and the ancestor's, which the report adds; I, Is, W, Ws, RCS and Cons
(:class:`~codereasoner.evaluation.families.MetricFamily`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.families import MetricFamily, PoolOpener, RunReport, reasons
from codereasoner.evaluation.generations import GenerationsError, read_generations
from codereasoner.evaluation.reports import Report
from codereasoner.evaluation.score_options import ScoreOptions, ScoreOutcome
from codereasoner.evaluation.scoring import parse_failure_warning, score
from codereasoner.execution import Limits
from codereasoner.families.core.metrics import report as core_metrics_report
from codereasoner.families.core.metrics import runs
from codereasoner.families.core.printer import print_core
from codereasoner.families.core.report import CoreReport, core_report
from codereasoner.tasks import Answer, Extracted, Grading, Item, ParseFailure, Score
from codereasoner.tasks.plans import Memo

__all__ = ["FAMILY", "Core"]

HEADLINE = "I"
PROBE_HEADLINE = "Ws"  # CoRE's probe benchmarks score the trace statements only


class Core(MetricFamily):
    name = CoreReport.kind
    report_type = CoreReport
    uses_grading = False
    uses_sandbox = False
    pass_at_k = False
    marker_keys = ("variants",)

    def print_report(self, report: dict[str, Any]) -> None:
        print_core(report)

    def report_figures(self, runs: Any, labels: Any, comparison: Any, kit: Any) -> list[str]:
        caption = (
            "Invariance vs process transparency; on the dashed diagonal a model is as right "
            "about the process as about the result."
        )
        plot = kit.plots.core_plot(runs, labels, comparison.benchmark)
        return [kit.figure(plot, caption), kit.core_variants(runs, labels, comparison)]

    def verdict_counts(self, report: Mapping[str, Any]) -> Any:
        """The project grading's verdicts (the primary ones)."""
        variants = report.get("variants")
        project = variants.get("project") if isinstance(variants, dict) else None
        return project.get("reasons") if isinstance(project, dict) else None

    def headline_metrics(self, result: Any) -> list[tuple[str, Any]]:
        """I, under the project grading; Ws for a run of the probes alone (no I)."""
        found = result.metric(HEADLINE)
        if found is None or found.value is None:
            return [(PROBE_HEADLINE, result.metric(PROBE_HEADLINE))]
        return [(HEADLINE, found)]

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
        # Literals compared here, no sandbox; the project (strict) grading is the stored one,
        # the report grades again under the ancestor's rule.
        return score(bench, items, answers, None, grading=Grading.STRICT).scores

    def score_file(
        self, bench: Benchmark, items: Sequence[Item], options: ScoreOptions, pool: PoolOpener
    ) -> ScoreOutcome:
        """Under the project grading (the verdicts) and the ancestor's (in the report and,
        for ``--results``, beside each verdict)."""
        fmt, answers = read_generations(
            options.generations, items, options.extract, subset=options.subset
        )
        items = [item for item in items if item.id in answers]  # all, without --subset
        try:
            runs(answers)
        except ValueError as exc:  # a file of uneven runs: the file's fault, said before grading
            raise GenerationsError(f"{options.generations}: {exc}") from None
        report = core_report(bench, items, answers, str(options.generations), fmt)
        project = self.grade(bench, items, answers, pool, Grading.STRICT, options.limits)
        ancestor = {}
        if options.results is not None:
            ancestor["ancestor"] = score(bench, items, answers, None).scores
        warning = parse_failure_warning(bench, project, fmt)
        return ScoreOutcome(report, project, ancestor, [warning] if warning else [])

    def report(
        self,
        bench: Benchmark,
        items: Sequence[Item],
        scores: Mapping[str, list[Score]],
        run: RunReport,
    ) -> Report:
        answers: dict[str, list[Extracted]] = {
            key: [ParseFailure(s.detail) if s.answer is None else Answer(s.answer) for s in value]
            for key, value in scores.items()
        }
        return core_report(bench, items, answers, run.generations, run.format)

    def verdict_report(
        self,
        bench: Benchmark,
        items: Sequence[Item],
        scores: Mapping[str, list[Score]],
        run: RunReport,
    ) -> Report:
        # The stored verdicts are the project grading's; the ancestor's would need grading again.
        project = {**core_metrics_report(items, scores), "reasons": reasons(scores)}
        return CoreReport(
            benchmark=bench.name,
            generations=run.generations,
            format=run.format,
            items=len(items),
            samples=sum(len(samples) for samples in scores.values()),
            variants={"project": project},
        )


FAMILY = Core()
