"""Score a benchmark's generations: verdicts per sample, pass@k, breakdowns, strict report."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from codereasoner import tasks
from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.metrics import Counts, breakdown, item_counts, pass_table
from codereasoner.execution import Limits, Pool
from codereasoner.tasks import OFFICIAL_LIMITS, Extracted, Grading, Item, Reason, Score, run_plans
from codereasoner.tasks.plans import Memo

# Why official and strict verdicts differ, by (official reason, strict reason).
DISAGREEMENT_NOTES = {
    ("correct", "not_a_literal"): "an expression, not a literal: upstream executes it and it "
    "evaluates to the right value",
    ("correct", "wrong_entry"): "upstream executes any expression that contains 'f('",
    ("error", "correct"): "a literal upstream cannot evaluate (JSON spelling true/false/null or "
    "a bare inf/nan name raises NameError)",
    ("syntax_error", "correct"): "parses as a literal alone but not spliced into "
    "'assert gold == ...' (e.g. an unparenthesised tuple becomes the assertion's message)",
    ("wrong_value", "correct"): "strict parsing reads the literal differently from upstream's "
    "splice (operator precedence)",
    ("copied", "not_a_literal"): "a copy of the question's call: skipped upstream (shrinking n), "
    "a failure here",
}


@dataclass
class Scored:
    """Every sample's verdict under one grading, and what it adds up to."""

    benchmark: Benchmark
    items: list[Item]
    grading: Grading
    scores: dict[str, list[Score]]
    copies: str = "official"
    counts: dict[str, Counts] = field(init=False)

    def __post_init__(self) -> None:
        policy = self.copies if self.grading is Grading.OFFICIAL else "fail"
        self.counts = {key: item_counts(value, policy) for key, value in self.scores.items()}

    @property
    def small_n(self) -> str:
        # Upstream's shrinking n can leave fewer than k samples; only then is n < k allowed.
        return (
            "upstream"
            if self.grading is Grading.OFFICIAL and self.copies == "official"
            else "error"
        )

    def pass_at(self, ks: Sequence[int]) -> dict[str, float]:
        return {
            key: 100 * value
            for key, value in pass_table(self.counts, ks, small_n=self.small_n).items()
        }

    def by_category(self, ks: Sequence[int]) -> dict[str, dict[str, float]]:
        categories = {item.id: self.benchmark.category(item) for item in self.items}
        table = breakdown(self.counts, categories, ks, small_n=self.small_n)
        return {
            name: {key: value if key == "items" else 100 * value for key, value in row.items()}
            for name, row in table.items()
        }

    def reasons(self) -> dict[str, int]:
        tally = Counter(score.reason.value for scores in self.scores.values() for score in scores)
        return dict(tally.most_common())


def default_ks(
    answers: Mapping[str, Sequence[Extracted]], wanted: Sequence[int] = (1, 5)
) -> list[int]:
    """The pass@k values of ``wanted`` that every item has enough samples for (at least 1)."""
    fewest = min((len(value) for value in answers.values()), default=1)
    return [k for k in wanted if k <= fewest] or [1]


def check_ks(ks: Sequence[int], answers: Mapping[str, Sequence[Extracted]]) -> None:
    """Every item needs at least k samples for pass@k (the estimator is undefined below)."""
    fewest = min(answers.items(), key=lambda pair: len(pair[1]))
    for k in ks:
        if k < 1:
            raise ValueError(f"--k: values must be at least 1, got {k}")
        if len(fewest[1]) < k:
            raise ValueError(
                f"pass@{k} needs at least {k} samples per item; {fewest[0]!r} has {len(fewest[1])}"
            )


def score(
    benchmark: Benchmark,
    items: Sequence[Item],
    answers: Mapping[str, Sequence[Extracted]],
    pool: Pool | None,
    *,
    grading: Grading | str = Grading.OFFICIAL,
    copies: str = "official",
    limits: Limits = OFFICIAL_LIMITS,
    memo: Memo | None = None,
) -> Scored:
    """Grade every item's answers (all sandbox work batched through ``pool``).

    Pass the same ``memo`` to grade again (e.g. strictly) without re-running the same calls.
    """
    chosen = Grading(grading)
    plans = [tasks.get(item.task).plan(item, answers[item.id], chosen) for item in items]
    results = run_plans(pool, plans, limits, memo)
    scores = {item.id: result for item, result in zip(items, results, strict=True)}
    return Scored(benchmark, list(items), chosen, scores, copies)


def strict_report(official: Scored, strict: Scored, examples: int = 3) -> list[dict[str, Any]]:
    """Samples on which official and strict grading disagree, grouped by the pair of reasons."""
    groups: dict[tuple[str, str], list[tuple[Score, Score]]] = {}
    for item_id, verdicts in official.scores.items():
        for first, second in zip(verdicts, strict.scores[item_id], strict=True):
            if (first.correct and not first.skipped) != second.correct:
                key = (first.reason.value, second.reason.value)
                groups.setdefault(key, []).append((first, second))
    rows = []
    for (first_reason, second_reason), pairs in sorted(groups.items(), key=lambda g: -len(g[1])):
        rows.append(
            {
                "official": first_reason,
                "strict": second_reason,
                "count": len(pairs),
                "items": len({pair[0].item_id for pair in pairs}),
                "note": DISAGREEMENT_NOTES.get((first_reason, second_reason), ""),
                "examples": [
                    {
                        "id": a.item_id,
                        "sample": a.sample,
                        "answer": a.answer,
                        "official": a.detail,
                        "strict": b.detail,
                    }
                    for a, b in pairs[:examples]
                ],
            }
        )
    return rows


def sandbox_errors(scored: Scored) -> int:
    return sum(
        score.reason is Reason.SANDBOX_ERROR
        for scores in scored.scores.values()
        for score in scores
    )
