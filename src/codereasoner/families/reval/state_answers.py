"""REval state answers: ``value; type`` read as upstream reads it (docs/benchmark-rules.md), never run.

Upstream ``eval``s the value and resolves the type with ``pydoc.locate`` (which imports modules
and may call anything). Here the value is parsed with :func:`codereasoner.values.parse` and the
type is looked up in a fixed table: builtin classes, ``type``, ``datetime.datetime``,
``numpy.ndarray`` and numpy scalar types. A value counts as evaluable only when upstream's
``eval`` would evaluate it: JSON spellings (``true``, ``null``) and bare ``inf``/``nan`` are
NameErrors upstream, so they are errors here too (for ``str``, the raw text, as upstream's
fallback), unless the named leniency ``json_spellings=True`` is chosen. ``b''; bytearray`` is
wrong (the value is ``bytes``), ``bytearray(b''); bytearray`` right; ``<class 'int'>; type`` is
an error (a syntax error upstream), ``int; type`` right.

Other differences, all documented: a value that only ``eval`` could compute (``'a' * 3``) is an
error here (for ``str`` it stays the raw text, as upstream's fallback); another dotted type name is
unresolvable (upstream: error, or a constructor call); ``dateutil`` is approximated by ISO and
common ``strptime`` formats.

Comparison follows the spec: Nil matches only Nil; the predicted type must equal the type of one
expected value and the value's own type; floats match within 1e-6 of an expected float; arrays
with ``allclose``; everything else by ``==`` against any expected value.
"""

from __future__ import annotations

import ast
import builtins
import datetime
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codereasoner import values

__all__ = [
    "BUILTIN_CLASSES",
    "NIL",
    "StateError",
    "StatePrediction",
    "TypeName",
    "equal_values",
    "parse_state",
    "state_parts",
    "state_verdict",
]

NIL = "Nil"
_NUMPY_SCALARS = frozenset(
    f"numpy.{name}"
    for name in (
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "bool_",
        "intc",
        "longlong",
        "double",
    )
)
BUILTIN_CLASSES = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and name.islower()
)
_DATE_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", "%Y/%m/%d %H:%M:%S",
                 "%Y/%m/%d %H:%M", "%Y/%m/%d", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%m/%d/%Y",
                 "%H:%M:%S", "%H:%M", "%b %d %Y", "%d %b %Y", "%B %d, %Y")  # fmt: skip
_ARRAYS = frozenset({"numpy.ndarray", "numpy.matrix"})
_OPAQUE = object()
# Names values.parse reads but upstream's eval does not know (NameError there).
_NOT_EVALUABLE = frozenset({"true", "false", "null", "inf", "Infinity", "nan", "NaN"})


@dataclass(frozen=True)
class TypeName:
    """A class given as a value (``int; type``)."""

    name: str


@dataclass(frozen=True)
class StatePrediction:
    """A parsed answer: the value and the resolved type name (None: does not resolve)."""

    value: object
    type: str | None


@dataclass(frozen=True)
class StateError:
    """Upstream's ``ERROR``: the answer is wrong."""

    reason: str


Parsed = StatePrediction | StateError | str  # str: NIL


def parse_state(text: str, *, json_spellings: bool = False) -> Parsed:
    """Rules 2-9 of docs/benchmark-rules.md, "State." on an extracted answer.

    ``json_spellings``: the named leniency that reads ``true``/``false``/``null`` and bare
    ``inf``/``nan`` as values (upstream: a NameError, so the answer is wrong).
    """
    parts = state_parts(text)
    if isinstance(parts, tuple):
        return _typed(*parts, json_spellings)
    return parts


def state_parts(text: str) -> tuple[str, str] | StateError | str:
    """Rules 2-4: Nil, an error, or ``(value text, normalised type name)``."""
    if text.capitalize() == NIL or text == "[Nil]":
        return NIL
    if text == "ERROR":
        return StateError("no answer")
    value, semicolon, kind = text.rpartition(";")
    if not semicolon:
        return StateError("no ';' between value and type")
    value, kind = value.strip(), kind.strip().lower()
    if value.capitalize() == NIL:
        return NIL
    if found := re.match(r"<class '(.*)'>", kind):
        kind = found.group(1)
    if found := re.match(r"(.*)\[.*\]", kind):
        kind = found.group(1)
    kind = {"string": "str", "integer": "int"}.get(kind, kind)
    if "," in kind or "tuple" in kind:
        kind = "tuple"
    return value, kind


