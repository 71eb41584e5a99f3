"""REval metrics (docs/benchmark-rules.md, "REval: metrics"): coverage accuracy/precision/recall/F1, accuracy per task,
and Incremental Consistency. Accuracies are fractions; IC is in percent, as upstream prints it.

IC scores each line question by the tuple (coverage, state, path, output of its pair) of
correct answers: 1 for (1,1,1,1), 0.5 for (1,1,1,0), 0.25 for (1,1,0,0), 0.125 for (1,0,0,0),
0 for any other pattern; IC = 100 * sum / number of line questions. Records are aligned by
(program, input, line question), not by position in a log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

__all__ = [
    "IC_WEIGHTS",
    "CoverageCounts",
    "accuracy",
    "consistency_weight",
    "coverage_counts",
    "incremental_consistency",
]

IC_WEIGHTS: Mapping[tuple[bool, bool, bool, bool], float] = {
    (True, True, True, True): 1.0,
    (True, True, True, False): 0.5,
    (True, True, False, False): 0.25,
    (True, False, False, False): 0.125,
}


@dataclass(frozen=True)
class CoverageCounts:
    """The confusion matrix of YES/NO decisions; positive = "the line is executed"."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    @property
    def total(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.total if self.total else 0.0

    @property
    def precision(self) -> float:
        """0 when nothing was predicted positive (upstream divides by zero there)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict[str, float]:
        return {
            "acc": self.accuracy,
            "prec": self.precision,
            "rec": self.recall,
            "f1": self.f1,
            **asdict(self),
        }


def coverage_counts(decisions: Iterable[tuple[bool, bool]]) -> CoverageCounts:
    """Counts over ``(expected executed, answered correctly)`` pairs.

    Working from correctness means an unparsable answer (always wrong) counts as the wrong
    decision: a false negative on an executed line, a false positive otherwise.
    """
    tp = fp = tn = fn = 0
    for expected, correct in decisions:
        if expected:
            tp, fn = tp + correct, fn + (not correct)
        else:
            tn, fp = tn + correct, fp + (not correct)
    return CoverageCounts(tp, fp, tn, fn)


def accuracy(flags: Iterable[bool]) -> float:
    """The fraction of correct answers; 0 for none."""
    values = list(flags)
    return sum(values) / len(values) if values else 0.0


def consistency_weight(coverage: bool, state: bool, path: bool, output: bool) -> float:
    return IC_WEIGHTS.get((coverage, state, path, output), 0.0)


def incremental_consistency(rows: Iterable[tuple[bool, bool, bool, bool]]) -> float:
    """IC in percent over line questions given as (coverage, state, path, output) correctness."""
    weights = [consistency_weight(*row) for row in rows]
    return 100 * sum(weights) / len(weights) if weights else 0.0
