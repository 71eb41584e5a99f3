"""One offline case while it is written: its parameters, receiver, arguments and names.

A :class:`Draft` holds what the writer's parts share: the random stream, the method and its
constraints, the names taken, the parameters of ``f`` with their literal inputs, the receiver and
the argument texts, the :class:`~.offline_layout.CaseLayout`, and whether another catalog method
or a nested call was written yet. It also writes the small pieces every part needs (a parameter,
a condition, fresh argument values).
"""

from __future__ import annotations

import random
from typing import Any

from codereasoner.synth.case import Constraints
from codereasoner.synth.catalog import Method
from codereasoner.synth.generators.offline_conditions import (
    UNKNOWN,
    Condition,
    Role,
    Var,
    conditions,
    holds,
)
from codereasoner.synth.generators.offline_layout import CaseLayout, OverArguments
from codereasoner.synth.generators.offline_tables import (
    ARG_NAMES,
    CATEGORY,
    ELEMENT,
    LIST_OF,
    LOOP_NAMES,
    RECEIVER_NAMES,
)
from codereasoner.synth.generators.offline_values import Code, Values, literal


class Names:
    """Names taken in one function; ``fresh`` picks an unused one from a pool."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = {"f"}

    def fresh(self, pool: tuple[str, ...]) -> str:
        options = [name for name in pool if name not in self.used]
        name = self.rng.choice(options) if options else f"{pool[0]}{len(self.used)}"
        self.used.add(name)
        return name


class Draft:
    """The state of one function being written for one method under one set of constraints."""

    def __init__(self, rng: random.Random, method: Method, constraints: Constraints) -> None:
        self.rng = rng
        self.method = method
        self.constraints = constraints
        self.names = Names(rng)
        self.binary = method.owner == "bytes"
        self.values = Values(rng, self.binary)
        if method.name in ("map", "filter"):
            self.values.for_function(method.name)
        self.params: list[tuple[str, str]] = []  # (name, literal input)
        self.lines: list[str] = []  # statements before the body
        self.other_used = False  # another catalog method was called
        self.nested_used = False  # a call was nested in another
        kind = method.receiver
        # the type of the receiver ("" for a method without one)
        self.category = "bytes" if self.binary and kind else CATEGORY.get(kind, "")
        if method.owner == "frozenset":
            self.category = "frozenset"
        self.signature: tuple[str, ...] = rng.choice(method.signatures)
        self.mutates = method.mode in ("mutate", "take")
        self.layout = CaseLayout()
        self.loops = [level for level, kind in enumerate(constraints.control) if kind != "if"]
        self.receiver_var: Var | None = None
        self.receiver_value: Any = None
        self.arg_values: list[list[Any]] = []  # per position: the value(s) drawn
        self.arg_texts: list[list[str]] = []  # per position: their text in the call

    # -- parameters, receiver and arguments ------------------------------------------------

    def param(self, pool: tuple[str, ...], value: Any) -> str:
        """A new parameter of ``f`` named from ``pool``, whose input is ``value``."""
        name = self.names.fresh(pool)
        self.params.append((name, literal(value)))
        return name

    def make_receiver(self) -> None:
        method, rng = self.method, self.rng
        if not method.receiver:
            return
        small = self.constraints.depth >= 2
        value = self.values.receiver(method.receiver, small)
        self.receiver_value = value
        if self.category == "frozenset":
            source = sorted(value) if rng.random() < 0.5 else value
            param = self.param(LIST_OF["int"], source)
            name = self.names.fresh(RECEIVER_NAMES["frozenset"])
            self.lines.append(f"    {name} = frozenset({param})")
        else:
            name = self.param(RECEIVER_NAMES.get(self.category, ("x",)), value)
        self.receiver_var = Var(name, self.category, Role.RECEIVER)

    def make_args(self) -> None:
        """Argument texts per position: a parameter or an inline literal (or a Code)."""
        layout = self.layout
        # a static method has no receiver: one argument becomes the input, so that f() has one
        wants_input = self.method.style == "static"
        replaced: set[int] = set()  # positions whose values a loop or comprehension gives
        if layout.args_loop is not None:
            replaced.add(layout.args_loop.position)
        if isinstance(layout.leaf_over, OverArguments):
            replaced.add(layout.leaf_over.position)
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
                    texts.append(self.param(ARG_NAMES.get(kind, ("a", "b", "arg")), value))
            self.arg_texts.append(texts)

    def alt_arg_texts(self) -> list[list[str]]:
        """Fresh inline arguments for an alternative call (an else branch or a handler)."""
        texts = []
        for kind in self.signature:
            produced = self.values.args(kind, self.receiver_value)
            texts.append([literal(value) for value in produced])
        return texts

    def arg_options(self, position: int, size: int) -> list[Any]:
        """Up to ``size`` different values for the argument at ``position``, its own first."""
        kind = self.signature[position]
        options = [self.arg_values[position][0]]
        for _ in range(size * 2):
            if len(options) >= size:
                break
            option = self.values.args(kind, self.receiver_value)[0]
            if option not in options:
                options.append(option)
        return options

    def elements(self) -> list[Any]:
        """The receiver's elements, in iteration order (sets sorted)."""
        value = self.receiver_value
        if isinstance(value, set | frozenset):
            return sorted(value)
        return list(value)

    def element_var(self, role: Role) -> Var:
        """A loop variable over the receiver's elements."""
        kind = {"slist": "str", "flags": "any"}.get(self.method.receiver, ELEMENT[self.category])
        return Var(self.names.fresh(LOOP_NAMES.get(kind, ("x",))), kind, role)

    # -- conditions ----------------------------------------------------------------------

    def condition(
        self, scope: list[Var], allow_methods: bool = True, known: list[Any] | None = None
    ) -> str:
        """A condition on a variable in scope. On a value known here (the receiver, a new
        parameter) it is usually true, so that the branch holding the method runs; on a
        variable whose values are ``known`` it usually holds for some of them."""
        rng, values = self.rng, known
        var = scope[-1] if scope and rng.random() < 0.7 else (rng.choice(scope) if scope else None)
        if values is None and var is not None:
            values = var.values
        value: Any = UNKNOWN  # the variable's one value, when known here
        if var is None:
            value = rng.randint(0, 9)
            var = Var(self.param(RECEIVER_NAMES["int"], value), "int", Role.PARAM)
        elif var is self.receiver_var:
            value = self.receiver_value
        methods = (
            allow_methods
            and self.constraints.other_methods
            and rng.random() < 0.5
            and isinstance(var.role, Role)
        )
        options: list[Condition] = [
            option
            for option in conditions(var, methods, self.rng, self.binary)
            if option.method != self.method.name
        ] or conditions(var, False, self.rng, self.binary)
        if value is not UNKNOWN and rng.random() < 0.85:
            true = [option for option in options if holds(option.test, value)]
            options = true or options
        elif values is not None and rng.random() < 0.9:
            some = [option for option in options if any(holds(option.test, v) for v in values)]
            options = some or options
        chosen = rng.choice(options)
        if chosen.method:
            self.other_used = True
        return chosen.text