def _typed(value: str, kind: str, json_spellings: bool) -> Parsed:
    def _parse(text: str) -> Any:
        return _evaluated(text, json_spellings)

    if kind == "str":
        parsed = _parse(value)
        return StatePrediction(value if parsed is _OPAQUE else parsed, "str")
    if kind in ("datetime.datetime", "datetime"):
        moment = _date(value)
        if moment is None:
            return StateError(f"not a date: {value[:60]!r}")
        # pydoc.locate("datetime") is the module, which no value has as its type
        return StatePrediction(moment, "datetime.datetime" if "." in kind else None)
    if kind in _ARRAYS or kind == "np.ndarray":
        parsed = _parse(value)
        if parsed is _OPAQUE:
            return StateError(f"not an array literal: {value[:60]!r}")
        # pydoc.locate("np.ndarray") is None: no expected value has that type
        return StatePrediction(parsed, kind if kind in _ARRAYS else None)
    if kind == "collections.deque":
        parsed = _parse(value)
        if not isinstance(parsed, list | tuple):
            return StateError(f"not a sequence for a deque: {value[:60]!r}")
        return StatePrediction(list(parsed), kind)
    if kind == "bytearray":
        found = re.fullmatch(r"bytearray\((.*)\)", value, re.DOTALL)
        parsed = _parse(found.group(1) if found else value)
        if not isinstance(parsed, bytes):
            return StateError(f"not a bytearray: {value[:60]!r}")
        # a bare bytes literal evaluates to bytes, whose type is not bytearray (upstream: wrong)
        return StatePrediction(bytearray(parsed) if found else parsed, kind)
    if value == "None":
        return StatePrediction(None, "NoneType")
    if kind == "type":
        if not re.fullmatch(r"[A-Za-z_][\w.]*", value):
            return StateError(f"not a class name upstream can evaluate: {value[:60]!r}")
        return StatePrediction(TypeName(value), "type")
    if kind in BUILTIN_CLASSES or kind in _NUMPY_SCALARS:
        parsed = _parse(value)
        if parsed is _OPAQUE:
            return StateError(f"value {value[:60]!r} is not a literal")
        return StatePrediction(parsed, kind)
    return StateError(f"type {kind!r} does not resolve")


def _parse(text: str) -> Any:
    try:
        return values.parse(text)
    except values.ValueParseError:
        return _OPAQUE


def _evaluated(text: str, json_spellings: bool) -> Any:
    """The value upstream's ``eval`` gives ``text`` (parsed, never evaluated), or _OPAQUE."""
    parsed = _parse(text)
    if parsed is _OPAQUE or json_spellings:
        return parsed
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return _OPAQUE
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return _OPAQUE if names & _NOT_EVALUABLE else parsed


def _date(text: str) -> datetime.datetime | None:
    parsed = _parse(text)
    raw = (parsed if isinstance(parsed, str) else text).strip()
    try:
        return datetime.datetime.fromisoformat(raw)
    except ValueError:
        pass
    for layout in _DATE_FORMATS:
        try:
            moment = datetime.datetime.strptime(raw, layout)
        except ValueError:
            continue
        if layout.startswith("%H"):  # dateutil fills a bare time with today's date
            today = datetime.date.today()
            moment = moment.replace(year=today.year, month=today.month, day=today.day)
        return moment
    return None


def _expected(kind: str, text: str | None) -> Any:
    if text is None:
        return _OPAQUE
    if kind == "datetime.datetime":
        try:
            return datetime.datetime.fromisoformat(text)
        except ValueError:
            return _OPAQUE
    if kind == "type":
        return TypeName(text)
    if kind == "NoneType":
        return None
    if kind in BUILTIN_CLASSES or kind in _NUMPY_SCALARS or kind in _ARRAYS:
        return _parse(text)
    if kind == "collections.deque":
        return _parse(text)
    return _OPAQUE


def _own_type(prediction: StatePrediction) -> bool:
    """Upstream's ``type(value) == predicted type``."""
    kind, value = prediction.type, prediction.value
    if kind == "type":
        return isinstance(value, TypeName)
    if kind in BUILTIN_CLASSES:
        return values.type_name(value) == kind
    if kind in _NUMPY_SCALARS:
        return type(value) in (int, float, bool)
    return True  # ndarray, datetime, type and None are constructed with their type


def state_verdict(parsed: Parsed, truth: Sequence[Sequence[Any]] | None) -> tuple[bool, str]:
    """``(correct, why)`` for a parsed answer against the truth (None: Nil)."""
    if parsed == NIL or truth is None:
        right = parsed == NIL and truth is None
        return right, "" if right else f"expected {'Nil' if truth is None else 'a value'}"
    if isinstance(parsed, StateError):
        return False, parsed.reason
    assert isinstance(parsed, StatePrediction)
    kinds = {str(kind) for kind, _ in truth}
    if parsed.type is None or parsed.type not in kinds:
        return False, f"type {parsed.type}, expected {' or '.join(sorted(kinds))}"
    if not _own_type(parsed):
        return False, f"the value is a {values.type_name(parsed.value)}, not a {parsed.type}"
    expected = [(str(kind), _expected(str(kind), text)) for kind, text in truth]
    value = parsed.value
    if parsed.type == "float":
        close = any(type(e) is float and abs(value - e) < 1e-6 for k, e in expected)  # type: ignore[operator]
        return close, "" if close else "no expected float within 1e-6"
    if parsed.type in _ARRAYS:
        same = any(k in _ARRAYS and _allclose(value, e) for k, e in expected)
        return same, "" if same else "no expected array is close"
    plain = [e for k, e in expected if e is not _OPAQUE and k not in _ARRAYS]
    found = any(equal_values(value, e) for e in plain)
    return found, "" if found else "value not among the expected values"


def equal_values(a: object, b: object) -> bool:
    """``a is b or a == b``, an error in ``==`` counting as unequal (upstream's ``in``)."""
    try:
        return bool(a is b or a == b)
    except Exception:
        return False


def _allclose(a: object, b: object) -> bool:
    """numpy.allclose (rtol 1e-5, atol 1e-8) on equal-shaped nested lists of numbers."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_allclose(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        try:
            if math.isnan(a) or math.isnan(b):
                return False
            return abs(a - b) <= 1e-8 + 1e-5 * abs(b)
        except OverflowError:  # an int past any float
            return a == b
    return False
