"""The constraint sampler and the AST check of a program against its constraints."""

from __future__ import annotations

import random
from collections import Counter

from codereasoner.synth.case import CONTROL, EXTRAS, Constraints
from codereasoner.synth.constraints import (
    control_paths,
    has_guarded_loop,
    sample_constraints,
    violations,
)


def test_the_same_random_state_gives_the_same_draws() -> None:
    first = [sample_constraints(random.Random(5)) for _ in range(3)]
    again = [sample_constraints(random.Random(5)) for _ in range(3)]
    assert first == again
    rng = random.Random(9)
    sequence = [sample_constraints(rng) for _ in range(50)]
    assert len(set(sequence)) > 20


def test_draws_cover_every_depth_structure_and_extra_within_bounds() -> None:
    rng = random.Random(0)
    draws = [sample_constraints(rng, max_depth=3) for _ in range(3000)]
    assert {c.depth for c in draws} == {0, 1, 2, 3}
    assert {kind for c in draws for kind in c.control} == set(CONTROL)
    assert {extra for c in draws for extra in c.extras} == set(EXTRAS)
    flags = Counter((c.nested_calls, c.other_methods) for c in draws)
    assert len(flags) == 4 and min(flags.values()) > 500
    for c in draws:
        if {"break", "continue"} & set(c.extras):
            assert has_guarded_loop(c.control), c
    assert all(c.depth <= 1 for c in (sample_constraints(rng, max_depth=1) for _ in range(200)))
    assert all(c.depth == 0 for c in (sample_constraints(rng, max_depth=0) for _ in range(50)))


def test_guarded_loop_needs_an_if_inside_a_loop() -> None:
    assert has_guarded_loop(("for", "if"))
    assert has_guarded_loop(("while", "for", "if"))
    assert not has_guarded_loop(("if", "for"))
    assert not has_guarded_loop(("for", "while"))


CODE = """def f(items, k):
    out = []
    for x in items[1:]:
        if x > k:
            try:
                out += [str(abs(x))]
            except ValueError:
                continue
        elif x == k:
            out.append(x)
    return out"""


def test_control_paths_treat_elif_as_the_same_level() -> None:
    paths = control_paths(__import__("ast").parse(CODE))
    assert max(paths, key=len) == ("for", "if")
    assert all(len(path) <= 2 for path in paths)


def test_a_matching_program_has_no_violations() -> None:
    constraints = Constraints(True, True, ("for", "if"), ("try", "slicing", "continue"))
    assert violations(CODE, constraints, "builtins.abs") == []


def test_each_broken_constraint_is_reported() -> None:
    def problems(**changes: object) -> list[str]:
        base = {
            "nested_calls": True,
            "other_methods": True,
            "control": ("for", "if"),
            "extras": ("try",),
        }
        base.update(changes)
        return violations(CODE, Constraints(**base), "builtins.abs")  # type: ignore[arg-type]

    assert any("blueprint" in p for p in problems(control=("if", "for")))
    assert any("blueprint" in p for p in problems(control=("for", "if", "while")))
    assert any("'break'" in p for p in problems(extras=("break",)))
    assert any("nested" in p for p in problems(nested_calls=False))
    assert any("other methods" in p for p in problems(other_methods=False))
    assert any(
        "not used" in p
        for p in violations(CODE, Constraints(True, True, ("for", "if")), "str.partition")
    )
    bad = "import os\ndef f(x):\n    print(x)\n    return eval(x)"
    found = violations(bad, Constraints(), "builtins.eval")
    assert "imports a module" in found and "uses print" in found and "uses eval" in found
