"""Verified equivalent implementations of a program.

:func:`make_variants` draws random compositions of :data:`~.rewrites.REWRITES` (plus candidates
the caller brings, e.g. LLM rewrites), keeps those that pass CoRE's filters and agree with their
original in the sandbox on the problem's calls and on mutated calls, and says why it rejected
the others::

    search = make_variants(originals, entry, calls, pool, rng, wanted=4, preamble=PREAMBLE)
    search.variants  # list[Variant], each checked equivalent in the sandbox and past CoRE's filters
    search.rejected  # Counter: reason -> count (no_change, invalid, not_equivalent, undecided,
                     # jaccard, complexity, duplicate, and the reasons ``check`` returns)

Sandbox work is batched: each original runs once on the test calls, and each round runs all
its candidates in one :meth:`Pool.run_all`. The search is deterministic for a given generator
state and inputs (candidates are drawn, checked and kept in a fixed order).
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from codereasoner.execution import Batch, Call, Executor, Limits, Program
from codereasoner.programs.equivalence import (
    CC_MIN,
    JACCARD_MAX,
    Mismatch,
    compare,
    cyclomatic_complexity,
    hit_limit,
    jaccard_similarity,
    mutated_calls,
)
from codereasoner.programs.rewrites import REWRITES, compose

__all__ = ["Disagreement", "Variant", "VariantSearch", "make_variants"]

LLM_KIND = "llm"
RENAME_RATE = 0.9  # rename in almost every composition: CoRE's J <= 0.7 needs surface change
KINDS_PER_COMPOSITION = (3, 10)
MUTANTS_PER_CALL = 3
MISMATCHES_KEPT = 5
DEFAULT_ATTEMPTS = 256
ROUND_SIZE = 12
DIVERSE_ROUNDS = 2  # rounds spent looking for new kind sets before repeats may fill the rest


@dataclass(frozen=True)
class Variant:
    """A kept implementation: checked equivalent to ``originals[original]``."""

    source: str
    kinds: tuple[str, ...]  # rewrite kinds applied, in order (LLM_KIND for an LLM rewrite)
    original: int  # index into the originals of the program it derives from
    jaccard: float  # token-set Jaccard similarity to that original
    complexity: int  # cyclomatic complexity


@dataclass(frozen=True)
class Disagreement:
    """A candidate rejected as not equivalent, with the first call on which it differs."""

    source: str
    kinds: tuple[str, ...]
    original: int
    mismatch: Mismatch


@dataclass
class VariantSearch:
    variants: list[Variant] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    tried: int = 0
    mismatches: list[Disagreement] = field(default_factory=list)  # the first few


@dataclass(frozen=True)
class _Candidate:
    source: str
    kinds: tuple[str, ...]
    original: int


def make_variants(
    originals: Sequence[str],
    entry: str,
    calls: Sequence[Call],
    pool: Executor,
    rng: random.Random,
    *,
    wanted: int = 4,
    preamble: str = "",
    limits: Limits | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    check: Callable[[str], str | None] | None = None,
    candidates: Sequence[tuple[str, int]] = (),
    jaccard_max: float = JACCARD_MAX,
    cc_min: int = CC_MIN,
) -> VariantSearch:
    """Up to ``wanted`` verified variants of ``originals`` (implementations of one problem).

    ``candidates`` are (source, original index) pairs from elsewhere (kind ``"llm"``), tried
    first; then up to ``attempts`` random rewrite compositions, applied to each original in
    turn. ``check(source)`` may reject a candidate: it returns the reason, or None to keep it.
    """
    search = VariantSearch()
    if not originals or wanted <= 0:
        return search
    tests = _test_calls(originals, calls, rng)
    expected = pool.run_all(Batch(_program(s, entry, preamble), tests, limits) for s in originals)
    # a call on which an original hits a limit observes nothing (and would cost every variant
    # the limit again): each original's variants run only on the calls it completed
    usable = [
        [t for t, r in zip(tests, results, strict=True) if not hit_limit(r)] for results in expected
    ]
    outcomes = [[r for r in results if not hit_limit(r)] for results in expected]
    seen = {_normal(source) for source in originals}
    reserve: list[Variant] = []  # verified, but with a kind set already kept
    pending = [_Candidate(source, (LLM_KIND,), index) for source, index in candidates]
    drawn = rounds = 0
    while len(search.variants) < wanted and (pending or drawn < attempts):
        if rounds >= DIVERSE_ROUNDS and len(search.variants) + len(reserve) >= wanted:
            break
        rounds += 1
        while len(pending) < ROUND_SIZE and drawn < attempts:
            index = drawn % len(originals)
            pending.append(_compose(originals[index], index, rng))
            drawn += 1
        round_, pending = pending[:ROUND_SIZE], pending[ROUND_SIZE:]
        screened: list[Variant] = []
        for candidate in round_:
            search.tried += 1
            screen = _screen(candidate, originals, seen, entry, check, jaccard_max, cc_min)
            if isinstance(screen, str):
                search.rejected[screen] += 1
            else:
                seen.add(_normal(screen.source))
                screened.append(screen)
        ran = pool.run_all(
            Batch(_program(v.source, entry, preamble), usable[v.original], limits) for v in screened
        )
        for variant, results in zip(screened, ran, strict=True):
            verdict = compare(usable[variant.original], outcomes[variant.original], results)
            if verdict.mismatches:
                search.rejected["not_equivalent"] += 1
                if len(search.mismatches) < MISMATCHES_KEPT:
                    search.mismatches.append(
                        Disagreement(
                            variant.source, variant.kinds, variant.original, verdict.mismatches[0]
                        )
                    )
            elif verdict.undecided:
                search.rejected["undecided"] += 1
            elif len(search.variants) < wanted and _new_kind_set(variant, search.variants):
                search.variants.append(variant)
            else:
                reserve.append(variant)
    # diversity first; then verified variants whose kind set is already kept fill the rest
    for variant in reserve:
        if len(search.variants) >= wanted:
            break
        search.variants.append(variant)
    return search


def _program(source: str, entry: str, preamble: str) -> Program:
    return Program(source, entry, preamble=preamble)


def _test_calls(originals: Sequence[str], calls: Sequence[Call], rng: random.Random) -> list[Call]:
    """The problem's calls and mutated calls, without repeats, in a fixed order."""
    tests: dict[str, Call] = {}
    for call in calls:
        tests.setdefault(call.render(), call)
    for source in originals:
        for call in mutated_calls(source, calls, rng, MUTANTS_PER_CALL):
            tests.setdefault(call.render(), call)
    return list(tests.values())


