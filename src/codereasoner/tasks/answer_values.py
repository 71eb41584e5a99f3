"""Equal stdlib values as plain literals: runs INSIDE the sandbox, as the body of a hook function.

Upstream harnesses execute ``assert truth == answer``, so an answer whose value is not a plain
literal still passes when Python's ``==`` says it equals the truth: an ``OrderedDict``,
``defaultdict`` or ``Counter`` equals a ``dict``, ``Fraction(2)`` and ``Decimal(1)`` equal ints,
a ``str`` subclass or ``UserString`` equals its text, ``np.int64(20)`` equals ``20``. The parent
only ever compares plain literals, so the sandbox converts such values, and only those whose
equality with every plain literal is exactly the converted value's:

- a subclass of a literal type (``str``, ``int``, ``list``, ``dict``, ...) whose classes define
  no ``__eq__``/``__ne__`` of their own, plus ``OrderedDict`` and ``Counter`` (their ``__eq__``
  defers to ``dict``'s against a plain ``dict``), becomes its base type's value;
- ``UserString``, ``UserList``, ``UserDict`` and ``ChainMap`` become their data;
- ``Fraction`` and ``Decimal`` become an ``int`` when integral, else a ``float`` when that float
  is exactly equal, and stay as they are otherwise (no plain literal equals them then);
- numpy scalars become ``.item()``;
- a ``MappingProxyType`` becomes a ``dict`` of its mapping, a ``bytearray`` its ``bytes``, and a
  one-dimensional unsigned-byte (``B``) ``memoryview`` its ``bytes`` (each compares with a plain
  literal as that value does).

Anything else (an object with its own ``__eq__``, a ``deque``, an array) is left alone and
reaches the parent as a non-literal, graded wrong. The converted value comes back with the names
of the types converted, for the record.

The grading hook executes this file's source in a fresh namespace of its own (so a program's
globals cannot shadow the names used here) and calls :func:`plain`. Standard library only.
"""

import collections
import fractions
import types

converted: set[str] = set()
builtin_types = (bool, int, float, complex, str, bytes, tuple, list, dict, set, frozenset)
dict_like_eq = (collections.OrderedDict, collections.Counter)
plain_copy = {
    str: str.__str__,
    int: int.__int__,
    float: float.__float__,
    complex: complex.__complex__,
    bytes: bytes.__bytes__,
    tuple: lambda v: tuple.__getitem__(v, slice(None)),
    list: list.copy,
    dict: dict.copy,
    set: set.copy,
    frozenset: frozenset.copy,
}


def literal_base(kind):
    """The builtin literal type whose equality ``kind`` inherits unchanged, or None."""
    for base in kind.__mro__[1:]:
        if base in plain_copy:
            for klass in kind.__mro__[: kind.__mro__.index(base)]:
                own = vars(klass)
                if ("__eq__" in own or "__ne__" in own) and klass not in dict_like_eq:
                    return None
            return base
    return None


def exact_number(value):
    try:
        if value == int(value):
            return int(value)
        as_float = float(value)
        return as_float if as_float == value else value
    except (ValueError, OverflowError, TypeError, ArithmeticError):
        return value


def convert(value, depth):
    kind = type(value)
    if depth > 100:
        return value
    if kind in (int, float, complex, str, bytes, bool, type(None)):
        return value
    if kind in (list, tuple):
        return kind(convert(item, depth + 1) for item in value)
    if kind in (set, frozenset):
        return kind(convert(item, depth + 1) for item in value)
    if kind is dict:
        return {convert(k, depth + 1): convert(v, depth + 1) for k, v in value.items()}
    name = getattr(kind, "__qualname__", "?")
    module = getattr(kind, "__module__", "")
    if kind in (collections.UserString, collections.UserList, collections.UserDict):
        converted.add(name)
        return convert(value.data, depth + 1)
    if kind is collections.ChainMap or kind is types.MappingProxyType:
        converted.add(name)
        return convert(dict(value.items()), depth + 1)
    if kind is bytearray:
        converted.add(name)
        return bytes(value)
    if kind is memoryview and value.format == "B" and value.ndim == 1:
        converted.add(name)
        return value.tobytes()
    if kind is fractions.Fraction or (module == "decimal" and name == "Decimal"):
        result = exact_number(value)
        if result is not value:
            converted.add(name)
            return result
        return value
    if module == "numpy" and getattr(value, "shape", None) == () and hasattr(value, "item"):
        converted.add(name)
        return convert(value.item(), depth + 1)
    base = literal_base(kind)
    if base is None:
        return value
    converted.add(name)
    return convert(plain_copy[base](value), depth + 1)


def plain(value):
    """``(converted value, sorted names of the types converted)``."""
    converted.clear()
    result = convert(value, 0)
    return result, tuple(sorted(converted))
