"""Surface rewrites: accumulator style, annotations, mirrored comparisons, split conjunctions,
character collections.
"""

from __future__ import annotations

import ast
import random

from codereasoner.programs.rewrites.analysis import (
    ARITHMETIC,
    SCOPES,
    Function,
    all_args,
    enclosing_function,
    functions_of,
    identifiers,
    opaque,
    parent_map,
    pick,
    shadows_builtins,
    statement_lists,
    stored,
)
from codereasoner.programs.rewrites.loops import replace_statement

# ---------------------------------------------------------------------------------------
# accumulator style
# ---------------------------------------------------------------------------------------


def _immutable_accumulators(func: Function) -> set[str]:
    """Local names first bound to a number or string literal and only ever rebound to literals,
    arithmetic on themselves, or augmented assignments (so ``+=`` never mutates in place)."""
    params = {a.arg for a in all_args(func.args)}
    good: dict[str, bool] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in stored(target):
                    ok = isinstance(target, ast.Name) and _literal_or_self_arithmetic(
                        node.value, name
                    )
                    good[name] = good.get(name, True) and ok
        elif isinstance(node, ast.AugAssign):
            for name in stored(node.target):
                good.setdefault(name, True)
                good[name] = good[name] and isinstance(node.target, ast.Name)
        elif isinstance(node, ast.For | ast.comprehension | ast.NamedExpr | ast.With):
            for name in stored(node):
                good[name] = False
    seeded = {
        n.targets[0].id
        for n in ast.walk(func)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and _number_or_string(n.value)
    }
    return {name for name, ok in good.items() if ok and name in seeded and name not in params}


def _number_or_string(value: ast.expr) -> bool:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        value = value.operand
    return isinstance(value, ast.Constant) and type(value.value) in (int, float, str)


def _literal_or_self_arithmetic(value: ast.expr, name: str) -> bool:
    if _number_or_string(value):
        return True
    return (
        isinstance(value, ast.BinOp)
        and isinstance(value.left, ast.Name)
        and value.left.id == name
        and isinstance(value.op, ARITHMETIC)
    )


def _accumulator_sites(tree: ast.Module, expand: bool) -> list[tuple[Function, ast.stmt]]:
    sites: list[tuple[Function, ast.stmt]] = []
    for func in functions_of(tree):
        if opaque(func) or any(isinstance(n, SCOPES) for n in ast.walk(func) if n is not func):
            continue
        names = _immutable_accumulators(func)
        for node in ast.walk(func):
            if (expand and isinstance(node, ast.AugAssign) and _target(node) in names) or (
                not expand and isinstance(node, ast.Assign) and _accumulating(node, names)
            ):
                sites.append((func, node))
    return sites


def _accumulating(node: ast.Assign, names: set[str]) -> bool:
    return _self_arithmetic(node) and _target(node) in names


def _target(node: ast.Assign | ast.AugAssign) -> str | None:
    target = node.target if isinstance(node, ast.AugAssign) else node.targets[0]
    return target.id if isinstance(target, ast.Name) else None


def _self_arithmetic(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and _literal_or_self_arithmetic(node.value, node.targets[0].id)
        and isinstance(node.value, ast.BinOp)
    )


def apply_augassign_expand(tree: ast.Module, rng: random.Random) -> bool:
    sites = _accumulator_sites(tree, expand=True)
    if not sites:
        return False
    for _, node in sites:
        assert isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
        name = node.target.id
        value = ast.BinOp(ast.Name(name, ast.Load()), node.op, node.value)
        replace_statement(tree, node, [ast.Assign([ast.Name(name, ast.Store())], value)])
    return True


def apply_augassign_contract(tree: ast.Module, rng: random.Random) -> bool:
    sites = _accumulator_sites(tree, expand=False)
    if not sites:
        return False
    for _, node in sites:
        assert isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp)
        target = node.targets[0]
        assert isinstance(target, ast.Name)
        new = ast.AugAssign(ast.Name(target.id, ast.Store()), node.value.op, node.value.right)
        replace_statement(tree, node, [new])
    return True


# ---------------------------------------------------------------------------------------
# annotations
# ---------------------------------------------------------------------------------------

_INTROSPECTION = frozenset({"__annotations__", "get_type_hints", "signature", "inspect"})


def apply_drop_annotations(tree: ast.Module, rng: random.Random) -> bool:
    """Parameter and return annotations go, and ``x: T = v`` in a function becomes ``x = v``.

    Annotations do nothing at run time unless read back (left alone then); class-level ones are
    kept (dataclasses and named tuples read them), and so is a bare ``x: T`` (it makes ``x``
    local)."""
    if identifiers(tree) & _INTROSPECTION:
        return False
    changed = False
    for func in functions_of(tree):
        for arg in all_args(func.args):
            changed |= arg.annotation is not None
            arg.annotation = None
        changed |= func.returns is not None
        func.returns = None
        for body_owner, body in statement_lists(func):
            if isinstance(body_owner, ast.ClassDef):
                continue
            for position, statement in enumerate(body):
                if isinstance(statement, ast.AnnAssign) and statement.value is not None:
                    body[position] = ast.Assign([statement.target], statement.value)
                    changed = True
    return changed


