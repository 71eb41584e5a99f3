"""The end of an offline case: the ``return`` statement, and the other-method and nested-call
constraints when the body did not meet them.

:func:`write_return` returns what the layout kept (the accumulator, the receiver, the pair),
reshaped by the extras placed on the returned value (a comprehension, slicing, a nested call);
when the constraints ask for another catalog method and none was written, :func:`ensure_other`
adds one that leaves the inputs as they are, or the return calls one on the result.
"""

from __future__ import annotations

from codereasoner.synth.generators.offline_conditions import Var
from codereasoner.synth.generators.offline_draft import Draft
from codereasoner.synth.generators.offline_layout import Accumulation, Placement
from codereasoner.synth.generators.offline_tables import SLICEABLE

# The loop variable kind of a comprehension over a returned value, by the value's type.
_ITEM_KIND = {
    "str": "char",
    "bytes": "int",
    "list": "any",
    "tuple": "any",
    "set": "int",
    "frozenset": "int",
    "dict": "key",
}


def ensure_other(draft: Draft) -> None:
    """Call another catalog method when required and none was written yet."""
    if not draft.constraints.other_methods or draft.other_used:
        return
    receiver = draft.receiver_var
    if receiver is None or receiver.kind in ("any", "tuple"):
        return  # write_return adds one to the result
    name, target = receiver.name, draft.method.name
    kind = receiver.kind
    if kind in ("str", "bytes"):
        # strip, rstrip and lower leave these receivers (and arguments drawn from them) as
        # they are, except for the padded ones, which are lower case already
        if draft.method.receiver == "text_padded":
            pick = "lower" if target != "lower" else "casefold"
        elif draft.method.receiver in ("text_cased", "text_class"):
            pick = draft.rng.choice([m for m in ("strip", "lower", "upper") if m != target])
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
        line = f"    {name} = abs({name})" if target != "abs" else f"    {name} = max({name}, 0)"
    else:
        return
    draft.lines.insert(1 if receiver.kind == "frozenset" else 0, line)
    draft.other_used = True


def write_return(draft: Draft, body: list[str]) -> list[str]:
    """The function's last lines (none when the body returns the call directly)."""
    layout, rng, c = draft.layout, draft.rng, draft.constraints
    how = layout.accumulate
    if how is Accumulation.DIRECT and _returned(body):
        return []
    if how in (Accumulation.STATE, Accumulation.INPLACE):
        value = draft.receiver_var.name if draft.receiver_var else "None"
    elif how is Accumulation.PAIR:
        value = "[first, second]"
    else:
        # A direct call returned inside a try has no name: the function ends with a bare
        # return (kept as it is, so that the output for a seed does not change).
        value = layout.acc or ""
    kind = _return_kind(draft)
    if (
        how is Accumulation.DIRECT
        and draft.method.mode == "take"
        and rng.random() < 0.5
        and draft.receiver_var
    ):
        value, kind = f"({value}, {draft.receiver_var.name})", "tuple"
    if layout.comprehension is Placement.RETURN:
        value = _return_comprehension(draft, value, kind)
        kind = "list"
    if layout.slicing is Placement.RETURN:
        if kind not in SLICEABLE and kind != "list":
            value = f"list({value})"
        value = f"{_paren(value)}[{rng.choice(('::-1', '1:', ':3', ':-1', '::2'))}]"
    if layout.nested is Placement.RETURN or (c.nested_calls and not draft.nested_used):
        value, kind = _return_nested(draft, value, kind)
    lines = []
    if c.other_methods and not draft.other_used:
        if not value.isidentifier():
            name = draft.names.fresh(("final", "outcome", "ret"))
            lines.append(f"    {name} = {value}")
            value = name
        value = _return_other(draft, value, kind)
    return [*lines, f"    return {value}"]


def _returned(body: list[str]) -> bool:
    return any(line.startswith("    return ") for line in body)


def _paren(value: str) -> str:
    return f"({value})" if ", " in value and not value.startswith(("[", "(")) else value


def _return_kind(draft: Draft) -> str:
    how = draft.layout.accumulate
    if how in (Accumulation.STATE, Accumulation.INPLACE):
        return draft.category
    if how in (Accumulation.COLLECT, Accumulation.PAIR):
        return "list"
    if how is Accumulation.SUM:
        return "int"
    return draft.layout.result_kind


def _return_comprehension(draft: Draft, value: str, kind: str) -> str:
    item = draft.names.fresh(("v", "e", "y", "z", "it"))
    var_kind = _ITEM_KIND.get(kind, "any")
    translation = kind == "dict" and draft.method.name == "maketrans"
    int_list = (
        kind == "list"
        and draft.layout.accumulate is Accumulation.INPLACE
        and draft.method.receiver == "ilist"
    )
    if translation or int_list:
        var_kind = "int"
    if var_kind == "any":
        condition = f"{item} is not None" if draft.rng.random() < 0.5 else f"{item} != 0"
    else:
        condition = draft.condition([Var(item, var_kind)], allow_methods=False)
    return f"[{item} for {item} in {_paren(value)} if {condition}]"


def _return_nested(draft: Draft, value: str, kind: str) -> tuple[str, str]:
    draft.nested_used = True
    if kind in ("list", "tuple", "set", "frozenset", "dict"):
        if (
            draft.constraints.other_methods
            and kind in ("set", "frozenset")
            and draft.method.name != "sorted"
        ):
            draft.other_used = True
            return f"tuple(sorted({value}))", "tuple"
        if draft.rng.random() < 0.3:
            return f"len(list({value}))", "int"
        return f"tuple(list({value}))", "tuple"
    if kind in ("str", "bytes"):
        return f"len(str({value}))", "int"
    if kind in ("int", "bool"):
        return f"str(int({value}))", "str"
    if kind == "float":
        return f"str(float({value}))", "str"
    return f"len(str({value}))", "int"


def _return_other(draft: Draft, value: str, kind: str) -> str:
    """A last call of another catalog method on the result (only when none was used)."""
    target = draft.method.name
    draft.other_used = True
    if kind in ("int", "bool") and target != "abs":
        return f"abs({value})"
    if kind == "float" and target != "round":
        return f"round({value}, 2)"
    if kind == "str" and target != "upper" and value.isidentifier():
        return f"{value}.upper()"
    if kind == "tuple" and value.isidentifier() and target != "count":
        return f"{value}, {value}.count(0)"
    return f"[{value}].copy()"
