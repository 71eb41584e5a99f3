"""The offline generator: concise, varied programs for each catalog method, no model needed.

``OfflineGenerator(seed).generate(index)`` composes one ``def f(...)`` around the method under a
sampled blueprint (:mod:`codereasoner.synth.constraints`): the control structures nest in the
blueprint's order with the method call innermost, the extras are present, another call wraps or
feeds the method's call when ``nested_calls`` is set (and no call is nested otherwise), and
other catalog methods are called exactly when ``other_methods`` is set. Inputs are literals made
from the method's argument kinds (:mod:`.offline_values`). Everything is drawn from a
``random.Random`` seeded by a SHA-256 of (seed, index), so a case does not depend on the process,
the hash seed or the other indices.

The code avoids what would raise or never end: methods that need an element to be present run
inside a loop over a snapshot of the receiver or a ``while`` guarded by the receiver, every
``while`` has a counter that is incremented first, and mutated receivers are iterated through a
copy. Sets hold integers only, so their iteration order does not depend on the hash seed.
"""

from __future__ import annotations

import hashlib
import random
import re
from bisect import bisect
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from codereasoner import values
from codereasoner.synth.case import Candidate, Constraints
from codereasoner.synth.catalog import BUILTINS, Method, catalog
from codereasoner.synth.constraints import sample_constraints
from codereasoner.synth.generators.offline_conditions import (
    UNKNOWN,
    Var,
    conditions,
    holds,
    kind_of,
)
from codereasoner.synth.generators.offline_values import Code, Values

GENERATOR = "offline"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

CATEGORY = {"text": "str", "text_cased": "str", "text_class": "str", "text_padded": "str",
            "text_sep": "str", "text_lines": "str", "text_tabs": "str", "text_digits": "str",
            "fmt": "str", "fmt_named": "str", "joiner": "str", "char": "str", "ilist": "list",
            "slist": "list", "flags": "list", "sdict": "dict", "iset": "set",
            "ifrozen": "frozenset", "ituple": "tuple", "int": "int", "uint": "int",
            "code": "int", "float": "float", "any": "any"}  # fmt: skip
ELEMENT = {"str": "char", "bytes": "int", "list": "int", "dict": "key", "set": "int",
           "frozenset": "int", "tuple": "int"}  # fmt: skip
SLICEABLE = ("str", "bytes", "list", "tuple")
ITERABLE = ("str", "bytes", "list", "dict", "set", "frozenset", "tuple")

RECEIVER_NAMES = {
    "str": ("text", "s", "word", "line", "value", "string", "phrase", "msg", "name", "label",
            "token", "raw", "src", "entry"),
    "bytes": ("data", "buf", "raw", "blob", "payload", "chunk", "packet"),
    "list": ("nums", "items", "values", "arr", "data", "xs", "seq", "numbers", "lst", "stack",
             "queue", "vals"),
    "dict": ("d", "counts", "table", "scores", "stock", "mapping", "ages", "totals", "prices",
             "index"),
    "set": ("s", "seen", "pool", "ids", "bag", "group", "marks"),
    "frozenset": ("fs", "frozen", "base", "fixed"),
    "tuple": ("t", "pair", "record", "row", "tup", "point"),
    "int": ("n", "x", "num", "k", "value", "number", "count", "m"),
    "float": ("x", "val", "amount", "ratio", "f", "weight"),
    "any": ("obj", "item", "thing", "value", "arg"),
}  # fmt: skip
LIST_OF = {"str": ("words", "names", "parts", "tokens", "labels", "lines", "entries"),
           "bytes": ("chunks", "blobs", "packets"), "int": ("nums", "values", "ns", "amounts"),
           "float": ("xs", "weights", "ratios"), "tuple": ("rows", "pairs", "records"),
           "any": ("objs", "items")}  # fmt: skip
ARG_NAMES = {
    "sub": ("sub", "part", "needle", "target", "piece", "pat"),
    "sub_in": ("sub", "part", "needle", "target"),
    "prefix": ("prefix", "head", "start_text"), "suffix": ("suffix", "tail", "ending"),
    "chars": ("chars", "junk", "strip_chars"), "width": ("width", "size", "w", "length"),
    "fill": ("fill", "pad", "filler"), "sep": ("sep", "delim", "marker", "splitter"),
    "old": ("old", "find_text", "before"), "new": ("new", "repl", "after"),
    "elem": ("item", "x", "val", "extra"), "elem_in": ("item", "target", "x"),
    "elem_any": ("item", "target", "x", "probe"), "key_in": ("key", "k", "name"),
    "key_any": ("key", "k", "name", "field"), "value": ("default", "fallback", "val"),
    "str_list": ("parts", "words", "pieces"), "other_set": ("other", "extra", "rhs", "others"),
    "mapping": ("extra", "patch", "changes"), "keys": ("keys", "names", "fields"),
}  # fmt: skip
LOOP_NAMES = {"int": ("i", "j", "k", "step", "n", "idx", "r"), "char": ("ch", "c", "letter"),
              "key": ("key", "k", "name"), "str": ("w", "word", "part", "item"),
              "any": ("item", "x", "el")}  # fmt: skip
ACC_NAMES = {"sum": ("total", "count", "acc", "score", "result"),
             "collect": ("out", "result", "res", "collected", "found", "acc"),
             "last": ("result", "res", "last", "answer", "value"),
             "concat": ("out", "joined", "buf", "text", "acc")}  # fmt: skip
COUNTER_NAMES = ("i", "j", "step", "tries", "rounds", "idx")

# Kinds of argument a loop variable can stand in for, by the loop variable's kind.
LOOP_ARG = {"char": ("sub", "sub_in", "old", "prefix", "suffix", "fill", "chars"),
            "key": ("key_in", "key_any"),
            "int": ("elem", "value", "index", "start", "count", "maxsplit", "start_int",
                    "ndigits")}  # fmt: skip
PRESENT_ARGS = ("sub_in", "elem_in", "key_in")
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


