"""The JSON reports ``codereasoner score --json`` prints, built from verdicts.

Shared by ``codereasoner score`` (verdicts of a generations file) and the evaluation runner
(verdicts from a run store), so both print the same dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.core_metrics import report as core_metrics_report
from codereasoner.evaluation.reval_scoring import KINDS, RevalScored
from codereasoner.evaluation.scoring import Scored, sandbox_errors, score, strict_report
from codereasoner.tasks import Extracted, Extraction, Grading, Item, Style

__all__ = ["CORE_GRADINGS", "core_report", "pass_report", "reval_report"]

CORE_GRADINGS = {
    "project": "strict: JSON-aware literal comparison (benchmarks.md 5.5), primary",
    "ancestor": "official: ast.literal_eval comparison of TnTWoW/code_reasoning",
}


def pass_report(
    official: Scored,
    strict: Scored | None,
    ks: Sequence[int],
    generations: str,
    fmt: str,
    elapsed: float,
) -> dict[str, Any]:
    """CRUXEval / LiveCodeBench: pass@k, verdicts, breakdown, optional strict comparison."""
    bench = official.benchmark
    samples = sum(len(scores) for scores in official.scores.values())
    report: dict[str, Any] = {
        "benchmark": bench.name,
        "generations": generations,
        "format": fmt,
        "grading": official.grading.value,
        "copies": official.copies,
        "scale": "percent",
        "items": len(official.items),
        "samples": samples,
        **official.pass_at(ks),
        "reasons": official.reasons(),
        "breakdown": {
            "by": bench.breakdown,
            "note": bench.breakdown_note,
            "rows": official.by_category(ks),
        },
        "sandbox_errors": sandbox_errors(official),
        "wall_s": round(elapsed, 3),
    }
    if strict is not None:
        disagreements = strict_report(official, strict)
        report["strict"] = {
            **strict.pass_at(ks),
            "reasons": strict.reasons(),
            "disagreements": sum(row["count"] for row in disagreements),
            "groups": disagreements,
        }
        report["sandbox_errors"] += sandbox_errors(strict)
    return report


def reval_report(
    scored: RevalScored, logged: dict[str, list[bool]], style: Style, extraction: Extraction
) -> dict[str, Any]:
    """REval: accuracies per task kind, coverage F1, Incremental Consistency, subsets."""
    items = [item for item in scored.items if item.id in scored.scores]
    outputs = [item for item in items if item.task == "output"]
    classeval = [item for item in outputs if item.metadata["source"] == "classeval"]
    subsets = {
        "classeval_leak": [i for i in classeval if i.metadata["leak"]],
        "classeval_assert_true_false": [i for i in classeval if i.metadata["bool_assert"]],
        "other": [i for i in outputs if not (i.metadata["leak"] or i.metadata["bool_assert"])],
    }
    report: dict[str, Any] = {
        "benchmark": "reval", "style": style.value, "extraction": extraction.value,
        "scale": "accuracies as fractions, consistency in percent",
        "items": {kind: sum(i.task == kind for i in items) for kind in KINDS},
        "repeats": {kind: scored.repeats(kind) for kind in scored.kinds()},
        **scored.mean_metrics(),
        "by_source": {source: scored.mean_metrics([i for i in items
                                                   if i.metadata["source"] == source])
                      for source in ("humaneval", "classeval")},
        "output_subsets": {name: {"items": len(group), "acc": scored.mean_metrics(group).get(
            "output", 0.0)} for name, group in subsets.items() if group},
        "reasons": scored.reasons(),
        "sandbox_errors": scored.sandbox_errors(),
    }  # fmt: skip
    if logged:
        differ = sum(score.correct != flag for item_id, flags in logged.items()
                     for score, flag in zip(scored.scores[item_id], flags, strict=True))  # fmt: skip
        report["log_verdicts_differing"] = differ
    return report


def core_report(
    benchmark: Benchmark,
    items: Sequence[Item],
    answers: Mapping[str, Sequence[Extracted]],
    generations: str,
    fmt: str,
) -> dict[str, Any]:
    """CoRE: I, Is, W, Ws, RCS and both Cons under the project grading and the ancestor's.

    Answers are literals compared here (no sandbox); raises ValueError on inconsistent input.
    """
    variants = {}
    for name, grading in (("project", Grading.STRICT), ("ancestor", Grading.OFFICIAL)):
        scored = score(benchmark, items, answers, None, grading=grading)
        variants[name] = {**core_metrics_report(items, scored.scores), "reasons": scored.reasons()}
    return {
        "benchmark": benchmark.name,
        "generations": generations,
        "format": fmt,
        "items": len(items),
        "samples": sum(len(samples) for samples in answers.values()),
        "scale": "I, Is, Is_pairs, W, Ws, RCS in percent; Cons_paper, Cons_text as fractions",
        "grading": dict(CORE_GRADINGS),
        "variants": variants,
    }
