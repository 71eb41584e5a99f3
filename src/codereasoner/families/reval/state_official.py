"""REval state answers graded as upstream grades them: the value ``eval``-ed and the type found
with ``pydoc.locate`` (docs/reval.md, "Official and strict state grading").

Upstream evaluates the answer's value in its evaluator's module, where ``np``, ``re``, ``json``,
``os``, ``sys``, ``datetime`` (the class) and ``locate`` are bound, so ``int(0)``, ``-1 + 1``,
``np.float64(2.0)``, ``0; builtins.int`` and ``[]; list.`` all read as their values and types.
Here that evaluation runs in the sandbox, in a hook of its own (no benchmark code), and what comes
back is data: a tag, the located type's module-qualified name, whether the value's own type is
that type, and the value as a plain literal (numpy values as lists, a top-level deque as a list
and a bytearray as bytes, a class as its qualified name, a date as its ISO text). The comparison
with the truth (upstream's ``_eq``) happens here, in the parent.

Answers whose value is a Python literal and whose type is a builtin class name are read in the
parent (:mod:`codereasoner.families.reval.state_answers`): ``eval`` gives exactly the parsed value there.
"""

from __future__ import annotations

import ast
import datetime
import math
from collections.abc import Callable, Sequence
from typing import Any

from codereasoner import values
from codereasoner.execution import Call, ExecResult, Program, Status
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.families.reval.state_answers import BUILTIN_CLASSES, TypeName, equal_values
from codereasoner.tasks.base import Item, Reason, Score
from codereasoner.tasks.grading import is_python_literal
from codereasoner.tasks.plans import Job, verdict

__all__ = ["STATE_ENTRY", "decided_in_parent", "state_job"]

STATE_ENTRY = "__reval_state__"
# The names upstream's evaluator module has bound where it evaluates an answer's value (pandas
# aside: importing it in every grading process costs more than the answers that name ``pd``).
_HOOK = """
import argparse, glob, inspect, json, os, re, sys
from datetime import datetime
from pydoc import locate
try:
    import numpy as np
except ImportError:
    pass


class Unavailable(Exception):
    pass


# the names upstream's evaluator has bound, copied for each reading: an answer that rebinds
# or defines names (exec(..., globals())) changes its own copy, never this module
__reval_bound__ = {
    name: value for name, value in dict(globals()).items()
    if name in ("argparse", "glob", "inspect", "json", "os", "re", "sys", "datetime", "locate", "np")
}


def __reval_located__(kind):
    found = locate(kind)
    if found is None or not inspect.isclass(found):
        raise ValueError(kind)
    return found


def __reval_read__(value, kind):
    namespace = dict(__reval_bound__)
    if kind == "str":
        try:
            return eval(value, namespace), str
        except Exception:
            return value, str
    if kind in ("datetime.datetime", "datetime"):
        try:
            from dateutil.parser import parse
        except ImportError:
            raise Unavailable from None
        return parse(value), locate(kind)
    if kind in ("numpy.ndarray", "np.ndarray"):
        try:
            import numpy
        except ImportError:
            raise Unavailable from None
        return numpy.array(eval(value, namespace)), locate(kind)
    if value == "None" or kind == "NoneType":
        return None, type(None)
    found = __reval_located__(kind)
    if found.__module__ == "builtins":
        return eval(value, namespace), found
    try:
        return found(eval(value, namespace)), found
    except Exception:
        return found(value), found


def __reval_name__(kind):
    if not isinstance(kind, type):
        return None
    name = kind.__qualname__
    return name if kind.__module__ == "builtins" else kind.__module__ + "." + name


def __reval_plain__(value, top=True):
    import collections, datetime as dates
    kind = type(value)
    if isinstance(value, type):
        return "class", __reval_name__(value)
    if isinstance(value, (dates.datetime, dates.date, dates.time)):
        return "date", value.isoformat()
    if kind.__module__ == "numpy" and hasattr(value, "tolist"):
        return "value", value.tolist()
    if top and kind is collections.deque:
        return "value", list(value)
    if top and kind is bytearray:
        return "value", bytes(value)
    return "value", value


def __reval_state__(value, kind, read=__reval_read__, plain=__reval_plain__, name=__reval_name__):
    # the helpers are bound at definition: a reading that patches this module's globals
    # cannot change how its own result is reported
    try:
        found, located = read(value, kind)
    except Unavailable:
        return ("unavailable", None, False, "value", None)
    except Exception:
        return ("error", None, False, "value", None)
    own = type(found) is located
    shape, shown = plain(found)
    return ("ok", name(located), own, shape, shown)
"""
_PROGRAM = Program(_HOOK, entry=STATE_ENTRY, preamble=SITE_PACKAGES_PREAMBLE)
_ARRAYS = frozenset({"numpy.ndarray", "numpy.matrix"})
Truth = Sequence[Sequence[Any]]


