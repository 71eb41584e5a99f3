"""Rewrites on CoRE's and CRUXEval's programs: each kind applies, parses and, in the real
sandbox, agrees with the original on the programs' inputs and on mutated inputs."""

from __future__ import annotations

import ast
import json
import random
from dataclasses import dataclass

import pytest

from codereasoner.execution import Call, CallSyntaxError, Pool, parse_call
from codereasoner.families.core.programs import entry_point
from codereasoner.programs import (
    CC_MIN,
    JACCARD_MAX,
    REWRITES,
    compose,
    cyclomatic_complexity,
    equivalent,
    jaccard_similarity,
    mutated_calls,
    passes_core_filters,
)
from tests.conftest import SHARED_DATA, synth_cases

pytestmark = pytest.mark.full_data

if not (SHARED_DATA / "core" / "core_qa.json").exists():
    pytest.skip("needs ../shared/data (core, cruxeval)", allow_module_level=True)

CRUX_PROGRAMS = 250  # the first ones of the file: enough for every kind, quick to run
# kinds whose input shape the benchmark programs rarely hold: tested on a forward kind's output
INVERSE_OF = {
    "while_to_for": "for_to_while",
    "inline_helper": "extract_helper",
    "augassign_contract": "augassign_expand",
}

# kinds whose input no program of a corpus holds (tested on the other corpus)
CORPUS_LACKS = {("drop_annotations", "cruxeval"): "CRUXEval's programs carry no annotations"}


@dataclass(frozen=True)
class Program:
    source: str
    entry: str
    calls: tuple[Call, ...]
    preamble: str = ""


def _core() -> list[Program]:
    records = json.loads((SHARED_DATA / "core" / "core_qa.json").read_text())
    inputs: dict[str, set[str]] = {}
    for record in records:
        inputs.setdefault(record["source_code"], set()).add(record["input"])
    programs = []
    for source, texts in inputs.items():
        entry = entry_point(source)
        assert entry is not None
        calls = tuple(parse_call(f"{entry}({text})") for text in sorted(texts))
        programs.append(Program(source, entry, calls, "from typing import *"))
    return programs


