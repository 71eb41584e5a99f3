"""`values.parse` bounds its work on hostile text: length, syntax nodes, hash collisions.

A value's text comes from a sandboxed program or a model's answer. Sets, frozensets and dicts
whose elements all hash alike cost quadratic time to build and to compare (0.95 MB of multiples
of 2**61 - 1 took 14 s in ``ExecResult.matches``); `parse` refuses them with a clear reason in
well under a second, and keeps exact Python semantics on benign values.
"""

from __future__ import annotations

import ast
import random
import time

import pytest

from codereasoner import values
from codereasoner.execution import ExecResult, Status

M61 = (1 << 61) - 1  # every multiple hashes to 0


def multiples(count: int, start: int = 1) -> list[int]:
    return [M61 * k for k in range(start, start + count)]


def joined(items: list[str]) -> str:
    return ", ".join(items)


COLLIDING = {
    "set": "{" + joined([str(x) for x in multiples(37_999)]) + "}",
    "frozenset": "frozenset({" + joined([str(x) for x in multiples(37_999)]) + "})",
    "set_call": "set([" + joined([str(x) for x in multiples(30_000)]) + "])",
    "frozenset_of_tuple": "frozenset((" + joined([str(x) for x in multiples(30_000)]) + "))",
    "dict_keys": "{" + joined([f"{x}: 0" for x in multiples(30_000)]) + "}",
    "tuple_elements": "{" + joined([f"({x}, 'a')" for x in multiples(20_000)]) + "}",
    "frozenset_elements": "{" + joined([f"frozenset({{{x}}})" for x in multiples(10_000)]) + "}",
    "tuple_dict_keys": "{" + joined([f"({x},): 1" for x in multiples(20_000)]) + "}",
    "nested": "["
    + joined(["{" + joined([str(x) for x in multiples(40, 40 * j)]) + "}" for j in range(1, 500)])
    + "]",
    "negative": "{" + joined([str(-x) for x in multiples(30_000)]) + "}",
}


@pytest.mark.parametrize("name", COLLIDING)
def test_hash_colliding_containers_are_refused_fast(name: str) -> None:
    text = COLLIDING[name]
    # The refusal comes from the check that runs before any container is built, so the
    # quadratic build (2 to 14 s for these sizes before) never starts. Speed is not timed here:
    # shared CI machines are noisy; the figures are in the closing note of the issue.
    with pytest.raises(values.ValueParseError, match="with one hash value"):
        values.parse(text)


def test_the_reported_set_is_judged_in_well_under_a_second() -> None:
    text = COLLIDING["set"]  # the 0.95 MB value of the review
    assert 900_000 < len(text) < 1_000_000
    result = ExecResult(status=Status.OK, value=text, value_type="set", is_literal=True)
    expected = set(range(10))
    started = time.process_time()
    for policy in values.POLICIES:
        assert not result.matches(expected, policy)
    # A guard against the quadratic path (14 s before; about 0.1 s now), loose for noisy CI.
    assert time.process_time() - started < 10.0


def test_the_message_names_the_problem_and_the_place() -> None:
    with pytest.raises(values.ValueParseError) as caught:
        values.parse("[0, " + COLLIDING["dict_keys"] + "]")
    message = str(caught.value)
    assert f"more than {values.MAX_HASH_COLLISIONS} distinct dict keys" in message
    assert "col 5" in message and "\n" not in message


def test_benign_collisions_and_duplicates_still_parse() -> None:
    assert values.parse("{-1, -2}") == {-1, -2}  # hash(-1) == hash(-2)
    limit = values.MAX_HASH_COLLISIONS
    few = multiples(limit) + list(range(100))
    assert values.parse("{" + joined([str(x) for x in few]) + "}") == set(few)
    too_many = multiples(limit + 1) + list(range(100))
    with pytest.raises(values.ValueParseError):
        values.parse("{" + joined([str(x) for x in too_many]) + "}")
    small = multiples(20)  # below the size where the check starts: bounded cost anyway
    assert values.parse("{" + joined([str(x) for x in small]) + "}") == set(small)
    assert values.parse("{" + "1, " * 100_000 + "}") == {1}
    assert values.parse("{" + "1, 1.0, True, " * 50 + "}") == {1}
    assert values.parse("{" + "(1, 'a'): 2, " * 1000 + "}") == {(1, "a"): 2}
    nans = values.parse("{" + "nan, " * 100 + "}")
    assert isinstance(nans, set) and len(nans) == 100  # distinct nan objects, as before


