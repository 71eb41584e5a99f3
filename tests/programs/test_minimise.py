"""Test minimisation by greedy set cover over line and branch coverage (CoRE §3)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from codereasoner.execution import Pool, Program, TraceOptions, parse_call
from codereasoner.programs import coverage_features, minimal_tests, mutated_calls
from codereasoner.programs.minimise import Feature
from codereasoner.trace import trace_batches, trace_call
from tests.programs.test_variants import core_problems

Coverage = Sequence[Sequence[frozenset[Feature]]]


def _sets(*tests: str) -> list[frozenset[Feature]]:
    """One implementation's coverage, a feature per letter: ``"ab"`` covers a and b."""
    return [frozenset((letter,) for letter in test) for test in tests]


def _union(coverage: Coverage, chosen: Sequence[int]) -> set[tuple[int, Feature]]:
    return {(impl, f) for impl, row in enumerate(coverage) for t in chosen for f in row[t]}


def _smallest_cover(coverage: Coverage) -> int:
    tests = range(len(coverage[0]))
    full = _union(coverage, list(tests))
    return next(
        size
        for size in range(len(tests) + 1)
        for subset in itertools.combinations(tests, size)
        if _union(coverage, subset) == full
    )


def test_empty_inputs_choose_nothing() -> None:
    assert minimal_tests([]) == []
    assert minimal_tests([[]]) == []
    assert minimal_tests([_sets("", "")]) == []


def test_tests_that_add_nothing_are_left_out() -> None:
    coverage = [_sets("a", "ab", "b", "", "c")]
    assert minimal_tests(coverage) == [1, 4]


def test_ties_go_to_the_lower_index() -> None:
    assert minimal_tests([_sets("ab", "cd", "ab", "cd")]) == [0, 1]
    assert minimal_tests([_sets("x", "ab", "ab")]) == [0, 1]


def test_implementations_never_merge_their_features() -> None:
    # test 0 covers "a" of the first implementation only; test 1 covers "a" of the second
    coverage = [_sets("a", ""), _sets("", "a")]
    assert minimal_tests(coverage) == [0, 1]


def test_greedy_is_optimal_on_a_laminar_family() -> None:
    """Greedy set cover is optimal when any two tests' feature sets are nested or disjoint
    (taking the largest set of a chain never costs an extra test): checked against brute force
    here, where greedy's first pick (the biggest) is not a test an index-order scan would keep."""
    coverage = [
        _sets("a", "ab", "abcd", "e", "ef", "g", "abcd"),
        _sets("", "", "xy", "z", "z", "", "x"),
    ]
    chosen = minimal_tests(coverage)
    assert chosen == [2, 4, 5]
    assert len(chosen) == _smallest_cover(coverage)
    assert _union(coverage, chosen) == _union(coverage, range(7))


def test_random_covers_reach_the_full_union_with_no_useless_test() -> None:
    rng = random.Random(16)
    for _ in range(200):
        tests = rng.randint(1, 7)
        coverage = [
            [
                frozenset((rng.randint(0, 9),) for _ in range(rng.randint(0, 4)))
                for _ in range(tests)
            ]
            for _ in range(rng.randint(1, 3))
        ]
        chosen = minimal_tests(coverage)
        assert chosen == sorted(set(chosen))
        assert _union(coverage, chosen) == _union(coverage, range(tests))
        assert len(chosen) >= _smallest_cover(coverage)
        assert all(_union(coverage, [test]) for test in chosen)


SIGN = """\
def f(x):
    if x > 0:
        return 'positive'
    return 'other'
"""


def test_coverage_features_tell_branches_apart(pool: Pool) -> None:
    program = Program(SIGN, "f")
    positive, negative = (
        coverage_features(traced.trace)
        for traced in (trace_call(pool, program, parse_call(f"f({x})")) for x in (5, -5))
        if traced.trace is not None
    )
    assert ("line", "f", 2) in positive and ("line", "f", 2) in negative
    assert ("arc", "f", 2, 3) in positive and ("arc", "f", 2, 3) not in negative
    assert ("arc", "f", 2, 4) in negative and ("line", "f", 4) not in positive
    assert ("arc", "f", 3, None) in positive
    coverage = [[positive, negative, positive]]
    assert minimal_tests(coverage) == [0, 1]


COVERAGE_ONLY = TraceOptions(max_steps=2000, max_value_chars=16)  # lines matter, not values


def test_core_problems_keep_few_of_many_mutated_inputs(pool: Pool) -> None:
    before: list[int] = []
    after: list[int] = []
    for problem in core_problems():
        given = list(problem.calls)
        rng = random.Random(problem.key)
        calls = given + mutated_calls(problem.originals[0], given, rng, per_call=8)
        work = [
            (Program(source, problem.entry, preamble="from typing import *"), calls)
            for source in problem.originals
        ]
        coverage = [
            [frozenset() if t.trace is None else coverage_features(t.trace) for t in traced]
            for traced in trace_batches(pool, work, COVERAGE_ONLY)
        ]
        chosen = minimal_tests(coverage)
        assert _union(coverage, chosen) == _union(coverage, range(len(calls)))
        before.append(len(calls))
        after.append(len(chosen))
    mean_before, mean_after = sum(before) / len(before), sum(after) / len(after)
    print(f"tests per CoRE problem: {mean_before:.1f} -> {mean_after:.1f}")
    assert len(before) == 60
    assert mean_after < mean_before / 3