def _compose(source: str, index: int, rng: random.Random) -> _Candidate:
    others = sorted(kind for kind in REWRITES if kind != "rename")
    size = rng.randint(*KINDS_PER_COMPOSITION)
    if rng.random() < RENAME_RATE:
        kinds = ["rename", *rng.sample(others, size - 1)]
    else:
        kinds = rng.sample(others, size)
    rng.shuffle(kinds)
    rewritten, applied = compose(source, kinds, rng)
    return _Candidate(rewritten, tuple(applied), index)


def _screen(
    candidate: _Candidate,
    originals: Sequence[str],
    seen: set[str],
    entry: str,
    check: Callable[[str], str | None] | None,
    jaccard_max: float,
    cc_min: int,
) -> Variant | str:
    """The candidate as a variant if it passes the static checks, or the rejection reason."""
    if not candidate.kinds:
        return "no_change"
    try:
        normal = _normal(candidate.source)
    except (SyntaxError, ValueError):
        return "invalid"
    if normal == _normal(originals[candidate.original]):
        return "no_change"
    if normal in seen:
        return "duplicate"
    if check is not None and (reason := check(candidate.source)) is not None:
        return reason
    original = originals[candidate.original]
    jaccard = jaccard_similarity(original, candidate.source)
    if jaccard > jaccard_max:
        return "jaccard"
    try:
        complexity = cyclomatic_complexity(candidate.source, entry)
    except ValueError:
        return "invalid"
    if complexity < cc_min:
        return "complexity"
    return Variant(candidate.source, candidate.kinds, candidate.original, jaccard, complexity)


def _normal(source: str) -> str:
    return ast.unparse(ast.parse(source))


def _new_kind_set(variant: Variant, kept: Sequence[Variant]) -> bool:
    return all(set(variant.kinds) != set(other.kinds) for other in kept)