def test_dict_duplicates_keep_python_semantics() -> None:
    parsed = values.parse("{1: 'a', 1.0: 'b', True: 'c'}")
    assert parsed == {1: "c"}
    assert type(next(iter(parsed))) is int  # the first key object is kept, the last value
    assert values.parse("{" + joined([f"{k % 7}: {k}" for k in range(200)]) + "}") == {
        k % 7: k for k in range(193, 200)
    }


def test_big_benign_values_keep_their_verdicts_under_every_policy() -> None:
    rng = random.Random(3)
    ints = {rng.randrange(-(10**30), 10**30) for _ in range(20_000)}
    floats = {rng.random() for _ in range(5000)}
    words = {f"w{rng.random()}" for _ in range(5000)}
    table = {rng.randrange(10**12): [rng.random()] for _ in range(5000)}
    for value in (ints, frozenset(floats), words, table, tuple(sorted(ints))):
        text = values.render(value)
        parsed = values.parse(text)
        for policy in values.POLICIES:
            assert values.equal(parsed, value, policy), policy
    assert values.equal(values.parse(values.render(ints)), ints | {M61}) is False
    assert values.equal(values.parse("{1, 2.0}"), {1.0, 2}, "strict")
    assert not values.equal(values.parse("{1, 2.0}"), {1.0, 2}, "exact")
    assert values.equal(values.parse("{1, 2.0000000001}"), {1, 2}, "lenient")


# --- syntax nodes and length, before the syntax tree is built ------------------------------------


def test_too_many_separators_are_refused_before_compiling() -> None:
    text = "[" + "0," * 300_000 + "]"  # 600 KB: ~1 s and 300 MB of syntax tree if compiled
    started = time.process_time()
    with pytest.raises(values.ValueParseError, match="more than 200000 syntax nodes"):
        values.parse(text)
    assert time.process_time() - started < 5  # a guard (compiling took ~1 s), loose for CI
    with pytest.raises(values.ValueParseError, match="more than 10 syntax nodes"):
        values.parse("{" + "1: 2, " * 6 + "}", max_nodes=10)


def test_separators_inside_strings_do_not_count() -> None:
    for text in (
        "['" + "," * 300_000 + "']",
        '"' + ":" * 300_000 + '"',
        "b'" + ",:" * 150_000 + "'",
        "r'\\\\'" + ", '" + "," * 250_000 + "'",
        "('''" + ",\n" * 150_000 + '\'\'\', """a""")',
        "['it\\'s', " + "'x,y', " * 30_000 + "]",
    ):
        parsed = values.parse(text)
        assert parsed is not None


def test_the_separator_bound_never_refuses_a_value_within_the_node_limit() -> None:
    rng = random.Random(7)

    def build(depth: int) -> object:
        kind = rng.randrange(8 if depth < 4 else 4)
        if kind == 0:
            return rng.randrange(-5, 5)
        if kind == 1:
            return rng.choice(["a,b", "c:d", "'", '"', "\\", ",,", "'''", ""])
        if kind == 2:
            return rng.choice([1.5, -0.0, True, None, 2j, b",:"])
        if kind == 3:
            return (rng.randrange(3),)
        items = [build(depth + 1) for _ in range(rng.randrange(4))]
        if kind == 4:
            return items
        if kind == 5:
            return tuple(items)
        if kind == 6:
            return {rng.randrange(100): item for item in items}
        return frozenset(str(item) for item in items)

    for _ in range(400):
        value = build(0)
        text = values.render(value)
        counter = values._Parser(text, 100, 10**9)
        counter.convert(ast.parse(text, mode="eval").body, 0)
        assert values.equal(values.parse(text, max_nodes=counter.nodes), value, "exact"), text


def test_length_is_checked_first() -> None:
    started = time.process_time()
    with pytest.raises(values.ValueParseError, match="longer than 1000000"):
        values.parse("[" + "0, " * 7_000_000 + "]")  # over 600 s in grading before
    with pytest.raises(values.ValueParseError, match="longer than 10 characters"):
        values.parse("[1, 2, 3, 4]", max_chars=10)
    assert time.process_time() - started < 5  # a guard against the old path, loose for CI


def test_the_string_scan_is_linear_on_unterminated_escapes() -> None:
    """Texts of many escaped quotes once made the separator count rescan from every quote."""
    text = "[" + "'\\" * 20_000 + "," * 200_000
    started = time.process_time()
    with pytest.raises(values.ValueParseError):
        values.parse(text)
    assert time.process_time() - started < 5  # a guard (5.3 s and growing quadratically before)
