"""Rendering for the tracer: the text of a value, without ever running code of the program.

Part of the sandbox-side tracer (see ``tracer``), imported as a flat module: standard library and
the flat ``values`` module only, no module-level side effects. It knows nothing of frames.
"""

from __future__ import annotations

import marshal
import types
from collections.abc import Callable, Collection
from math import isfinite
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # the sandbox imports the same file as the flat module `values`
    from codereasoner import values
else:
    import values

SMALL = 10**15  # ints below this render as repr() (16 chars at most; max_value_chars >= 16)
NEG_SMALL = -SMALL
ATOMS = (int, float, str, bytes, bool, complex, type(None))
_SIZED = (list, tuple, dict, set, frozenset)
_NONE_TYPE = type(None)
_PYTHON_CALLABLES = (types.FunctionType, types.MethodType)
# marshal.dumps accepts any object and raises ValueError for one it cannot write (its stub
# names only the types it can).
dumps = cast("Callable[[object, int], bytes]", marshal.dumps)


class Renderer:
    __slots__ = ("bound", "fp_limit", "max_chars", "repr_limit")

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        # A container with more items than this cannot render within max_chars (>= 3 chars each).
        self.bound = max_chars // 3
        # See with_fingerprint. An int in a fingerprint this short has under 2,000 digits.
        self.repr_limit = min(max_chars, 201)
        self.fp_limit = 4 * self.repr_limit + 16

    def text(self, value: object) -> str:
        """The rendered text of a value (never runs user code)."""
        kind = type(value)
        max_chars = self.max_chars
        if kind is int:
            if NEG_SMALL < value < SMALL:  # type: ignore[operator]
                text = repr(value)
                if len(text) <= max_chars:
                    return text
        elif kind is str or kind is bytes:
            if len(value) + 2 <= max_chars:  # type: ignore[arg-type]
                text = repr(value)
                if len(text) <= max_chars:
                    return text
            return f"<{kind.__name__} of {len(value)} chars, too large>"  # type: ignore[arg-type]
        elif value is None or kind is bool:
            return repr(value)
        elif kind is float:
            if value == value and value not in (float("inf"), float("-inf")):
                text = repr(value)
                if len(text) <= max_chars:
                    return text
        elif kind in _SIZED:
            if len(value) > self.bound:  # type: ignore[arg-type]
                return f"<{kind.__name__} of {len(value)} items, too large>"  # type: ignore[arg-type]
            if (kind is list or kind is tuple or kind is dict) and _reprable(
                value, max_chars, 0
            ) >= 0:
                # Only builtin atoms inside: the C repr is the canonical rendering, and fast.
                text = repr(value)
                if len(text) <= max_chars:
                    return text
        try:
            return values.render(value, max_chars=max_chars)
        except values.NotALiteral:
            return f"<{values.type_name(value)} object>"
        except (values.RenderLimitExceeded, RecursionError, MemoryError):
            if kind in _SIZED:
                return f"<{kind.__name__} of {len(value)} items, too large>"  # type: ignore[arg-type]
            return f"<{values.type_name(value)}, too large>"

    def with_fingerprint(self, value: object, fp: bytes | None) -> str:
        """``text(value)`` for a container of at most ``bound`` items whose ``marshal``
        fingerprint (version 2) is ``fp``, taking a shortcut that the fingerprint proves safe.

        marshal accepts only exact builtin types (no subclasses, so no user code in their
        reprs), code objects, Ellipsis, StopIteration and buffer objects (written as bytes,
        type code ``s``). Without the type codes of sets (``<``, ``>``) and bytes-like objects
        (``s``) anywhere in ``fp`` (payload bytes may match too: then the long way is taken),
        the C ``repr`` is the canonical rendering unless it shows a code object or
        StopIteration (``<``), a non-finite float or complex (``nan``, ``inf``) or
        ``Ellipsis``. A text of at most 201 chars nests at most 100 deep, render's depth
        limit; a short ``fp`` bounds the size of any int, so ``repr`` never works long.
        """
        if (
            fp is None
            or len(fp) > self.fp_limit
            or 0x73 in fp  # b"s"
            or 0x3C in fp  # b"<"
            or 0x3E in fp  # b">"
        ):
            return self.text(value)
        text = repr(value)
        if (
            len(text) > self.repr_limit
            or "<" in text
            or "nan" in text
            or "inf" in text
            or "Ellipsis" in text
        ):
            return self.text(value)
        return text


