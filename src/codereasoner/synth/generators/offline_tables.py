"""The offline generator's tables: kinds of values, name pools, and what may stand where.

Kinds are the catalog's argument and receiver kinds (:mod:`codereasoner.synth.catalog`) and the
Python types they hold (``str``, ``list``, ...); a name pool lists the names a case may give to
one kind of value, so that cases read like code someone wrote.
"""

from __future__ import annotations

# The Python type a receiver kind holds.
CATEGORY = {
    "text": "str",
    "text_cased": "str",
    "text_class": "str",
    "text_padded": "str",
    "text_sep": "str",
    "text_lines": "str",
    "text_tabs": "str",
    "text_digits": "str",
    "fmt": "str",
    "fmt_named": "str",
    "joiner": "str",
    "char": "str",
    "ilist": "list",
    "slist": "list",
    "flags": "list",
    "sdict": "dict",
    "iset": "set",
    "ifrozen": "frozenset",
    "ituple": "tuple",
    "int": "int",
    "uint": "int",
    "code": "int",
    "float": "float",
    "any": "any",
}
# The kind of a loop variable over a value of each type.
ELEMENT = {
    "str": "char",
    "bytes": "int",
    "list": "int",
    "dict": "key",
    "set": "int",
    "frozenset": "int",
    "tuple": "int",
}
SLICEABLE = ("str", "bytes", "list", "tuple")
ITERABLE = ("str", "bytes", "list", "dict", "set", "frozenset", "tuple")


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Name pools: for a receiver by type, for a list of values by element type, for an argument by
# kind, for a loop variable by kind, and for a while loop's counter.
RECEIVER_NAMES = {
    "str": _names("text s word line value string phrase msg name label token raw src entry"),
    "bytes": _names("data buf raw blob payload chunk packet"),
    "list": _names("nums items values arr data xs seq numbers lst stack queue vals"),
    "dict": _names("d counts table scores stock mapping ages totals prices index"),
    "set": _names("s seen pool ids bag group marks"),
    "frozenset": _names("fs frozen base fixed"),
    "tuple": _names("t pair record row tup point"),
    "int": _names("n x num k value number count m"),
    "float": _names("x val amount ratio f weight"),
    "any": _names("obj item thing value arg"),
}
LIST_OF = {
    "str": _names("words names parts tokens labels lines entries"),
    "bytes": _names("chunks blobs packets"),
    "int": _names("nums values ns amounts"),
    "float": _names("xs weights ratios"),
    "tuple": _names("rows pairs records"),
    "any": _names("objs items"),
}
ARG_NAMES = {
    "sub": _names("sub part needle target piece pat"),
    "sub_in": _names("sub part needle target"),
    "prefix": _names("prefix head start_text"),
    "suffix": _names("suffix tail ending"),
    "chars": _names("chars junk strip_chars"),
    "width": _names("width size w length"),
    "fill": _names("fill pad filler"),
    "sep": _names("sep delim marker splitter"),
    "old": _names("old find_text before"),
    "new": _names("new repl after"),
    "elem": _names("item x val extra"),
    "elem_in": _names("item target x"),
    "elem_any": _names("item target x probe"),
    "key_in": _names("key k name"),
    "key_any": _names("key k name field"),
    "value": _names("default fallback val"),
    "str_list": _names("parts words pieces"),
    "other_set": _names("other extra rhs others"),
    "mapping": _names("extra patch changes"),
    "keys": _names("keys names fields"),
}
LOOP_NAMES = {
    "int": _names("i j k step n idx r"),
    "char": _names("ch c letter"),
    "key": _names("key k name"),
    "str": _names("w word part item"),
    "any": _names("item x el"),
}
COUNTER_NAMES = _names("i j step tries rounds idx")

# Kinds of argument a loop variable can stand in for, by the loop variable's kind.
LOOP_ARG = {
    "char": ("sub", "sub_in", "old", "prefix", "suffix", "fill", "chars"),
    "key": ("key_in", "key_any"),
    "int": ("elem", "value", "index", "start", "count", "maxsplit", "start_int", "ndigits"),
}
# Arguments that must be present in the receiver (the method raises otherwise).
PRESENT_ARGS = ("sub_in", "elem_in", "key_in")
# Arguments that another call can compute (``len(text) + 2`` for a width).
NESTABLE_ARGS = (
    "width",
    "start",
    "tabsize",
    "index",
    "elem",
    "value",
    "count",
    "start_int",
    "other_set",
    "elems",
    "mapping",
)
# The kind of what a wrapping built-in returns.
WRAPPED_KIND = {
    "len": "int",
    "int": "int",
    "abs": "int",
    "str": "str",
    "bool": "bool",
    "float": "float",
    "round": "int",
    "list": "list",
    "sorted": "list",
}
# The empty value of each type, as code.
DEFAULTS = {
    "str": "''",
    "list": "[]",
    "int": "0",
    "bool": "False",
    "tuple": "()",
    "bytes": "b''",
    "dict": "{}",
    "set": "set()",
    "float": "0.0",
    "frozenset": "frozenset()",
}
EXCEPTIONS = ("ValueError", "KeyError", "IndexError", "TypeError", "AttributeError")
