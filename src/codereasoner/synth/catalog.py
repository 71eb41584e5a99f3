"""The method catalog: built-in type methods and built-in functions that cases exercise.

The names come from introspection (the public names of ``dir(T)`` for the built-in types, as in
CRUXEval's generator) plus a fixed list of built-in functions (docs/synth.md). Each name
needs a hand-written :class:`Method` entry saying how to call it with literal arguments; a public
name without one must be listed in :data:`EXCLUDED` with the reason, and :func:`catalog` raises
when an introspected name is neither (so a new Python version cannot silently shrink coverage).

Argument kinds (``Method.signatures``) name what the generator must produce for each position:
``sub`` (a short substring, usually present), ``sub_in`` (a substring that is present),
``prefix``/``suffix``, ``suffixes`` (a tuple of them), ``chars`` (characters to strip), ``width``,
``fill`` (one character), ``sep`` (a separator present in the text), ``maxsplit``, ``tabsize``,
``old``/``new``/``count`` (replace), ``start``, ``encoding``, ``keepends``, ``str_list`` (strings
to join), ``fmt_args`` (one value per ``{}`` of the receiver), ``fmt_mapping``, ``from_to`` (two
equal-length strings), ``table`` (a translate mapping), ``delete`` (``None`` and bytes to delete),
``elem``/``elem_in``/``elem_any`` (a new / present / possibly present element), ``elems``,
``index``/``index_in`` (any / a valid position), ``reverse`` (the keyword), ``key_in``/``key_any``,
``value``, ``mapping`` (a small dict), ``keys``, ``other_set``, ``length``/``byteorder``
(``int.to_bytes``), ``raw_bytes``, ``hex_text``, ``float_hex``, ``func`` (a function for
map/filter), ``second_list``, ``start_int``, ``nonzero``, ``ndigits``, ``type_spec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

TYPES: tuple[type, ...] = (str, list, dict, set, frozenset, tuple, int, float, bytes)
BUILTINS: tuple[str, ...] = (
    "sorted",
    "enumerate",
    "zip",
    "map",
    "filter",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "reversed",
    "divmod",
    "abs",
    "round",
    "chr",
    "ord",
    "isinstance",
)

MODES = ("value", "transform", "mutate", "take")
STYLES = ("method", "static", "attribute", "function")


@dataclass(frozen=True)
class Method:
    """One catalog entry.

    ``receiver`` is the kind of value the method is called on (for a built-in function, the kind
    of its first argument; empty for static methods such as ``str.maketrans``). ``signatures``
    lists the supported call forms as tuples of argument kinds (see the module docstring).
    ``result`` is the kind of the returned value (``none`` for in-place methods, ``view`` for dict
    views, ``iter`` for iterators). ``mode``: ``value`` (pure), ``transform`` (pure, returns the
    receiver's type so it can replace it), ``mutate`` (in place, returns None), ``take`` (in place
    and returns a value, e.g. ``list.pop``). ``needs_present``: an argument must be in the receiver
    (``list.remove``) or the receiver must be non-empty (``set.pop``) at each call. ``grows``: each
    call makes the receiver longer.
    """

    qualname: str
    owner: str
    name: str
    receiver: str
    signatures: tuple[tuple[str, ...], ...]
    result: str
    mode: str = "value"
    style: str = "method"
    weight: float = 1.0
    needs_present: bool = False
    grows: bool = False

    @property
    def is_builtin(self) -> bool:
        return self.owner == "builtins"


# Why some public names are left out. Each of these cannot give a concise, deterministic case
# with a literal output (or is an alias that adds nothing); everything else is generatable.
EXCLUDED: Mapping[str, str] = {}

# Methods where CRUXEval-style benchmarks are hardest (docs/synth.md) get more weight.
HEAVY = 3.0
HEAVY_METHODS = frozenset(
    {
        "list.append",
        "list.extend",
        "list.insert",
        "list.pop",
        "list.remove",
        "list.reverse",
        "list.sort",
        "list.clear",
        "str.partition",
        "str.rpartition",
        "str.split",
        "str.rsplit",
        "str.translate",
        "str.format",
        "str.maketrans",
        "dict.items",
        "dict.keys",
        "dict.values",
        "dict.setdefault",
        "dict.pop",
        "dict.popitem",
    }
)
LIGHT = 0.5
LIGHT_OWNERS = ("bytes", "int", "float", "frozenset")

_S = ((),)  # a method without arguments

# name: (receiver, signatures, result, mode, extra flags)
_STR: dict[str, tuple] = {
    "capitalize": ("text_cased", _S, "str", "transform"),
    "casefold": ("text_cased", _S, "str", "transform"),
    "center": ("text", (("width",), ("width", "fill")), "str", "transform", "grows"),
    "count": ("text", (("sub",), ("sub", "start")), "int", "value"),
    "encode": ("text", ((), ("encoding",)), "bytes", "value"),
    "endswith": ("text", (("suffix",), ("suffixes",)), "bool", "value"),
    "expandtabs": ("text_tabs", ((), ("tabsize",)), "str", "transform"),
    "find": ("text", (("sub",), ("sub", "start")), "int", "value"),
    "format": ("fmt", (("fmt_args",),), "str", "value"),
    "format_map": ("fmt_named", (("fmt_mapping",),), "str", "value"),
    "index": ("text", (("sub_in",),), "int", "value"),
    "isalnum": ("text_class", _S, "bool", "value"),
    "isalpha": ("text_class", _S, "bool", "value"),
    "isascii": ("text_class", _S, "bool", "value"),
    "isdecimal": ("text_class", _S, "bool", "value"),
    "isdigit": ("text_class", _S, "bool", "value"),
    "isidentifier": ("text_class", _S, "bool", "value"),
    "islower": ("text_class", _S, "bool", "value"),
    "isnumeric": ("text_class", _S, "bool", "value"),
    "isprintable": ("text_class", _S, "bool", "value"),
    "isspace": ("text_class", _S, "bool", "value"),
    "istitle": ("text_class", _S, "bool", "value"),
    "isupper": ("text_class", _S, "bool", "value"),
    "join": ("joiner", (("str_list",),), "str", "value"),
    "ljust": ("text", (("width",), ("width", "fill")), "str", "transform", "grows"),
    "lower": ("text_cased", _S, "str", "transform"),
    "lstrip": ("text_padded", ((), ("chars",)), "str", "transform"),
    "maketrans": ("", (("from_to",),), "dict", "value", "static"),
    "partition": ("text_sep", (("sep",),), "tuple", "value"),
    "removeprefix": ("text", (("prefix",),), "str", "transform"),
    "removesuffix": ("text", (("suffix",),), "str", "transform"),
    "replace": ("text", (("old", "new"), ("old", "new", "count")), "str", "transform"),
    "rfind": ("text", (("sub",), ("sub", "start")), "int", "value"),
    "rindex": ("text", (("sub_in",),), "int", "value"),
    "rjust": ("text", (("width",), ("width", "fill")), "str", "transform", "grows"),
    "rpartition": ("text_sep", (("sep",),), "tuple", "value"),
    "rsplit": ("text_sep", ((), ("sep",), ("sep", "maxsplit")), "list", "value"),
    "rstrip": ("text_padded", ((), ("chars",)), "str", "transform"),
    "split": ("text_sep", ((), ("sep",), ("sep", "maxsplit")), "list", "value"),
    "splitlines": ("text_lines", ((), ("keepends",)), "list", "value"),
    "startswith": ("text", (("prefix",), ("prefix", "start")), "bool", "value"),
    "strip": ("text_padded", ((), ("chars",)), "str", "transform"),
    "swapcase": ("text_cased", _S, "str", "transform"),
    "title": ("text_cased", _S, "str", "transform"),
    "translate": ("text", (("table",),), "str", "transform"),
    "upper": ("text_cased", _S, "str", "transform"),
    "zfill": ("text_digits", (("width",),), "str", "transform", "grows"),
}

_BYTES_ONLY: dict[str, tuple] = {
    "decode": ("text", ((), ("encoding",)), "str", "value"),
    "fromhex": ("", (("hex_text",),), "bytes", "value", "static"),
    "hex": ("text", _S, "str", "value"),
    "maketrans": ("", (("from_to",),), "bytes", "value", "static"),
    "translate": ("text", (("delete",),), "bytes", "transform"),
}

_LIST: dict[str, tuple] = {
    "append": ("ilist", (("elem",),), "none", "mutate", "grows"),
    "clear": ("ilist", _S, "none", "mutate"),
    "copy": ("ilist", _S, "list", "value"),
    "count": ("ilist", (("elem_any",),), "int", "value"),
    "extend": ("ilist", (("elems",),), "none", "mutate", "grows"),
    "index": ("ilist", (("elem_in",),), "int", "value"),
    "insert": ("ilist", (("index", "elem"),), "none", "mutate", "grows"),
    "pop": ("ilist", ((), ("index_in",)), "elem", "take", "needs_present"),
    "remove": ("ilist", (("elem_in",),), "none", "mutate", "needs_present"),
    "reverse": ("ilist", _S, "none", "mutate"),
    "sort": ("ilist", ((), ("reverse",)), "none", "mutate"),
}

_DICT: dict[str, tuple] = {
    "clear": ("sdict", _S, "none", "mutate"),
    "copy": ("sdict", _S, "dict", "value"),
    "fromkeys": ("", (("keys",), ("keys", "value")), "dict", "value", "static"),
    "get": ("sdict", (("key_any",), ("key_any", "value")), "elem", "value"),
    "items": ("sdict", _S, "view", "value"),
    "keys": ("sdict", _S, "view", "value"),
    "pop": ("sdict", (("key_in",), ("key_any", "value")), "elem", "take", "needs_present"),
    "popitem": ("sdict", _S, "tuple", "take", "needs_present"),
    "setdefault": ("sdict", (("key_any", "value"),), "elem", "take", "grows"),
    "update": ("sdict", (("mapping",),), "none", "mutate", "grows"),
    "values": ("sdict", _S, "view", "value"),
}

_SET: dict[str, tuple] = {
    "add": ("iset", (("elem",),), "none", "mutate", "grows"),
    "clear": ("iset", _S, "none", "mutate"),
    "copy": ("iset", _S, "set", "value"),
    "difference": ("iset", (("other_set",),), "set", "transform"),
    "difference_update": ("iset", (("other_set",),), "none", "mutate"),
    "discard": ("iset", (("elem_any",),), "none", "mutate"),
    "intersection": ("iset", (("other_set",),), "set", "transform"),
    "intersection_update": ("iset", (("other_set",),), "none", "mutate"),
    "isdisjoint": ("iset", (("other_set",),), "bool", "value"),
    "issubset": ("iset", (("other_set",),), "bool", "value"),
    "issuperset": ("iset", (("other_set",),), "bool", "value"),
    "pop": ("iset", _S, "elem", "take", "needs_present"),
    "remove": ("iset", (("elem_in",),), "none", "mutate", "needs_present"),
    "symmetric_difference": ("iset", (("other_set",),), "set", "transform"),
    "symmetric_difference_update": ("iset", (("other_set",),), "none", "mutate"),
    "union": ("iset", (("other_set",),), "set", "transform", "grows"),
    "update": ("iset", (("other_set",),), "none", "mutate", "grows"),
}

_FROZEN_NAMES = (
    "copy",
    "difference",
    "intersection",
    "isdisjoint",
    "issubset",
    "issuperset",
    "symmetric_difference",
    "union",
)
_FROZENSET: dict[str, tuple] = {name: ("ifrozen", *_SET[name][1:]) for name in _FROZEN_NAMES}
_FROZENSET["copy"] = ("ifrozen", _S, "frozenset", "value")

_TUPLE: dict[str, tuple] = {
    "count": ("ituple", (("elem_any",),), "int", "value"),
    "index": ("ituple", (("elem_in",),), "int", "value"),
}

_INT: dict[str, tuple] = {
    "as_integer_ratio": ("int", _S, "tuple", "value"),
    "bit_count": ("int", _S, "int", "value"),
    "bit_length": ("int", _S, "int", "value"),
    "conjugate": ("int", _S, "int", "transform"),
    "denominator": ("int", _S, "int", "value", "attribute"),
    "from_bytes": ("", (("raw_bytes", "byteorder"),), "int", "value", "static"),
    "imag": ("int", _S, "int", "value", "attribute"),
    "numerator": ("int", _S, "int", "value", "attribute"),
    "real": ("int", _S, "int", "transform", "attribute"),
    "to_bytes": ("uint", (("length", "byteorder"),), "bytes", "value"),
    "is_integer": ("int", _S, "bool", "value"),  # Python 3.12+
}

_FLOAT: dict[str, tuple] = {
    "as_integer_ratio": ("float", _S, "tuple", "value"),
    "conjugate": ("float", _S, "float", "transform"),
    "fromhex": ("", (("float_hex",),), "float", "value", "static"),
    "hex": ("float", _S, "str", "value"),
    "imag": ("float", _S, "float", "value", "attribute"),
    "is_integer": ("float", _S, "bool", "value"),
    "real": ("float", _S, "float", "transform", "attribute"),
}

_BUILTINS: dict[str, tuple] = {
    "sorted": ("ilist", ((), ("reverse",)), "list", "value"),
    "enumerate": ("slist", ((), ("start_int",)), "iter", "value"),
    "zip": ("ilist", (("second_list",),), "iter", "value"),
    "map": ("ilist", (("func",),), "iter", "value"),
    "filter": ("ilist", (("func",),), "iter", "value"),
    "min": ("ilist", _S, "elem", "value"),
    "max": ("ilist", _S, "elem", "value"),
    "sum": ("ilist", ((), ("start_int",)), "int", "value"),
    "any": ("flags", _S, "bool", "value"),
    "all": ("flags", _S, "bool", "value"),
    "reversed": ("ilist", _S, "iter", "value"),
    "divmod": ("int", (("nonzero",),), "tuple", "value"),
    "abs": ("int", _S, "int", "value"),
    "round": ("float", ((), ("ndigits",)), "float", "value"),
    "chr": ("code", _S, "str", "value"),
    "ord": ("char", _S, "int", "value"),
    "isinstance": ("any", (("type_spec",),), "bool", "value"),
}


def public_names(kind: type) -> list[str]:
    """The public (non-underscore) attribute names of a built-in type, as CRUXEval took them."""
    return [name for name in dir(kind) if not name.startswith("_")]


def _entry(owner: str, name: str, spec: tuple) -> Method:
    receiver, signatures, result, mode, *flags = spec
    qualname = f"{owner}.{name}"
    if owner == "builtins":
        style = "function"
    elif "static" in flags:
        style = "static"
    elif "attribute" in flags:
        style = "attribute"
    else:
        style = "method"
    weight = 1.0
    if qualname in HEAVY_METHODS:
        weight = HEAVY
    elif owner in LIGHT_OWNERS or style == "attribute":
        weight = LIGHT
    return Method(
        qualname,
        owner,
        name,
        receiver,
        signatures,
        result,
        mode,
        style,
        weight,
        needs_present="needs_present" in flags,
        grows="grows" in flags,
    )


def _table(kind: type) -> dict[str, tuple]:
    if kind is bytes:
        shared = {
            name: (spec[0], spec[1], "bytes" if spec[2] == "str" else spec[2], *spec[3:])
            for name, spec in _STR.items()
            if name in public_names(bytes)
        }
        return shared | _BYTES_ONLY
    return {
        str: _STR,
        list: _LIST,
        dict: _DICT,
        set: _SET,
        frozenset: _FROZENSET,
        tuple: _TUPLE,
        int: _INT,
        float: _FLOAT,
    }[kind]


@cache
def catalog() -> tuple[Method, ...]:
    """Every catalog entry, in a stable order (type by type, then the built-in functions)."""
    entries: list[Method] = []
    for kind in TYPES:
        table = _table(kind)
        for name in public_names(kind):
            qualname = f"{kind.__name__}.{name}"
            if qualname in EXCLUDED:
                continue
            if name not in table:
                raise LookupError(f"{qualname} has no catalog entry and is not in EXCLUDED")
            entries.append(_entry(kind.__name__, name, table[name]))
    for name in BUILTINS:
        entries.append(_entry("builtins", name, _BUILTINS[name]))
    return tuple(entries)


@cache
def by_name() -> dict[str, Method]:
    """Catalog entries by qualified name (``str.partition``, ``builtins.sorted``)."""
    return {method.qualname: method for method in catalog()}
