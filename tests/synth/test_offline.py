"""The offline generator: determinism, coverage, constraints, and quality measured in the
real sandbox pool on a sample."""

from __future__ import annotations

import ast
import os
import random
import subprocess
import sys

import pytest

from codereasoner.execution import Pool, Program, parse_call
from codereasoner.synth.catalog import catalog
from codereasoner.synth.constraints import violations
from codereasoner.synth.generators.offline import OfflineGenerator, case_random
from codereasoner.synth.generators.offline_conditions import Role, Var, conditions, holds
from codereasoner.synth.generators.offline_quality import outcome, run_candidates, unique_share
from codereasoner.synth.generators.offline_values import Values
from codereasoner.values import render

SAMPLE = 300


@pytest.fixture(scope="module")
def sample() -> list:
    generator = OfflineGenerator(11)
    # past the coverage prefix too, so that weighted draws are in the sample
    return [generator.generate(index) for index in range(0, 2 * SAMPLE, 2)]


def test_generation_is_deterministic_on_seed_and_index() -> None:
    one, two = OfflineGenerator(3), OfflineGenerator(3)
    forward = [one.generate(index) for index in range(40)]
    backward = [two.generate(index) for index in reversed(range(40))][::-1]
    assert forward == backward
    other = [OfflineGenerator(4).generate(index) for index in range(40)]
    assert sum(a.code == b.code for a, b in zip(forward, other, strict=True)) < 5
    assert case_random(3, 7).random() == case_random(3, 7).random()
    assert case_random(3, 7).random() != case_random(3, 8).random()


def test_every_method_is_covered_once_the_catalog_size_is_reached() -> None:
    generator = OfflineGenerator(0)
    size = len(catalog())
    assert {generator.method_for(index).qualname for index in range(size)} == {
        method.qualname for method in catalog()
    }
    assert {generator.generate(index).method for index in range(size)} == {
        method.qualname for method in catalog()
    }
    with pytest.raises(ValueError):
        generator.method_for(-1)


def test_candidates_are_concise_valid_and_satisfy_their_constraints(sample: list) -> None:
    for candidate in sample:
        assert candidate.generator == "offline" and candidate.entry_point == "f"
        tree = ast.parse(candidate.code)
        assert isinstance(tree.body[0], ast.FunctionDef) and len(tree.body) == 1
        ast.parse(candidate.call, mode="eval")
        assert candidate.input_repr  # every case has an input to predict backwards
        assert violations(candidate.code, candidate.constraints, candidate.method) == [], (
            candidate.code
        )
    lines = sorted(candidate.code.count("\n") + 1 for candidate in sample)
    assert 3 <= lines[len(lines) // 2] <= 12
    assert lines[-1] <= 24


def test_sample_runs_in_the_sandbox_with_short_outputs(pool: Pool, sample: list) -> None:
    results = run_candidates(pool, sample)
    kinds = [outcome(result) for result in results]
    ok_share = kinds.count("ok") / len(kinds)
    assert ok_share >= 0.92, {kind: kinds.count(kind) for kind in set(kinds)}


def test_sample_is_unique_after_normalised_dedup(sample: list) -> None:
    assert unique_share(sample) >= 0.95


DIGEST = """
import hashlib
from codereasoner.synth.generators.offline import OfflineGenerator
generator = OfflineGenerator(2)
text = "\\n".join(c.code + "|" + c.call + "|" + c.method for c in map(generator.generate, range(300)))
print(hashlib.sha256(text.encode()).hexdigest())
"""


def test_output_does_not_depend_on_the_hash_seed_or_the_process() -> None:
    digests = set()
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", DIGEST],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_every_argument_kind_of_every_signature_can_be_made() -> None:
    rng = random.Random(1)
    for method in catalog():
        values = Values(rng, binary=method.owner == "bytes")
        receiver = values.receiver(method.receiver) if method.receiver else None
        for signature in method.signatures:
            for kind in signature:
                assert values.args(kind, receiver), (method.qualname, kind)


CONDITION_VALUES = {
    "char": ["a", "Z", "7", " ", "q"],
    "int": [0, 3, -4, 9],
    "float": [0.5, -2.25, 3.0],
    "str": ["abc", "", "Hello", "x1", "tea"],
    "bytes": [b"abc", b"", b"sit"],
    "list": [[0, 1, 2], [], [5, 5]],
    "tuple": [(1, 2), (), (4, 4, 0)],
    "set": [{1, 2}, set(), {4, 9}],
    "dict": [{"a": 3}, {}, {"x": 0, "k": 7}],
    "any": [0, "a", None, [1]],
    "key": ["a", "k", "zz"],
}


def test_condition_predicates_agree_with_execution(pool: Pool) -> None:
    rng = random.Random(4)
    for kind, samples in CONDITION_VALUES.items():
        for methods in (False, True):
            for _ in range(3):
                var = Var("v", kind, Role.LOOP)
                options = conditions(var, methods, rng, binary=kind == "bytes")
                code = (
                    "def f(v):\n    return ["
                    + ", ".join(f"bool({text})" for text, _, _ in options)
                    + "]"
                )
                calls = [parse_call(f"f({render(value)})") for value in samples]
                results = pool.run_batch(Program(code), calls)
                for value, result in zip(samples, results, strict=True):
                    expected = [holds(test, value) for _, test, _ in options]
                    assert result.matches(expected), (code, value, result.describe())


def test_deeper_blueprints_are_honoured_too() -> None:
    generator = OfflineGenerator(8, max_depth=5)
    candidates = [generator.generate(index) for index in range(200, 500)]
    assert max(candidate.constraints.depth for candidate in candidates) == 5
    for candidate in candidates:
        assert violations(candidate.code, candidate.constraints, candidate.method) == []