# ---------------------------------------------------------------------------------------
# surface rewrites: comparisons, conjunctions, character collections
# ---------------------------------------------------------------------------------------

_MIRRORED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Gt: ast.Lt,
    ast.GtE: ast.LtE,
    ast.Lt: ast.Gt,
    ast.LtE: ast.GtE,
}


def _inert(node: ast.expr) -> bool:
    """Evaluating ``node`` has no side effect and raises nothing (names, literals, negation)."""
    if isinstance(node, ast.Name | ast.Constant):
        return True
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _inert(node.operand)


def _readable(node: ast.expr) -> bool:
    """A name, literal, ``a.b``, ``a[k]`` or ``len(a)`` over pure parts (no side effects)."""
    if _inert(node):
        return True
    if isinstance(node, ast.Attribute):
        return _inert(node.value)
    if isinstance(node, ast.Subscript):
        return _inert(node.value) and _inert(node.slice)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
        and not node.keywords
        and _inert(node.args[0])
    )


def _mirrorable(node: ast.AST) -> bool:
    """``a < b`` whose operands may swap evaluation order: at most one of them can raise."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return False
    left, right = node.left, node.comparators[0]
    return (
        type(node.ops[0]) in _MIRRORED
        and _readable(left)
        and _readable(right)
        and (_inert(left) or _inert(right))
    )


def apply_mirror_comparisons(tree: ast.Module, rng: random.Random) -> bool:
    """``a > b`` becomes ``b < a`` (and ``>=`` ``<=``), or the other way, at every such site."""
    if shadows_builtins(tree):
        return False
    sites = [n for n in ast.walk(tree) if isinstance(n, ast.Compare) and _mirrorable(n)]
    directions = sorted({_MIRRORED[type(n.ops[0])] in (ast.Lt, ast.LtE) for n in sites})
    if not directions:
        return False
    to_less = rng.choice(directions)
    for node in sites:
        target = _MIRRORED[type(node.ops[0])]
        if (target in (ast.Lt, ast.LtE)) == to_less:
            node.left, node.comparators = node.comparators[0], [node.left]
            node.ops = [target()]
    return True


def apply_split_conjunction(tree: ast.Module, rng: random.Random) -> bool:
    """``if a and b: body`` with no ``else`` becomes ``if a: if b: body`` (the same
    short-circuit order)."""
    parents = parent_map(tree)
    sites = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.If)
        and not n.orelse
        and isinstance(n.test, ast.BoolOp)
        and isinstance(n.test.op, ast.And)
        and enclosing_function(n, parents) is not None
    ]
    branch = pick(sites, rng)
    if branch is None:
        return False
    assert isinstance(branch.test, ast.BoolOp)
    first, *rest = branch.test.values
    inner_test = rest[0] if len(rest) == 1 else ast.BoolOp(ast.And(), rest)
    branch.test = first
    branch.body = [ast.If(inner_test, branch.body, [])]
    return True


_COLLECTIONS: dict[type[ast.expr], str] = {ast.Set: "set", ast.List: "list", ast.Tuple: "tuple"}


def _characters(node: ast.AST) -> str | None:
    """The characters of a display of two or more one-character strings, in order."""
    if type(node) not in _COLLECTIONS:
        return None
    elements = getattr(node, "elts", [])
    if len(elements) < 2 or not all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) and len(e.value) == 1
        for e in elements
    ):
        return None
    return "".join(e.value for e in elements)


def apply_characters_literal(tree: ast.Module, rng: random.Random) -> bool:
    """``{'a', 'e', 'i'}`` becomes ``set('aei')`` (lists and tuples alike)."""
    if shadows_builtins(tree):  # set, list and tuple among the guarded builtins
        return False
    parents = parent_map(tree)
    sites = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Set | ast.List | ast.Tuple)
        and _characters(n) is not None
        and n in parents
    ]
    if not sites:
        return False
    for node in sites:
        text = _characters(node)
        assert text is not None
        call = ast.Call(ast.Name(_COLLECTIONS[type(node)], ast.Load()), [ast.Constant(text)], [])
        _replace_child(parents[node], node, call)
    return True


def _replace_child(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for name, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, name, new)
            return
        if isinstance(value, list):
            for at, item in enumerate(value):
                if item is old:
                    value[at] = new
                    return
    raise LookupError("child not found")
