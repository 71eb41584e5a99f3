"""Conditions for the offline generator's ``if`` statements and comprehension filters.

Each condition comes with a predicate, so that the generator can pick one that holds on a value
it knows (the receiver, a new parameter, the values a loop variable takes): the branch that holds
the method then runs, instead of an empty result.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple


class Role(Enum):
    """What a name in scope stands for."""

    LOOP = "loop"  # a loop variable over a range, or a while loop's counter
    RECEIVER = "receiver"  # the method's receiver, or one of several a loop goes through
    ELEMENT = "element"  # an element of the receiver
    SNAPSHOT = "snapshot"  # an element of a copy of the receiver (which the loop may change)
    PARAM = "param"  # a parameter made for a condition


@dataclass(frozen=True)
class ArgumentOf:
    """The role of a loop variable that goes through values of the argument at ``position``."""

    position: int


@dataclass
class Var:
    """A name in scope and the kind of value it holds (for conditions and arguments)."""

    name: str
    kind: str
    role: Role | ArgumentOf = Role.LOOP
    values: list[Any] | None = None  # the values it takes, where known here


class Condition(NamedTuple):
    """A condition's text, its predicate on the variable's value, and the other catalog method
    it calls (if any)."""

    text: str
    test: Callable[[Any], Any]
    method: str | None = None


UNKNOWN = object()


def holds(test: Callable[[Any], Any], value: Any) -> bool:
    """Whether a condition's predicate is true on a value known at generation time."""
    try:
        return bool(test(value))
    except (TypeError, ValueError, AttributeError):
        return False


def kind_of(value: Any) -> str:
    """The condition kind of a literal value."""
    literal_types = int | float | str | bytes | list | tuple | dict | set
    if isinstance(value, bool) or not isinstance(value, literal_types):
        return "any"
    if isinstance(value, str):
        return "char" if len(value) == 1 else "str"
    return type(value).__name__


def _calls(method: str) -> Callable[[Any], Any]:
    return lambda value: getattr(value, method)()


def conditions(var: Var, methods: bool, rng: random.Random, binary: bool) -> list[Condition]:
    """The conditions that fit a variable (calling other methods only when ``methods``)."""
    name, kind, k = var.name, var.kind, rng.randint(0, 4)
    letter = rng.choice("aeiost")
    if kind in ("char", "key") or (kind == "str" and var.role is not Role.RECEIVER):
        if methods and kind == "char" and not binary:
            tests = ("isalpha", "isdigit", "islower", "isupper", "isspace", "isalnum")
            return [Condition(f"{name}.{test}()", _calls(test), test) for test in tests]
        high = rng.choice("cjmp")
        return [
            Condition(f"{name} != {letter!r}", lambda v: v != letter),
            Condition(f"{name} in 'aeiou'", lambda v: v in "aeiou"),
            Condition(f"{name} > {high!r}", lambda v: v > high),
            Condition(f"{name} not in 'xyz '", lambda v: v not in "xyz "),
        ]
    if kind == "any":
        return [
            Condition(name, bool),
            Condition(f"{name} is not None", lambda v: v is not None),
            Condition(f"not {name}", lambda v: not v),
        ]
    if kind == "int":
        return [
            Condition(f"{name} % 2 == 0", lambda v: v % 2 == 0),
            Condition(f"{name} > {k}", lambda v: v > k),
            Condition(f"{name} != {k}", lambda v: v != k),
            Condition(f"{name} < {k + 2}", lambda v: v < k + 2),
            Condition(f"{name} % 3", lambda v: v % 3),
            Condition(f"{name} >= {k}", lambda v: v >= k),
        ]
    if kind == "float":
        return [
            Condition(f"{name} > 0", lambda v: v > 0),
            Condition(f"{name} < 1.5", lambda v: v < 1.5),
            Condition(f"{name} != 0.5", lambda v: v != 0.5),
        ]
    if kind in ("str", "bytes"):
        binary = kind == "bytes"
        mark = letter.encode() if binary else letter
        empty = b"" if binary else ""
        if methods and not binary:
            head = rng.choice("abcdefghilmnoprst")
            return [
                Condition(
                    f"{name}.startswith({head!r})", lambda v: v.startswith(head), "startswith"
                ),
                Condition(f"{name}.isalpha()", lambda v: v.isalpha(), "isalpha"),
                Condition(f"{name}.islower()", lambda v: v.islower(), "islower"),
                Condition(f"{name}.endswith({letter!r})", lambda v: v.endswith(letter), "endswith"),
                Condition(f"not {name}.isdigit()", lambda v: not v.isdigit(), "isdigit"),
            ]
        return [
            Condition(f"len({name}) > {k}", lambda v: len(v) > k),
            Condition(f"{mark!r} in {name}", lambda v: mark in v),
            Condition(name, bool),
            Condition(f"{name} != {empty!r}", lambda v: v != empty),
        ]
    if kind in ("list", "tuple", "set", "frozenset"):
        if methods and kind in ("list", "tuple"):
            return [
                Condition(f"{name}.count({k}) < 2", lambda v: v.count(k) < 2, "count"),
                Condition(f"{name}.count({k}) > 0", lambda v: v.count(k) > 0, "count"),
            ]
        return [
            Condition(f"len({name}) > {k}", lambda v: len(v) > k),
            Condition(name, bool),
            Condition(f"{k} in {name}", lambda v: k in v),
            Condition(f"{k} not in {name}", lambda v: k not in v),
        ]
    if kind == "dict":
        key = rng.choice(("a", "b", "x", "k", "z"))
        if methods:
            return [
                Condition(f"{name}.get({key!r}, 0) > {k}", lambda v: v.get(key, 0) > k, "get"),
                Condition(f"{name}.get({key!r}) is None", lambda v: v.get(key) is None, "get"),
                Condition(f"{key!r} not in {name}.keys()", lambda v: key not in v, "keys"),
            ]
        return [
            Condition(f"{key!r} in {name}", lambda v: key in v),
            Condition(f"len({name}) > {k}", lambda v: len(v) > k),
            Condition(name, bool),
        ]
    return [Condition("True", bool)]
