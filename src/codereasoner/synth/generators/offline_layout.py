"""The layout of one offline case: decisions taken before any line is written.

:func:`plan_layout` decides, from the method, the constraints and the receiver, how the case
keeps the method's results (:class:`Accumulation`), what each ``for`` loop goes through, where
the blueprint's extras go (a comprehension, slicing, a nested call) and which ``if`` holds
``break``/``continue``. The writer (:mod:`.offline_control`, :mod:`.offline_leaf`,
:mod:`.offline_result`) follows the :class:`CaseLayout` it leaves in the draft.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from codereasoner.synth.generators.offline_tables import (
    ITERABLE,
    LOOP_ARG,
    NESTABLE_ARGS,
    PRESENT_ARGS,
    SLICEABLE,
    WRAPPED_KIND,
)

if TYPE_CHECKING:
    from codereasoner.synth.generators.offline_draft import Draft


class Accumulation(Enum):
    """How the case keeps the method's results."""

    DIRECT = "direct"  # no control structure: the call's result is the result
    SUM = "sum"  # numbers folded into an accumulator (see Fold)
    COLLECT = "collect"  # results appended to a list
    CONCAT = "concat"  # strings or bytes concatenated
    LAST = "last"  # the last result kept
    STATE = "state"  # the receiver replaced by the result (a transform)
    INPLACE = "inplace"  # the method changes the receiver, which is the result
    PAIR = "pair"  # two values returned as a list: the result and a length


class Fold(Enum):
    """How a sum takes in each value."""

    ADD = "+="
    SUBTRACT = "-="
    DOUBLE = "double"  # acc = acc * 2 + value
    FLIP = "flip"  # acc = value - acc


class Placement(Enum):
    """Where an extra construct (a comprehension, slicing, a nested call) goes."""

    SOURCE = "source"  # in the iterable of a for loop
    RECEIVER = "receiver"  # on the receiver of the call (slicing)
    LEAF = "leaf"  # around the call itself (a comprehension)
    RETURN = "return"  # on the returned value
    WRAP = "wrap"  # the call passed to a built-in (a nested call)
    MATERIALIZE = "materialize"  # a view or iterator passed to list() or tuple()
    ARGUMENT = "argument"  # an argument computed by another call


@dataclass(frozen=True)
class ArgumentLoop:
    """A for loop at ``level`` that goes through values of the argument at ``position``."""

    level: int
    position: int


@dataclass(frozen=True)
class OverArguments:
    """A comprehension around the call that goes through values of the argument at
    ``position``."""

    position: int


@dataclass(frozen=True)
class OverReceivers:
    """A comprehension around the call that goes through several receivers."""


# Accumulator names by accumulation.
ACC_NAMES = {
    Accumulation.SUM: ("total", "count", "acc", "score", "result"),
    Accumulation.COLLECT: ("out", "result", "res", "collected", "found", "acc"),
    Accumulation.LAST: ("result", "res", "last", "answer", "value"),
    Accumulation.CONCAT: ("out", "joined", "buf", "text", "acc"),
}


@dataclass
class CaseLayout:
    """Decisions made before writing the body (levels index the blueprint's control list)."""

    accumulate: Accumulation = Accumulation.DIRECT
    acc: str | None = None  # the accumulator's name
    fold: Fold = Fold.ADD  # for Accumulation.SUM
    result_kind: str = ""  # the kind of the leaf expression
    map_level: int | None = None  # the for loop whose items are receivers
    args_loop: ArgumentLoop | None = None
    snapshot_level: int | None = None  # the for loop over a copy of the receiver
    jump_level: int | None = None  # the if that holds break/continue
    receiver_levels: set[int] = field(default_factory=set)  # for loops over the receiver
    loop_sizes: dict[int, int] = field(default_factory=dict)
    comprehension: Placement | None = None  # SOURCE, LEAF or RETURN
    comprehension_level: int | None = None  # for SOURCE
    leaf_over: OverArguments | OverReceivers | None = None  # for LEAF
    slicing: Placement | None = None  # SOURCE, RECEIVER or RETURN
    slicing_level: int | None = None  # for SOURCE
    nested: Placement | None = None  # WRAP, MATERIALIZE, ARGUMENT, SOURCE or RETURN
    wrapper: str | None = None  # the built-in for WRAP
    nested_level: int | None = None  # for SOURCE

    @property
    def args_level(self) -> int | None:
        return self.args_loop.level if self.args_loop is not None else None

    def acc_name(self) -> str:
        """The accumulator's name; an accumulation other than DIRECT always has one."""
        assert self.acc is not None, self.accumulate
        return self.acc