def _cruxeval() -> list[Program]:
    lines = (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").read_text().splitlines()
    programs = []
    for line in lines[:CRUX_PROGRAMS]:
        record = json.loads(line)
        try:
            call = parse_call(f"f({record['input']})")
        except CallSyntaxError:  # a few inputs are expressions, not literals
            continue
        programs.append(Program(record["code"], "f", (call,)))
    return programs


CORPORA = {"core": _core(), "cruxeval": _cruxeval()}


def _variants(kind: str, programs: list[Program]) -> list[tuple[Program, str]]:
    """(program, variant) for every program the kind applies to; an inverse kind starts from
    the forward kind's output, compared with the untouched original."""
    made = []
    for number, program in enumerate(programs):
        rng = random.Random(number)
        start = program.source
        if kind in INVERSE_OF:
            forward = REWRITES[INVERSE_OF[kind]](start, rng)
            if forward is None:
                continue
            start = forward
        variant = REWRITES[kind](start, rng)
        if variant is not None:
            made.append((program, variant))
    return made


def _check(pool: Pool, pairs: list[tuple[Program, str]]) -> list[str]:
    """Mismatches found in the sandbox (on the programs' and on mutated inputs), described."""
    failures = []
    decided = undecided = 0
    for number, (program, variant) in enumerate(pairs):
        ast.parse(variant)
        calls = [*program.calls]
        calls += mutated_calls(program.source, program.calls, random.Random(number), per_call=2)
        verdict = equivalent(
            program.source, variant, calls, pool, entry=program.entry, preamble=program.preamble
        )
        undecided += len(verdict.undecided)
        decided += verdict.calls - len(verdict.undecided)
        failures += [
            f"{program.source}\n--- variant ---\n{variant}\n--- {m.call}: {m.original} vs "
            f"{m.variant}"
            for m in verdict.mismatches
        ]
    assert undecided <= decided / 10, f"{undecided} calls hit a limit, {decided} decided"
    return failures


@pytest.mark.parametrize("corpus", sorted(CORPORA))
@pytest.mark.parametrize("kind", sorted(REWRITES))
def test_rewrite_applies_and_preserves_behaviour(pool: Pool, kind: str, corpus: str) -> None:
    if (kind, corpus) in CORPUS_LACKS:
        pytest.skip(CORPUS_LACKS[kind, corpus])
    pairs = _variants(kind, CORPORA[corpus])
    assert pairs, f"{kind} applies to no {corpus} program"
    failures = _check(pool, pairs)
    assert not failures, "\n\n".join(failures[:3])


def test_at_least_eight_kinds() -> None:
    forward = [kind for kind in REWRITES if kind not in INVERSE_OF]
    assert len(forward) >= 8


def test_composition_preserves_behaviour(pool: Pool) -> None:
    kinds = [k for k in REWRITES if k not in INVERSE_OF] + list(INVERSE_OF)
    pairs = []
    for number, program in enumerate(CORPORA["core"] + CORPORA["cruxeval"][:100]):
        rng = random.Random(number)
        order = rng.sample(kinds, len(kinds))
        variant, applied = compose(program.source, order, rng)
        if len(applied) >= 3:
            pairs.append((program, variant))
    assert len(pairs) >= 50
    failures = _check(pool, pairs)
    assert not failures, "\n\n".join(failures[:3])


def test_rewrite_returns_none_where_it_does_not_apply() -> None:
    source = "def f(x):\n    return x\n"
    for kind in ("for_to_while", "loop_to_comprehension", "early_return_to_flag", "de_morgan"):
        assert REWRITES[kind](source, random.Random(0)) is None
    assert REWRITES["rename"]("x = 1\n", random.Random(0)) is None
    assert REWRITES["rename"]("def f(:\n", random.Random(0)) is None


def test_rename_keeps_globals_builtins_and_attributes() -> None:
    source = "N = 3\n\ndef f(text):\n    out = text.upper()\n    return len(out) + N\n"
    variant = REWRITES["rename"](source, random.Random(1))
    assert variant is not None
    assert "len(" in variant and "N" in variant and ".upper()" in variant
    assert "out" not in variant or "text" not in variant


def test_conditions_are_negated_readably() -> None:
    source = "def f(a, b):\n    if a == 1 and b in 'xy':\n        return 1\n    else:\n        return 2\n"
    swapped = REWRITES["swap_if_else"](source, random.Random(0))
    assert swapped is not None and "if a != 1 or b not in 'xy':" in swapped
    morgan = REWRITES["de_morgan"](source, random.Random(0))
    assert morgan is not None and "if not (a != 1 or b not in 'xy'):" in morgan
    back = REWRITES["de_morgan"](morgan, random.Random(0))
    assert back is not None and "if a == 1 and b in 'xy':" in back


def test_accumulator_on_a_list_is_left_alone() -> None:
    source = "def f(xs):\n    r = []\n    for x in xs:\n        r += [x]\n    return r\n"
    assert REWRITES["augassign_expand"](source, random.Random(0)) is None


def test_for_to_while_needs_an_int_bound() -> None:
    source = "def f(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n"
    assert REWRITES["for_to_while"](source, random.Random(0)) is None  # n may be a float
    typed = source.replace("f(n)", "f(n: int)")
    assert "while" in (REWRITES["for_to_while"](typed, random.Random(0)) or "")


def test_equivalent_reports_a_difference(pool: Pool) -> None:
    calls = [parse_call("f(2)"), parse_call("f(0)")]
    same = equivalent("def f(x):\n    return x * 2", "def f(y):\n    return y + y", calls, pool)
    assert same.ok and same.calls == 2
    other = equivalent("def f(x):\n    return 2 // x", "def f(x):\n    return 1", calls, pool)
    assert [m.call for m in other.mismatches] == ["f(0)"]
    printed = equivalent("def f(x):\n    print(x)", "def f(x):\n    print(x, x)", calls, pool)
    assert len(printed.mismatches) == 2


def test_jaccard_similarity() -> None:
    assert jaccard_similarity("a + b", "a + b") == 1.0
    assert jaccard_similarity("a + b", "c - d") == 0.0
    assert jaccard_similarity("a + b", "a - b") == pytest.approx(2 / 4)
    assert jaccard_similarity("x = 1  # comment", "x = 1") == 1.0
    assert JACCARD_MAX == 0.7


def test_cyclomatic_complexity_matches_core_on_every_program() -> None:
    records = json.loads((SHARED_DATA / "core" / "core_qa.json").read_text())
    for record in records:
        meta = record["meta_data"]
        assert (
            cyclomatic_complexity(record["source_code"], meta["func_name"])
            == (meta["cyc_comlexity"])
        ), record["id"]


def test_cyclomatic_complexity_counts() -> None:
    assert cyclomatic_complexity("def f(x):\n    return x") == 1
    source = "def f(xs):\n    for x in xs:\n        if x > 0 and x < 9:\n            return x\n"
    assert cyclomatic_complexity(source) == 4
    assert CC_MIN == 3
    assert passes_core_filters("def f(a, b):\n    return a", source)
    assert not passes_core_filters(source, source)


def _never(kind: str, source: str) -> None:
    for seed in range(5):
        assert REWRITES[kind](source, random.Random(seed)) is None, source


def test_loops_whose_variable_a_closure_reads_are_left_alone() -> None:
    source = (
        "def f(n: int):\n    fs = []\n    for i in range(n):\n        fs.append(lambda: i)\n"
        "    return [g() for g in fs]\n"
    )
    _never("for_to_while", source)


def test_shadowed_builtins_stop_the_rewrites_that_call_them() -> None:
    source = "def f(list):\n    r = 0\n    for x in list:\n        r += x\n    return r\n"
    _never("iter_to_index", source)
    _never("for_to_while", "def f(len):\n    for i in range(len(3)):\n        print(i)\n")


def test_iteration_over_a_rebound_or_mutated_sequence_is_left_alone() -> None:
    rebound = "def f(xs: list):\n    for x in xs:\n        xs = [x]\n    return xs\n"
    _never("iter_to_index", rebound)
    mutated = "def f(xs: list, ys: list):\n    for x in xs:\n        ys.append(x)\n    return ys\n"
    _never("iter_to_index", mutated)
    local = "def f(s):\n    xs = list(s)\n    out = ''\n    for x in xs:\n        out += x\n    return out\n"
    assert "xs[" in (REWRITES["iter_to_index"](local, random.Random(0)) or "")


def test_a_short_circuit_over_locals_is_not_extracted() -> None:
    source = (
        "def f(a):\n    if a:\n        b = 1\n    if a and b > 0:\n        return 1\n    return 0\n"
    )
    for seed in range(10):
        variant = REWRITES["extract_helper"](source, random.Random(seed))
        assert variant is None or "(a, b)" not in variant


def test_comprehension_to_loop_keeps_a_used_loop_name() -> None:
    source = "def f(xs):\n    x = 5\n    r = [x * 2 for x in xs]\n    return r, x\n"
    _never("comprehension_to_loop", source)
    _never(
        "loop_to_comprehension",
        "def f(xs):\n    r = []\n    for x in xs:\n        r.append(x)\n    return x\n",
    )


def test_variants_of_synthesized_programs_agree_on_every_input(
    pool: Pool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The property over synthesized programs: every variant (each kind, and compositions)
    agrees with its original on every input synthesis recorded for it."""
    out = synth_cases(tmp_path_factory.mktemp("programs") / "synth", n=60, seed=16)
    inputs: dict[str, list[Call]] = {}
    for line in (out / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        inputs.setdefault(case["code"], []).append(parse_call(case["call"]))
    programs = [Program(code, "f", tuple(calls)) for code, calls in inputs.items()]
    pairs = []
    for number, program in enumerate(programs):
        rng = random.Random(number)
        for kind in REWRITES:
            variant = REWRITES[kind](program.source, rng)
            if variant is not None:
                pairs.append((program, variant))
        composed, applied = compose(program.source, rng.sample(list(REWRITES), len(REWRITES)), rng)
        if applied:
            pairs.append((program, composed))
    assert len(pairs) >= 60
    failures = _check(pool, pairs)
    assert not failures, "\n\n".join(failures[:3])
