"""pass@k and friends against hand-computed values."""

from __future__ import annotations

import math
import statistics

import pytest

from codereasoner.evaluation import (
    Counts,
    accuracy,
    breakdown,
    item_counts,
    mean_pass_at_k,
    pass_at_k,
)
from codereasoner.evaluation.metrics import (
    jackknife_stderr,
    pass_at_k_stderr,
    standard_error,
    stderr_table,
)
from codereasoner.tasks import Reason, Score


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),  # c / n
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (10, 1, 5, 0.5),  # 1 - C(9,5)/C(10,5) = 1 - 126/252
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (10, 0, 1, 0.0),
        (10, 0, 5, 0.0),
        (10, 10, 1, 1.0),
        (5, 5, 5, 1.0),
        (5, 0, 5, 0.0),  # n == k: 1 - C(5,5)/C(5,5)
        (10, 6, 5, 1.0),  # n - c = 4 < k: every 5-subset holds a pass
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k_hand_computed(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_fewer_samples_than_k() -> None:
    with pytest.raises(ValueError, match="pass@5 needs at least 5 samples, got 3"):
        pass_at_k(3, 1, 5)
    # Upstream's convention: n - c < k gives 1.0, even when nothing passed (a quirk of n < k).
    assert pass_at_k(3, 1, 5, small_n="upstream") == 1.0
    assert pass_at_k(3, 0, 5, small_n="upstream") == 1.0
    with pytest.raises(ValueError, match="need 0 <= c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError, match="k 0: expected a positive number"):
        pass_at_k(3, 1, 0)


def scores(*flags: bool | None) -> list[Score]:
    """True/False: graded; None: skipped by the anti-copy rule."""
    return [
        Score(
            "x", i, "a", bool(flag), Reason.CORRECT if flag else Reason.WRONG, skipped=flag is None
        )
        for i, flag in enumerate(flags)
    ]


def test_item_counts_shrinking_n_and_corrected() -> None:
    assert item_counts(scores(True, None, False)) == Counts(2, 1)  # skipped copy leaves n
    assert item_counts(scores(None, False, False)) == Counts(3, 0)  # no pass: all count
    assert item_counts(scores(None, None)) == Counts(2, 0)
    assert item_counts(scores(True, None, False), "fail") == Counts(3, 1)
    assert item_counts(scores(True, True)) == Counts(2, 2)
    with pytest.raises(ValueError, match="copies 'drop': expected one of"):
        item_counts(scores(True), "drop")
    # nine copies and one right answer: upstream's pass@1 is 1.0, corrected 0.1
    official, corrected = (
        item_counts(scores(*([None] * 9), True)),
        item_counts(scores(*([None] * 9), True), "fail"),
    )
    assert (official, corrected) == (Counts(1, 1), Counts(10, 1))
    assert pass_at_k(official.n, official.c, 1) == 1.0
    assert pass_at_k(corrected.n, corrected.c, 1) == pytest.approx(0.1)


def test_mean_breakdown_and_accuracy() -> None:
    counts = {"a": Counts(10, 3), "b": Counts(10, 0), "c": Counts(10, 10)}
    assert mean_pass_at_k(counts.values(), 1) == pytest.approx((0.3 + 0 + 1) / 3)
    table = breakdown(counts, {"a": "str", "b": "str", "c": "int"}, [1, 5])
    assert list(table) == ["int", "str"]
    assert table["str"] == {
        "items": 2,
        "pass@1": pytest.approx(0.15),
        "pass@5": pytest.approx((1 - 21 / 252) / 2),
    }
    assert table["int"]["pass@5"] == 1.0
    assert accuracy(scores(True, False, None, True)) == 0.5  # a skipped sample is not a pass
    with pytest.raises(ValueError):
        mean_pass_at_k([], 1)


def test_standard_errors() -> None:
    values = [1.0, 0.0, 0.0, 1.0, 1.0]
    expected = statistics.stdev(values) / math.sqrt(len(values))
    assert standard_error(values) == pytest.approx(expected)
    assert standard_error([0.5]) is None and standard_error([]) is None
    # pass@1 of one sample per item: the per-item verdicts' standard error
    counts = [Counts(1, int(value)) for value in values]
    assert pass_at_k_stderr(counts, 1) == pytest.approx(expected)
    # pass@5 of 10 samples: the spread of the per-item estimates
    many = [Counts(10, 3), Counts(10, 0), Counts(10, 10)]
    per_item = [pass_at_k(10, c, 5) for c in (3, 0, 10)]
    assert pass_at_k_stderr(many, 5) == pytest.approx(statistics.stdev(per_item) / math.sqrt(3))
    assert stderr_table({"a": Counts(2, 1), "b": Counts(2, 2)}, [1]) == {
        "pass@1": pytest.approx(0.25)
    }
    # the jackknife of a mean is the mean's standard error
    left_out = [statistics.fmean(values[:i] + values[i + 1 :]) for i in range(len(values))]
    assert jackknife_stderr(left_out) == pytest.approx(expected)
    assert jackknife_stderr([0.3]) is None
