"""Set-order perturbation: programs whose output leaks CPython's set layout (int sets, which the
hash-seed check cannot see) change outcome when their sets iterate in reverse; programs that only
use order-free operations do not."""

from __future__ import annotations

import ast

import pytest

from codereasoner.execution import Limits, Pool, Program, Status, parse_call
from codereasoner.execution.determinism import observable
from codereasoner.synth.batching import Work, run_grouped
from codereasoner.synth.case import Candidate, Constraints
from codereasoner.synth.filters import REASONS, check_set_order
from codereasoner.synth.setorder import can_build_sets, involves_sets, perturbed

LIMITS = Limits(timeout_s=1.0, memory_mb=256)

# (code, call): the output depends on the order in which a set of ints iterates.
ORDER_DEPENDENT = [
    (
        "def f(group):\n    score = 0\n    if 3 in group:\n        score += abs(group.pop())\n"
        "    return score",
        "f({10, 11, 2, 3})",
    ),  # the finding's example: CPython pops 2
    (
        "def f(bag):\n    bag = bag.copy()\n    bag.add(len(bag))\n    return list(bag)[1:]",
        "f({1, 10, 5})",
    ),
    ("def f(xs):\n    s = set(xs)\n    return [v for v in s if v % 3][::2]", "f([0, 5, 7, 8])"),
    ("def f(a, b):\n    return ''.join(str(v) for v in a | b)", "f({1, 9}, {17})"),
    ("def f(xs):\n    seen = {x % 10 for x in xs}\n    return str(seen)", "f([11, 3, 25])"),
    ("def f(d):\n    keys = d.keys() - {0}\n    return next(iter(keys))", "f({1: 'a', 2: 'b'})"),
    (
        "def f(items):\n    fs = frozenset(items)\n    fs -= {99}\n    return tuple(fs)",
        "f([8, 1, 16])",
    ),
    (
        "def f(rows):\n    return [sorted(r, key=lambda v: v % 2) for r in rows]",
        "f([{2, 4, 1}, [7]])",
    ),  # stable sort of a set: ties keep the set's order
]

# The same kinds of program using sets only in ways that do not depend on their order.
ORDER_FREE = [
    (
        "def f(group):\n    total = 0\n    while group:\n        total += group.pop()\n"
        "    return total",
        "f({10, 11, 2, 3})",
    ),
    (
        "def f(bag):\n    bag = bag.copy()\n    bag.add(len(bag))\n    return sorted(bag)[1:]",
        "f({1, 10, 5})",
    ),
    ("def f(xs):\n    s = set(xs)\n    return {v for v in s if v % 3}", "f([0, 5, 7, 8])"),
    ("def f(a, b):\n    return (a | b, len(a & b), max(a ^ b), 9 in a - b)", "f({1, 9}, {17})"),
    (
        "def f(xs):\n    seen = {x % 10 for x in xs}\n    return str(sorted(seen)), seen",
        "f([11, 3, 25])",
    ),
    (
        "def f(items):\n    fs = frozenset(items)\n    fs -= {99}\n    return fs, [fs]",
        "f([8, 1, 16])",
    ),
    (
        "def f(words):\n    return [set(w) for w in words], {frozenset({1, 2}): 'x'}",
        "f(['ab', 'ba'])",
    ),
    ("def f(s):\n    return s.pop() if len(s) == 1 else str(s)", "f({5})"),  # one element
    ("def f(n, s):\n    out = n - 3\n    return (out & 7) + len(s)", "f(12, {1, 2})"),  # ints
]


def _pair(pool: Pool, code: str, call_text: str) -> tuple[object, object]:
    call = parse_call(call_text)
    rewritten = perturbed(code, "f", [call])
    assert rewritten is not None, code
    ast.parse(rewritten)
    plain, turned = run_grouped(
        pool, [Work(code, "f", [call]), Work(rewritten, "f", [call])], LIMITS
    )
    return plain[0][0], turned[0][0]


@pytest.mark.parametrize(("code", "call"), ORDER_DEPENDENT)
def test_an_output_that_leaks_set_order_changes_when_sets_iterate_in_reverse(
    pool: Pool, code: str, call: str
) -> None:
    plain, turned = _pair(pool, code, call)
    assert plain.status is Status.OK, plain.describe()
    assert observable(plain) != observable(turned), (plain.describe(), turned.describe())
    candidate = Candidate("c", "set.pop", code, call[2:-1], Constraints(False, False, ()), "t")
    drop = check_set_order(candidate, plain, turned)
    assert drop is not None and (drop.stage, drop.reason) == ("determinism", "set_layout_dependent")
    assert "reverse" in drop.detail


@pytest.mark.parametrize(("code", "call"), ORDER_FREE)
def test_order_free_uses_of_sets_keep_their_outcome(pool: Pool, code: str, call: str) -> None:
    plain, turned = _pair(pool, code, call)
    assert plain.status is Status.OK, plain.describe()
    assert observable(plain) == observable(turned), (plain.describe(), turned.describe())
    # the rewritten program returns plain types: the value is a literal of the same type
    assert turned.is_literal and turned.value_type == plain.value_type


def test_the_int_set_example_passes_the_hash_seed_check_and_fails_this_one(pool: Pool) -> None:
    code, call = ORDER_DEPENDENT[0]
    with Pool(1, isolation="bubblewrap", hash_seed=1, limits=LIMITS) as other:
        a = pool.run(Program(code), parse_call(call))
        b = other.run(Program(code), parse_call(call))
    assert observable(a) == observable(b) and a.value == "2"  # int hashes ignore the seed
    _, turned = _pair(pool, code, call)
    assert turned.value != a.value


def test_programs_that_cannot_see_a_set_are_not_rewritten() -> None:
    plain = "def f(xs):\n    return [x - 1 for x in xs if x & 1]"
    assert perturbed(plain, "f", [parse_call("f([1, 2, 3])")]) is None
    assert not can_build_sets(ast.parse(plain))
    # ... unless a call hands them one, at any depth
    assert involves_sets(ast.parse(plain), [parse_call("f([1, (2, {3: {4}})])")])
    assert perturbed(plain, "f", [parse_call("f([{1}, 2])")]) is not None
    # dict views combined by a set operator make sets
    views = "def f(d, e):\n    return d.keys() & e.keys()"
    assert can_build_sets(ast.parse(views))
    assert not can_build_sets(ast.parse("def f(d):\n    return list(d.keys())"))
    assert perturbed("def f(:", "f") is None  # does not parse: nothing to run


def test_the_rewrite_is_deterministic_and_keeps_the_entry_point() -> None:
    code, call = ORDER_DEPENDENT[1]
    first = perturbed(code, "f", [parse_call(call)])
    assert first == perturbed(code, "f", [parse_call(call)])
    assert first is not None and "\ndef f(bag):\n" in first
    assert "set_layout_dependent" in REASONS["determinism"]
