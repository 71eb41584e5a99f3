"""Verified variants: CoRE's filters, sandboxed equivalence, rejection reasons, determinism, and
at least four variants for every one of CoRE's 60 problems."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass

import pytest

from codereasoner.execution import Call, Limits, Pool, parse_call
from codereasoner.families.core.benchmark import problem_key
from codereasoner.families.core.programs import entry_point
from codereasoner.programs import (
    CC_MIN,
    JACCARD_MAX,
    REWRITES,
    cyclomatic_complexity,
    equivalent,
    jaccard_similarity,
    make_variants,
)
from tests.conftest import SHARED_DATA, synth_cases

if not (SHARED_DATA / "core" / "core_qa.json").exists():
    pytest.skip("needs ../shared/data (core, cruxeval)", allow_module_level=True)
from tests.programs.test_llm_rewrite import EQUIVALENT as REWRITTEN
from tests.programs.test_llm_rewrite import ORIGINAL

pytestmark = pytest.mark.full_data

PREAMBLE = "from typing import *"
CALLS = [parse_call("f([1, 2, 3, 4])"), parse_call("f([-2, 6, 7])")]


@dataclass(frozen=True)
class Problem:
    key: str
    originals: tuple[str, ...]
    entry: str
    calls: tuple[Call, ...]


def core_problems() -> list[Problem]:
    records = json.loads((SHARED_DATA / "core" / "core_qa.json").read_text())
    grouped: dict[str, dict[str, set[str]]] = {}
    for record in records:
        problem = grouped.setdefault(problem_key(record["id"]), {})
        problem.setdefault(record["source_code"], set()).add(record["input"])
    problems = []
    for key, sources in sorted(grouped.items()):
        originals = tuple(sorted(sources))
        entry = entry_point(originals[0])
        assert entry is not None
        inputs = sorted(set().union(*sources.values()))
        calls = tuple(parse_call(f"{entry}({text})") for text in inputs)
        problems.append(Problem(key, originals, entry, calls))
    return problems


def test_every_core_problem_gets_four_verified_variants(pool: Pool) -> None:
    problems = core_problems()
    assert len(problems) == 60
    short = []
    kept = []
    for problem in problems:
        search = make_variants(
            problem.originals,
            problem.entry,
            problem.calls,
            pool,
            random.Random(problem.key),
            wanted=4,
            preamble=PREAMBLE,
        )
        assert search.rejected["not_equivalent"] == 0, search.mismatches[:1]
        if len(search.variants) < 4:
            short.append((problem.key, len(search.variants), dict(search.rejected)))
        for variant in search.variants:
            original = problem.originals[variant.original]
            assert variant.jaccard == jaccard_similarity(original, variant.source) <= JACCARD_MAX
            assert variant.complexity == cyclomatic_complexity(variant.source, problem.entry)
            assert variant.complexity >= CC_MIN
            assert variant.kinds and set(variant.kinds) <= set(REWRITES)
            kept.append((problem, original, variant.source))
    assert not short, short
    # the property, checked again from scratch: every kept variant agrees with its original
    for problem, original, source in kept:
        verdict = equivalent(
            original, source, problem.calls, pool, entry=problem.entry, preamble=PREAMBLE
        )
        assert verdict.ok and not verdict.undecided, (problem.key, source, verdict)


def test_variants_of_synthesized_programs_agree_on_every_input(
    pool: Pool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Any disagreement is a failure here: with the filters off, every candidate the search
    runs must agree with its original on the recorded and the mutated inputs."""
    out = synth_cases(tmp_path_factory.mktemp("variants") / "synth", n=30, seed=7)
    inputs: dict[str, list[Call]] = {}
    for line in (out / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        inputs.setdefault(case["code"], []).append(parse_call(case["call"]))
    checked = 0
    for number, (code, calls) in enumerate(sorted(inputs.items())):
        search = make_variants(
            [code], "f", calls, pool, random.Random(number), wanted=3, jaccard_max=1.0, cc_min=0
        )
        assert search.rejected["not_equivalent"] == 0, search.mismatches[:1]
        for variant in search.variants:
            verdict = equivalent(code, variant.source, calls, pool)
            assert verdict.ok, (code, variant.source, verdict.mismatches[:1])
            checked += 1
    assert checked >= 30


def test_the_search_is_deterministic(pool: Pool) -> None:
    problem = core_problems()[0]

    def run() -> tuple[object, ...]:
        search = make_variants(
            problem.originals,
            problem.entry,
            problem.calls,
            pool,
            random.Random(3),
            preamble=PREAMBLE,
        )
        return (search.variants, dict(search.rejected), search.tried)

    assert run() == run()


def test_kept_variants_prefer_different_kind_sets(pool: Pool) -> None:
    problem = next(p for p in core_problems() if p.key == "3508")
    search = make_variants(
        problem.originals, problem.entry, problem.calls, pool, random.Random(0), preamble=PREAMBLE
    )
    kinds = [frozenset(v.kinds) for v in search.variants]
    assert len(kinds) == 4 and len(set(kinds)) == 4
    for first, second in itertools.combinations(search.variants, 2):
        assert first.source != second.source


def test_rejection_reasons(pool: Pool) -> None:
    unchanged = ORIGINAL.replace("    return total", "    return (total)")
    simple = "def f(values):\n    return sum(v for v in values if v > 0 if v % 2 == 0)\n"
    broken = "def f(values:\n"
    candidates = [
        (unchanged, 0),  # the same program after normalisation
        (broken, 0),
        (REWRITTEN, 0),
        (REWRITTEN, 0),  # again: a duplicate
        (ORIGINAL.replace("x % 2", "x % 3"), 0),  # too similar on the surface
        (simple, 0),  # equivalent, complexity 4: kept
    ]
    search = make_variants(
        [ORIGINAL], "f", CALLS, pool, random.Random(0), attempts=0, candidates=candidates
    )
    assert search.tried == len(candidates)
    assert search.rejected["no_change"] == 1
    assert search.rejected["invalid"] == 1
    assert search.rejected["duplicate"] == 1
    assert search.rejected["jaccard"] == 1
    assert [v.source for v in search.variants] == [REWRITTEN, simple]
    assert all(v.kinds == ("llm",) for v in search.variants)
    low = make_variants(
        [ORIGINAL],
        "f",
        CALLS,
        pool,
        random.Random(0),
        attempts=0,
        candidates=[(simple, 0)],
        cc_min=5,
    )
    assert low.rejected == {"complexity": 1} and not low.variants


def test_check_rejects_with_its_own_reason(pool: Pool) -> None:
    renamed = REWRITTEN.replace("def f(", "def g(")
    search = make_variants(
        [ORIGINAL],
        "f",
        CALLS,
        pool,
        random.Random(0),
        attempts=8,
        candidates=[(renamed, 0)],
        check=lambda source: None if "def f(" in source else "entry_point",
    )
    assert search.rejected["entry_point"] == 1
    assert all("def f(" in v.source for v in search.variants)


def test_a_variant_that_hits_a_limit_is_undecided(pool: Pool) -> None:
    looping = REWRITTEN.replace(
        "    return sum(kept)", "    while kept:\n        pass\n    return 0"
    )
    search = make_variants(
        [ORIGINAL],
        "f",
        CALLS[:1],
        pool,
        random.Random(0),
        attempts=0,
        candidates=[(looping, 0)],
        limits=Limits(timeout_s=0.3),
    )
    assert search.rejected == {"undecided": 1}
    assert not search.variants and not search.mismatches
