"""Loop rewrites: ``for`` and counting ``while``, appending loops and comprehensions, iteration and
index access.
"""

from __future__ import annotations

import ast
import random

from codereasoner.programs.rewrites.analysis import (
    READ_ONLY_CALLS,
    READ_ONLY_METHODS,
    SEQUENCE_ANNOTATIONS,
    SEQUENCE_CALLS,
    SEQUENCE_METHODS,
    FreshNames,
    Function,
    all_args,
    captured_late,
    enclosing_function,
    has,
    inside_try,
    int_only_names,
    is_int,
    is_range,
    loop_exits,
    mentioned,
    opaque,
    parent_map,
    pick,
    shadows_builtins,
    statement_lists,
    stored,
    uses_outside,
)

# ---------------------------------------------------------------------------------------
# for <-> while
# ---------------------------------------------------------------------------------------


def _for_to_while_site(func: Function, loop: ast.For) -> bool:
    if not (is_range(loop) and isinstance(loop.target, ast.Name)) or loop.orelse:
        return False
    assert isinstance(loop.iter, ast.Call)
    args = loop.iter.args
    if len(args) == 3 and not _nonzero_int(args[2]):
        return False
    ints = int_only_names(func)
    if not all(is_int(a, ints) for a in args[:2]):
        return False
    name = loop.target.id
    if name in stored(ast.Module(body=loop.body, type_ignores=[])) or loop_exits(loop):
        return False
    return not captured_late(loop.body, name) and not uses_outside(func, loop, {name})


def _nonzero_int(node: ast.expr) -> bool:
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = node.operand
        value = -inner.value if isinstance(inner, ast.Constant) and type(inner.value) is int else 0
    return type(value) is int and value != 0


def _step(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    assert isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)
    assert isinstance(node.operand.value, int)
    return -node.operand.value


def _for_to_while(loop: ast.For, fresh: FreshNames) -> list[ast.stmt]:
    assert isinstance(loop.iter, ast.Call) and isinstance(loop.target, ast.Name)
    args = loop.iter.args
    start, stop = (ast.Constant(0), args[0]) if len(args) == 1 else (args[0], args[1])
    step = _step(args[2]) if len(args) == 3 else 1
    name = loop.target.id
    before: list[ast.stmt] = []
    body_stores = stored(ast.Module(body=loop.body, type_ignores=[]))
    if not (
        isinstance(stop, ast.Constant)
        or (isinstance(stop, ast.Name) and stop.id not in body_stores)
    ):
        bound = fresh.name(("stop", "end", "limit"))
        before.append(ast.Assign([ast.Name(bound, ast.Store())], stop))
        stop = ast.Name(bound, ast.Load())
    before.insert(0, ast.Assign([ast.Name(name, ast.Store())], start))
    comparison = ast.Lt() if step > 0 else ast.Gt()
    test = ast.Compare(ast.Name(name, ast.Load()), [comparison], [stop])
    increment = ast.AugAssign(
        ast.Name(name, ast.Store()),
        ast.Add() if step > 0 else ast.Sub(),
        ast.Constant(abs(step)),
    )
    return [*before, ast.While(test, [*loop.body, increment], [])]


def replace_statement(
    tree: ast.Module, old: ast.stmt, new: list[ast.stmt], drop_before: int = 0
) -> None:
    for _, block in statement_lists(tree):
        for at, statement in enumerate(block):
            if statement is old:
                block[at - drop_before : at + 1] = new
                return
    raise LookupError("statement not found")


def apply_for_to_while(tree: ast.Module, rng: random.Random) -> bool:
    if shadows_builtins(tree):
        return False
    parents = parent_map(tree)
    sites = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.For)
        and (func := enclosing_function(n, parents)) is not None
        and not opaque(func)
        and _for_to_while_site(func, n)
    ]
    loop = pick(sites, rng)
    if loop is None:
        return False
    replace_statement(tree, loop, _for_to_while(loop, FreshNames(tree)))
    return True


