"""The control structures of an offline case: ``for``, ``while`` and ``if``, nested in the
blueprint's order around the leaf (:mod:`.offline_leaf`).

Every ``while`` has a counter that is incremented first; a ``while`` around a method that takes
an element out is guarded by the receiver; a ``for`` goes through a range, the receiver (a copy
when the method changes it), values of an argument, several receivers or a nested call, as the
layout says.
"""

from __future__ import annotations

from typing import Any

from codereasoner.synth.generators.offline_conditions import ArgumentOf, Role, Var, kind_of
from codereasoner.synth.generators.offline_draft import Draft
from codereasoner.synth.generators.offline_layout import Accumulation
from codereasoner.synth.generators.offline_leaf import acc_init, alternative, leaf
from codereasoner.synth.generators.offline_tables import (
    COUNTER_NAMES,
    LIST_OF,
    LOOP_NAMES,
    PRESENT_ARGS,
    SLICEABLE,
)
from codereasoner.synth.generators.offline_values import literal


def write_level(draft: Draft, level: int, indent: int, scope: list[Var]) -> list[str]:
    """The lines of control structure ``level`` and everything inside it."""
    pad = "    " * indent
    prefix = acc_init(draft, pad) if level == 0 else []
    control = draft.constraints.control
    if level == len(control):
        return prefix + leaf(draft, indent, scope)
    kind = control[level]
    if kind == "for":
        header, variables = _for_header(draft, level)
        inner = write_level(draft, level + 1, indent + 1, scope + variables)
        return [*prefix, f"{pad}{header}", *inner]
    if kind == "while":
        counter = draft.names.fresh(COUNTER_NAMES)
        size = draft.layout.loop_sizes[level]
        guard = _while_guard(draft, level)
        lines = [
            f"{pad}{counter} = 0",
            f"{pad}while {guard}{counter} < {size}:",
            f"{pad}    {counter} += 1",
        ]
        counter_var = Var(counter, "int", values=list(range(1, size + 1)))
        inner = write_level(draft, level + 1, indent + 1, [*scope, counter_var])
        return prefix + lines + inner
    return prefix + _if(draft, level, indent, scope)


def _if(draft: Draft, level: int, indent: int, scope: list[Var]) -> list[str]:
    pad = "    " * indent
    rng = draft.rng
    lines = [f"{pad}if {draft.condition(scope)}:"]
    lines += write_level(draft, level + 1, indent + 1, scope)
    jumps = [jump for jump in ("break", "continue") if jump in draft.constraints.extras]
    if level == draft.layout.jump_level and jumps:
        if len(jumps) == 2:
            lines.append(f"{pad}    continue")
            lines += [f"{pad}else:", f"{pad}    break"]
        elif rng.random() < 0.5:
            lines.append(f"{pad}    {jumps[0]}")
            alt = alternative(draft, indent + 1, scope)
            if alt and rng.random() < 0.5:
                lines += [f"{pad}else:", *alt]
        else:
            alt = alternative(draft, indent + 1, scope)
            if alt and rng.random() < 0.5:
                lines += [f"{pad}elif {draft.condition(scope)}:", *alt]
            lines += [f"{pad}else:", f"{pad}    {jumps[0]}"]
        return lines
    roll = rng.random()
    alt = alternative(draft, indent + 1, scope) if roll < 0.55 else []
    if alt:
        if roll < 0.15:
            lines += [f"{pad}elif {draft.condition(scope)}:", *alt]
        else:
            lines += [f"{pad}else:", *alt]
    return lines


def _while_guard(draft: Draft, level: int) -> str:
    """``RECV and `` or ``ARG in RECV and `` when the innermost loop must keep the method valid
    (it takes elements out)."""
    if not (draft.method.needs_present and level == draft.loops[-1] and draft.receiver_var):
        return ""
    receiver = draft.receiver_var.name
    for position, kind in enumerate(draft.signature):
        if kind in PRESENT_ARGS:
            return f"{draft.arg_texts[position][0]} in {receiver} and "
    return f"{receiver} and "


