"""The leaf of an offline case: the method's call and the statement that keeps its result.

The call takes its arguments from the draft, from loop variables in scope (one may stand in
for an argument) or from a nested call; the expression around it materialises views, wraps the
call in a built-in or puts it in a comprehension, as the layout says; the statement folds the
result into the accumulator (:class:`~.offline_layout.Accumulation`). :func:`alternative` writes
the other branch of an ``if`` or an ``except`` handler.
"""

from __future__ import annotations

from codereasoner.synth.catalog import BUILTINS
from codereasoner.synth.generators.offline_conditions import ArgumentOf, Role, Var
from codereasoner.synth.generators.offline_draft import Draft
from codereasoner.synth.generators.offline_layout import (
    ACC_NAMES,
    Accumulation,
    Fold,
    OverArguments,
    OverReceivers,
    Placement,
)
from codereasoner.synth.generators.offline_tables import (
    DEFAULTS,
    EXCEPTIONS,
    LIST_OF,
    LOOP_ARG,
    NESTABLE_ARGS,
    PRESENT_ARGS,
)
from codereasoner.synth.generators.offline_values import literal


def leaf(draft: Draft, indent: int, scope: list[Var]) -> list[str]:
    """The innermost statements, in a ``try`` when the blueprint asks for one."""
    pad = "    " * indent
    rng = draft.rng
    body = apply(draft, scope)
    if "try" in draft.constraints.extras:
        errors = [name for name in EXCEPTIONS if rng.random() < 0.4] or ["ValueError"]
        clause = (
            "Exception"
            if rng.random() < 0.2
            else (errors[0] if len(errors) == 1 else f"({', '.join(errors)})")
        )
        handler = alternative(draft, indent + 1, scope, in_handler=True) or [f"{pad}    pass"]
        return (
            [f"{pad}try:"]
            + [f"    {pad}{line}" for line in body]
            + [f"{pad}except {clause}:"]
            + handler
        )
    return [f"{pad}{line}" for line in body]


def apply(draft: Draft, scope: list[Var], is_alternative: bool = False) -> list[str]:
    """The statement(s) that call the method and keep its result, without indentation."""
    layout, rng, c = draft.layout, draft.rng, draft.constraints
    how = layout.accumulate
    if how is Accumulation.INPLACE:
        if is_alternative:
            return [call(draft, scope, draft.alt_arg_texts(), loop_vars=False)]
        return [call(draft, scope)]
    value = expression(draft, scope, is_alternative)
    if how is Accumulation.STATE:
        assert draft.receiver_var is not None  # a transform has a receiver
        return [f"{draft.receiver_var.name} = {value}"]
    if how is Accumulation.SUM:
        acc = layout.acc_name()
        if layout.fold is Fold.DOUBLE:
            return [f"{acc} = {acc} * 2 + {value}"]
        if layout.fold is Fold.FLIP:
            return [f"{acc} = {value} - {acc}"]
        return [f"{acc} {layout.fold.value} {value}"]
    if how is Accumulation.CONCAT:
        return [f"{layout.acc_name()} += {value}"]
    if how is Accumulation.COLLECT:
        acc = layout.acc_name()
        if (
            c.other_methods
            and draft.method.qualname != "list.append"
            and ("(" not in value or c.nested_calls)
            and rng.random() < 0.6
        ):
            draft.other_used = True
            return [f"{acc}.append({value})"]
        return [f"{acc} += [{value}]"] if rng.random() < 0.7 else [f"{acc} = {acc} + [{value}]"]
    if how is Accumulation.LAST:
        return [f"{layout.acc_name()} = {value}"]
    if how is Accumulation.PAIR:
        if draft.mutates and draft.receiver_var:
            second = f"len({draft.receiver_var.name})"
        elif layout.result_kind not in ("int", "bool", "float", "elem"):
            second = "len(first)"
        else:
            second = expression(draft, scope, is_alternative=True)
        return [f"first = {value}", f"second = {second}"]
    # direct, at depth 0
    reshaped = (
        layout.comprehension is Placement.RETURN
        or layout.slicing is Placement.RETURN
        or layout.nested is Placement.RETURN
        or c.other_methods
        or (c.nested_calls and not draft.nested_used)
    )
    if reshaped or draft.method.mode == "take" or rng.random() < 0.4:
        layout.acc = layout.acc or draft.names.fresh(ACC_NAMES[Accumulation.LAST])
        return [f"{layout.acc} = {value}"]
    return [f"return {value}"]