def plan_layout(draft: Draft) -> None:
    """Fill ``draft.layout`` (after the receiver is made, before the arguments are)."""
    rng, method, layout, c = draft.rng, draft.method, draft.layout, draft.constraints
    control = c.control
    loops = draft.loops
    presents = any(kind in PRESENT_ARGS for kind in draft.signature)
    # loop sizes: keep the number of innermost executions small
    for level in loops:
        layout.loop_sizes[level] = 2 if len(loops) > 1 else rng.randint(2, 3)
    fors = [level for level in loops if control[level] == "for"]
    if method.needs_present and loops and control[loops[-1]] == "for":
        layout.snapshot_level = loops[-1]
    elif (
        fors
        and rng.random() < 0.3
        and draft.category in ITERABLE
        and draft.mutates
        and not method.needs_present
        and not (method.grows and len(loops) > 1)
    ):
        layout.snapshot_level = fors[-1]
    free_fors = [level for level in fors if level != layout.snapshot_level]
    draft.values.tight = len(loops) >= 2
    presents = presents or "length" in draft.signature
    mappable = (
        method.mode in ("value", "transform")
        and not presents
        and method.receiver
        and draft.category in ("str", "bytes", "int", "float", "tuple")
        and method.receiver not in ("fmt", "fmt_named", "joiner")
    )
    if free_fors and mappable and rng.random() < 0.35:
        layout.map_level = rng.choice(free_fors)
        free_fors.remove(layout.map_level)
    loop_kinds = LOOP_ARG["char"] + LOOP_ARG["int"] + ("other_set", "str_list", "elems", "mapping")
    loopable = [
        position
        for position, kind in enumerate(draft.signature)
        if kind in loop_kinds and kind not in PRESENT_ARGS and not method.needs_present
    ]
    if free_fors and loopable and rng.random() < 0.4:
        level = rng.choice(free_fors)
        layout.args_loop = ArgumentLoop(level, rng.choice(loopable))
        free_fors.remove(level)
    for level in free_fors:  # the others iterate the receiver or a range
        iterable = draft.receiver_var is not None and draft.category in ITERABLE
        if iterable and rng.random() < 0.35 and not (method.grows and len(loops) > 1):
            layout.receiver_levels.add(level)
    for level in fors:
        if level == layout.snapshot_level or level in layout.receiver_levels:
            layout.loop_sizes[level] = len(draft.receiver_value)
    # break/continue: the deepest if inside a loop
    if {"break", "continue"} & set(c.extras):
        for level in range(len(control) - 1, -1, -1):
            if control[level] == "if" and any(kind != "if" for kind in control[:level]):
                layout.jump_level = level
                break
    _plan_leaf(draft, fors)
    _plan_accumulation(draft)
    _plan_extras(draft, fors)


