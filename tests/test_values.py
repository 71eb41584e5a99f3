"""Tests for codereasoner.values: safe literal parsing, canonical rendering and equality."""

from __future__ import annotations

import builtins
import math
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codereasoner.values import (
    POLICIES,
    NotALiteral,
    RenderLimitExceeded,
    ValueParseError,
    equal,
    parse,
    render,
    type_name,
)

INF = math.inf
NAN = math.nan


@pytest.fixture
def default_int_digits() -> Iterator[None]:
    """Pin Python's int-to-str digit limit to its default for the duration of a test."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


# ---------------------------------------------------------------------------------------
# parse: accepted forms
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("42", 42),
        ("-7", -7),
        ("+7", 7),
        ("--7", 7),
        ("0x1F", 31),
        ("1_000", 1000),
        ("3.5", 3.5),
        ("-0.25", -0.25),
        ("1e-3", 0.001),
        ("-2.5E10", -2.5e10),
        ("'abc'", "abc"),
        ('"double"', "double"),
        ("'''tri\nple'''", "tri\nple"),
        ("'a' 'b'", "ab"),
        ("'\\n\\x00\\u00e9'", "\n\x00\u00e9"),
        ("'é✓'", "é✓"),
        ("b'x\\x00y'", b"x\x00y"),
        ("b''", b""),
        ("True", True),
        ("False", False),
        ("None", None),
        ("true", True),
        ("false", False),
        ("null", None),
        ("2j", 2j),
        ("-2j", -2j),
        ("1+2j", 1 + 2j),
        ("(1+2j)", 1 + 2j),
        ("1-2j", 1 - 2j),
        ("-1.5-2.5j", -1.5 - 2.5j),
        ("(1,)", (1,)),
        ("()", ()),
        ("1, 2", (1, 2)),
        ("1,", (1,)),
        ("'a', [1]", ("a", [1])),
        ("[]", []),
        ("[1, 'a', None]", [1, "a", None]),
        ("{}", {}),
        ("{'a': 1, 2: [3]}", {"a": 1, 2: [3]}),
        ("{(1, 2): frozenset({3})}", {(1, 2): frozenset({3})}),
        ("{1, 2, 3}", {1, 2, 3}),
        ("{1, 1, 2}", {1, 2}),
        ("set()", set()),
        ("set([1, 2])", {1, 2}),
        ("set((1, 2))", {1, 2}),
        ("set({1, 2})", {1, 2}),
        ("set([])", set()),
        ("set({})", set()),
        ("frozenset()", frozenset()),
        ("frozenset({1, 2})", frozenset({1, 2})),
        ("frozenset([1, (2, 3)])", frozenset({1, (2, 3)})),
        ("frozenset(set())", frozenset()),
        ("{frozenset({1}): {frozenset()}}", {frozenset({1}): {frozenset()}}),
        ("tuple()", ()),
        ("list()", []),
        ("dict()", {}),
        (
            "[[1, [2, [3, [4]]]], {'k': ({'x': (5,)},)}]",
            [[1, [2, [3, [4]]]], {"k": ({"x": (5,)},)}],
        ),
        ("  [1, 2]  \n", [1, 2]),
        ("\t'x'\n", "x"),
        ("[1, 2,]", [1, 2]),
        ("[\n  1,\n  2,\n]", [1, 2]),
        ("[1, 2]  # trailing comment", [1, 2]),
        ('{"a": [true, false, null], "b": 1.5}', {"a": [True, False, None], "b": 1.5}),
    ],
)
def test_parse_accepts(text: str, expected: object) -> None:
    value = parse(text)
    assert equal(value, expected, "exact"), (text, value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("inf", INF),
        ("Infinity", INF),
        ("-inf", -INF),
        ("-Infinity", -INF),
        ("+inf", INF),
        ("float('inf')", INF),
        ("float('-inf')", -INF),
        ("float('+inf')", INF),
        ("float('infinity')", INF),
        ("float('-Infinity')", -INF),
        ("float('INF')", INF),
        ('float("Inf")', INF),
        ("-float('inf')", -INF),
        ("float(' inf ')", INF),
    ],
)
def test_parse_infinities(text: str, expected: float) -> None:
    value = parse(text)
    assert type(value) is float
    assert value == expected


@pytest.mark.parametrize(
    "text", ["nan", "NaN", "-nan", "float('nan')", "float('NaN')", "float('-nan')", "-NaN"]
)
def test_parse_nan(text: str) -> None:
    value = parse(text)
    assert type(value) is float
    assert math.isnan(value)


def test_parse_nan_in_containers_is_a_fresh_object() -> None:
    value = parse("[nan, NaN, float('nan')]")
    assert isinstance(value, list)
    assert all(math.isnan(x) for x in value)
    assert len({id(x) for x in value}) == 3
    # Like CRUXEval's eval-based checks, two parses of a nan list are not ==.
    assert parse("[nan]") != parse("[nan]")


def test_parse_returns_exact_types() -> None:
    value = parse("[1, 1.0, True, (1,), {1}, frozenset({1}), {1: 2}, b'', '', 1j, None]")
    assert [type(x) for x in value] == [  # type: ignore[attr-defined]
        int,
        float,
        bool,
        tuple,
        set,
        frozenset,
        dict,
        bytes,
        str,
        complex,
        type(None),
    ]


def test_parse_returns_independent_objects() -> None:
    first = parse("[[], {}]")
    second = parse("[[], {}]")
    assert isinstance(first, list)
    assert isinstance(second, list)
    first[0].append(1)
    assert second == [[], {}]
    assert parse("list()") is not parse("list()")


def test_parse_dict_duplicate_keys_keep_last() -> None:
    assert parse("{1: 'a', 1: 'b'}") == {1: "b"}


def test_parse_negative_zero() -> None:
    value = parse("-0.0")
    assert value == 0.0
    assert math.copysign(1.0, value) == -1.0


# ---------------------------------------------------------------------------------------
# parse: rejected forms
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "foo",
        "x",
        "print",
        "__import__",
        "INF",
        "Nan",
        "TRUE",
        "foo(1)",
        "len([1])",
        "os.path",
        "(1).real",
        "'abc'.upper()",
        "[1][0]",
        "{'a': 1}['a']",
        "'abc'[::-1]",
        "[x for x in [1]]",
        "{x for x in [1]}",
        "{x: 1 for x in [1]}",
        "(x for x in [1])",
        "lambda: 1",
        "f'{1}'",
        "f'plain'",
        "[*[1, 2]]",
        "{**{'a': 1}}",
        "(y := 1)",
        "...",
        "[1, ...]",
        "1 + 2",
        "1 - 2",
        "2 * 3",
        "2 ** 10",
        "'a' + 'b'",
        "'a' * 3",
        "1 / 0",
        "1 if True else 2",
        "1 < 2",
        "True and False",
        "not True",
        "~1",
        "-True",
        "-'a'",
        "-[1]",
        "-(1, 2)",
        "-x",
        "True + 1j",
        "'a' + 1j",
        "1j + 2j",
        "1 + 2j + 3",
        "1 + (2)",
        "x + 1j",
        "await x",
        "(yield)",
        "set(x)",
        "set('abc')",
        "set(1)",
        "set([1], [2])",
        "set(iterable=[1])",
        "set(*[1])",
        "frozenset('ab')",
        "frozenset(float('inf'))",
        "tuple([1, 2])",
        "list((1,))",
        "dict(a=1)",
        "dict([(1, 2)])",
        "float('1.5')",
        "float(1)",
        "float()",
        "float('inf', 'nan')",
        "float(x='inf')",
        "float('in' 'finityx')",
        "int('3')",
        "complex(1, 2)",
        "bytes(3)",
        "str(1)",
        "object()",
        "type(1)",
        "eval('1')",
        "exec('1')",
        "open('/etc/passwd')",
        "builtins.set()",
        "{[1]: 2}",
        "{{1}: 2}",
        "{(1, [2]): 3}",
        "{[1]}",
        "{{}}",
        "set([[1]])",
        "frozenset([{1: 2}])",
        "[1, 2",
        "1 +",
        "'unterminated",
        "x = 1",
        "import os",
        "pass",
        "1; 2",
        "\x00",
        "'\x00' + bar",
    ],
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueParseError) as info:
        parse(text)
    message = str(info.value)
    assert message
    assert "\n" not in message


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n"])
def test_parse_rejects_empty(text: str) -> None:
    with pytest.raises(ValueParseError, match="empty answer"):
        parse(text)


@pytest.mark.parametrize("text", [b"1", 1, None, ["1"]])
def test_parse_rejects_non_str(text: object) -> None:
    with pytest.raises(ValueParseError, match="expected str"):
        parse(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("foo(1)", "function call 'foo(...)' at col 1"),
        ("[1, foo(2)]", "function call 'foo(...)' at col 5"),
        ("[1, os.system('x')]", "function call 'os.system(...)' at col 5"),
        ("[1, bar]", "name 'bar' at col 5"),
        ("'é', bar", "name 'bar' at col 6"),
        ("[\n1,\n  bar]", "name 'bar' at line 3 col 3"),
        ("os.path", "attribute access 'os.path'"),
        ("[x for x in y]", "list comprehension"),
        ("f'{x}'", "f-string"),
        ("[*a]", "starred expression"),
        ("(a := 1)", "assignment expression"),
        ("a[0]", "subscript"),
        ("...", "Ellipsis"),
        ("lambda: 0", "lambda"),
        ("1 + 2", "operator '+'"),
        ("{[1]: 2}", "unhashable dict key of type list"),
        ("{[1]}", "unhashable set element"),
        ("{**a}", "dict unpacking"),
        ("-True", "sign applied to non-number"),
        ("float('1.5')", "only inf, -inf, nan and infinity"),
        ("tuple([1])", "tuple() with arguments"),
        ("[1, 2", "syntax error"),
    ],
)
def test_parse_error_messages(text: str, fragment: str) -> None:
    with pytest.raises(ValueParseError) as info:
        parse(text)
    assert fragment in str(info.value)


def test_parse_error_is_a_value_error() -> None:
    assert issubclass(ValueParseError, ValueError)
    with pytest.raises(ValueError):
        parse("{[1]: 2}")


@pytest.mark.parametrize(
    "template",
    [
        "__import__('os').system('touch {path}')",
        "[__import__('os').system('touch {path}')]",
        "{{1: __import__('os').system('touch {path}')}}",
        "(lambda: __import__('os').system('touch {path}'))()",
        "open('{path}', 'w')",
        "[open('{path}', 'w') for _ in [1]]",
        "f\"{{open('{path}', 'w')}}\"",
        "set(open('{path}', 'w'))",
        "float(open('{path}', 'w'))",
        "-open('{path}', 'w')",
        "1 + open('{path}', 'w')",
        "{{**open('{path}', 'w')}}",
        "().__class__.__bases__[0].__subclasses__()",
        "exec(\"open('{path}', 'w')\")",
        "eval(\"open('{path}', 'w')\")",
    ],
)
def test_parse_never_executes(
    template: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pwned"
    text = template.format(path=marker)

    def forbidden(*args: object, **kwargs: object) -> object:
        raise AssertionError("parse must not call eval or exec")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    with pytest.raises(ValueParseError):
        parse(text)
    assert not marker.exists()


def test_parse_does_not_use_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> object:
        raise AssertionError("parse must not call eval or exec")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    assert parse("[1, {'a': (2.5, None)}, frozenset({3}), float('inf'), 1+2j]") == [
        1,
        {"a": (2.5, None)},
        frozenset({3}),
        INF,
        1 + 2j,
    ]


# ---------------------------------------------------------------------------------------
# parse: limits
# ---------------------------------------------------------------------------------------


def test_parse_length_limit_checked_before_strip() -> None:
    assert parse("1" * 10, max_chars=10) == int("1" * 10)
    with pytest.raises(ValueParseError, match="longer than 10 characters"):
        parse("1" * 11, max_chars=10)
    with pytest.raises(ValueParseError, match="longer than 3 characters"):
        parse("  1  ", max_chars=3)


def test_parse_default_length_limit() -> None:
    with pytest.raises(ValueParseError, match="longer than 1000000"):
        parse("'" + "a" * 1_000_000 + "'")


def nested_lists(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_parse_depth_default_limit() -> None:
    value = parse(nested_lists(100))
    for _ in range(99):
        assert isinstance(value, list)
        value = value[0]
    assert value == []
    with pytest.raises(ValueParseError, match="nesting deeper than 100"):
        parse(nested_lists(101))


@pytest.mark.parametrize(
    ("text", "max_depth", "ok"),
    [
        ("1", 0, True),
        ("[]", 0, False),
        ("[]", 1, True),
        ("[[]]", 1, False),
        ("[[]]", 2, True),
        ("((1,),)", 1, False),
        ("{'a': {'b': 1}}", 1, False),
        ("{'a': {'b': 1}}", 2, True),
        ("{(1,): 2}", 1, False),
        ("{(1,)}", 2, True),
        ("set([1])", 1, True),
        ("[set([1])]", 1, False),
        ("[set([1])]", 2, True),
        ("[set()]", 1, False),
        ("[tuple()]", 1, False),
        ("frozenset({frozenset()})", 1, False),
        ("-1", 0, True),
        ("1+2j", 0, True),
    ],
)
def test_parse_depth_limit(text: str, max_depth: int, ok: bool) -> None:
    if ok:
        parse(text, max_depth=max_depth)
    else:
        with pytest.raises(ValueParseError, match=f"nesting deeper than {max_depth}"):
            parse(text, max_depth=max_depth)


def test_parse_depth_beyond_python_parser() -> None:
    # CPython's own parser gives up around 200 nested brackets; that is still a ValueParseError.
    with pytest.raises(ValueParseError):
        parse(nested_lists(1000), max_depth=10_000)


def test_parse_deep_unary_chain() -> None:
    assert parse("-" * 1000 + "1") == 1
    with pytest.raises(ValueParseError):
        parse("-" * 100_000 + "1")


def test_parse_node_limit() -> None:
    text = "[" + "1, " * 1000 + "]"
    assert len(parse(text, max_nodes=1001)) == 1000  # type: ignore[arg-type]
    with pytest.raises(ValueParseError, match="more than 1000 syntax nodes"):
        parse(text, max_nodes=1000)


def test_parse_node_limit_default() -> None:
    text = "[" + "0," * 200_001 + "]"
    with pytest.raises(ValueParseError, match="more than 200000 syntax nodes"):
        parse(text)


@pytest.mark.usefixtures("default_int_digits")
def test_parse_int_digit_limit() -> None:
    assert parse("9" * 4300) == int("9" * 4300)
    with pytest.raises(ValueParseError, match="4300"):
        parse("9" * 4301)
    with pytest.raises(ValueParseError):
        parse("[1, -" + "9" * 5000 + "]")


# ---------------------------------------------------------------------------------------
# render
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "None"),
        (True, "True"),
        (False, "False"),
        (0, "0"),
        (-12, "-12"),
        (10**30, "1000000000000000000000000000000"),
        (1.5, "1.5"),
        (-0.0, "-0.0"),
        (1e100, "1e+100"),
        (0.1 + 0.2, "0.30000000000000004"),
        (INF, "float('inf')"),
        (-INF, "float('-inf')"),
        (NAN, "float('nan')"),
        (2j, "2j"),
        (1 - 2j, "(1-2j)"),
        ("it's", '"it\'s"'),
        ("a\nb", "'a\\nb'"),
        (b"\x00'", 'b"\\x00\'"'),
        ((), "()"),
        ((1,), "(1,)"),
        ((1, 2), "(1, 2)"),
        ([], "[]"),
        ([1, [2, (3,)]], "[1, [2, (3,)]]"),
        ({}, "{}"),
        ({"b": 1, "a": [2]}, "{'b': 1, 'a': [2]}"),
        ({(1, 2): None}, "{(1, 2): None}"),
        (set(), "set()"),
        ({3, 1, 2}, "{1, 2, 3}"),
        ({10, 9}, "{10, 9}"),
        ({"b", "a"}, "{'a', 'b'}"),
        (frozenset(), "frozenset()"),
        (frozenset({2, 1}), "frozenset({1, 2})"),
        ({frozenset({1})}, "{frozenset({1})}"),
        ([INF, {"x": NAN}], "[float('inf'), {'x': float('nan')}]"),
    ],
)
def test_render(value: object, text: str) -> None:
    assert render(value) == text


@pytest.mark.parametrize(
    "value",
    [
        [1, "two", 3.0, None, True, b"b", (4, 5), {"k": [6, (7,)]}],
        {"a": {"b": {"c": [1, 2, (3,)]}}, 1: (), 2: []},
        ((1,), ((2,),), [[]], [(), {}]),
        ["quote'", 'dq"', "back\\slash", "tab\t", "ünïcode", "\x7f"],
    ],
)
def test_render_matches_repr_without_sets(value: object) -> None:
    assert render(value) == repr(value)


def test_render_sets_are_canonical_regardless_of_insertion_order() -> None:
    # 8 and 16 share a hash slot, so iteration order follows insertion order.
    a, b = {8, 16}, {16, 8}
    assert list(a) != list(b)
    assert render(a) == render(b) == "{16, 8}"
    assert render(frozenset(a)) == render(frozenset(b)) == "frozenset({16, 8})"

    rng = random.Random(1234)
    elements: list[object] = [
        "x",
        "y",
        "zz",
        -1,
        0,
        1,
        2**70,
        1.5,
        None,
        (1, "a"),
        frozenset({3}),
        b"q",
    ]
    texts = set()
    for _ in range(50):
        rng.shuffle(elements)
        texts.add(render(set(elements)))
        texts.add(render({"k": frozenset(reversed(elements))}))
    assert len(texts) == 2


def test_render_set_elements_sorted_by_rendered_text() -> None:
    text = render({"b", 2, (1,), None})
    assert text == "{'b', (1,), 2, None}"
    assert text[1:-1].split(", ") == sorted(text[1:-1].split(", "))


class SubInt(int):
    pass


class SubStr(str):
    def __repr__(self) -> str:
        raise AssertionError("user __repr__ must not run")


class SubList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Iterator[object]:
        raise AssertionError("user __iter__ must not run")


class SubDict(dict):  # type: ignore[type-arg]
    pass


class Custom:
    def __repr__(self) -> str:
        raise AssertionError("user __repr__ must not run")

    def __eq__(self, other: object) -> bool:
        raise AssertionError("user __eq__ must not run")

    def __hash__(self) -> int:
        return 1


class FakeClass:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return int

    def __repr__(self) -> str:  # a stable test id (pytest takes it for an int)
        return "FakeClass()"


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (SubInt(3), "SubInt"),
        (SubStr("x"), "SubStr"),
        (SubList([1]), "SubList"),
        (SubDict(), "SubDict"),
        (Custom(), "Custom"),
        (FakeClass(), "FakeClass"),
        ([1, Custom()], "Custom"),
        ({"k": SubInt(1)}, "SubInt"),
        ({Custom(): 1}, "Custom"),
        ({(1, Custom())}, "Custom"),
        (frozenset({Custom()}), "Custom"),
        (object(), "object"),
        (range(3), "range"),
        (bytearray(b"x"), "bytearray"),
        (print, "builtin_function_or_method"),
        (Ellipsis, "ellipsis"),
    ],
)
def test_render_rejects_non_literals(value: object, name: str) -> None:
    with pytest.raises(NotALiteral, match=name):
        render(value)


def test_render_rejects_recursive_containers() -> None:
    lst: list[object] = [1]
    lst.append(lst)
    dct: dict[str, object] = {}
    dct["self"] = [dct]
    for value in (lst, dct, (lst,)):
        with pytest.raises(NotALiteral, match="recursive container"):
            render(value)


def test_render_allows_shared_non_cyclic_references() -> None:
    shared = [1]
    assert render([shared, shared, (shared,)]) == "[[1], [1], ([1],)]"


@pytest.mark.parametrize(
    ("value", "max_depth", "ok"),
    [
        (1, 0, True),
        ([], 0, False),
        ([[]], 1, False),
        ([[]], 2, True),
        ({"a": {"b": 1}}, 1, False),
        ({1: {2}}, 2, True),
        ({(1,): 2}, 1, False),
        ({frozenset({(1,)})}, 2, False),
        ({frozenset({(1,)})}, 3, True),
    ],
)
def test_render_depth_limit(value: object, max_depth: int, ok: bool) -> None:
    if ok:
        render(value, max_depth=max_depth)
    else:
        with pytest.raises(RenderLimitExceeded, match=f"nesting deeper than {max_depth}"):
            render(value, max_depth=max_depth)


def test_render_default_depth_limit() -> None:
    value: list[object] = []
    for _ in range(99):
        value = [value]
    assert render(value) == "[" * 100 + "]" * 100
    with pytest.raises(RenderLimitExceeded, match="nesting deeper than 100"):
        render([value])


def test_render_deep_nesting_with_huge_max_depth() -> None:
    value: list[object] = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(RenderLimitExceeded):
        render(value, max_depth=10**9)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ([1, 2], "[1, 2]"),
        ({1, 2}, "{1, 2}"),
        (frozenset({1}), "frozenset({1})"),
        ({"a": (1,)}, "{'a': (1,)}"),
        ("abc", "'abc'"),
        (12345, "12345"),
        (INF, "float('inf')"),
    ],
)
def test_render_max_chars_boundary(value: object, text: str) -> None:
    assert render(value, max_chars=len(text)) == text
    with pytest.raises(RenderLimitExceeded, match=f"longer than {len(text) - 1} characters"):
        render(value, max_chars=len(text) - 1)


def test_render_max_chars_stops_early() -> None:
    # 2**60 leaves through shared references: only an early stop can finish in time.
    value: object = 0
    for _ in range(60):
        value = [value, value]
    started = time.process_time()  # CPU time: a loaded machine does not stretch it
    with pytest.raises(RenderLimitExceeded):
        render(value, max_chars=10_000)
    with pytest.raises(RenderLimitExceeded):
        render("x" * 50_000_000, max_chars=100)
    with pytest.raises(RenderLimitExceeded):
        render({"k": 10**100_000}, max_chars=1000)
    assert time.process_time() - started < 5


@pytest.mark.usefixtures("default_int_digits")
def test_render_huge_int() -> None:
    huge = parse("0x" + "f" * 5000)
    assert type(huge) is int
    with pytest.raises(RenderLimitExceeded, match="digit limit"):
        render(huge)
    with pytest.raises(RenderLimitExceeded):
        render([1, -huge])


@pytest.mark.parametrize("value", [complex(INF, 1), complex(1, NAN), complex(NAN, NAN)])
def test_render_non_finite_complex(value: complex) -> None:
    with pytest.raises(NotALiteral, match="non-finite"):
        render(value)


def test_render_limits_are_value_errors() -> None:
    assert issubclass(RenderLimitExceeded, ValueError)
    assert issubclass(NotALiteral, TypeError)


# ---------------------------------------------------------------------------------------
# round trip over a generated corpus
# ---------------------------------------------------------------------------------------

_FLOATS = [0.0, -0.0, 1.5, -2.25, 1e-300, 5e-324, 1.7976931348623157e308, 1e16, 0.1, INF, -INF]
_CHARS = "ab'\"\\\n\t\x00é✓ 𝄞\x7f"


def random_scalar(rng: random.Random, allow_nan: bool) -> object:
    choice = rng.randrange(9)
    if choice == 0:
        return rng.randint(-(10**40), 10**40) if rng.random() < 0.2 else rng.randint(-100, 100)
    if choice == 1:
        if allow_nan and rng.random() < 0.1:
            return float("nan")
        return rng.choice([*_FLOATS, rng.uniform(-1e6, 1e6), rng.random()])
    if choice == 2:
        # Nonzero parts: a signed zero in a complex part need not survive the text form.
        return complex(rng.choice([1, -3, 2.5, -1e-9]), rng.choice([1, -1, 0.5, -7e20]))
    if choice == 3:
        return "".join(rng.choice(_CHARS) for _ in range(rng.randrange(6)))
    if choice == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(5)))
    if choice == 5:
        return rng.choice([True, False])
    if choice == 6:
        return None
    if choice == 7:
        return rng.randint(0, 3)
    return rng.choice(["", "x", "key"])


def random_hashable(rng: random.Random, depth: int) -> object:
    if depth <= 0 or rng.random() < 0.6:
        return random_scalar(rng, allow_nan=False)
    items = [random_hashable(rng, depth - 1) for _ in range(rng.randrange(4))]
    return tuple(items) if rng.random() < 0.5 else frozenset(items)


def random_value(rng: random.Random, depth: int, allow_nan: bool) -> object:
    if depth <= 0 or rng.random() < 0.3:
        return random_scalar(rng, allow_nan)
    size = rng.randrange(5)
    kind = rng.randrange(5)
    if kind == 0:
        return [random_value(rng, depth - 1, allow_nan) for _ in range(size)]
    if kind == 1:
        return tuple(random_value(rng, depth - 1, allow_nan) for _ in range(size))
    if kind == 2:
        # No nan in keys or set elements: "lenient" matches dict keys by ==, and nan != nan.
        return {
            random_hashable(rng, depth - 1): random_value(rng, depth - 1, allow_nan)
            for _ in range(size)
        }
    items = [random_hashable(rng, depth - 1) for _ in range(size)]
    return set(items) if kind == 3 else frozenset(items)


def corpus(seed: int, count: int, allow_nan: bool) -> list[object]:
    rng = random.Random(seed)
    return [random_value(rng, rng.randrange(6), allow_nan) for _ in range(count)]


@pytest.mark.parametrize("seed", range(5))
def test_round_trip_exact(seed: int) -> None:
    for value in corpus(seed, 300, allow_nan=False):
        text = render(value)
        back = parse(text)
        assert equal(back, value, "exact"), (value, text, back)
        assert back == value
        assert render(back) == text


@pytest.mark.parametrize("seed", range(5, 8))
def test_round_trip_text_fixpoint_with_nan(seed: int) -> None:
    for value in corpus(seed, 300, allow_nan=True):
        text = render(value)
        back = parse(text)
        assert render(back) == text, (value, text)
        assert equal(back, value, "lenient"), (value, text)


def test_round_trip_includes_every_kind() -> None:
    seen: set[type] = set()

    def walk(value: object) -> None:
        seen.add(type(value))
        if isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)

    for value in corpus(0, 300, allow_nan=False):
        walk(value)
    expected = {int, float, complex, str, bytes, bool, type(None)}
    expected |= {list, tuple, dict, set, frozenset}
    assert expected <= seen


# ---------------------------------------------------------------------------------------
# equal
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((1,), [1], False),
        ([1, 2], [1, 2], True),
        (1, 1.0, True),
        (1, True, True),
        (0, False, True),
        (NAN, NAN, False),
        (INF, INF, True),
        (0.1 + 0.2, 0.3, False),
        ({1: 2, 3: 4}, {3: 4, 1: 2}, True),
        ({1, 2}, frozenset({1, 2}), True),
        ("a", "a", True),
        ("a", b"a", False),
        (None, None, True),
        (None, 0, False),
        ([1, (2, [3])], [1, (2, [3])], True),
        ([1, (2, [3])], [1, (2, (3,))], False),
        ({"a": [1]}, {"a": [1.0]}, True),
        (1 + 0j, 1, True),
    ],
)
def test_equal_strict(a: object, b: object, expected: bool) -> None:
    assert equal(a, b) is expected
    assert equal(a, b, "strict") is expected
    assert equal(b, a, "strict") is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (1, 1, True),
        (True, 1, False),
        (True, True, True),
        (1, 1.0, False),
        (1.0, 1.0, True),
        (-0.0, 0.0, True),
        (1 + 0j, 1, False),
        ([1], (1,), False),
        ([1, 2], [1, 2], True),
        ([1, 2], [2, 1], False),
        ([1, [2, (3,)]], [1, [2, (3,)]], True),
        ([1, [2, (3,)]], [1, [2, [3]]], False),
        ([1, [2, (3,)]], [1, [2, (3.0,)]], False),
        ({1}, frozenset({1}), False),
        ({1, 2}, {2, 1}, True),
        ({1: "a", 2: "b"}, {2: "b", 1: "a"}, True),
        ({1: "a"}, {1.0: "a"}, False),
        ({True: 1}, {1: 1}, False),
        ({"a": [1]}, {"a": [1.0]}, False),
        ({"a": [1]}, {"a": (1,)}, False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({(1, 2)}, {(1.0, 2)}, False),
        ({(1, 2)}, {(1, 2)}, True),
        ({(1, (True,))}, {(1, (1,))}, False),
        (frozenset({frozenset({1})}), frozenset({frozenset({True})}), False),
        (frozenset({frozenset({1})}), frozenset({frozenset({1})}), True),
        ({(1, 2): [3]}, {(1.0, 2): [3]}, False),
        ({(1, 2): [3]}, {(1, 2): [3]}, True),
        ("a", "a", True),
        ("a", b"a", False),
        (None, None, True),
        (None, False, False),
        (NAN, NAN, False),
        ([NAN], [NAN], False),
        (INF, INF, True),
        (0.1 + 0.2, 0.3, False),
    ],
)
def test_equal_exact(a: object, b: object, expected: bool) -> None:
    assert equal(a, b, "exact") is expected
    assert equal(b, a, "exact") is expected


def test_equal_exact_nan_even_for_same_object() -> None:
    nan_list = [NAN]
    assert equal(nan_list, nan_list, "strict")  # Python's identity shortcut
    assert not equal(nan_list, nan_list, "exact")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 2], (1, 2), True),
        ([[1], (2,)], ((1,), [2]), True),
        ({"a": (1, [2])}, {"a": [1, (2,)]}, True),
        ([1, 2], [1, 2, 3], False),
        ([1, 2], [2, 1], False),
        ({1, 2}, frozenset({2, 1}), True),
        ({frozenset({1})}, frozenset({frozenset({1})}), True),
        ({1, 2}, {1, 3}, False),
        ([1], {1}, False),
        (1, 1.0, True),
        (0.1 + 0.2, 0.3, True),
        (1.0, 1.0001, False),
        (1.0, 1.0 + 1e-7, True),
        (1e-12, 0.0, True),
        (1e-6, 0.0, False),
        (NAN, NAN, True),
        ([NAN], (NAN,), True),
        (NAN, 0.0, False),
        (INF, INF, True),
        (-INF, -INF, True),
        (INF, -INF, False),
        (INF, 1e308, False),
        (True, 1, False),
        (True, 1.0, False),
        (False, 0, False),
        (True, True, True),
        (False, True, False),
        ({"a": 0.1 + 0.2}, {"a": 0.3}, True),
        ({"a": 1}, {"b": 1}, False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({1: "x"}, {1.0: "x"}, True),
        ({0.1 + 0.2: "x"}, {0.3: "x"}, False),
        ({0.1 + 0.2}, {0.3}, True),
        ({NAN, 1.0}, frozenset({float("nan"), 1.0}), True),
        ({(NAN, 1)}, {(float("nan"), 1)}, True),
        ({NAN: 1}, {float("nan"): 1}, False),
        ({0.1 + 0.2, 5}, {0.3, 6}, False),
        ({(1, 2)}, {(1.0, 2.0)}, True),
        (1 + 1e-12j, 1, True),
        (1 + 2j, 1 + 2.0000000001j, True),
        (1 + 2j, 1 - 2j, False),
        (10**400, 10**400, True),
        (10**400, 10**400 + 1, False),
        ("a", "a", True),
        ("a", "b", False),
        ("1", 1, False),
        (None, None, True),
        (None, 0, False),
        ({"a": [1, {2: (3.0,)}]}, {"a": ((1.0), {2: [3]})}, True),
    ],
)
def test_equal_lenient(a: object, b: object, expected: bool) -> None:
    assert equal(a, b, "lenient") is expected
    assert equal(b, a, "lenient") is expected


@pytest.mark.parametrize(
    ("a", "b", "rel_tol", "abs_tol", "expected"),
    [
        (1.0, 1.05, 0.1, 0.0, True),
        (1.0, 1.05, 0.01, 0.0, False),
        (0.0, 0.5, 0.0, 1.0, True),
        (0.0, 0.5, 0.0, 0.1, False),
        (100, 101, 0.0, 0.0, False),
        (100, 100, 0.0, 0.0, True),
    ],
)
def test_equal_lenient_tolerances(
    a: object, b: object, rel_tol: float, abs_tol: float, expected: bool
) -> None:
    assert equal(a, b, "lenient", rel_tol=rel_tol, abs_tol=abs_tol) is expected


def test_equal_policies_constant() -> None:
    assert POLICIES == ("strict", "exact", "lenient")
    for policy in POLICIES:
        assert equal([1, {"a": 2}], [1, {"a": 2}], policy)


@pytest.mark.parametrize("policy", ["", "Strict", "loose", "approx"])
def test_equal_unknown_policy(policy: str) -> None:
    with pytest.raises(ValueError, match="strict, exact, lenient"):
        equal(1, 1, policy)


# ---------------------------------------------------------------------------------------
# type_name
# ---------------------------------------------------------------------------------------


class Outer:
    class Inner:
        pass


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (1, "int"),
        (True, "bool"),
        (None, "NoneType"),
        ([], "list"),
        (frozenset(), "frozenset"),
        (SubInt(1), "SubInt"),
        (Outer.Inner(), "Outer.Inner"),
        (FakeClass(), "FakeClass"),
        (int, "type"),
    ],
)
def test_type_name(value: object, name: str) -> None:
    assert type_name(value) == name


def test_type_name_does_not_run_metaclass_code() -> None:
    class LyingMeta(type):
        def __getattribute__(cls, name: str) -> object:
            if name in ("__qualname__", "__name__"):
                raise AssertionError("metaclass code must not run")
            return super().__getattribute__(name)

    class Lying(metaclass=LyingMeta):
        pass

    assert type_name(Lying()) == "test_type_name_does_not_run_metaclass_code.<locals>.Lying"
    assert type_name(Lying) == "test_type_name_does_not_run_metaclass_code.<locals>.LyingMeta"
    with pytest.raises(NotALiteral, match="Lying"):
        render([Lying()])
