"""Which run is best, when the data can tell: a run is marked best only when it holds the top
value alone and an exact paired sign test over the items both runs hold (McNemar's exact test
when each item has one sample) separates it from every other compared run at the 5% level.
2 of 20 against 0 of 20 is no such case (p = 0.5)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from codereasoner.tasks import Score

ALPHA = 0.05
PAIRED_TEST = "exact paired sign test over common items (McNemar's for one sample), p < 0.05"

ItemScores = Mapping[str, float]  # item id -> the item's share of correct samples


def item_scores(verdicts: Mapping[str, Sequence[Score]]) -> dict[str, float] | None:
    """Each item's share of correct samples; None when no verdicts are stored."""
    if not verdicts:
        return None
    return {
        item_id: sum(score.correct for score in scores) / len(scores)
        for item_id, scores in verdicts.items()
        if scores
    }


def sign_test(wins: int, losses: int) -> float:
    """The exact two-sided p-value of ``wins`` against ``losses`` under a fair coin."""
    trials = wins + losses
    if trials == 0:
        return 1.0
    tail = sum(math.comb(trials, k) for k in range(min(wins, losses) + 1)) / 2**trials
    return min(1.0, 2 * tail)


def separates(better: ItemScores, other: ItemScores) -> bool:
    """``better`` wins the paired test against ``other`` over the items both hold."""
    common = better.keys() & other.keys()
    wins = sum(better[key] > other[key] for key in common)
    losses = sum(better[key] < other[key] for key in common)
    return wins > losses and sign_test(wins, losses) < ALPHA


def paired_best(values: Sequence[float | None], scores: Sequence[ItemScores | None]) -> set[int]:
    """The index of the single highest value when the paired test separates it from every
    other run with a value; empty otherwise (a tie, one run, or verdicts not stored)."""
    present = [index for index, value in enumerate(values) if value is not None]
    if len(present) < 2:
        return set()
    top = max(values[index] for index in present)  # type: ignore[type-var]
    leaders = [index for index in present if values[index] == top]
    if len(leaders) != 1:
        return set()
    leader = leaders[0]
    mine = scores[leader] if leader < len(scores) else None
    if mine is None:
        return set()
    for index in present:
        if index == leader:
            continue
        theirs = scores[index] if index < len(scores) else None
        if theirs is None or not separates(mine, theirs):
            return set()
    return {leader}


def merged(parts: Mapping[str, ItemScores | None]) -> dict[str, float] | None:
    """Item scores of several benchmarks keyed ``benchmark/id`` (for an average over them);
    None when any part has no verdicts."""
    found: dict[str, float] = {}
    for benchmark, part in parts.items():
        if part is None:
            return None
        found.update({f"{benchmark}/{key}": value for key, value in part.items()})
    return found