def _while_to_for_site(func: Function, block: list[ast.stmt], at: int) -> bool:
    """``i = a`` then ``while i < b: ...; i += 1`` with no other store of ``i`` in the loop,
    no break/continue, ``b`` an int not changed by the loop and ``i`` unused elsewhere."""
    loop, init = block[at], block[at - 1] if at else None
    if not isinstance(loop, ast.While) or loop.orelse or not isinstance(init, ast.Assign):
        return False
    if len(init.targets) != 1 or not isinstance(init.targets[0], ast.Name):
        return False
    name = init.targets[0].id
    test = loop.test
    if not (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Lt)
    ):
        return False
    last = loop.body[-1]
    if not (
        isinstance(last, ast.AugAssign)
        and isinstance(last.target, ast.Name)
        and last.target.id == name
        and isinstance(last.op, ast.Add)
        and isinstance(last.value, ast.Constant)
        and last.value.value == 1
        and type(last.value.value) is int
    ):
        return False
    stop, inner = test.comparators[0], loop.body[:-1]
    inner_stores = stored(ast.Module(body=inner, type_ignores=[]))
    ints = int_only_names(func)
    if not inner or name in inner_stores or loop_exits(loop) or captured_late(inner, name):
        return False
    stop_fixed = isinstance(stop, ast.Constant) or (
        isinstance(stop, ast.Name) and stop.id not in inner_stores
    )
    if not (stop_fixed and is_int(stop, ints) and is_int(init.value, ints)):
        return False
    region = ast.Module(body=[init, loop], type_ignores=[])
    return not uses_outside(func, region, {name})


def apply_while_to_for(tree: ast.Module, rng: random.Random) -> bool:
    if shadows_builtins(tree):
        return False
    parents = parent_map(tree)
    sites = []
    for _, block in statement_lists(tree):
        for at in range(1, len(block)):
            func = enclosing_function(block[at], parents)
            if func is not None and not opaque(func) and _while_to_for_site(func, block, at):
                sites.append((block, at))
    site = pick(sites, rng)
    if site is None:
        return False
    block, at = site
    loop, init = block[at], block[at - 1]
    assert isinstance(loop, ast.While) and isinstance(init, ast.Assign)
    assert isinstance(loop.test, ast.Compare)
    start, stop = init.value, loop.test.comparators[0]
    args = [stop] if isinstance(start, ast.Constant) and start.value == 0 else [start, stop]
    target = ast.Name(init.targets[0].id, ast.Store())  # type: ignore[attr-defined]
    call = ast.Call(ast.Name("range", ast.Load()), args, [])
    block[at - 1 : at + 1] = [ast.For(target, call, loop.body[:-1], [])]
    return True


# ---------------------------------------------------------------------------------------
# loop <-> comprehension
# ---------------------------------------------------------------------------------------


def _comprehension_safe(expr: ast.AST) -> bool:
    """Nothing that behaves differently in a comprehension's own scope."""
    if has(expr, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await):
        return False
    return "super" not in mentioned(expr) and "__class__" not in mentioned(expr)


def _append_loop(first: ast.stmt, loop: ast.stmt) -> tuple[str, ast.expr, ast.expr | None] | None:
    """For ``r = []`` and ``for x in xs: [if c:] r.append(e)``: (r, e, c)."""
    if not (
        isinstance(first, ast.Assign)
        and len(first.targets) == 1
        and isinstance(first.targets[0], ast.Name)
        and isinstance(first.value, ast.List)
        and not first.value.elts
        and isinstance(loop, ast.For)
        and not loop.orelse
        and len(loop.body) == 1
    ):
        return None
    result = first.targets[0].id
    inner, condition = loop.body[0], None
    if isinstance(inner, ast.If) and not inner.orelse and len(inner.body) == 1:
        condition = inner.test
        inner = inner.body[0]
    if not (
        isinstance(inner, ast.Expr)
        and isinstance(inner.value, ast.Call)
        and isinstance(inner.value.func, ast.Attribute)
        and isinstance(inner.value.func.value, ast.Name)
        and inner.value.func.value.id == result
        and inner.value.func.attr == "append"
        and len(inner.value.args) == 1
        and not inner.value.keywords
        and not isinstance(inner.value.args[0], ast.Starred)
    ):
        return None
    element = inner.value.args[0]
    return result, element, condition