def _reprable(value: object, budget: int, depth: int) -> int:
    """Budget left after ``value`` if ``repr(value) == values.render(value)``, else -1.

    True for lists, tuples and dicts nested at most 20 deep that hold only ints below
    ``SMALL``, finite floats, str, bytes, bool and None (their C reprs run no user code). Sets
    are excluded: values.render sorts them, repr does not. The budget is a lower bound on the
    length of the text, so a negative result also means "too long to bother".
    """
    kind = type(value)
    if kind is list or kind is tuple:
        if depth > 20:
            return -1
        return _items_reprable(value, budget - 2, depth)  # type: ignore[arg-type]
    if kind is dict:
        if depth > 20:
            return -1
        budget = _items_reprable(value, budget - 2, depth)  # type: ignore[arg-type]
        if budget < 0:
            return -1
        return _items_reprable(value.values(), budget, depth)  # type: ignore[attr-defined]
    return -1


def _items_reprable(items: Collection, budget: int, depth: int) -> int:
    """``_reprable`` for the items of a container (or the keys or values of a dict)."""
    if len(items) > 8:
        kinds = set(map(type, items))
        if len(kinds) == 1:
            # Many items of one type: checked by C loops.
            kind = kinds.pop()
            if kind is int:
                if min(items) <= NEG_SMALL or max(items) >= SMALL:
                    return -1
                return budget - 3 * len(items)
            if kind is str or kind is bytes:
                return budget - 4 * len(items) - sum(map(len, items))
            if kind is float:
                # Finite floats have a finite sum (if it overflows, "no" is still correct).
                return budget - 5 * len(items) if isfinite(sum(items)) else -1
            if kind is bool or kind is _NONE_TYPE:
                return budget - 6 * len(items)
    # len() is O(1): the budget only needs checking after the items that recurse.
    for item in items:
        kind = type(item)
        if kind is int:
            if not NEG_SMALL < item < SMALL:
                return -1
            budget -= 3
        elif kind is str or kind is bytes:
            budget -= len(item) + 4
        elif item is None or kind is bool:
            budget -= 6
        elif kind is float:
            if item - item != 0.0:  # nan or inf
                return -1
            budget -= 5
        else:
            if depth >= 20:
                return -1
            if kind is list or kind is tuple:  # _reprable, inlined
                budget = _items_reprable(item, budget - 2, depth + 1)
            else:
                budget = _reprable(item, budget, depth + 1)
            if budget < 0:
                return -1
    return budget if budget >= 0 else -1


def value_fingerprint(value: object) -> bytes | None:
    try:
        return dumps(value, 2)
    except (ValueError, RecursionError, MemoryError):
        return None


def deep_immutable(value: object) -> bool:
    kind = type(value)
    if kind in ATOMS:
        return True
    if kind is tuple or kind is frozenset:
        return all(deep_immutable(item) for item in value)  # type: ignore[attr-defined]
    return False


def hidden_mutator(value: object) -> bool:
    """Whether a class attribute could run C code on a read, a comparison or an operator: a
    callable that is not a Python function or class (a bound builtin method, a partial, ...),
    also behind property, staticmethod or classmethod. Python callables start frames, which
    the tracer sees; C callables do not."""
    kind = type(value)
    if kind is property:
        return any(
            hidden_mutator(part)
            for part in (value.fget, value.fset, value.fdel)  # type: ignore[attr-defined]
            if part is not None
        )
    if kind is staticmethod or kind is classmethod:
        return hidden_mutator(value.__func__)  # type: ignore[attr-defined]
    return callable(value) and not isinstance(value, (*_PYTHON_CALLABLES, type))


def exception_info(exc: BaseException) -> dict[str, str]:
    """Type name and message of an exception, without running code the program defined."""
    name = values.type_name(exc)
    try:
        args = BaseException.args.__get__(exc)  # type: ignore[attr-defined]
        mro = type.__dict__["__mro__"].__get__(type(exc))
        owner = next(klass for klass in mro if "__str__" in klass.__dict__)
        if owner.__module__ == "builtins" and all(
            type(arg) in ATOMS or _literal(arg) for arg in args
        ):
            return {"type": name, "message": str(exc)[:2000]}
    except Exception:
        pass
    return {"type": name, "message": f"<{name} with non-literal arguments>"}


def _literal(value: object) -> bool:
    try:
        values.render(value, max_chars=2000)
    except Exception:
        return False
    return True
