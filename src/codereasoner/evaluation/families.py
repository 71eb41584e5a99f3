"""Metric families: how a benchmark's verdicts are computed and added up into its report.

A benchmark names its family in its declaration (``Benchmark.metrics``); the runner, ``score``
and ``report`` ask the family, never the benchmark's name. ``eval`` grades with
:meth:`MetricFamily.grade` and ``score`` with :meth:`MetricFamily.score_file`, which reads the file and then
calls that same ``grade``: the two agree by construction. Three families exist:

- ``pass@k``: verdicts in the sandbox under ``--grading``, pass@k with breakdowns;
- ``accuracy-consistency`` (REval): four question kinds, accuracies, Incremental Consistency;
- ``invariance-transparency`` (CoRE): literal comparisons (no sandbox), I, Is, W, Ws, RCS, Cons.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codereasoner import benchmarks
from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.generations import read_generations
from codereasoner.evaluation.reports import (
    PassReport,
    Report,
    pass_keys,
    pass_report,
)
from codereasoner.evaluation.score_options import ScoreOptions, ScoreOutcome
from codereasoner.evaluation.score_printing import print_metrics, print_pass_report
from codereasoner.evaluation.scoring import (
    Scored,
    check_ks,
    default_ks,
    parse_failure_warning,
    same_data,
    score,
    wrong_task_warning,
)
from codereasoner.execution import Executor, Limits
from codereasoner.registry import Registry, builtin_registrations
from codereasoner.tasks import Extracted, Extraction, Grading, Item, Score
from codereasoner.tasks.plans import Memo

__all__ = [
    "FAMILIES",
    "MetricFamily",
    "RunReport",
    "ScoreOptions",
    "ScoreOutcome",
    "family_named",
    "family_of",
    "load_report",
]

PoolOpener = Callable[[], Executor]


@dataclass(frozen=True)
class RunReport:
    """What a report says about how its verdicts were obtained."""

    generations: str
    format: str
    style: str
    extraction: Extraction
    grading: Grading
    samples: int  # per item
    elapsed: float


class MetricFamily:
    """One metric family; subclasses override :meth:`grade` and :meth:`report`."""

    name: str = ""
    report_type: Any = PassReport  # the family's report dataclass (from_dict, metrics, ...)
    uses_grading: bool = True  # --grading applies (else: its own rule)
    strict_report: bool = True  # --strict-report applies (with uses_grading)
    uses_sandbox: bool = True  # answers may run in the sandbox: --timeout applies
    pass_at_k: bool = True  # --k and --copies apply
    marker_keys: tuple[str, ...] = ()  # a stored report holding any of these is of this family
    reads_folders: bool = False  # score reads a folder of generations (REval's logs)

    def matches(self, data: Mapping[str, Any]) -> bool:
        return any(key in data for key in self.marker_keys)

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
        """Every sample's verdict (``memo``: sandbox results to reuse when grading again)."""
        raise NotImplementedError

    def score_file(
        self, bench: Benchmark, items: Sequence[Item], options: ScoreOptions, pool: PoolOpener
    ) -> ScoreOutcome:
        """Read a generations file and grade it with :meth:`grade`; raises GenerationsError on a
        file that does not fit ``items`` and SettingError on a setting it cannot take (``score``
        says each in one line; anything else is a fault, shown as one)."""
        raise NotImplementedError

    def report(
        self,
        bench: Benchmark,
        items: Sequence[Item],
        scores: Mapping[str, list[Score]],
        run: RunReport,
    ) -> Report:
        raise NotImplementedError

    def from_dict(self, data: Mapping[str, Any]) -> Report:
        return self.report_type.from_dict(data)

    def verdict_report(
        self,
        bench: Benchmark,
        items: Sequence[Item],
        scores: Mapping[str, list[Score]],
        run: RunReport,
    ) -> Report:
        """The report from stored verdicts alone, never grading again (a report over a subset
        of a run's items: the items runs have in common)."""
        return self.report(bench, items, scores, run)

    # -- how reports show it (``result``: a report's BenchmarkResult, with ``metrics`` and
    # ``metric(name)``) ---------------------------------------------------------------------

    def headline_metrics(self, result: Any) -> list[tuple[str, Any]]:
        """The benchmark's Table 3 columns, ``(name, Metric or None)``: by default the first
        metric its report lists."""
        metrics = list(result.metrics)
        return [(metrics[0].name, metrics[0])] if metrics else []

    def print_report(self, report: dict[str, Any]) -> None:
        """Show a stored or scored report (its ``to_dict()``) on the terminal: by default its
        ``metrics()`` and ``breakdowns()``."""
        print_metrics(self.from_dict(report), report)

    def report_figures(self, runs: Any, labels: Any, comparison: Any, kit: Any) -> list[str]:
        """HTML parts of the report page's section of one benchmark, before its breakdowns
        (``comparison.benchmark``: which one; ``kit``: the page's ``figure`` and ``plots``):
        none by default."""
        return []

    def verdict_counts(self, report: Mapping[str, Any]) -> Any:
        """The report's verdict counts (``{reason: n}``, or nested one level)."""
        return report.get("reasons")

    def overview_metric(self, result: Any) -> tuple[str, Any]:
        """The one number per benchmark in the report's overview plot (default: the first
        Table 3 column)."""
        found = self.headline_metrics(result)
        return found[0] if found else ("", None)