def _for_header(draft: Draft, level: int) -> tuple[str, list[Var]]:
    rng, layout = draft.rng, draft.layout
    size = layout.loop_sizes.get(level, 2)
    receiver = draft.receiver_var
    known: list[Any]
    if level == layout.map_level:
        kind = draft.category
        items = [draft.values.receiver(draft.method.receiver, small=True) for _ in range(size - 1)]
        items.insert(0, draft.receiver_value)
        known = items
        source = draft.param(LIST_OF.get(kind, ("items",)), items)
        pool = LOOP_NAMES["str"] if kind in ("str", "bytes") else LOOP_NAMES["any"]
        var = Var(draft.names.fresh(pool), kind, Role.RECEIVER)
    elif layout.args_loop is not None and level == layout.args_loop.level:
        position = layout.args_loop.position
        options = draft.arg_options(position, size)
        known = options
        source = literal(options)
        if rng.random() < 0.4:
            source = draft.param(("options", "choices", "cases", "inputs"), options)
        var_kind = kind_of(options[0])
        var = Var(
            draft.names.fresh(LOOP_NAMES.get(var_kind, ("x", "opt", "arg"))),
            var_kind,
            ArgumentOf(position),
        )
    elif level == layout.snapshot_level and receiver is not None:
        source = _snapshot(draft, receiver)
        var = draft.element_var(Role.SNAPSHOT)
        known = draft.elements()
    elif level == layout.nested_level:
        return _nested_header(draft, level, size)
    elif level in layout.receiver_levels and receiver is not None:
        source = _snapshot(draft, receiver) if draft.mutates else receiver.name
        var = draft.element_var(Role.ELEMENT)
        known = draft.elements()
    else:
        source, var = _range(draft, size)
        known = list(range(1, size + 1) if source.startswith("range(1,") else range(size))
    if level == layout.slicing_level:
        sliceable = source != getattr(receiver, "name", None) or draft.category in SLICEABLE
        source = _slice_source(draft, source) if sliceable else f"list({source})[::-1]"
    var.values = known
    if level == layout.comprehension_level:
        item = draft.names.fresh(("v", "e", "y", "it", "z"))
        condition = draft.condition([Var(item, var.kind)], allow_methods=False, known=known)
        source = f"[{item} for {item} in {source} if {condition}]"
    plain_source = "(" not in source
    if (
        draft.constraints.other_methods
        and rng.random() < 0.25
        and draft.method.name != "enumerate"
        and (plain_source or draft.constraints.nested_calls)
    ):
        index = Var(
            draft.names.fresh(("i", "pos", "idx", "n")), "int", values=list(range(len(known)))
        )
        draft.other_used = True
        if "(" in source:
            draft.nested_used = True
        return f"for {index.name}, {var.name} in enumerate({source}):", [index, var]
    return f"for {var.name} in {source}:", [var]


def _range(draft: Draft, size: int) -> tuple[str, Var]:
    var = Var(draft.names.fresh(LOOP_NAMES["int"]), "int")
    roll = draft.rng.random()
    if roll < 0.2:
        return f"range(1, {size + 1})", var
    if roll < 0.35:
        bound = draft.param(("n", "times", "rounds", "reps", "limit"), size)
        return f"range({bound})", var
    return f"range({size})", var


def _snapshot(draft: Draft, receiver: Var) -> str:
    rng = draft.rng
    if receiver.kind in ("list", "str", "bytes", "tuple") and rng.random() < 0.5:
        return f"{receiver.name}[:]"
    if (
        receiver.kind in ("set", "frozenset", "dict")
        and rng.random() < 0.5
        and draft.constraints.other_methods
        and draft.method.name != "sorted"
    ):
        draft.other_used = True
        return f"sorted({receiver.name})"
    return f"{'tuple' if rng.random() < 0.3 else 'list'}({receiver.name})"


def _slice_source(draft: Draft, source: str) -> str:
    if source.endswith("[:]"):
        return source
    if source.startswith("range(") or not source.startswith(("list(", "tuple(", "sorted(")):
        return f"{source}[{draft.rng.choice(('::-1', '1:', ':3', '::2', ':'))}]"
    return f"{source}[{draft.rng.choice(('::-1', '1:', ':3', '::2'))}]"


def _nested_header(draft: Draft, level: int, size: int) -> tuple[str, list[Var]]:
    """A loop whose iterable nests a call: indices of the receiver, or a converted range."""
    rng, layout = draft.rng, draft.layout
    draft.nested_used = True
    receiver = draft.receiver_var
    var = Var(draft.names.fresh(LOOP_NAMES["int"]), "int")
    if (
        receiver is not None
        and receiver.kind in SLICEABLE
        and not draft.method.grows
        and len(draft.receiver_value) <= 6
        and layout.accumulate is not Accumulation.COLLECT
        and rng.random() < 0.7
    ):
        source = f"range(len({receiver.name}))"
    elif (
        draft.constraints.other_methods
        and draft.method.name not in ("sorted", "reversed")
        and rng.random() < 0.5
    ):
        draft.other_used = True
        wrapper = "sorted" if level == layout.slicing_level else rng.choice(("sorted", "reversed"))
        source = f"{wrapper}(range({size}))"
    else:
        source = f"list(range({size}))"
    if level == layout.slicing_level:
        source = _slice_source(draft, source)
    bound = len(draft.receiver_value) if source.startswith("range(len(") else size
    var.values = list(range(bound))
    if level == layout.comprehension_level:
        item = draft.names.fresh(("v", "e", "y", "it", "z"))
        condition = draft.condition(
            [Var(item, "int")], allow_methods=False, known=list(range(bound))
        )
        source = f"[{item} for {item} in {source} if {condition}]"
    return f"for {var.name} in {source}:", [var]