def alternative(draft: Draft, indent: int, scope: list[Var], in_handler: bool = False) -> list[str]:
    """An alternative statement for an else branch or an except handler (may be empty)."""
    pad = "    " * indent
    layout, rng = draft.layout, draft.rng
    how = layout.accumulate
    if how is Accumulation.SUM:
        return [f"{pad}{layout.acc_name()} {rng.choice(('+=', '-='))} {rng.randint(1, 3)}"]
    if how is Accumulation.CONCAT:
        mark = rng.choice(("-", "*", "|", "#"))
        return [f"{pad}{layout.acc_name()} += {mark.encode() if draft.binary else mark!r}"]
    if how is Accumulation.COLLECT:
        loop_vars = [var.name for var in scope if var.role is not Role.RECEIVER]
        item = rng.choice(loop_vars) if loop_vars else str(rng.randint(-1, 9))
        return [f"{pad}{layout.acc_name()} += [{item}]"]
    if how is Accumulation.LAST:
        default = DEFAULTS.get(layout.result_kind, "None")
        return [f"{pad}{layout.acc_name()} = {'-1' if default == '0' else default}"]
    if how is Accumulation.DIRECT and in_handler and layout.acc:
        return [f"{pad}{layout.acc} = None"]
    if in_handler or draft.method.needs_present or how is Accumulation.DIRECT:
        return []
    if how in (Accumulation.STATE, Accumulation.INPLACE) and rng.random() < 0.6:
        return [f"{pad}{line}" for line in apply(draft, scope, is_alternative=True)]
    return []


def acc_init(draft: Draft, pad: str) -> list[str]:
    """The accumulator's first value, before the outermost control structure."""
    layout = draft.layout
    how = layout.accumulate
    if how is Accumulation.SUM:
        return [f"{pad}{layout.acc_name()} = {'0.0' if layout.result_kind == 'float' else '0'}"]
    if how is Accumulation.COLLECT:
        return [f"{pad}{layout.acc_name()} = []"]
    if how is Accumulation.CONCAT:
        return [f"{pad}{layout.acc_name()} = {DEFAULTS[layout.result_kind]}"]
    if how is Accumulation.LAST:
        return [f"{pad}{layout.acc_name()} = {DEFAULTS.get(layout.result_kind, 'None')}"]
    return []


# -- the expression ------------------------------------------------------------------------


def expression(draft: Draft, scope: list[Var], is_alternative: bool = False) -> str:
    """The call, materialised (views, iterators), possibly wrapped, possibly in a
    comprehension."""
    if is_alternative:
        text = call(draft, scope, draft.alt_arg_texts(), loop_vars=False)
    elif draft.layout.comprehension is Placement.LEAF:
        return _leaf_comprehension(draft, scope)
    else:
        text = call(draft, scope)
    return _finish(draft, text, is_alternative)


def _finish(draft: Draft, text: str, is_alternative: bool) -> str:
    layout, method = draft.layout, draft.method
    if method.result in ("view", "iter"):
        if layout.nested is Placement.MATERIALIZE and not is_alternative:
            draft.nested_used = True
            text = f"{draft.rng.choice(('list', 'tuple', 'list'))}({text})"
        else:
            text = f"[*{text}]"
    elif layout.nested is Placement.WRAP and not is_alternative:
        draft.nested_used = True
        if method.style == "attribute":  # an attribute is no call: convert it first
            text = f"{method.owner}({text})"
        if layout.wrapper in BUILTINS:
            draft.other_used = True
        text = f"{layout.wrapper}({text}{', 1' if layout.wrapper == 'round' else ''})"
    return text


def _leaf_comprehension(draft: Draft, scope: list[Var]) -> str:
    """``[call for x in ...]`` over argument values or over receivers."""
    over = draft.layout.leaf_over
    if isinstance(over, OverArguments):
        item = draft.names.fresh(("x", "a", "p", "q", "opt"))
        options = draft.arg_options(over.position, draft.rng.randint(2, 3))
        texts = [list(group) for group in draft.arg_texts]
        texts[over.position] = [item]
        text = _finish(draft, call(draft, scope, texts, loop_vars=False), False)
        return f"[{text} for {item} in {literal(options)}]"
    assert isinstance(over, OverReceivers), over  # set with Placement.LEAF
    item = draft.names.fresh(("x", "w", "v", "it"))
    items = [draft.receiver_value, draft.values.receiver(draft.method.receiver, True)]
    source = draft.param(LIST_OF.get(draft.category, ("items",)), items)
    text = _finish(draft, call(draft, scope, receiver=item), False)
    return f"[{text} for {item} in {source}]"