def _plan_leaf(draft: Draft, fors: list[int]) -> None:
    """The kind of the leaf expression: the method's result, maybe in a comprehension, maybe
    wrapped in another call."""
    rng, method, layout, c = draft.rng, draft.method, draft.layout, draft.constraints
    result = method.result
    if result in ("view", "iter"):
        result = "list"
    if method.qualname == "bytes.maketrans":
        result = "int"
    if result == "elem":
        single_get = method.qualname == "dict.get" and len(draft.signature) == 1
        result = "elem" if single_get or method.receiver == "flags" else "int"
    if c.nested_calls and method.mode != "mutate":
        if method.result in ("view", "iter"):
            layout.nested = Placement.MATERIALIZE
        elif rng.random() < 0.6:
            layout.nested = Placement.WRAP
            layout.wrapper = _choose_wrapper(draft, result)
            result = WRAPPED_KIND.get(layout.wrapper, result)
    positions = [
        position
        for position, kind in enumerate(draft.signature)
        if kind in LOOP_ARG["char"] + LOOP_ARG["int"] and kind not in PRESENT_ARGS
    ]
    receivers = (
        layout.map_level is None
        and method.receiver
        and draft.category in ("str", "bytes", "int", "float", "tuple")
        and method.receiver not in ("fmt", "fmt_named")
        and result in ("int", "bool", "float", "str", "bytes")
        and not any(kind in (*PRESENT_ARGS, "length") for kind in draft.signature)
    )
    short = result in ("int", "bool", "float", "str", "bytes", "elem")
    if (
        "comprehension" in c.extras
        and method.mode in ("value", "transform")
        and short
        and (positions or receivers)
        and (not fors or rng.random() < 0.5)
    ):
        layout.comprehension = Placement.LEAF
        if positions and (rng.random() < 0.6 or not receivers):
            layout.leaf_over = OverArguments(rng.choice(positions))
        else:
            layout.leaf_over = OverReceivers()
        if c.nested_calls and layout.nested is None:
            layout.nested = Placement.WRAP
            layout.wrapper = _choose_wrapper(draft, result)
        result = "list"
    layout.result_kind = result


def _choose_wrapper(draft: Draft, kind: str) -> str:
    rng, target = draft.rng, draft.method.name
    other = draft.constraints.other_methods and rng.random() < 0.5
    if kind in ("set", "frozenset") and other and target != "sorted":
        return "sorted"
    if kind in ("str", "list", "tuple", "bytes", "dict", "set", "frozenset"):
        return rng.choice(("len", "list") if kind == "tuple" else ("len",))
    if kind in ("int", "bool"):
        if other and target != "abs":
            return "abs"
        return rng.choice(("int", "str", "bool") if kind == "bool" else ("str", "bool", "float"))
    if kind == "float":
        if other and target != "round":
            return "round"
        return rng.choice(("int", "str", "bool"))
    return "str"


def _plan_accumulation(draft: Draft) -> None:
    rng, method, layout = draft.rng, draft.method, draft.layout
    result = layout.result_kind
    repeats = 1
    for level in draft.loops:
        repeats *= layout.loop_sizes[level]
    same_kind = layout.nested is not Placement.WRAP and layout.comprehension is not Placement.LEAF
    if method.mode == "mutate":
        layout.accumulate = Accumulation.INPLACE
    elif not draft.constraints.control:
        layout.accumulate = Accumulation.DIRECT
    elif method.mode == "transform" and method.receiver and same_kind and rng.random() < 0.5:
        layout.accumulate = Accumulation.STATE
    elif result in ("int", "bool", "float") and rng.random() < 0.6:
        layout.accumulate = Accumulation.SUM
        folds = (
            (Fold.ADD, Fold.ADD, Fold.SUBTRACT, Fold.DOUBLE, Fold.FLIP)
            if result != "float"
            else (Fold.ADD, Fold.SUBTRACT)
        )
        layout.fold = rng.choice(folds)
    elif repeats <= 3 and result in ("str", "bytes") and rng.random() < 0.35:
        layout.accumulate = Accumulation.CONCAT
    elif (repeats <= 4 and result in ("int", "bool", "elem", "float")) or (
        repeats <= 2 and result in ("str", "bytes") and rng.random() < 0.5
    ):
        layout.accumulate = Accumulation.COLLECT
    else:
        layout.accumulate = Accumulation.LAST
    if layout.accumulate in ACC_NAMES:
        layout.acc = draft.names.fresh(ACC_NAMES[layout.accumulate])