def _loop_to_comprehension_site(
    func: Function, block: list[ast.stmt], at: int, parents: dict[ast.AST, ast.AST]
) -> ast.Assign | None:
    if at == 0 or inside_try(block[at], parents):
        return None
    found = _append_loop(block[at - 1], block[at])
    if found is None:
        return None
    result, element, condition = found
    loop = block[at]
    assert isinstance(loop, ast.For)
    parts: list[ast.AST] = [element, loop.iter, loop.target]
    if condition is not None:
        parts.append(condition)
    if any(result in mentioned(part) or not _comprehension_safe(part) for part in parts):
        return None
    if uses_outside(func, loop, stored(loop.target)):
        return None
    generator = ast.comprehension(loop.target, loop.iter, [condition] if condition else [], 0)
    return ast.Assign([ast.Name(result, ast.Store())], ast.ListComp(element, [generator]))


def apply_loop_to_comprehension(tree: ast.Module, rng: random.Random) -> bool:
    parents = parent_map(tree)
    sites = []
    for _, block in statement_lists(tree):
        for at in range(1, len(block)):
            func = enclosing_function(block[at], parents)
            if func is None or opaque(func):
                continue
            new = _loop_to_comprehension_site(func, block, at, parents)
            if new is not None:
                sites.append((block, at, new))
    site = pick(sites, rng)
    if site is None:
        return False
    block, at, new = site
    block[at - 1 : at + 1] = [new]
    return True


def _comprehension_to_loop_site(
    func: Function, statement: ast.stmt, parents: dict[ast.AST, ast.AST]
) -> bool:
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and isinstance(statement.value, ast.ListComp)
        and len(statement.value.generators) == 1
        and not statement.value.generators[0].is_async
    ):
        return False
    if inside_try(statement, parents):
        return False
    result = statement.targets[0].id
    comp = statement.value
    generator = comp.generators[0]
    if result in mentioned(comp):
        return False
    return not uses_outside(func, comp, stored(generator.target))


def _comprehension_to_loop(statement: ast.Assign) -> list[ast.stmt]:
    assert isinstance(statement.value, ast.ListComp)
    result = statement.targets[0]
    assert isinstance(result, ast.Name)
    comp = statement.value
    generator = comp.generators[0]
    append = ast.Expr(
        ast.Call(
            ast.Attribute(ast.Name(result.id, ast.Load()), "append", ast.Load()), [comp.elt], []
        )
    )
    inner: ast.stmt = append
    if generator.ifs:
        test = generator.ifs[0] if len(generator.ifs) == 1 else ast.BoolOp(ast.And(), generator.ifs)
        inner = ast.If(test, [append], [])
    return [
        ast.Assign([ast.Name(result.id, ast.Store())], ast.List([], ast.Load())),
        ast.For(generator.target, generator.iter, [inner], []),
    ]


def apply_comprehension_to_loop(tree: ast.Module, rng: random.Random) -> bool:
    parents = parent_map(tree)
    sites = []
    for _, block in statement_lists(tree):
        for statement in block:
            func = enclosing_function(statement, parents)
            usable = func is not None and not opaque(func)
            if usable and _comprehension_to_loop_site(func, statement, parents):  # type: ignore[arg-type]
                sites.append(statement)
    chosen = pick(sites, rng)
    if chosen is None:
        return False
    assert isinstance(chosen, ast.Assign)
    replace_statement(tree, chosen, _comprehension_to_loop(chosen))
    return True


# ---------------------------------------------------------------------------------------
# iteration -> index access
# ---------------------------------------------------------------------------------------


