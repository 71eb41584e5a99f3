"""What the runner checks of a benchmark's run once it is graded: warnings about the answers
(parse failures, another benchmark's shape, the token limit, greedy repeats) and the oracle's
self-check."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.families import MetricFamily
from codereasoner.evaluation.run_settings import LIMIT_WARNING_SHARE, ORACLE
from codereasoner.evaluation.scoring import (
    PARSE_FAILURES,
    parse_failure_warning,
    same_data,
    wrong_task_warning,
)
from codereasoner.evaluation.store import RunStore
from codereasoner.execution import Limits
from codereasoner.models.base import Sampling
from codereasoner.tasks import Answer, Extracted, Extraction, Item

__all__ = [
    "Resolved",
    "answer_warnings",
    "greedy_samples_warning",
    "limit_warning",
    "self_check",
]


@dataclass
class Resolved:
    """One benchmark, resolved: its items and how they are prompted, read and graded."""

    bench: Benchmark
    family: MetricFamily
    items: list[Item]
    style: str
    extraction: Extraction
    limits: Limits
    sampling: Sampling
    system: str | None
    prompts: dict[str, str]  # item id -> prompt text
    hashes: dict[str, str]  # item id -> prompt hash


def answer_warnings(store: RunStore, plan: Resolved, n: int, data_dir: Path | None) -> list[str]:
    """As ``score`` warns: nearly every answer failed to parse, or the answers are shaped
    like another benchmark's of the same data (a prompt or extraction problem)."""
    scores = store.scores(plan.bench.name, n)
    answers: dict[str, list[Extracted]] = {
        item_id: [
            Answer(score.answer)
            for score in samples
            if score.answer is not None and score.reason not in PARSE_FAILURES
        ]
        for item_id, samples in scores.items()
    }
    siblings = same_data(plan.bench, data_dir)
    found = [
        wrong_task_warning(plan.bench, plan.items, answers, siblings),
        parse_failure_warning(plan.bench, scores, "completions"),
    ]
    return [warning for warning in found if warning]


def greedy_samples_warning(n: int, sampling: Sampling, model_id: str) -> str | None:
    """Several samples at temperature 0 are one greedy answer repeated (pass@k = pass@1)."""
    if n < 2 or sampling.temperature > 0 or model_id == ORACLE:
        return None
    return (
        f"--n {n} at --temperature 0: greedy decoding gives the same answer {n} times, so "
        f"pass@k equals pass@1; set --temperature (e.g. 0.8) to sample, or use --n 1"
    )


def limit_warning(store: RunStore, plan: Resolved, identity: str, n: int) -> str | None:
    """A warning when most of the benchmark's completions stopped at the token limit: the
    scores then measure the limit (or a prompt mode the model does not follow)."""
    texts = store.completions(identity, plan.sampling.key(), set(plan.hashes.values()), n)
    reasons = [texts[key].finish_reason for key in texts]
    cut = sum(reason == "length" for reason in reasons)
    if not reasons or cut / len(reasons) < LIMIT_WARNING_SHARE:
        return None
    limit = plan.sampling.token_limit
    return (
        f"{plan.bench.name}: {cut} of {len(reasons)} completions "
        f"({100 * cut / len(reasons):.0f}%) stopped at the {limit}-token limit without an "
        f"end or a stop sequence ({', '.join(plan.sampling.stop) or 'none'}); their answers "
        "are likely cut or missing: raise --max-tokens, or check --chat/--raw and --style"
    )


def self_check(store: RunStore, plan: Resolved, identity: str, n: int) -> dict[str, Any]:
    """The oracle's misses: items it cannot state (``no_truth``), items sharing their exact
    prompt with an item of another truth (``ambiguous``: one completion cannot answer both),
    and samples graded wrong otherwise (``graded_wrong``: grading bugs). ``passed`` when
    there are none of the last kind."""
    from codereasoner.models.oracle import NO_TRUTH

    name = plan.bench.name
    texts = store.completions(identity, plan.sampling.key(), set(plan.hashes.values()), n)
    no_truth = sorted(
        {
            item.id
            for item in plan.items
            if any(texts[(plan.hashes[item.id], s)].finish_reason == NO_TRUTH for s in range(n))
        }
    )
    truths: dict[str, set[str]] = {}
    for item in plan.items:
        truths.setdefault(plan.hashes[item.id], set()).add(item.truth)
    ambiguous = sorted(item.id for item in plan.items if len(truths[plan.hashes[item.id]]) > 1)
    excused = set(no_truth) | set(ambiguous)
    scores = store.scores(name, n)
    wrong = [
        {
            "id": item.id,
            "sample": verdict.sample,
            "reason": verdict.reason.value,
            "detail": verdict.detail,
        }
        for item in plan.items
        if item.id not in excused
        for verdict in scores.get(item.id, [])
        if not verdict.correct or verdict.skipped
    ]
    missed = {item.id for item in plan.items if any(not v.correct for v in scores.get(item.id, []))}
    return {
        "items": len(plan.items),
        "samples": sum(len(scores.get(i.id, [])) for i in plan.items),
        "no_truth": no_truth,
        "ambiguous": ambiguous,
        "ambiguous_missed": sorted(missed & set(ambiguous)),
        "graded_wrong": wrong,
        "passed": not wrong,
    }