def _collect(draft: Draft) -> None:
    """Switch to collecting the results in a list (for an extra that needs a list result)."""
    draft.layout.accumulate = Accumulation.COLLECT
    draft.layout.acc = draft.names.fresh(ACC_NAMES[Accumulation.COLLECT])


def _plan_extras(draft: Draft, fors: list[int]) -> None:
    rng, layout, extras = draft.rng, draft.layout, set(draft.constraints.extras)
    taken = (layout.map_level, layout.args_level, layout.snapshot_level)
    plain = [level for level in fors if level not in taken]
    if "comprehension" in extras and layout.comprehension is not Placement.LEAF:
        options = [Placement.SOURCE] if fors else []
        if _returns_iterable(draft):
            options.append(Placement.RETURN)
        layout.comprehension = rng.choice(options) if options else Placement.RETURN
        if layout.comprehension is Placement.SOURCE:
            layout.comprehension_level = rng.choice(fors)
        if layout.comprehension is Placement.RETURN and not _returns_iterable(draft):
            _collect(draft)
    if "slicing" in extras:
        options = []
        sliceable_sources = [level for level in fors if level != layout.comprehension_level]
        if sliceable_sources:
            options.append(Placement.SOURCE)
        if (
            draft.category in SLICEABLE
            and draft.method.mode in ("value", "transform")
            and draft.method.receiver not in ("fmt", "fmt_named", "char")
            and not any(kind in PRESENT_ARGS for kind in draft.signature)
            and layout.map_level is None
            and not isinstance(layout.leaf_over, OverReceivers)
        ):
            options.append(Placement.RECEIVER)
        if _returns_sliceable(draft):
            options.append(Placement.RETURN)
        layout.slicing = rng.choice(options) if options else Placement.RETURN
        if layout.slicing is Placement.SOURCE:
            layout.slicing_level = rng.choice(sliceable_sources)
        if (
            layout.slicing is Placement.RETURN
            and not _returns_sliceable(draft)
            and not _returns_iterable(draft)
        ):
            if layout.accumulate is Accumulation.DIRECT:
                layout.accumulate = Accumulation.PAIR
            else:
                _collect(draft)
    if draft.constraints.nested_calls and layout.nested not in (
        Placement.WRAP,
        Placement.MATERIALIZE,
    ):
        options = []
        if any(kind in NESTABLE_ARGS for kind in draft.signature):
            options.append(Placement.ARGUMENT)
        if plain:
            options.append(Placement.SOURCE)
        layout.nested = rng.choice(options) if options else Placement.RETURN
        if layout.nested is Placement.SOURCE:
            layout.nested_level = rng.choice(plain)


def _returns_iterable(draft: Draft) -> bool:
    layout = draft.layout
    if layout.accumulate in (Accumulation.COLLECT, Accumulation.CONCAT):
        return True
    if layout.accumulate in (Accumulation.STATE, Accumulation.INPLACE):
        return draft.category in ITERABLE
    if layout.accumulate in (Accumulation.LAST, Accumulation.DIRECT):
        iterables = ("str", "list", "tuple", "set", "dict", "bytes", "frozenset")
        return layout.result_kind in iterables
    return False


def _returns_sliceable(draft: Draft) -> bool:
    layout = draft.layout
    if layout.accumulate in (Accumulation.COLLECT, Accumulation.CONCAT):
        return True
    if layout.accumulate in (Accumulation.STATE, Accumulation.INPLACE):
        return draft.category in SLICEABLE
    if layout.accumulate in (Accumulation.LAST, Accumulation.DIRECT):
        return layout.result_kind in ("str", "list", "tuple", "bytes")
    return False