def decided_in_parent(value: str, kind: str) -> bool:
    """True when upstream's ``eval`` gives exactly what the parent's parser reads: a Python
    literal (no names, no calls) of a builtin class named as such."""
    if kind not in BUILTIN_CLASSES or kind == "type":
        return False
    try:
        tree = ast.parse(value.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return is_python_literal(tree.body)


def state_job(item: Item, sample: int, text: str, value: str, kind: str) -> Job:
    """The sandboxed reading of ``value; kind``; its finisher compares it with the truth."""
    call = Call(STATE_ENTRY, (value, kind))
    # each reading in a process of its own: one sample's patch of a module (pydoc.locate,
    # numpy's settings) must not reach the next sample's reading
    return Job(sample, _PROGRAM, call, _finish(item, sample, text))


def _finish(item: Item, sample: int, text: str) -> Callable[[ExecResult], Score]:
    truth = item.truth_value()

    def finish(result: ExecResult) -> Score:
        if result.status is Status.SANDBOX_ERROR:
            return verdict(item, sample, text, Reason.SANDBOX_ERROR, result.describe())
        if result.status is not Status.OK:
            return verdict(
                item, sample, text, Reason.WRONG, f"reading the value: {result.describe()}"
            )
        try:
            read = result.parsed_value()
        except ValueError:
            return verdict(item, sample, text, Reason.WRONG, "the value is not a plain literal")
        try:
            right, why = _compare(read, truth)  # type: ignore[arg-type]
        except (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError) as exc:
            # what the sandbox read cannot be compared (a number past any float): not a match
            right, why = False, f"the value cannot be compared ({type(exc).__name__})"
        return verdict(item, sample, text, Reason.CORRECT if right else Reason.WRONG, why)

    return finish


def _compare(read: object, truth: Truth | None) -> tuple[bool, str]:
    """Upstream's ``_eq`` on the sandbox's reading ``(tag, type, own type, shape, value)``."""
    if truth is None:
        return False, "expected Nil"
    if type(read) is not tuple or len(read) != 5:
        return False, "an unexpected reading"
    tag, kind, own, shape, value = read
    if tag == "unavailable":
        return False, "the value needs a module the sandbox lacks (dateutil or numpy)"
    if tag != "ok" or kind is None:
        return False, "upstream reads ERROR: the value or the type does not evaluate"
    kinds = {str(expected_kind) for expected_kind, _ in truth}
    if kind not in kinds:
        return False, f"type {kind}, expected {' or '.join(sorted(kinds))}"
    if own is not True:
        return False, f"the value is not a {kind}"
    expected = [_expected(str(k), t) for k, t in truth]
    if shape == "class":
        found = any(isinstance(e, TypeName) and e.name == value for e in expected)
    elif shape == "date":
        found = any(isinstance(e, datetime.datetime) and e.isoformat() == value for e in expected)
    elif kind == "float":
        found = any(_close_float(value, e) for e in expected)
    elif kind in _ARRAYS:
        found = any(_array_match(value, e) for e in expected)
    else:
        found = any(equal_values(value, e) for e in expected)
    return found, "" if found else "value not among the expected values"


def _expected(kind: str, text: str | None) -> object:
    if text is None:
        return None
    if kind == "type":
        return TypeName(text)
    if kind == "datetime.datetime":
        try:
            return datetime.datetime.fromisoformat(text)
        except ValueError:
            return None
    try:
        return values.parse(text)
    except values.ValueParseError:
        return None


def _close_float(value: object, expected: object) -> bool:
    numbers = (int, float, bool)
    if not isinstance(value, numbers) or not isinstance(expected, numbers):
        return False
    try:
        return abs(value - expected) < 1e-6
    except OverflowError:  # an int past any float: within 1e-6 only of itself
        return False


def _array_match(a: object, b: object) -> bool:
    """``a in [b]`` for numpy arrays: one element each compares exactly, more fall back to
    ``np.allclose``, which broadcasts (so a differently shaped array can match)."""
    shape_a, shape_b = _shape(a), _shape(b)
    if shape_a is None or shape_b is None:
        return False
    if math.prod(shape_a) == 1 and math.prod(shape_b) == 1:
        return equal_values(_flat(a)[0], _flat(b)[0])
    return _allclose_broadcast(a, shape_a, b, shape_b)


def _shape(value: object) -> tuple[int, ...] | None:
    """The shape of a rectangular nested list of numbers (None: ragged or not numbers)."""
    if isinstance(value, int | float | bool):
        return ()
    if not isinstance(value, list):
        return None
    shapes = {_shape(item) for item in value}
    if len(shapes) > 1 or None in shapes:
        return None
    inner = shapes.pop() if shapes else ()
    return (len(value), *inner) if inner is not None else None


def _flat(value: object) -> list[Any]:
    return [x for item in value for x in _flat(item)] if isinstance(value, list) else [value]


def _allclose_broadcast(
    a: object, shape_a: tuple[int, ...], b: object, shape_b: tuple[int, ...]
) -> bool:
    ndim = max(len(shape_a), len(shape_b))
    padded_a = (1,) * (ndim - len(shape_a)) + shape_a
    padded_b = (1,) * (ndim - len(shape_b)) + shape_b
    if any(x != y and 1 not in (x, y) for x, y in zip(padded_a, padded_b, strict=True)):
        return False
    out = tuple(max(x, y) for x, y in zip(padded_a, padded_b, strict=True))
    flat_a, flat_b = _flat(a), _flat(b)
    for index in range(math.prod(out)):
        position, rest = [], index
        for size in reversed(out):
            position.append(rest % size)
            rest //= size
        position.reverse()
        x = flat_a[_offset(position, padded_a)]
        y = flat_b[_offset(position, padded_b)]
        if not _close(x, y):
            return False
    return True


def _offset(position: list[int], shape: tuple[int, ...]) -> int:
    offset = 0
    for coordinate, size in zip(position, shape, strict=True):
        offset = offset * size + (coordinate if size > 1 else 0)
    return offset


def _close(x: object, y: object) -> bool:
    if not isinstance(x, int | float) or not isinstance(y, int | float):
        return False
    try:
        if math.isnan(x) or math.isnan(y):
            return False
        if math.isinf(x) or math.isinf(y):
            return x == y
        return abs(x - y) <= 1e-8 + 1e-5 * abs(y)
    except OverflowError:  # an int past any float: numpy's float array holds none
        return False
