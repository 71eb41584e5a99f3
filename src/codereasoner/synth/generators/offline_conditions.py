"""Conditions for the offline generator's ``if`` statements and comprehension filters.

Each condition comes with a predicate, so that the generator can pick one that holds on a value
it knows (the receiver, a new parameter, the values a loop variable takes): the branch that holds
the method then runs, instead of an empty result.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# (text, predicate on the variable's value, the other method it calls or "")
Condition = tuple[str, Callable[[Any], Any], str]


@dataclass
class Var:
    """A name in scope and the kind of value it holds (for conditions and arguments)."""

    name: str
    kind: str
    role: str = "loop"  # loop | receiver | element | snapshot | arg:<position> | param
    values: list[Any] | None = None  # the values it takes, where known here


UNKNOWN = object()


def holds(test: Any, value: Any) -> bool:
    """Whether a condition's predicate is true on a value known at generation time."""
    try:
        return bool(test(value))
    except (TypeError, ValueError, AttributeError):
        return False


def kind_of(value: Any) -> str:
    """The condition kind of a literal value."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | bytes | list | tuple
                                                 | dict | set):  # fmt: skip
        return "any"
    if isinstance(value, str):
        return "char" if len(value) == 1 else "str"
    return type(value).__name__


def conditions(var: Var, methods: bool, rng: random.Random, binary: bool) -> list[Condition]:
    """(text, predicate on the value, other method called or "") for a variable."""
    name, kind, k = var.name, var.kind, rng.randint(0, 4)
    letter = rng.choice("aeiost")
    if kind in ("char", "key") or (kind == "str" and var.role != "receiver"):
        if methods and kind == "char" and not binary:
            tests = ("isalpha", "isdigit", "islower", "isupper", "isspace", "isalnum")
            return [(f"{name}.{test}()", lambda v, t=test: getattr(v, t)(), test)
                    for test in tests]  # fmt: skip
        high = rng.choice("cjmp")
        return [(f"{name} != {letter!r}", lambda v: v != letter, ""),
                (f"{name} in 'aeiou'", lambda v: v in "aeiou", ""),
                (f"{name} > {high!r}", lambda v: v > high, ""),
                (f"{name} not in 'xyz '", lambda v: v not in "xyz ", "")]  # fmt: skip
    if kind == "any":
        return [(name, bool, ""), (f"{name} is not None", lambda v: v is not None, ""),
                (f"not {name}", lambda v: not v, "")]  # fmt: skip
    if kind == "int":
        return [
            (f"{name} % 2 == 0", lambda v: v % 2 == 0, ""),
            (f"{name} > {k}", lambda v: v > k, ""),
            (f"{name} != {k}", lambda v: v != k, ""),
            (f"{name} < {k + 2}", lambda v: v < k + 2, ""),
            (f"{name} % 3", lambda v: v % 3, ""),
            (f"{name} >= {k}", lambda v: v >= k, ""),
        ]
    if kind == "float":
        return [(f"{name} > 0", lambda v: v > 0, ""), (f"{name} < 1.5", lambda v: v < 1.5, ""),
                (f"{name} != 0.5", lambda v: v != 0.5, "")]  # fmt: skip
    if kind in ("str", "bytes"):
        binary = kind == "bytes"
        mark = letter.encode() if binary else letter
        empty = b"" if binary else ""
        if methods and not binary:
            head = rng.choice("abcdefghilmnoprst")
            return [(f"{name}.startswith({head!r})", lambda v: v.startswith(head),
                     "startswith"), (f"{name}.isalpha()", lambda v: v.isalpha(), "isalpha"),
                    (f"{name}.islower()", lambda v: v.islower(), "islower"),
                    (f"{name}.endswith({letter!r})", lambda v: v.endswith(letter),
                     "endswith"), (f"not {name}.isdigit()", lambda v: not v.isdigit(),
                                   "isdigit")]  # fmt: skip
        return [(f"len({name}) > {k}", lambda v: len(v) > k, ""),
                (f"{mark!r} in {name}", lambda v: mark in v, ""), (name, bool, ""),
                (f"{name} != {empty!r}", lambda v: v != empty, "")]  # fmt: skip
    if kind in ("list", "tuple", "set", "frozenset"):
        if methods and kind in ("list", "tuple"):
            return [
                (f"{name}.count({k}) < 2", lambda v: v.count(k) < 2, "count"),
                (f"{name}.count({k}) > 0", lambda v: v.count(k) > 0, "count"),
            ]
        return [(f"len({name}) > {k}", lambda v: len(v) > k, ""), (name, bool, ""),
                (f"{k} in {name}", lambda v: k in v, ""),
                (f"{k} not in {name}", lambda v: k not in v, "")]  # fmt: skip
    if kind == "dict":
        key = rng.choice(("a", "b", "x", "k", "z"))
        if methods:
            return [
                (f"{name}.get({key!r}, 0) > {k}", lambda v: v.get(key, 0) > k, "get"),
                (f"{name}.get({key!r}) is None", lambda v: v.get(key) is None, "get"),
                (f"{key!r} not in {name}.keys()", lambda v: key not in v, "keys"),
            ]
        return [
            (f"{key!r} in {name}", lambda v: key in v, ""),
            (f"len({name}) > {k}", lambda v: len(v) > k, ""),
            (name, bool, ""),
        ]
    return [("True", bool, "")]