def _sequence_names(func: Function) -> set[str]:
    """Names that always hold a list, str or tuple in ``func``: annotated parameters, and locals
    whose every binding is a list/str/tuple display or ``list(...)``, ``sorted(...)``, ...."""
    names = {
        a.arg for a in all_args(func.args) if _annotation_name(a.annotation) in SEQUENCE_ANNOTATIONS
    }
    params = {a.arg for a in all_args(func.args)}
    bindings: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in stored(target):
                    value = node.value if isinstance(target, ast.Name) else None
                    bindings.setdefault(name, []).append(value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.comprehension):
            for name in stored(node.target):
                bindings.setdefault(name, []).append(None)
        elif isinstance(node, ast.NamedExpr | ast.With | ast.Delete):
            for name in stored(node):
                bindings.setdefault(name, []).append(None)
    for name, values in bindings.items():
        if name in params:
            names.discard(name)
        elif all(v is not None and _sequence_value(v) for v in values):
            names.add(name)
    return names


def _annotation_name(annotation: ast.expr | None) -> str | None:
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    return annotation.id if isinstance(annotation, ast.Name) else None


def _sequence_value(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.ListComp | ast.Tuple):
        return True
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id in SEQUENCE_CALLS
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return value.func.attr in SEQUENCE_METHODS and isinstance(value.func.value, ast.Constant)
    return False


def _read_only_uses(func: Function, name: str, allowed: ast.AST | None = None) -> bool:
    """Every use of ``name`` in ``func`` only reads it: indexing, ``len(name)``, ``x in name``,
    a read-only method; so no alias is made and nothing changes the sequence."""
    parents = parent_map(func)
    for node in ast.walk(func):
        if node is allowed or not (isinstance(node, ast.Name) and node.id == name):
            continue
        if not isinstance(node.ctx, ast.Load):
            continue  # bindings are checked by _sequence_names
        parent = parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            if isinstance(parent.ctx, ast.Load):
                continue
            return False
        if isinstance(parent, ast.Call) and node in parent.args:
            if isinstance(parent.func, ast.Name) and parent.func.id in READ_ONLY_CALLS:
                continue
            return False
        if isinstance(parent, ast.Attribute) and parent.attr in READ_ONLY_METHODS:
            continue
        if isinstance(parent, ast.Compare) and node in parent.comparators:
            continue
        if isinstance(parent, ast.For | ast.comprehension) and parent.iter is node:
            continue
        return False
    return True


_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update"}
)


def _mutates_something(body: list[ast.stmt]) -> bool:
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                return True
            if isinstance(node, ast.Attribute) and node.attr in _MUTATORS:
                return True
            if isinstance(node, ast.AugAssign) and not isinstance(node.target, ast.Name):
                return True
    return False


def apply_iter_to_index(tree: ast.Module, rng: random.Random) -> bool:
    if shadows_builtins(tree):
        return False
    parents = parent_map(tree)
    sites = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Name)) or node.orelse:
            continue
        func = enclosing_function(node, parents)
        if func is None or opaque(func):
            continue
        name = node.iter.id
        params = {a.arg for a in all_args(func.args)}
        if name in stored(ast.Module(body=node.body, type_ignores=[])):
            continue  # rebinding the sequence in the loop: for keeps the old one
        if name in params and _mutates_something(node.body):
            continue  # an argument might be the same list as another one
        if name in _sequence_names(func) and _read_only_uses(func, name):
            sites.append(node)
    loop = pick(sites, rng)
    if loop is None:
        return False
    assert isinstance(loop.iter, ast.Name)
    sequence = loop.iter.id
    index = FreshNames(tree).name(("i", "idx", "position", "k"))
    length = ast.Call(ast.Name("len", ast.Load()), [ast.Name(sequence, ast.Load())], [])
    element = ast.Subscript(ast.Name(sequence, ast.Load()), ast.Name(index, ast.Load()), ast.Load())
    loop.body.insert(0, ast.Assign([loop.target], element))
    loop.target = ast.Name(index, ast.Store())
    loop.iter = ast.Call(ast.Name("range", ast.Load()), [length], [])
    return True
