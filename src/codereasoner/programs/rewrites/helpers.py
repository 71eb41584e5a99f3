"""Helper rewrites: a pure expression into a module-level helper, and a one-line helper inlined."""

from __future__ import annotations

import ast
import copy
import random

from codereasoner.programs.rewrites.analysis import (
    BUILTINS,
    HELPER_NAMES,
    FreshNames,
    Function,
    all_args,
    enclosing_function,
    functions_of,
    has,
    opaque,
    parent_map,
    pick,
    stored,
)

# ---------------------------------------------------------------------------------------
# helper extraction and inlining
# ---------------------------------------------------------------------------------------

_PURE = (
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.Name,
    ast.Constant,
    ast.Load,
    ast.Subscript,
    ast.Slice,
    ast.Tuple,
    ast.IfExp,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)


def _pure(expr: ast.AST) -> bool:
    return all(isinstance(n, _PURE) for n in ast.walk(expr)) and not any(
        isinstance(n, ast.Tuple) and not isinstance(n.ctx, ast.Load) for n in ast.walk(expr)
    )


def _free_names(expr: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id not in names:
            names.append(node.id)
    return names


def _extractable(expr: ast.expr, local: set[str], params: set[str]) -> bool:
    """A pure operation on locals. Its names become the helper's arguments, evaluated at the
    call: where the expression short-circuits (and/or, ``a if c else b``, ``a < b < c``), a
    name it would skip might be unbound, so all its names must be parameters."""
    if not isinstance(expr, ast.BinOp | ast.BoolOp | ast.Compare) or not _pure(expr):
        return False
    names = _free_names(expr)
    if not names or not all(name in local for name in names):
        return False
    return not _short_circuits(expr) or set(names) <= params


def _short_circuits(expr: ast.AST) -> bool:
    return any(
        isinstance(n, ast.BoolOp | ast.IfExp) or (isinstance(n, ast.Compare) and len(n.ops) > 1)
        for n in ast.walk(expr)
    )


def apply_extract_helper(tree: ast.Module, rng: random.Random) -> bool:
    parents = parent_map(tree)
    sites: list[tuple[ast.AST, str, int | None, ast.expr, Function]] = []
    for func in functions_of(tree):
        if opaque(func) or enclosing_function(func, parents) is not None:
            continue
        params = {a.arg for a in all_args(func.args)}
        local = (stored(func) | params) - BUILTINS
        if has(func, ast.Delete):
            continue
        for statement in func.body:
            for node in ast.walk(statement):
                for field, value in ast.iter_fields(node):
                    items = value if isinstance(value, list) else [value]
                    for at, item in enumerate(items):
                        if isinstance(item, ast.expr) and _extractable(item, local, params):
                            index = at if isinstance(value, list) else None
                            sites.append((node, field, index, item, func))
    site = pick(sites, rng)
    if site is None:
        return False
    owner, field, index, expr, func = site
    name = FreshNames(tree).name(HELPER_NAMES, rng)
    arguments = _free_names(expr)
    helper = ast.FunctionDef(
        name=name,
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(p) for p in arguments],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[ast.Return(copy.deepcopy(expr))],
        decorator_list=[],
    )
    call = ast.Call(ast.Name(name, ast.Load()), [ast.Name(p, ast.Load()) for p in arguments], [])
    if index is None:
        setattr(owner, field, call)
    else:
        getattr(owner, field)[index] = call
    top = _top_level_statement(tree, func, parents)
    tree.body.insert(tree.body.index(top), helper)
    return True


def _top_level_statement(
    tree: ast.Module, node: ast.AST, parents: dict[ast.AST, ast.AST]
) -> ast.stmt:
    while parents.get(node) is not tree:
        node = parents[node]
    assert isinstance(node, ast.stmt)
    return node


def _one_line_helper(node: ast.stmt) -> tuple[list[str], ast.expr] | None:
    """A module-level ``def h(a, b): return <pure expression of a, b>``."""
    if not isinstance(node, ast.FunctionDef) or node.decorator_list or len(node.body) != 1:
        return None
    args = node.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults:
        return None
    returned = node.body[0]
    if not (isinstance(returned, ast.Return) and returned.value is not None):
        return None
    params = [a.arg for a in args.args]
    if not _pure(returned.value) or not set(_free_names(returned.value)) <= set(params):
        return None
    return params, returned.value


def _inline_call(call: ast.Call, params: list[str], expr: ast.expr) -> ast.expr | None:
    """The body with arguments substituted, when every argument is a name or a constant (no
    side effect, and evaluating it later or more than once changes nothing)."""
    if call.keywords or len(call.args) != len(params):
        return None
    if not all(isinstance(a, ast.Name | ast.Constant) for a in call.args):
        return None
    if _short_circuits(expr) and any(isinstance(a, ast.Name) for a in call.args):
        return None  # a short circuit could skip a name that is unbound at the call
    mapping = dict(zip(params, call.args, strict=True))
    body = copy.deepcopy(expr)

    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return copy.deepcopy(mapping[node.id])

    result = Substitute().visit(body)
    assert isinstance(result, ast.expr)
    return result


def _rebinds(tree: ast.Module, name: str) -> bool:
    """Whether ``name`` is bound anywhere but by its one module-level ``def``."""
    defs = sum(
        1
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name
    )
    stores = name in stored(tree) or name in {
        n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)
    }
    imports = any(
        (a.asname or a.name) == name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    )
    return defs != 1 or stores or imports


def apply_inline_helper(tree: ast.Module, rng: random.Random) -> bool:
    helpers = {
        node.name: found
        for node in tree.body
        if (found := _one_line_helper(node)) is not None and isinstance(node, ast.FunctionDef)
    }
    options = []
    for name, (params, expr) in helpers.items():
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        ]
        references = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name)
        if _rebinds(tree, name):
            continue
        inlined = [_inline_call(c, params, expr) for c in calls]
        if calls and references == len(calls) and all(i is not None for i in inlined):
            options.append((name, calls, inlined))
    chosen = pick(options, rng)
    if chosen is None:
        return False
    name, calls, inlined = chosen
    replacements = {id(c): new for c, new in zip(calls, inlined, strict=True)}

    class Replace(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            new = replacements.get(id(node))
            return new if new is not None else node

    Replace().visit(tree)
    tree.body = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == name)]
    return True
