"""pass@k, accuracy and per-category breakdowns over scored samples (fractions in [0, 1]).

No sample is dropped: an unparsable answer is a scored failure. The only exception is upstream's
anti-copy rule, reproduced on request (``copies="official"``) and always labelled.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from codereasoner.settings import SettingError, check_at_least
from codereasoner.tasks import Score

COPY_POLICIES = ("official", "fail")


@dataclass(frozen=True)
class Counts:
    """Samples scored (``n``) and passed (``c``) for one item."""

    n: int
    c: int


def pass_at_k(n: int, c: int, k: int, *, small_n: str = "error") -> float:
    """Unbiased pass@k (Chen et al. 2021): ``1 - C(n-c, k) / C(n, k)``.

    1.0 when ``n - c < k`` (every k-subset holds a pass); 0.0 when ``c == 0 and n >= k``.
    With ``n < k`` the estimator is undefined: ``small_n="error"`` raises ValueError,
    ``small_n="upstream"`` follows CRUXEval/LiveCodeBench (1.0, since ``n - c < k``).
    Computed in upstream's product form ``1 - prod(1 - k/i, i = n-c+1 .. n)``.
    """
    check_at_least(1, k=k)
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if n < k and small_n != "upstream":
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def item_counts(scores: Sequence[Score], copies: str = "official") -> Counts:
    """``n`` and ``c`` for one item's scores.

    ``copies="fail"``: every sample counts (skipped copies are failures). ``"official"``:
    upstream's shrinking n: skipped samples leave ``n`` when another sample passes; with no
    pass, every sample counts as a failure.
    """
    if copies not in COPY_POLICIES:
        raise SettingError("copies", copies, f"one of {', '.join(COPY_POLICIES)}")
    passed = sum(1 for score in scores if score.correct and not score.skipped)
    if copies == "fail" or passed == 0:
        return Counts(len(scores), passed)
    return Counts(sum(1 for score in scores if not score.skipped), passed)


def mean_pass_at_k(counts: Iterable[Counts], k: int, *, small_n: str = "error") -> float:
    """The mean of per-item pass@k."""
    values = [pass_at_k(entry.n, entry.c, k, small_n=small_n) for entry in counts]
    if not values:
        raise ValueError("no items to average")
    return math.fsum(values) / len(values)


def accuracy(scores: Iterable[Score]) -> float:
    """The fraction of samples judged correct (skipped samples count as failures)."""
    flags = [score.correct and not score.skipped for score in scores]
    if not flags:
        raise ValueError("no samples")
    return sum(flags) / len(flags)


def pass_table(
    counts: Mapping[str, Counts], ks: Sequence[int], *, small_n: str = "error"
) -> dict[str, float]:
    """``{"pass@1": ..., "pass@5": ...}`` over all items, as fractions."""
    return {f"pass@{k}": mean_pass_at_k(counts.values(), k, small_n=small_n) for k in ks}


def breakdown(
    counts: Mapping[str, Counts],
    categories: Mapping[str, str],
    ks: Sequence[int],
    *,
    small_n: str = "error",
) -> dict[str, dict[str, float]]:
    """Per category (sorted by name): the item count and pass@k fractions."""
    groups: dict[str, list[Counts]] = {}
    for item_id, entry in counts.items():
        groups.setdefault(categories.get(item_id, "?"), []).append(entry)
    table = {}
    for name in sorted(groups):
        rows: dict[str, float] = {"items": len(groups[name])}
        for k in ks:
            rows[f"pass@{k}"] = mean_pass_at_k(groups[name], k, small_n=small_n)
        table[name] = rows
    return table


def standard_error(values: Sequence[float]) -> float | None:
    """The standard error of the mean of ``values``: their sample standard deviation over
    sqrt(len); None for fewer than two values (no spread to estimate)."""
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    variance = math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return math.sqrt(variance / len(values))


def pass_at_k_stderr(counts: Iterable[Counts], k: int, *, small_n: str = "error") -> float | None:
    """The standard error of :func:`mean_pass_at_k` over items (as lm-evaluation-harness and
    evalplus report it): the per-item pass@k values' :func:`standard_error`."""
    return standard_error([pass_at_k(entry.n, entry.c, k, small_n=small_n) for entry in counts])


def stderr_table(
    counts: Mapping[str, Counts], ks: Sequence[int], *, small_n: str = "error"
) -> dict[str, float | None]:
    """``{"pass@1": se, ...}``: :func:`pass_at_k_stderr` for each of ``ks``, as fractions."""
    return {f"pass@{k}": pass_at_k_stderr(counts.values(), k, small_n=small_n) for k in ks}


Z_95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval


def wilson_interval(proportion: float, count: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion over ``count`` items (for pass@k with several
    samples, of the mean per-item value): unlike the Wald interval (value +- z se) it never
    collapses to a point at 0 or 1, and never leaves [0, 1]."""
    if count < 1:
        return 0.0, 1.0
    p = min(max(proportion, 0.0), 1.0)
    spread = z * z / count
    centre = (p + spread / 2) / (1 + spread)
    half = z * math.sqrt(p * (1 - p) / count + spread / (4 * count)) / (1 + spread)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))  # p inside, exactly


def jackknife_stderr(estimates: Sequence[float]) -> float | None:
    """The delete-one-group jackknife standard error from the estimates with each group left
    out in turn (for metrics that are not a mean over independent items); None for fewer
    than two groups."""
    groups = len(estimates)
    if groups < 2:
        return None
    mean = math.fsum(estimates) / groups
    return math.sqrt((groups - 1) / groups * math.fsum((value - mean) ** 2 for value in estimates))