# -- the call ------------------------------------------------------------------------------


def call(
    draft: Draft,
    scope: list[Var],
    arg_texts: list[list[str]] | None = None,
    *,
    loop_vars: bool = True,
    receiver: str | None = None,
) -> str:
    """The text of the call of the method (or attribute access), given the scope."""
    method, layout = draft.method, draft.layout
    texts = [list(group) for group in (arg_texts or draft.arg_texts)]
    if receiver is None:
        receiver = draft.receiver_var.name if draft.receiver_var else ""
        for var in scope:
            if var.role is Role.RECEIVER and var is not draft.receiver_var:
                receiver = var.name
        if layout.slicing is Placement.RECEIVER and receiver:
            receiver = f"{receiver}[{draft.rng.choice(('1:', '::-1', ':4', '::2'))}]"
    if loop_vars:
        for var in scope:
            if isinstance(var.role, ArgumentOf):
                texts[var.role.position] = [var.name]
        for var in reversed(scope):
            stands_in = var.role in (Role.LOOP, Role.ELEMENT, Role.SNAPSHOT)
            if stands_in and _loop_var_as_arg(draft, var, texts):
                break
        if layout.nested is Placement.ARGUMENT:
            taken = {var.role.position for var in scope if isinstance(var.role, ArgumentOf)}
            _nested_arg(draft, texts, receiver, taken)
    args = ", ".join(text for group in texts for text in group)
    if method.name in ("map", "filter"):
        return f"{method.name}({args}, {receiver})"
    if method.style == "function":
        return f"{method.name}({receiver}{', ' if args else ''}{args})"
    if method.qualname == "bytes.maketrans":  # a 256-byte table: look one byte up
        return f"bytes.maketrans({args})[{draft.arg_values[0][0][0]}]"
    if method.style == "static":
        return f"{method.owner}.{method.name}({args})"
    if method.style == "attribute":
        return f"{receiver}.{method.name}"
    return f"{receiver}.{method.name}({args})"


def _loop_var_as_arg(draft: Draft, var: Var, texts: list[list[str]]) -> bool:
    """Let a loop variable stand in for an argument; True when it did."""
    if draft.binary and var.kind == "char":
        return False
    if draft.method.needs_present:
        if var.role is not Role.SNAPSHOT:
            return False
        for position, kind in enumerate(draft.signature):
            if kind in PRESENT_ARGS:
                texts[position] = [var.name]
            elif kind == "index_in":
                texts[position] = [draft.rng.choice(("0", "-1"))]
        return True
    allowed = LOOP_ARG.get(var.kind, ())
    if var.role in (Role.ELEMENT, Role.SNAPSHOT):
        allowed = allowed + PRESENT_ARGS + ("elem_any", "key_any")
    for position, kind in enumerate(draft.signature):
        if kind in allowed and draft.rng.random() < 0.6:
            texts[position] = [var.name]
            return True
    return False


def _nested_arg(draft: Draft, texts: list[list[str]], receiver: str, taken: set[int]) -> None:
    rng = draft.rng
    for position, kind in enumerate(draft.signature):
        if kind not in NESTABLE_ARGS or position in taken:
            continue
        if kind == "width" and receiver:
            texts[position] = [f"len({receiver}) + {rng.randint(0, 3)}"]
        elif kind in ("start", "tabsize") and receiver:
            texts[position] = [f"len({receiver}) // 2 + 1"]
        elif kind in ("index", "elem", "value", "count", "start_int"):
            texts[position] = [
                f"len({receiver})" if receiver else f"int(str({texts[position][0]}))"
            ]
        elif kind == "other_set":
            texts[position] = [f"set(range({rng.randint(2, 6)}))"]
        elif kind == "elems":
            texts[position] = [f"list(range({1 if draft.values.tight else 2}))"]
        elif kind == "mapping":
            texts[position] = [f"dict({rng.choice('zwq')}={rng.randint(0, 9)})"]
        else:
            continue
        draft.nested_used = True
        return
