"""Confidence intervals for ``bench/learn.py``: a program-level bootstrap.

The items of one program (its arguments, both directions) are not independent draws, so the
bootstrap resamples programs, never items: a replicate draws each seed's programs with
replacement and takes the share of right items among the drawn programs' items. Over several
seeds a replicate draws every seed's programs independently and averages the seeds. Every arm of
a seed is scored on the same items, so a difference between two arms uses the same draws for
both (a paired interval).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

LEVEL = 0.95


@dataclass(frozen=True)
class Scored:
    """One arm's verdicts on one seed's evaluated items, with each item's program."""

    right: tuple[bool, ...]
    programs: tuple[str, ...]

    @property
    def accuracy(self) -> float:
        return sum(self.right) / len(self.right) if self.right else 0.0


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def text(self, signed: bool = False) -> str:
        sign = "+" if signed else ""
        return f"{self.estimate:{sign}.3f} [{self.low:{sign}.3f}, {self.high:{sign}.3f}]"


Seeds = Sequence[Mapping[str, Scored]]  # per seed: each arm's verdicts on that seed's items


def draws(seeds: Seeds, replicates: int, seed: int) -> dict[str, NDArray[np.float64]]:
    """Each arm's accuracy, averaged over the seeds, in every bootstrap replicate."""
    rng = np.random.default_rng(seed)
    arms = list(seeds[0])
    totals = {arm: np.zeros(replicates) for arm in arms}
    for by_arm in seeds:
        programs = by_arm[arms[0]].programs
        names = sorted(set(programs))
        index = np.array([names.index(program) for program in programs])
        picks = rng.integers(0, len(names), size=(replicates, len(names)))
        # how often each program is drawn in each replicate
        weights = np.stack([np.bincount(row, minlength=len(names)) for row in picks])
        items = weights @ np.bincount(index, minlength=len(names))
        for arm in arms:
            if by_arm[arm].programs != programs:
                raise ValueError(f"{arm} was scored on other items than {arms[0]}")
            right = np.bincount(
                index, weights=np.array(by_arm[arm].right, float), minlength=len(names)
            )
            totals[arm] += (weights @ right) / items / len(seeds)
    return totals


def interval(estimate: float, replicates: NDArray[np.float64]) -> Interval:
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return Interval(estimate, float(low), float(high))


def mean_accuracy(seeds: Seeds, arm: str) -> float:
    return sum(by_arm[arm].accuracy for by_arm in seeds) / len(seeds)


def accuracies(seeds: Seeds, replicates: int, seed: int) -> dict[str, Interval]:
    """Each arm's accuracy (the mean over seeds) with its bootstrap interval."""
    drawn = draws(seeds, replicates, seed)
    return {arm: interval(mean_accuracy(seeds, arm), drawn[arm]) for arm in drawn}


def difference(seeds: Seeds, better: str, than: str, replicates: int, seed: int) -> Interval:
    """``better``'s accuracy minus ``than``'s (means over seeds), with a paired interval."""
    drawn = draws(seeds, replicates, seed)
    estimate = mean_accuracy(seeds, better) - mean_accuracy(seeds, than)
    return interval(estimate, drawn[better] - drawn[than])


T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}  # Student's t, by degrees of freedom


def seed_interval(per_seed: Sequence[float]) -> Interval:
    """The mean of per-seed values (differences, accuracies) with a 95 % t-interval over the
    seeds (a point with one seed)."""
    count = len(per_seed)
    mean = sum(per_seed) / count
    if count < 2:
        return Interval(mean, mean, mean)
    sd = math.sqrt(sum((value - mean) ** 2 for value in per_seed) / (count - 1))
    half = T_975.get(count - 1, 1.96) * sd / math.sqrt(count)
    return Interval(mean, mean - half, mean + half)