class PassAtK(MetricFamily):
    name = PassReport.kind
    report_type = PassReport

    def matches(self, data: Mapping[str, Any]) -> bool:
        return bool(pass_keys(data))

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
        return score(
            bench, items, answers, pool(), grading=grading, limits=limits, memo=memo
        ).scores

    def score_file(
        self, bench: Benchmark, items: Sequence[Item], options: ScoreOptions, pool: PoolOpener
    ) -> ScoreOutcome:
        fmt, answers = read_generations(
            options.generations, items, options.extract, subset=options.subset
        )
        items = [item for item in items if item.id in answers]  # all, without --subset
        ks = options.ks or default_ks(answers)
        check_ks(ks, answers)
        wrong_task = wrong_task_warning(bench, items, answers, same_data(bench, options.data_dir))
        started = time.perf_counter()
        memo: Memo = {}
        grade = self.grade(bench, items, answers, pool, options.grading, options.limits, memo)
        official = Scored(bench, items, options.grading, grade, options.copies)
        strict = None
        if options.show_strict:
            by_rule = self.grade(bench, items, answers, pool, Grading.STRICT, options.limits, memo)
            strict = Scored(bench, items, Grading.STRICT, by_rule, options.copies)
        extracted = fmt == "jsonl"  # completions were extracted here: say how
        report = pass_report(
            official,
            strict,
            ks,
            str(options.generations),
            fmt,
            time.perf_counter() - started,
            style=options.style if extracted else None,
            extraction=options.extraction.value if extracted else None,
        )
        warnings = [wrong_task, parse_failure_warning(bench, official.scores, fmt)]
        also = {} if strict is None else {"strict": strict.scores}
        return ScoreOutcome(report, official.scores, also, [text for text in warnings if text])

    def print_report(self, report: dict[str, Any]) -> None:
        print_pass_report(report)

    def report_figures(self, runs: Any, labels: Any, comparison: Any, kit: Any) -> list[str]:
        name = comparison.benchmark
        return [kit.figure(kit.plots.passk_plot(runs, labels, name), f"{name}: pass@k per run.")]

    def headline_metrics(self, result: Any) -> list[tuple[str, Any]]:
        """The lowest pass@k stored (pass@1)."""
        ks = [metric for metric in result.metrics if re.fullmatch(r"pass@\d+", metric.name)]
        first = min(ks, key=lambda metric: int(metric.name.removeprefix("pass@")), default=None)
        return [(first.name, first)] if first else []

    def report(
        self,
        bench: Benchmark,
        items: Sequence[Item],
        scores: Mapping[str, list[Score]],
        run: RunReport,
    ) -> Report:
        ks = [k for k in (1, 5) if k <= run.samples]
        official = Scored(bench, list(items), run.grading, dict(scores))
        return pass_report(
            official,
            None,
            ks,
            run.generations,
            run.format,
            run.elapsed,
            style=run.style,
            extraction=run.extraction.value,
        )


def reasons(scores: Mapping[str, Sequence[Score]]) -> dict[str, int]:
    """Verdict counts, most common first."""
    tally = Counter(score.reason.value for samples in scores.values() for score in samples)
    return dict(tally.most_common())


FAMILIES: Registry[MetricFamily] = Registry("metric family")
FAMILIES.register(PassAtK())
# A benchmark family with a folder of its own (codereasoner/families/) sits above this layer: its
# metric family is found by scanning the folders' manifests and imported on first use.
for _name, _target in builtin_registrations("metric_families"):
    FAMILIES.register_lazy(_name, _target)
del _name, _target


def family_named(kind: str) -> MetricFamily:
    """The metric family registered as ``kind``; for a kind no longer installed (a store of a
    plugin's benchmark read without the plugin), the defaults every family has."""
    try:
        return FAMILIES[kind]
    except KeyError:
        return MetricFamily()


def family_of(bench: Benchmark) -> MetricFamily:
    try:
        return FAMILIES[bench.metrics]
    except KeyError:
        raise ValueError(
            f"benchmark {bench.name!r}: unknown metric family {bench.metrics!r}; "
            f"expected one of {', '.join(FAMILIES)}"
        ) from None


def load_report(benchmark: str, data: Mapping[str, Any]) -> Report | None:
    """A stored report of ``benchmark`` as its declared family's type; for a benchmark no
    longer declared, or a report without its family's keys (a store written by other code),
    the family whose keys it has (None: none, or an empty report)."""
    if not data:
        return None
    try:
        return _typed(benchmark, data)
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError, RecursionError):
        return None  # keys of its family with values of other types: a store changed by hand


def _typed(benchmark: str, data: Mapping[str, Any]) -> Report | None:
    if benchmark in benchmarks.REGISTRY:
        declared = family_of(benchmarks.get(benchmark))
        if declared.matches(data):
            return declared.from_dict(data)
    for name in reversed(FAMILIES.names()):  # the latest first: pass@k's keys are the broadest
        family = FAMILIES[name]
        if family.matches(data):
            return family.from_dict(data)
    return None
