"""Input mutation: one test per operator, the candidate-level contract, coverage preference."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from codereasoner import values
from codereasoner.execution import parse_call
from codereasoner.synth.case import Candidate, Constraints
from codereasoner.synth.mutate import (
    CONTAINER_OPS,
    RANDOM_ALPHABET,
    SCALAR_OPS,
    Ingredients,
    ingredients,
    mutants,
    mutate_value,
    prefer_new_coverage,
    select_mutants,
)

FOUND = Ingredients(ints=[7, -3, 40], floats=[2.5], strs=["::", "ab", "key=value"])
TRIALS = 40


def apply(value: Any, op: str, seed: int) -> Any:
    result = mutate_value(value, random.Random(seed), FOUND, only=op)
    assert result is not None, (op, value)
    new, label = result
    assert label.split(">")[0] == op
    return new


def is_subsequence(small: str, big: str) -> bool:
    chars = iter(big)
    return all(char in chars for char in small)


# Each operator: a seed value and a property every result must have.
Check = Callable[[Any, Any], bool]
SCALAR_CASES: dict[str, tuple[Any, Check]] = {
    "str.random": (
        "a,b",
        lambda old, new: 5 <= len(new) <= 20 and set(new) <= set(RANDOM_ALPHABET),
    ),
    "str.ingredient": ("a,b", lambda old, new: new in FOUND.strs),
    "str.insert_ingredient": (
        "a,b",
        lambda old, new: any(
            new[:i] + new[i + len(s) :] == old for s in FOUND.strs for i in range(len(new))
        ),
    ),
    "str.swap_slices": ("abcdef", lambda old, new: sorted(new) == sorted(old) and new != old),
    "str.duplicate_slice": (
        "abcdef",
        lambda old, new: len(new) > len(old) and is_subsequence(old, new) and set(new) <= set(old),
    ),
    "str.delete_slice": (
        "abcdef",
        lambda old, new: len(new) < len(old) and is_subsequence(new, old),
    ),
    "int.shift": (10, lambda old, new: type(new) is int and 1 <= abs(new - old) <= 5),
    "int.ingredient": (10, lambda old, new: new in FOUND.ints),
    "float.perturb": (
        4.0,
        lambda old, new: (
            type(new) is float and new != old and 1.9 <= new <= 6.1 and round(new, 2) == new
        ),
    ),
    "float.ingredient": (
        4.0,
        lambda old, new: (
            type(new) is float and new in FOUND.floats + [float(i) for i in FOUND.ints]
        ),
    ),
    "bool.flip": (True, lambda old, new: new is False),
    "bytes.random": (b"a,b", lambda old, new: type(new) is bytes and 5 <= len(new) <= 20),
    "bytes.insert_ingredient": (
        b"a,b",
        lambda old, new: type(new) is bytes and len(new) > len(old),
    ),
    "bytes.swap_slices": (b"abcdef", lambda old, new: sorted(new) == sorted(old) and new != old),
    "bytes.duplicate_slice": (b"abcdef", lambda old, new: len(new) > len(old)),
    "bytes.delete_slice": (b"abcdef", lambda old, new: type(new) is bytes and len(new) < len(old)),
}


def test_every_scalar_operator_has_a_test() -> None:
    assert set(SCALAR_CASES) == {name for ops in SCALAR_OPS.values() for name in ops}


@pytest.mark.parametrize("op", sorted(SCALAR_CASES))
def test_scalar_operator(op: str) -> None:
    seed_value, holds = SCALAR_CASES[op]
    results = [apply(seed_value, op, seed) for seed in range(TRIALS)]
    for new in results:
        assert type(new) is type(seed_value) and new != seed_value
        assert holds(seed_value, new), (op, new)
    if op not in ("bool.flip", "str.ingredient", "int.ingredient", "float.ingredient"):
        assert len(set(results)) > 3  # random, not one fixed rewrite


def types_of(items: Any) -> Counter[type]:
    return Counter(type(item) for item in items)


SEQUENCE_CASES: dict[str, Check] = {
    # element types kept: an inserted or replacing element is a mutated copy of an element
    "insert": lambda old, new: (
        len(new) == len(old) + 1 and set(types_of(new)) <= set(types_of(old))
    ),
    "remove": lambda old, new: len(new) == len(old) - 1 and all(x in old for x in new),
    "swap": lambda old, new: sorted(map(repr, new)) == sorted(map(repr, old)),
    "replace": lambda old, new: (
        len(new) == len(old)
        and types_of(new) == types_of(old)
        and sum(a != b for a, b in zip(old, new, strict=True)) == 1
    ),
    "append_duplicate": lambda old, new: list(new[:-1]) == list(old) and new[-1] in old,
}


def test_every_sequence_operator_has_a_test() -> None:
    assert set(SEQUENCE_CASES) == set(CONTAINER_OPS["list"])


@pytest.mark.parametrize("name", sorted(SEQUENCE_CASES))
@pytest.mark.parametrize("kind", [list, tuple])
def test_sequence_operator(kind: type, name: str) -> None:
    old = kind([3, "ab", 5, "cd"])
    for seed in range(TRIALS):
        new = apply(old, f"{kind.__name__}.{name}", seed)
        assert type(new) is kind and new != old
        assert SEQUENCE_CASES[name](old, new), new


@pytest.mark.parametrize("name", ["insert", "remove", "replace"])
@pytest.mark.parametrize("kind", [set, frozenset])
def test_set_operator_keeps_the_set_type_and_element_types(kind: type, name: str) -> None:
    old = kind({1, 4, 9, 16})
    for seed in range(TRIALS):
        new = apply(old, f"{kind.__name__}.{name}", seed)
        assert type(new) is kind and new != old and all(type(x) is int for x in new)
        assert (len(new) < len(old)) == (name == "remove")


def test_nested_containers_are_mutated_recursively_keeping_shape() -> None:
    old = [[1, 2], [3, 4]]
    labels = set()
    for seed in range(TRIALS):
        new, label = mutate_value(old, random.Random(seed), FOUND, only="list.replace")  # type: ignore[misc]
        labels.add(label.split(">")[1])
        assert len(new) == 2 and all(type(row) is list for row in new)
        assert all(type(x) is int for row in new for x in row)
    assert any(label.startswith("list.") for label in labels)  # the inner list was mutated


DICT_CASES: dict[str, Check] = {
    "add": lambda old, new: (
        set(old) < set(new)
        and len(new) == len(old) + 1
        and all(type(k) is str for k in new)
        and all(type(v) is int for v in new.values())
    ),
    "remove": lambda old, new: set(new) < set(old) and all(new[k] == old[k] for k in new),
    "replace_value": lambda old, new: (
        set(new) == set(old)
        and sum(new[k] != old[k] for k in old) == 1
        and all(type(v) is int for v in new.values())
    ),
}


def test_every_dict_operator_has_a_test() -> None:
    assert set(DICT_CASES) == set(CONTAINER_OPS["dict"])


@pytest.mark.parametrize("name", sorted(DICT_CASES))
def test_dict_operator(name: str) -> None:
    old = {"a": 1, "bc": 2, "d": 30}
    for seed in range(TRIALS):
        new = apply(old, f"dict.{name}", seed)
        assert DICT_CASES[name](old, new), new


def test_empty_containers_are_seeded_from_ingredients() -> None:
    new = apply([], "list.insert", 0)
    assert len(new) == 1 and (new[0] in FOUND.ints or new[0] in FOUND.strs)
    assert len(apply({}, "dict.add", 0)) == 1
    assert mutate_value(None, random.Random(0), FOUND) is None  # nothing applies to None


def test_ingredients_come_from_the_input_its_words_and_the_code_literals() -> None:
    code = "def f(s, n):\n    if s.startswith('ab'):\n        return n * 3\n    return s.count(' ')"
    found = ingredients(["x = 1 and y", 5, [2.5, {"k": (9,)}]], code)
    assert {"x = 1 and y", "x", "and", "y", "ab", " ", "k"} <= set(found.strs)
    assert {5, 9, 3} <= set(found.ints) and found.floats == [2.5]


# -- candidates ----------------------------------------------------------------------------------

CODE = (
    "def f(text, sep, n):\n    if sep in text:\n        return text.split(sep)[:n]\n    return []"
)


def candidate(input_repr: str = "'a,b c', ',', 2") -> Candidate:
    return Candidate("gen-7", "str.split", CODE, input_repr, Constraints(control=("if",)))


def test_mutants_are_distinct_literal_inputs_with_lineage() -> None:
    parent = candidate()
    made = mutants(parent, random.Random(3), 6)
    assert len(made) == 6
    inputs = [m.input_repr for m in made]
    assert len(set(inputs)) == 6 and parent.input_repr not in inputs
    for k, mutant in enumerate(made):
        assert mutant.id == f"gen-7/m{k}"
        assert (mutant.code, mutant.method, mutant.constraints) == (
            parent.code,
            parent.method,
            parent.constraints,
        )
        assert mutant.lineage["parent"] == "gen-7" and 1 <= len(mutant.lineage["ops"]) <= 3
        call = parse_call(mutant.call)  # literal only
        assert len(call.args) == 3
        assert [type(a) for a in call.args] == [str, str, int]  # argument types kept
        assert all(op.split(":")[0] in ("arg0", "arg1", "arg2") for op in mutant.lineage["ops"])


def test_mutants_are_deterministic_and_pure() -> None:
    parent = candidate()
    first = mutants(parent, random.Random(11), 5)
    again = mutants(parent, random.Random(11), 5)
    assert first == again
    assert parent == candidate()  # the parent is untouched
    assert mutants(parent, random.Random(12), 5) != first


def test_keyword_arguments_and_mutants_of_mutants() -> None:
    parent = candidate("'a,b', sep=',', n=1")
    child = mutants(parent, random.Random(0), 1)[0]
    assert set(parse_call(child.call).kwargs) == {"sep", "n"}
    grandchild = mutants(child, random.Random(1), 1)[0]
    assert grandchild.id == f"{child.id}/m0"
    assert grandchild.lineage["parent"] == "gen-7"  # the original, not the intermediate
    assert grandchild.lineage["ops"][: len(child.lineage["ops"])] == child.lineage["ops"]


def test_unmutable_inputs_give_no_mutants_in_bounded_time() -> None:
    assert mutants(candidate("None, None, None"), random.Random(0), 3) == []
    assert mutants(candidate("'a', ','"), random.Random(0), 0) == []
    assert mutants(Candidate("x", "m", CODE, "1 +", Constraints()), random.Random(0), 3) == []


def test_mutated_inputs_render_canonically() -> None:
    for mutant in mutants(
        candidate("{'a': [1, 2.5, (True, b'x')]}, {3, 4}, -1"), random.Random(5), 8
    ):
        call = parse_call(mutant.call)
        rendered = ", ".join(values.render(arg) for arg in call.args)
        assert mutant.input_repr == rendered


# -- coverage preference -------------------------------------------------------------------------


def test_prefer_new_coverage_orders_by_greedy_gain() -> None:
    a, b, c, d = (candidate(f"'{x}', ',', 1") for x in "abcd")
    scored = [
        (a, [1, 2], []),  # nothing new
        (b, [1, 2, 5], [[2, True]]),  # line 5 and a branch (JSON-style list)
        (c, [1, 2, 5, 6, 7], [(2, True)]),  # the most, and b's branch too
        (d, [1, 2, 5], [(2, False)]),  # after c, still a new branch
    ]
    order = prefer_new_coverage([1, 2], [], scored)
    assert [m.input_repr for m in order] == [c.input_repr, d.input_repr, a.input_repr, b.input_repr]
    # Nothing new at all: the original order stays.
    same = [(a, [1], []), (b, [1], [])]
    assert prefer_new_coverage([1], [], same) == [a, b]


def test_mutants_adding_no_output_and_no_coverage_are_redundant() -> None:
    a, b, c, d, e = (candidate(f"'{x}', ',', 1") for x in "abcde")
    parent = ("'x'", [1, 2], [[2, "F"]])
    scored = [
        (a, "'x'", [1, 2], [(2, "F")]),  # the parent's output and coverage: redundant
        (b, "'y'", [1, 2], [(2, "F")]),  # a new output, nothing else: worth keeping
        (c, "'x'", [1, 2, 3], [(2, "T")]),  # new coverage (the most): chosen first
        (d, "'y'", [1], []),  # b's output, less coverage: redundant once b is kept
        (e, "'z'", [1, 2], []),  # new output, but over the cap
    ]
    chosen = select_mutants(parent, scored, 2)
    assert chosen.kept == [b, c]  # in generation order
    assert chosen.redundant == [a, d] and chosen.not_selected == [e]
    # With room for all, the redundant ones still go: each kept mutant teaches something.
    everything = select_mutants(parent, scored, 10)
    assert everything.kept == [b, c, e] and everything.redundant == [a, d]
    assert everything.not_selected == []
    # Nothing new at all: nothing kept, nothing merely "not selected".
    same = select_mutants(parent, [(a, "'x'", [2], []), (b, "'x'", [1, 2], [[2, "F"]])], 2)
    assert same.kept == [] and same.redundant == [a, b] and same.not_selected == []
    # A mutant that duplicates another's new output and coverage is redundant after it.
    twins = select_mutants(parent, [(a, "'q'", [1, 5], []), (b, "'q'", [5], [])], 2)
    assert twins.kept == [a] and twins.redundant == [b]
    assert select_mutants(parent, scored, 0).kept == []