def case_random(seed: int, index: int, stream: str = "case") -> random.Random:
    """A ``random.Random`` for one case, from SHA-256 (never Python's salted ``hash()``)."""
    digest = hashlib.sha256(f"codereasoner-offline:{seed}:{index}:{stream}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def literal(value: Any) -> str:
    if isinstance(value, Code):
        return value.text
    return values.render(value)


@dataclass
class Plan:
    """Decisions made before writing the body."""

    accumulate: str = "direct"  # direct | sum | collect | last | state | inplace
    acc: str = ""
    result_kind: str = ""
    map_level: int = -1  # the for level whose items are receivers
    args_level: int = -1  # the for level that iterates argument values
    args_position: int = -1
    snapshot_level: int = -1  # the for level that iterates a copy of the receiver
    jump_level: int = -1  # the if level that holds break/continue
    slicing: str = ""  # source | receiver | return
    comprehension: str = ""  # source | leaf | return
    comprehension_level: int = -1
    slicing_level: int = -1
    nested: str = ""  # wrap | materialize | arg | source | return
    wrapper: str = ""
    fold: str = "+="  # how a sum folds each value in: += | -= | double | flip
    leaf_comprehension: tuple[str, int] = ("", -1)  # args | receivers | range, position
    nested_level: int = -1
    loop_sizes: dict[int, int] = field(default_factory=dict)
    receiver_levels: set[int] = field(default_factory=set)


class _Names:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = {"f"}

    def fresh(self, pool: tuple[str, ...]) -> str:
        options = [name for name in pool if name not in self.used]
        name = self.rng.choice(options) if options else f"{pool[0]}{len(self.used)}"
        self.used.add(name)
        return name


class _Writer:
    """Writes one function for one method under one set of constraints."""

    def __init__(self, rng: random.Random, method: Method, constraints: Constraints) -> None:
        self.rng = rng
        self.method = method
        self.c = constraints
        self.names = _Names(rng)
        self.binary = method.owner == "bytes"
        self.values = Values(rng, self.binary)
        if method.name in ("map", "filter"):
            self.values.for_function(method.name)
        self.params: list[tuple[str, str]] = []
        self.lines: list[str] = []
        self.other_used = False
        self.nested_used = False
        kind = method.receiver
        self.category = "bytes" if self.binary and kind else CATEGORY.get(kind, "")
        if method.owner == "frozenset":
            self.category = "frozenset"
        self.signature = rng.choice(method.signatures)
        self.mutates = method.mode in ("mutate", "take")
        self.plan = Plan()
        self.loops = [level for level, kind in enumerate(constraints.control) if kind != "if"]

    # -- entry point -----------------------------------------------------------------------

    def write(self) -> tuple[str, str]:
        self._make_receiver()
        self._plan()
        self._make_args()
        self.body = self._level(0, 1, [self.receiver_var] if self.receiver_var else [])
        self._ensure_other()
        body = self.lines + self.body + self._return()
        # a name inside a string literal keeps its parameter: harmless
        used = set(IDENTIFIER.findall("\n".join(body)))
        params = [(name, text) for name, text in self.params if name in used]
        code = [f"def f({', '.join(name for name, _ in params)}):", *body]
        return "\n".join(code), ", ".join(text for _, text in params)

    # -- receiver and arguments --------------------------------------------------------------

    def _param(self, pool: tuple[str, ...], value: Any) -> str:
        name = self.names.fresh(pool)
        self.params.append((name, literal(value)))
        return name

    def _make_receiver(self) -> None:
        method, rng = self.method, self.rng
        self.receiver_var: Var | None = None
        self.receiver_value: Any = None
        if not method.receiver:
            return
        small = self.c.depth >= 2
        value = self.values.receiver(method.receiver, small)
        self.receiver_value = value
        if self.category == "frozenset":
            source = sorted(value) if rng.random() < 0.5 else value
            param = self._param(LIST_OF["int"], source)
            name = self.names.fresh(RECEIVER_NAMES["frozenset"])
            self.lines.append(f"    {name} = frozenset({param})")
        else:
            name = self._param(RECEIVER_NAMES.get(self.category, ("x",)), value)
        self.receiver_var = Var(name, self.category, "receiver")

    def _make_args(self) -> None:
        """Argument texts per position: a parameter or an inline literal (or a Code)."""
        self.arg_values: list[list[Any]] = []
        self.arg_texts: list[list[str]] = []
        # a static method has no receiver: one argument becomes the input, so that f() has one
        wants_input = self.method.style == "static"
        replaced = {self.plan.args_position, self.plan.leaf_comprehension[1]}
        for position, kind in enumerate(self.signature):
            produced = self.values.args(kind, self.receiver_value)
            if kind == "index_in" and self.loops:  # the list shrinks: only the ends stay valid
                produced = [self.rng.choice((0, -1))]
            self.arg_values.append(produced)
            texts = []
            for value in produced:
                literal_value = not (isinstance(value, Code) or value is None)
                inline = not literal_value or self.rng.random() < 0.6
                if wants_input and literal_value and position not in replaced:
                    inline = wants_input = False
                if inline:
                    texts.append(literal(value))
                else:
                    texts.append(self._param(ARG_NAMES.get(kind, ("a", "b", "arg")), value))
            self.arg_texts.append(texts)

    def _alt_arg_texts(self) -> list[list[str]]:
        """Fresh inline arguments for an alternative call (an else branch or a handler)."""
        texts = []
        for kind in self.signature:
            produced = self.values.args(kind, self.receiver_value)
            texts.append([literal(value) for value in produced])
        return texts

    # -- planning ----------------------------------------------------------------------------

    def _plan(self) -> None:
        rng, method, plan, c = self.rng, self.method, self.plan, self.c
        control = c.control
        presents = any(kind in PRESENT_ARGS for kind in self.signature)
        # loop sizes: keep the number of innermost executions small
        for level in self.loops:
            plan.loop_sizes[level] = 2 if len(self.loops) > 1 else rng.randint(2, 3)
        fors = [level for level in self.loops if control[level] == "for"]
        if method.needs_present and self.loops and control[self.loops[-1]] == "for":
            plan.snapshot_level = self.loops[-1]
        elif (
            fors
            and rng.random() < 0.3
            and self.category in ITERABLE
            and self.mutates
            and not method.needs_present
            and not (method.grows and len(self.loops) > 1)
        ):
            plan.snapshot_level = fors[-1]
        free_fors = [level for level in fors if level != plan.snapshot_level]
        self.values.tight = len(self.loops) >= 2
        presents = presents or "length" in self.signature
        mappable = (method.mode in ("value", "transform") and not presents and method.receiver
                    and self.category in ("str", "bytes", "int", "float", "tuple")
                    and method.receiver not in ("fmt", "fmt_named", "joiner"))  # fmt: skip
        if free_fors and mappable and rng.random() < 0.35:
            plan.map_level = rng.choice(free_fors)
            free_fors.remove(plan.map_level)
        loopable = [position for position, kind in enumerate(self.signature)
                    if kind in LOOP_ARG["char"] + LOOP_ARG["int"] + ("other_set", "str_list",
                                                                     "elems", "mapping")
                    and kind not in PRESENT_ARGS and not method.needs_present]  # fmt: skip
        if free_fors and loopable and rng.random() < 0.4:
            plan.args_level = rng.choice(free_fors)
            plan.args_position = rng.choice(loopable)
            free_fors.remove(plan.args_level)
        for level in free_fors:  # the others iterate the receiver or a range
            iterable = self.receiver_var is not None and self.category in ITERABLE
            if iterable and rng.random() < 0.35 and not (method.grows and len(self.loops) > 1):
                plan.receiver_levels.add(level)
        for level in fors:
            if level == plan.snapshot_level or level in plan.receiver_levels:
                plan.loop_sizes[level] = len(self.receiver_value)
        # break/continue: the deepest if inside a loop
        if {"break", "continue"} & set(c.extras):
            for level in range(len(control) - 1, -1, -1):
                if control[level] == "if" and any(kind != "if" for kind in control[:level]):
                    plan.jump_level = level
                    break
        self._plan_leaf(fors)
        self._plan_accumulation()
        self._plan_extras(fors)

    def _plan_leaf(self, fors: list[int]) -> None:
        """The kind of the leaf expression: the method's result, maybe in a comprehension,
        maybe wrapped in another call."""
        rng, method, plan = self.rng, self.method, self.plan
        result = method.result
        if result in ("view", "iter"):
            result = "list"
        if method.qualname == "bytes.maketrans":
            result = "int"
        if result == "elem":
            single_get = method.qualname == "dict.get" and len(self.signature) == 1
            result = "elem" if single_get or method.receiver == "flags" else "int"
        if self.c.nested_calls and method.mode != "mutate":
            if method.result in ("view", "iter"):
                plan.nested = "materialize"
            elif rng.random() < 0.6:
                plan.nested = "wrap"
                plan.wrapper = self._choose_wrapper(result)
                result = WRAPPED_KIND.get(plan.wrapper, result)
        positions = [
            position
            for position, kind in enumerate(self.signature)
            if kind in LOOP_ARG["char"] + LOOP_ARG["int"] and kind not in PRESENT_ARGS
        ]
        receivers = plan.map_level < 0 and method.receiver and self.category in (
            "str", "bytes", "int", "float", "tuple") and method.receiver not in (
            "fmt", "fmt_named") and result in ("int", "bool", "float", "str", "bytes") and not \
            any(kind in (*PRESENT_ARGS, "length") for kind in self.signature)  # fmt: skip
        short = result in ("int", "bool", "float", "str", "bytes", "elem")
        if (
            "comprehension" in self.c.extras
            and method.mode in ("value", "transform")
            and short
            and (positions or receivers)
            and (not fors or rng.random() < 0.5)
        ):
            plan.comprehension = "leaf"
            if positions and (rng.random() < 0.6 or not receivers):
                plan.leaf_comprehension = ("args", rng.choice(positions))
            else:
                plan.leaf_comprehension = ("receivers", -1)
            if self.c.nested_calls and not plan.nested:
                plan.nested = "wrap"
                plan.wrapper = self._choose_wrapper(result)
            result = "list"
        plan.result_kind = result

    def _choose_wrapper(self, kind: str) -> str:
        rng, target = self.rng, self.method.name
        other = self.c.other_methods and rng.random() < 0.5
        if kind in ("set", "frozenset") and other and target != "sorted":
            return "sorted"
        if kind in ("str", "list", "tuple", "bytes", "dict", "set", "frozenset"):
            return rng.choice(("len", "list") if kind == "tuple" else ("len",))
        if kind in ("int", "bool"):
            if other and target != "abs":
                return "abs"
            return rng.choice(
                ("int", "str", "bool") if kind == "bool" else ("str", "bool", "float")
            )
        if kind == "float":
            if other and target != "round":
                return "round"
            return rng.choice(("int", "str", "bool"))
        return "str"

    def _plan_accumulation(self) -> None:
        rng, method, plan = self.rng, self.method, self.plan
        result = plan.result_kind
        repeats = 1
        for level in self.loops:
            repeats *= plan.loop_sizes[level]
        same_kind = plan.nested != "wrap" and plan.comprehension != "leaf"
        if method.mode == "mutate":
            plan.accumulate = "inplace"
        elif not self.c.control:
            plan.accumulate = "direct"
        elif method.mode == "transform" and method.receiver and same_kind and rng.random() < 0.5:
            plan.accumulate = "state"
        elif result in ("int", "bool", "float") and rng.random() < 0.6:
            plan.accumulate = "sum"
            folds = ("+=", "+=", "-=", "double", "flip") if result != "float" else ("+=", "-=")
            plan.fold = rng.choice(folds)
        elif repeats <= 3 and result in ("str", "bytes") and rng.random() < 0.35:
            plan.accumulate = "concat"
        elif (repeats <= 4 and result in ("int", "bool", "elem", "float")) or (
            repeats <= 2 and result in ("str", "bytes") and rng.random() < 0.5
        ):
            plan.accumulate = "collect"
        else:
            plan.accumulate = "last"
        if plan.accumulate in ACC_NAMES:
            plan.acc = self.names.fresh(ACC_NAMES[plan.accumulate])

    def _plan_extras(self, fors: list[int]) -> None:
        rng, plan, extras = self.rng, self.plan, set(self.c.extras)
        plain = [
            level
            for level in fors
            if level not in (plan.map_level, plan.args_level, plan.snapshot_level)
        ]
        if "comprehension" in extras and plan.comprehension != "leaf":
            options = ["source"] if fors else []
            if self._return_iterable():
                options.append("return")
            plan.comprehension = rng.choice(options) if options else "return"
            if plan.comprehension == "source":
                plan.comprehension_level = rng.choice(fors)
            if plan.comprehension == "return" and not self._return_iterable():
                plan.accumulate, plan.acc = "collect", self.names.fresh(ACC_NAMES["collect"])
        if "slicing" in extras:
            options = []
            sliceable_sources = [level for level in fors if level != plan.comprehension_level]
            if sliceable_sources:
                options.append("source")
            if self.category in SLICEABLE and self.method.mode in ("value", "transform") and \
                    self.method.receiver not in ("fmt", "fmt_named", "char") and \
                    not any(kind in PRESENT_ARGS for kind in self.signature) and \
                    plan.map_level < 0 and plan.leaf_comprehension[0] != "receivers":  # fmt: skip
                options.append("receiver")
            if self._return_sliceable():
                options.append("return")
            plan.slicing = rng.choice(options) if options else "return"
            if plan.slicing == "source":
                plan.slicing_level = rng.choice(sliceable_sources)
            if plan.slicing == "return" and not self._return_sliceable() and \
                    not self._return_iterable():  # fmt: skip
                if plan.accumulate == "direct":
                    plan.accumulate = "pair"
                else:
                    plan.accumulate, plan.acc = "collect", self.names.fresh(ACC_NAMES["collect"])
        if self.c.nested_calls and plan.nested not in ("wrap", "materialize"):
            options = []
            if any(kind in NESTABLE_ARGS for kind in self.signature):
                options.append("arg")
            if plain:
                options.append("source")
            plan.nested = rng.choice(options) if options else "return"
            if plan.nested == "source":
                plan.nested_level = rng.choice(plain)

    def _return_iterable(self) -> bool:
        plan = self.plan
        if plan.accumulate in ("collect", "concat"):
            return True
        if plan.accumulate in ("state", "inplace"):
            return self.category in ITERABLE
        if plan.accumulate in ("last", "direct"):
            return plan.result_kind in ("str", "list", "tuple", "set", "dict", "bytes",
                                        "frozenset")  # fmt: skip
        return False

    def _return_sliceable(self) -> bool:
        plan = self.plan
        if plan.accumulate in ("collect", "concat"):
            return True
        if plan.accumulate in ("state", "inplace"):
            return self.category in SLICEABLE
        if plan.accumulate in ("last", "direct"):
            return plan.result_kind in ("str", "list", "tuple", "bytes")
        return False

    # -- the body ----------------------------------------------------------------------------

    def _level(self, level: int, indent: int, scope: list[Var]) -> list[str]:
        pad = "    " * indent
        prefix = self._acc_init(pad) if level == 0 else []
        control = self.c.control
        if level == len(control):
            return prefix + self._leaf(indent, scope)
        kind = control[level]
        if kind == "for":
            header, var = self._for_header(level, scope)
            inner = self._level(level + 1, indent + 1, scope + var)
            return [*prefix, f"{pad}{header}", *inner]
        if kind == "while":
            counter = self.names.fresh(COUNTER_NAMES)
            size = self.plan.loop_sizes[level]
            guard = self._while_guard(level)
            lines = [f"{pad}{counter} = 0", f"{pad}while {guard}{counter} < {size}:",
                     f"{pad}    {counter} += 1"]  # fmt: skip
            counter_var = Var(counter, "int", values=list(range(1, size + 1)))
            inner = self._level(level + 1, indent + 1, [*scope, counter_var])
            return prefix + lines + inner
        return prefix + self._if(level, indent, scope)

    def _if(self, level: int, indent: int, scope: list[Var]) -> list[str]:
        pad = "    " * indent
        lines = [f"{pad}if {self._condition(scope)}:"]
        lines += self._level(level + 1, indent + 1, scope)
        jumps = [jump for jump in ("break", "continue") if jump in self.c.extras]
        if level == self.plan.jump_level and jumps:
            if len(jumps) == 2:
                lines.append(f"{pad}    continue")
                lines += [f"{pad}else:", f"{pad}    break"]
            elif self.rng.random() < 0.5:
                lines.append(f"{pad}    {jumps[0]}")
                alt = self._alt(indent + 1, scope)
                if alt and self.rng.random() < 0.5:
                    lines += [f"{pad}else:", *alt]
            else:
                alt = self._alt(indent + 1, scope)
                if alt and self.rng.random() < 0.5:
                    lines += [f"{pad}elif {self._condition(scope)}:", *alt]
                lines += [f"{pad}else:", f"{pad}    {jumps[0]}"]
            return lines
        roll = self.rng.random()
        alt = self._alt(indent + 1, scope) if roll < 0.55 else []
        if alt:
            if roll < 0.15:
                lines += [f"{pad}elif {self._condition(scope)}:", *alt]
            else:
                lines += [f"{pad}else:", *alt]
        return lines

    def _while_guard(self, level: int) -> str:
        """``RECV and `` or ``ARG in RECV and `` when the innermost loop must keep the method
        valid (it takes elements out)."""
        if not (self.method.needs_present and level == self.loops[-1] and self.receiver_var):
            return ""
        receiver = self.receiver_var.name
        for position, kind in enumerate(self.signature):
            if kind in PRESENT_ARGS:
                return f"{self.arg_texts[position][0]} in {receiver} and "
        return f"{receiver} and "

    def _for_header(self, level: int, scope: list[Var]) -> tuple[str, list[Var]]:
        rng, plan = self.rng, self.plan
        size = plan.loop_sizes.get(level, 2)
        receiver = self.receiver_var
        if level == plan.map_level:
            kind = self.category
            items = [self.values.receiver(self.method.receiver, small=True)
                     for _ in range(size - 1)]  # fmt: skip
            items.insert(0, self.receiver_value)
            known = items
            source = self._param(LIST_OF.get(kind, ("items",)), items)
            var = Var(self.names.fresh(LOOP_NAMES["str"] if kind in ("str", "bytes")
                                       else LOOP_NAMES["any"]), kind, "receiver")  # fmt: skip
        elif level == plan.args_level:
            position = plan.args_position
            kind = self.signature[position]
            options = self._arg_options(position, size)
            known = options
            source = literal(options)
            if rng.random() < 0.4:
                source = self._param(("options", "choices", "cases", "inputs"), options)
            var_kind = kind_of(options[0])
            var = Var(
                self.names.fresh(LOOP_NAMES.get(var_kind, ("x", "opt", "arg"))),
                var_kind,
                f"arg:{position}",
            )
        elif level == plan.snapshot_level and receiver is not None:
            source = self._snapshot(receiver)
            var = self._element_var("snapshot")
            known = self._elements()
        elif level == plan.nested_level:
            return self._nested_header(level, size)
        elif level in plan.receiver_levels and receiver is not None:
            source = self._snapshot(receiver) if self.mutates else receiver.name
            var = self._element_var("element")
            known = self._elements()
        else:
            source, var = self._range(size)
            known = list(range(1, size + 1) if source.startswith("range(1,") else range(size))
        if level == plan.slicing_level:
            sliceable = source != getattr(receiver, "name", None) or self.category in SLICEABLE
            source = self._slice_source(source) if sliceable else f"list({source})[::-1]"
        var.values = known
        if level == plan.comprehension_level:
            item = self.names.fresh(("v", "e", "y", "it", "z"))
            condition = self._condition([Var(item, var.kind)], allow_methods=False, known=known)
            source = f"[{item} for {item} in {source} if {condition}]"
        plain_source = "(" not in source
        if self.c.other_methods and rng.random() < 0.25 and self.method.name != "enumerate" \
                and (plain_source or self.c.nested_calls):  # fmt: skip
            index = Var(self.names.fresh(("i", "pos", "idx", "n")), "int",
                        values=list(range(len(known))))  # fmt: skip
            self.other_used = True
            if "(" in source:
                self.nested_used = True
            return f"for {index.name}, {var.name} in enumerate({source}):", [index, var]
        return f"for {var.name} in {source}:", [var]

    def _elements(self) -> list[Any]:
        value = self.receiver_value
        if isinstance(value, set | frozenset):
            return sorted(value)
        return list(value)

    def _element_var(self, role: str) -> Var:
        kind = {"slist": "str", "flags": "any"}.get(self.method.receiver, ELEMENT[self.category])
        return Var(self.names.fresh(LOOP_NAMES.get(kind, ("x",))), kind, role)

    def _arg_options(self, position: int, size: int) -> list[Any]:
        kind = self.signature[position]
        options = [self.arg_values[position][0]]
        for _ in range(size * 2):
            if len(options) >= size:
                break
            option = self.values.args(kind, self.receiver_value)[0]
            if option not in options:
                options.append(option)
        return options

    def _range(self, size: int) -> tuple[str, Var]:
        var = Var(self.names.fresh(LOOP_NAMES["int"]), "int")
        roll = self.rng.random()
        if roll < 0.2:
            return f"range(1, {size + 1})", var
        if roll < 0.35:
            bound = self._param(("n", "times", "rounds", "reps", "limit"), size)
            return f"range({bound})", var
        return f"range({size})", var

    def _snapshot(self, receiver: Var) -> str:
        if receiver.kind in ("list", "str", "bytes", "tuple") and self.rng.random() < 0.5:
            return f"{receiver.name}[:]"
        if receiver.kind in ("set", "frozenset", "dict") and self.rng.random() < 0.5 and \
                self.c.other_methods and self.method.name != "sorted":  # fmt: skip
            self.other_used = True
            return f"sorted({receiver.name})"
        return f"{'tuple' if self.rng.random() < 0.3 else 'list'}({receiver.name})"

    def _slice_source(self, source: str) -> str:
        if source.endswith("[:]"):
            return source
        if source.startswith("range(") or not source.startswith(("list(", "tuple(", "sorted(")):
            return f"{source}[{self.rng.choice(('::-1', '1:', ':3', '::2', ':'))}]"
        return f"{source}[{self.rng.choice(('::-1', '1:', ':3', '::2'))}]"

    def _nested_header(self, level: int, size: int) -> tuple[str, list[Var]]:
        """A loop whose iterable nests a call: indices of the receiver, or a converted range."""
        self.nested_used = True
        receiver = self.receiver_var
        var = Var(self.names.fresh(LOOP_NAMES["int"]), "int")
        if receiver is not None and receiver.kind in SLICEABLE and not self.method.grows and \
                len(self.receiver_value) <= 6 and self.plan.accumulate != "collect" and \
                self.rng.random() < 0.7:  # fmt: skip
            source = f"range(len({receiver.name}))"
        elif self.c.other_methods and self.method.name not in ("sorted", "reversed") and \
                self.rng.random() < 0.5:  # fmt: skip
            self.other_used = True
            wrapper = (
                "sorted"
                if level == self.plan.slicing_level
                else self.rng.choice(("sorted", "reversed"))
            )
            source = f"{wrapper}(range({size}))"
        else:
            source = f"list(range({size}))"
        if level == self.plan.slicing_level:
            source = self._slice_source(source)
        bound = len(self.receiver_value) if source.startswith("range(len(") else size
        var.values = list(range(bound))
        if level == self.plan.comprehension_level:
            item = self.names.fresh(("v", "e", "y", "it", "z"))
            condition = self._condition([Var(item, "int")], allow_methods=False,
                                        known=list(range(bound)))  # fmt: skip
            source = f"[{item} for {item} in {source} if {condition}]"
        return f"for {var.name} in {source}:", [var]

    # -- leaf ----------------------------------------------------------------------------------

    def _call(self, scope: list[Var], arg_texts: list[list[str]] | None = None, *,
              loop_vars: bool = True, receiver: str | None = None) -> str:  # fmt: skip
        """The text of the call of the method (or attribute access), given the scope."""
        method, plan = self.method, self.plan
        texts = [list(group) for group in (arg_texts or self.arg_texts)]
        if receiver is None:
            receiver = self.receiver_var.name if self.receiver_var else ""
            for var in scope:
                if var.role == "receiver" and var is not self.receiver_var:
                    receiver = var.name
            if plan.slicing == "receiver" and receiver:
                receiver = f"{receiver}[{self.rng.choice(('1:', '::-1', ':4', '::2'))}]"
        if loop_vars:
            for var in scope:
                if var.role.startswith("arg:"):
                    texts[int(var.role[4:])] = [var.name]
            for var in reversed(scope):
                if var.role in ("loop", "element", "snapshot") and \
                        self._loop_var_as_arg(var, texts):  # fmt: skip
                    break
            if plan.nested == "arg":
                taken = {int(var.role[4:]) for var in scope if var.role.startswith("arg:")}
                self._nested_arg(texts, receiver, taken)
        args = ", ".join(text for group in texts for text in group)
        if method.name in ("map", "filter"):
            return f"{method.name}({args}, {receiver})"
        if method.style == "function":
            return f"{method.name}({receiver}{', ' if args else ''}{args})"
        if method.qualname == "bytes.maketrans":  # a 256-byte table: look one byte up
            return f"bytes.maketrans({args})[{self.arg_values[0][0][0]}]"
        if method.style == "static":
            return f"{method.owner}.{method.name}({args})"
        if method.style == "attribute":
            return f"{receiver}.{method.name}"
        return f"{receiver}.{method.name}({args})"

    def _loop_var_as_arg(self, var: Var, texts: list[list[str]]) -> bool:
        """Let a loop variable stand in for an argument; True when it did."""
        if self.binary and var.kind == "char":
            return False
        if self.method.needs_present:
            if var.role != "snapshot":
                return False
            for position, kind in enumerate(self.signature):
                if kind in PRESENT_ARGS:
                    texts[position] = [var.name]
                elif kind == "index_in":
                    texts[position] = [self.rng.choice(("0", "-1"))]
            return True
        allowed = LOOP_ARG.get(var.kind, ())
        if var.role in ("element", "snapshot"):
            allowed = allowed + PRESENT_ARGS + ("elem_any", "key_any")
        for position, kind in enumerate(self.signature):
            if kind in allowed and self.rng.random() < 0.6:
                texts[position] = [var.name]
                return True
        return False

    def _nested_arg(self, texts: list[list[str]], receiver: str, taken: set[int]) -> None:
        for position, kind in enumerate(self.signature):
            if kind not in NESTABLE_ARGS or position in taken:
                continue
            if kind == "width" and receiver:
                texts[position] = [f"len({receiver}) + {self.rng.randint(0, 3)}"]
            elif kind in ("start", "tabsize") and receiver:
                texts[position] = [f"len({receiver}) // 2 + 1"]
            elif kind in ("index", "elem", "value", "count", "start_int"):
                texts[position] = [
                    f"len({receiver})" if receiver else f"int(str({texts[position][0]}))"
                ]
            elif kind == "other_set":
                texts[position] = [f"set(range({self.rng.randint(2, 6)}))"]
            elif kind == "elems":
                texts[position] = [f"list(range({1 if self.values.tight else 2}))"]
            elif kind == "mapping":
                texts[position] = [f"dict({self.rng.choice('zwq')}={self.rng.randint(0, 9)})"]
            else:
                continue
            self.nested_used = True
            return

    def _expr(self, scope: list[Var], alternative: bool = False) -> str:
        """The call, materialised (views, iterators), possibly wrapped, possibly in a
        comprehension."""
        plan = self.plan
        if alternative:
            call = self._call(scope, self._alt_arg_texts(), loop_vars=False)
        elif plan.comprehension == "leaf":
            return self._leaf_comprehension(scope)
        else:
            call = self._call(scope)
        return self._finish(call, alternative)

    def _finish(self, call: str, alternative: bool) -> str:
        plan = self.plan
        if self.method.result in ("view", "iter"):
            if plan.nested == "materialize" and not alternative:
                self.nested_used = True
                call = f"{self.rng.choice(('list', 'tuple', 'list'))}({call})"
            else:
                call = f"[*{call}]"
        elif plan.nested == "wrap" and not alternative:
            self.nested_used = True
            if self.method.style == "attribute":  # an attribute is no call: convert it first
                call = f"{self.method.owner}({call})"
            if plan.wrapper in BUILTINS:
                self.other_used = True
            call = f"{plan.wrapper}({call}{', 1' if plan.wrapper == 'round' else ''})"
        return call

    def _leaf_comprehension(self, scope: list[Var]) -> str:
        """``[call for x in ...]`` over argument values, over receivers, or over a range."""
        rng, plan = self.rng, self.plan
        how, position = plan.leaf_comprehension
        if how == "args":
            item = self.names.fresh(("x", "a", "p", "q", "opt"))
            options = self._arg_options(position, rng.randint(2, 3))
            texts = [list(group) for group in self.arg_texts]
            texts[position] = [item]
            call = self._finish(self._call(scope, texts, loop_vars=False), False)
            return f"[{call} for {item} in {literal(options)}]"
        if how == "receivers":
            item = self.names.fresh(("x", "w", "v", "it"))
            items = [self.receiver_value, self.values.receiver(self.method.receiver, True)]
            source = self._param(LIST_OF.get(self.category, ("items",)), items)
            call = self._finish(self._call(scope, receiver=item), False)
            return f"[{call} for {item} in {source}]"
        item = self.names.fresh(("x", "a", "k"))
        call = self._finish(self._call(scope), False)
        return f"[{call} for {item} in range({rng.randint(1, 2)})]"

    def _leaf(self, indent: int, scope: list[Var]) -> list[str]:
        pad = "    " * indent
        body = self._apply(scope)
        if "try" in self.c.extras:
            errors = [name for name in EXCEPTIONS if self.rng.random() < 0.4] or ["ValueError"]
            clause = (
                "Exception"
                if self.rng.random() < 0.2
                else (errors[0] if len(errors) == 1 else f"({', '.join(errors)})")
            )
            handler = self._alt(indent + 1, scope, in_handler=True) or [f"{pad}    pass"]
            return (
                [f"{pad}try:"]
                + [f"    {pad}{line}" for line in body]
                + [f"{pad}except {clause}:"]
                + handler
            )
        return [f"{pad}{line}" for line in body]

    def _apply(self, scope: list[Var], alternative: bool = False) -> list[str]:
        """The statement(s) that call the method and keep its result, without indentation."""
        plan = self.plan
        acc = plan.acc
        if plan.accumulate == "inplace":
            if alternative:
                return [self._call(scope, self._alt_arg_texts(), loop_vars=False)]
            return [self._call(scope)]
        expr = self._expr(scope, alternative)
        if plan.accumulate == "state":
            name = self.receiver_var.name if self.receiver_var else acc
            return [f"{name} = {expr}"]
        if plan.accumulate == "sum":
            if plan.fold == "double":
                return [f"{acc} = {acc} * 2 + {expr}"]
            if plan.fold == "flip":
                return [f"{acc} = {expr} - {acc}"]
            return [f"{acc} {plan.fold} {expr}"]
        if plan.accumulate == "concat":
            return [f"{acc} += {expr}"]
        if plan.accumulate == "collect":
            if (
                self.c.other_methods
                and self.method.qualname != "list.append"
                and ("(" not in expr or self.c.nested_calls)
                and self.rng.random() < 0.6
            ):
                self.other_used = True
                return [f"{acc}.append({expr})"]
            return (
                [f"{acc} += [{expr}]"] if self.rng.random() < 0.7 else [f"{acc} = {acc} + [{expr}]"]
            )
        if plan.accumulate == "last":
            return [f"{acc} = {expr}"]
        if plan.accumulate == "pair":
            if self.mutates and self.receiver_var:
                second = f"len({self.receiver_var.name})"
            elif self.plan.result_kind not in ("int", "bool", "float", "elem"):
                second = "len(first)"
            else:
                second = self._expr(scope, alternative=True)
            return [f"first = {expr}", f"second = {second}"]
        # direct, at depth 0
        reshaped = (
            plan.comprehension == "return"
            or plan.slicing == "return"
            or plan.nested == "return"
            or self.c.other_methods
            or (self.c.nested_calls and not self.nested_used)
        )
        if reshaped or self.method.mode == "take" or self.rng.random() < 0.4:
            self.plan.acc = acc or self.names.fresh(ACC_NAMES["last"])
            return [f"{self.plan.acc} = {expr}"]
        return [f"return {expr}"]

    def _alt(self, indent: int, scope: list[Var], in_handler: bool = False) -> list[str]:
        """An alternative statement for an else branch or an except handler (may be empty)."""
        pad = "    " * indent
        plan = self.plan
        if plan.accumulate == "sum":
            return [f"{pad}{plan.acc} {self.rng.choice(('+=', '-='))} {self.rng.randint(1, 3)}"]
        if plan.accumulate == "concat":
            mark = self.rng.choice(("-", "*", "|", "#"))
            return [f"{pad}{plan.acc} += {mark.encode() if self.binary else mark!r}"]
        if plan.accumulate == "collect":
            loop_vars = [var.name for var in scope if var.role != "receiver"]
            item = self.rng.choice(loop_vars) if loop_vars else str(self.rng.randint(-1, 9))
            return [f"{pad}{plan.acc} += [{item}]"]
        if plan.accumulate == "last":
            default = DEFAULTS.get(plan.result_kind, "None")
            return [f"{pad}{plan.acc} = {'-1' if default == '0' else default}"]
        if plan.accumulate == "direct" and in_handler and plan.acc:
            return [f"{pad}{plan.acc} = None"]
        if in_handler or self.method.needs_present or plan.accumulate == "direct":
            return []
        if plan.accumulate in ("state", "inplace") and self.rng.random() < 0.6:
            return [f"{pad}{line}" for line in self._apply(scope, alternative=True)]
        return []

    # -- accumulator, conditions, other methods, return ---------------------------------

    def _acc_init(self, pad: str) -> list[str]:
        plan = self.plan
        if plan.accumulate == "sum":
            return [f"{pad}{plan.acc} = {'0.0' if plan.result_kind == 'float' else '0'}"]
        if plan.accumulate == "collect":
            return [f"{pad}{plan.acc} = []"]
        if plan.accumulate == "concat":
            return [f"{pad}{plan.acc} = {DEFAULTS[plan.result_kind]}"]
        if plan.accumulate == "last":
            return [f"{pad}{plan.acc} = {DEFAULTS.get(plan.result_kind, 'None')}"]
        return []

    def _condition(self, scope: list[Var], allow_methods: bool = True,
                   known: list[Any] | None = None) -> str:  # fmt: skip
        """A condition on a variable in scope. On a value known here (the receiver, a new
        parameter) it is usually true, so that the branch holding the method runs; on a
        variable whose values are ``known`` it usually holds for some of them."""
        rng, values = self.rng, known
        var = scope[-1] if scope and rng.random() < 0.7 else (rng.choice(scope) if scope else None)
        if values is None and var is not None:
            values = var.values
        known: Any = UNKNOWN
        if var is None:
            known = rng.randint(0, 9)
            var = Var(self._param(RECEIVER_NAMES["int"], known), "int", "param")
        elif var is self.receiver_var:
            known = self.receiver_value
        methods = (
            allow_methods
            and self.c.other_methods
            and rng.random() < 0.5
            and not var.role.startswith("arg:")
        )
        options = [(text, test, method) for text, test, method in conditions(var, methods, self.rng, self.binary)
                   if method != self.method.name] or conditions(var, False, self.rng, self.binary)  # fmt: skip
        if known is not UNKNOWN and rng.random() < 0.85:
            true = [option for option in options if holds(option[1], known)]
            options = true or options
        elif values is not None and rng.random() < 0.9:
            some = [option for option in options
                    if any(holds(option[1], value) for value in values)]  # fmt: skip
            options = some or options
        text, _, method = rng.choice(options)
        if method:
            self.other_used = True
        return text

    def _ensure_other(self) -> None:
        """Call another catalog method when required and none was written yet."""
        if not self.c.other_methods or self.other_used:
            return
        receiver = self.receiver_var
        if receiver is None or receiver.kind in ("any", "tuple"):
            return  # _return adds one to the result
        name, target = receiver.name, self.method.name
        kind = receiver.kind
        if kind in ("str", "bytes"):
            # strip, rstrip and lower leave these receivers (and arguments drawn from them) as
            # they are, except for the padded ones, which are lower case already
            if self.method.receiver == "text_padded":
                pick = "lower" if target != "lower" else "casefold"
            elif self.method.receiver in ("text_cased", "text_class"):
                pick = self.rng.choice([m for m in ("strip", "lower", "upper") if m != target])
            else:
                pick = "strip" if target != "strip" else "rstrip"
            line = f"    {name} = {name}.{pick}()"
        elif kind in ("list", "dict", "set", "frozenset"):
            # a copy keeps the caller's value as it is; for copy itself, a harmless change
            harmless = {
                "list": f"{name}.reverse()",
                "dict": f"{name}.setdefault('id', 0)",
                "set": f"{name}.discard(-1)",
                "frozenset": f"{name} = {name}.union()",
            }
            line = f"    {name} = {name}.copy()" if target != "copy" else f"    {harmless[kind]}"
        elif kind in ("int", "float"):
            line = (
                f"    {name} = abs({name})" if target != "abs" else f"    {name} = max({name}, 0)"
            )
        else:
            return
        self.lines.insert(1 if receiver.kind == "frozenset" else 0, line)
        self.other_used = True

    def _return(self) -> list[str]:
        plan, rng = self.plan, self.rng
        if plan.accumulate == "direct" and self._direct_returned():
            return []
        if plan.accumulate in ("state", "inplace"):
            value = self.receiver_var.name if self.receiver_var else "None"
        elif plan.accumulate == "pair":
            value = "[first, second]"
        else:
            value = plan.acc
        kind = self._return_kind()
        if plan.accumulate == "direct" and self.method.mode == "take" and rng.random() < 0.5 \
                and self.receiver_var:  # fmt: skip
            value, kind = f"({value}, {self.receiver_var.name})", "tuple"
        if plan.comprehension == "return":
            value = self._return_comprehension(value, kind)
            kind = "list"
        if plan.slicing == "return":
            if kind not in SLICEABLE and kind != "list":
                value = f"list({value})"
            value = f"{self._paren(value)}[{rng.choice(('::-1', '1:', ':3', ':-1', '::2'))}]"
        if plan.nested == "return" or (self.c.nested_calls and not self.nested_used):
            value, kind = self._return_nested(value, kind)
        lines = []
        if self.c.other_methods and not self.other_used:
            if not value.isidentifier():
                name = self.names.fresh(("final", "outcome", "ret"))
                lines.append(f"    {name} = {value}")
                value = name
            value = self._return_other(value, kind)
        return [*lines, f"    return {value}"]

    def _direct_returned(self) -> bool:
        return any(line.startswith("    return ") for line in self.body)

    @staticmethod
    def _paren(value: str) -> str:
        return f"({value})" if ", " in value and not value.startswith(("[", "(")) else value

    def _return_kind(self) -> str:
        plan = self.plan
        if plan.accumulate in ("state", "inplace"):
            return self.category
        if plan.accumulate in ("collect", "pair"):
            return "list"
        if plan.accumulate == "sum":
            return "int"
        return plan.result_kind

    def _return_comprehension(self, value: str, kind: str) -> str:
        item = self.names.fresh(("v", "e", "y", "z", "it"))
        var_kind = {"str": "char", "bytes": "int", "list": "any", "tuple": "any", "set": "int",
                    "frozenset": "int", "dict": "key"}.get(kind, "any")  # fmt: skip
        if (kind == "dict" and self.method.name == "maketrans") or (kind == "list" and \
                self.plan.accumulate == "inplace" and self.method.receiver == "ilist"):  # fmt: skip
            var_kind = "int"
        if var_kind == "any":
            condition = f"{item} is not None" if self.rng.random() < 0.5 else f"{item} != 0"
        else:
            condition = self._condition([Var(item, var_kind)], allow_methods=False)
        return f"[{item} for {item} in {self._paren(value)} if {condition}]"

    def _return_nested(self, value: str, kind: str) -> tuple[str, str]:
        self.nested_used = True
        if kind in ("list", "tuple", "set", "frozenset", "dict"):
            if self.c.other_methods and kind in ("set", "frozenset") and \
                    self.method.name != "sorted":  # fmt: skip
                self.other_used = True
                return f"tuple(sorted({value}))", "tuple"
            if self.rng.random() < 0.3:
                return f"len(list({value}))", "int"
            return f"tuple(list({value}))", "tuple"
        if kind in ("str", "bytes"):
            return f"len(str({value}))", "int"
        if kind in ("int", "bool"):
            return f"str(int({value}))", "str"
        if kind == "float":
            return f"str(float({value}))", "str"
        return f"len(str({value}))", "int"

    def _return_other(self, value: str, kind: str) -> str:
        """A last call of another catalog method on the result (only when none was used)."""
        target = self.method.name
        self.other_used = True
        if kind in ("int", "bool") and target != "abs":
            return f"abs({value})"
        if kind == "float" and target != "round":
            return f"round({value}, 2)"
        if kind == "str" and target != "upper" and value.isidentifier():
            return f"{value}.upper()"
        if kind == "tuple" and value.isidentifier() and target != "count":
            return f"{value}, {value}.count(0)"
        return f"[{value}].copy()"


class OfflineGenerator:
    """Programmatic candidates, deterministic on (seed, index).

    The first ``len(catalog())`` indices go through every catalog method once (in an order
    shuffled by the seed); later indices draw methods by catalog weight.
    """

    name = GENERATOR

    def __init__(self, seed: int = 0, max_depth: int = 3,
                 methods: tuple[Method, ...] | None = None) -> None:  # fmt: skip
        self.seed = seed
        self.max_depth = max_depth
        self.methods = methods if methods is not None else catalog()
        if not self.methods:
            raise ValueError("the offline generator needs at least one catalog method")
        order = list(range(len(self.methods)))
        random.Random(f"codereasoner-offline-order:{seed}").shuffle(order)
        self._order = order
        self._cumulative = list(accumulate(method.weight for method in self.methods))

    def method_for(self, index: int) -> Method:
        """The method of case ``index``: every method once for the first indices, then by
        weight."""
        if index < 0:
            raise ValueError(f"index must be >= 0, got {index}")
        if index < len(self.methods):
            return self.methods[self._order[index]]
        rng = case_random(self.seed, index, "method")
        point = rng.random() * self._cumulative[-1]
        return self.methods[min(bisect(self._cumulative, point), len(self.methods) - 1)]

    def generate(self, index: int) -> Candidate:
        """Candidate ``index``: one function and its literal arguments."""
        method = self.method_for(index)
        rng = case_random(self.seed, index)
        constraints = sample_constraints(rng, self.max_depth)
        code, input_repr = _Writer(rng, method, constraints).write()
        return Candidate(id=f"off-{self.seed}-{index}", method=method.qualname, code=code,
                         input_repr=input_repr, constraints=constraints,
                         generator=GENERATOR)  # fmt: skip
