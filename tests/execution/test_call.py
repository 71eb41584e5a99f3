from __future__ import annotations

import math

import pytest

from codereasoner.execution import Call, CallSyntaxError, Program, parse_call


@pytest.mark.parametrize(
    ("text", "entry", "args", "kwargs"),
    [
        ("f(1, 'a')", "f", (1, "a"), {}),
        ("  f()  ", "f", (), {}),
        ("f([1, (2, 3)], {'k': {4}})", "f", ([1, (2, 3)], {"k": {4}}), {}),
        ("f(x=1, y=None)", "f", (), {"x": 1, "y": None}),
        ("f(*[1, 2], **{'z': 3})", "f", (1, 2), {"z": 3}),
        ("f(-5, 2.5, b'xy', True)", "f", (-5, 2.5, b"xy", True), {}),
        ("f(true, null)", "f", (True, None), {}),
        ("Solution().twoSum([2, 7], 9)", "Solution().twoSum", ([2, 7], 9), {}),
        ("helper.run(3)", "helper.run", (3,), {}),
    ],
)
def test_parse_call_accepts_literal_calls(text, entry, args, kwargs) -> None:
    call = parse_call(text)
    assert call.entry == entry
    assert call.args == args
    assert call.kwargs == kwargs


def test_parse_call_keeps_special_floats() -> None:
    call = parse_call("f(float('inf'), nan)")
    assert call.args[0] == math.inf
    assert math.isnan(call.args[1])


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("f(x)", "argument 1 is not a literal"),
        ("f(__import__('os').system('id'))", "argument 1 is not a literal"),
        ("f(1)(2)", "called object"),
        ("f(1, key=g())", "keyword argument 'key'"),
        ("lambda: 1", "expected a call"),
        ("f(", "not a Python call expression"),
        ("[1, 2]", "expected a call"),
        ("f(*5)", "starred argument 1 must be a list or tuple"),
        ("f(**{1: 2})", "string keys"),
        ("getattr(f, 'x')()", "called object"),
        ("f(type('X', (), {'__eq__': lambda s, o: True})())", "not a literal"),
    ],
)
def test_parse_call_rejects_non_literals_with_a_clear_message(text, fragment) -> None:
    with pytest.raises(CallSyntaxError) as info:
        parse_call(text)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_render_round_trips_and_is_canonical() -> None:
    call = parse_call("f({3, 1, 2}, 'x', k=(1,))")
    assert call.render() == "f({1, 2, 3}, 'x', k=(1,))"
    assert parse_call(call.render()) == call


def test_entry_points_are_validated() -> None:
    with pytest.raises(CallSyntaxError):
        Program("def f(): pass", entry="f; import os")
    with pytest.raises(CallSyntaxError):
        Call("os.system('x')")
    assert Program("def g(a): return a", entry="g").call(1) == Call("g", (1,))
