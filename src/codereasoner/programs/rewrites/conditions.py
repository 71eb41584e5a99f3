"""Condition rewrites: if/else swap, De Morgan, early return and a flag variable."""

from __future__ import annotations

import ast
import random

from codereasoner.programs.rewrites.analysis import (
    FLIPPED,
    SCOPES,
    FreshNames,
    Function,
    enclosing_function,
    functions_of,
    has,
    opaque,
    parent_map,
    pick,
)

# ---------------------------------------------------------------------------------------
# conditions: if/else swap, De Morgan
# ---------------------------------------------------------------------------------------


def negate(test: ast.expr) -> ast.expr:
    """An expression with the opposite truth value (for a condition, where only truth counts)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.BoolOp):
        flipped = ast.Or() if isinstance(test.op, ast.And) else ast.And()
        return ast.BoolOp(flipped, [negate(v) for v in test.values])
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in FLIPPED:
        return ast.Compare(test.left, [FLIPPED[type(test.ops[0])]()], test.comparators)
    return ast.UnaryOp(ast.Not(), test)


def apply_swap_if_else(tree: ast.Module, rng: random.Random) -> bool:
    parents = parent_map(tree)
    sites = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.If) and n.orelse and enclosing_function(n, parents) is not None
    ]
    branch = pick(sites, rng)
    if branch is None:
        return False
    branch.test = negate(branch.test)
    branch.body, branch.orelse = branch.orelse, branch.body
    return True


def _de_morgan(test: ast.expr) -> ast.expr | None:
    """``not (a and b)`` -> ``not a or not b``, and ``a and b`` -> ``not (not a or not b)``
    (the operands negated by :func:`negate`, so ``not (not a or b != c)`` reads
    ``a and b == c``); None for other shapes. Only for conditions, where only truth counts."""
    if (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and isinstance(test.operand, ast.BoolOp)
    ):
        inner = test.operand
        flipped = ast.Or() if isinstance(inner.op, ast.And) else ast.And()
        return ast.BoolOp(flipped, [negate(v) for v in inner.values])
    if isinstance(test, ast.BoolOp):
        flipped = ast.Or() if isinstance(test.op, ast.And) else ast.And()
        return ast.UnaryOp(ast.Not(), ast.BoolOp(flipped, [negate(v) for v in test.values]))
    return None


def apply_de_morgan(tree: ast.Module, rng: random.Random) -> bool:
    """Only in ``if``/``while``/``elif`` and conditional-expression tests, where only the truth
    of the test counts: the whole test or a direct operand of its and/or."""
    sites: list[tuple[ast.AST, str, int | None]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If | ast.While | ast.IfExp):
            continue
        if _de_morgan(node.test) is not None:
            sites.append((node, "test", None))
        if isinstance(node.test, ast.BoolOp):
            for at, value in enumerate(node.test.values):
                if _de_morgan(value) is not None and not isinstance(value, ast.BoolOp):
                    sites.append((node.test, "values", at))
    site = pick(sites, rng)
    if site is None:
        return False
    owner, field, position = site
    if position is None:
        setattr(owner, field, _de_morgan(getattr(owner, field)))
    else:
        values = getattr(owner, field)
        values[position] = _de_morgan(values[position])
    return True


# ---------------------------------------------------------------------------------------
# early return <-> flag variable
# ---------------------------------------------------------------------------------------


def _early_return_site(func: Function, at: int) -> ast.If | None:
    """A top-level loop of ``func`` followed by ``return W`` (W a constant) whose only return is
    one ``if c: return E`` directly in the loop body, and no try/with around it."""
    body = func.body
    if at + 1 >= len(body):
        return None
    loop, after = body[at], body[at + 1]
    if not isinstance(loop, ast.For | ast.While) or loop.orelse:
        return None
    if not (isinstance(after, ast.Return) and isinstance(after.value, ast.Constant)):
        return None
    returns = [n for n in ast.walk(loop) if isinstance(n, ast.Return)]
    guards = [
        s
        for s in loop.body
        if isinstance(s, ast.If)
        and not s.orelse
        and len(s.body) == 1
        and isinstance(s.body[0], ast.Return)
        and s.body[0].value is not None
    ]
    if len(returns) != 1 or len(guards) != 1 or guards[0].body[0] is not returns[0]:
        return None
    if has(loop, ast.Try, ast.TryStar, ast.With, ast.AsyncWith, *SCOPES):
        return None
    return guards[0]


def apply_early_return_to_flag(tree: ast.Module, rng: random.Random) -> bool:
    sites = []
    for func in functions_of(tree):
        if opaque(func):
            continue
        for at in range(len(func.body)):
            guard = _early_return_site(func, at)
            if guard is not None:
                sites.append((func, at, guard))
    site = pick(sites, rng)
    if site is None:
        return False
    func, at, guard = site
    flag = FreshNames(tree).name(("result", "answer", "outcome"))
    after = func.body[at + 1]
    assert isinstance(after, ast.Return) and after.value is not None
    returned = guard.body[0]
    assert isinstance(returned, ast.Return) and returned.value is not None
    guard.body = [ast.Assign([ast.Name(flag, ast.Store())], returned.value), ast.Break()]
    func.body[at + 1] = ast.Return(ast.Name(flag, ast.Load()))
    func.body.insert(at, ast.Assign([ast.Name(flag, ast.Store())], after.value))
    return True
