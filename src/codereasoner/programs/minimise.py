"""Test minimisation: the fewest inputs reaching the maximal line and branch coverage across a
problem's implementations, by greedy set cover (CoRE §3).

    features = coverage_features(trace)        # set of hashable line/branch features
    chosen = minimal_tests(coverage)           # coverage[impl][test] -> features; sorted test indexes

A branch is an arc: a line and the next line its frame ran (``None`` where the frame ended), so
both outcomes of a test and a loop's exit are told apart. Beyond CoRE's line coverage, loop
boundaries count too (the classic zero-one-many loop criterion): a loop whose body ran 0, 1 or
several times on some entry is a feature each, so a test where a loop is skipped is kept beside
one where it runs. Features of different implementations
never merge: a test that covers a line of one implementation adds that line whatever the others
cover.
"""

from __future__ import annotations

from collections.abc import Sequence

from codereasoner.trace import ExecutionTrace

__all__ = ["Feature", "coverage_features", "minimal_tests"]

Feature = tuple[object, ...]


def coverage_features(trace: ExecutionTrace) -> frozenset[Feature]:
    """("line", frame, line) for every line that ran and ("arc", frame, line, next line) for
    every transition within a frame instance (next line ``None``: the frame ended there)."""
    found: set[Feature] = set()
    for step, (line, following) in zip(trace.steps, trace.path(), strict=True):
        found.add(("line", step.frame, line))
        found.add(("arc", step.frame, line, following))
    return frozenset(found | _loop_boundaries(trace))


def _loop_boundaries(trace: ExecutionTrace) -> set[Feature]:
    """("loop", frame, header line, "0" | "1" | "2+"): how many iterations ran a body line, per
    entry of a loop (an entry: the frame instance and the enclosing loops' iterations). The
    tracer counts a header's first test as iteration 1 even when the body never runs."""
    bodies: dict[tuple[object, ...], set[int]] = {}
    frames: dict[tuple[object, ...], str] = {}
    for step in trace.steps:
        for depth, (header, iteration) in enumerate(step.loops):
            entry = (step.fid, step.loops[:depth], header)
            frames[entry] = step.frame
            runs = bodies.setdefault(entry, set())
            if step.line != header:
                runs.add(iteration)
    return {
        ("loop", frames[entry], entry[2], str(min(len(runs), 2)) + ("+" if len(runs) > 1 else ""))
        for entry, runs in bodies.items()
    }


def minimal_tests(coverage: Sequence[Sequence[frozenset[Feature]]]) -> list[int]:
    """Greedy set cover of every (implementation, feature) pair the tests reach.

    ``coverage[impl][test]`` is what implementation ``impl`` covers on test ``test`` (every
    implementation lists the same tests). Each round takes the test adding the most uncovered
    pairs, the lower index on a tie, until nothing is left to cover; a test that adds nothing is
    never taken. The chosen indexes come back sorted; no implementations or tests give []."""
    tests = max((len(row) for row in coverage), default=0)
    if any(len(row) != tests for row in coverage):
        raise ValueError("every implementation must list the same tests")
    reach = [
        {(impl, feature) for impl, row in enumerate(coverage) for feature in row[test]}
        for test in range(tests)
    ]
    uncovered: set[tuple[int, Feature]] = set().union(*reach) if reach else set()
    chosen: list[int] = []
    while uncovered:
        gains = [len(pairs & uncovered) for pairs in reach]
        best = max(range(tests), key=lambda test: (gains[test], -test))
        chosen.append(best)
        uncovered -= reach[best]
    return sorted(chosen)
