"""Set-order perturbation: does a case's outcome depend on the order in which sets iterate?

Python leaves the iteration order of ``set`` and ``frozenset`` unspecified. In CPython it
follows the hash table's layout: for strings it changes with ``PYTHONHASHSEED`` (the second
hash-seed run catches that), but an ``int`` hashes to itself, so ``{10, 11, 2, 3}.pop()`` gives
the same answer under every seed while being an accident of the table's size and insertion
history (another interpreter, or the same set built another way, gives another answer). Such a
ground truth cannot be reasoned out from the code.

:func:`perturbed` rewrites a program so that every set it can see iterates in the *reverse* of
CPython's order, which flips the relative order of every pair of elements:

* set and frozenset displays and comprehensions, calls of ``set``/``frozenset``, the set
  operators (``|``, ``&``, ``-``, ``^``) and the set-returning methods (``union``,
  ``intersection``, ``difference``, ``symmetric_difference``, ``copy``) are wrapped so that a
  value of exact type ``set``/``frozenset`` becomes a subclass that iterates in reverse,
  ``pop`` takes the element CPython would take last, and ``repr`` lists the elements in that
  order (same text format, so ``str(s)`` changes only when the order shows);
* the entry function's arguments get the same treatment (sets inside lists, tuples and dict
  values too), and its return value is turned back into plain types.

Everything else is left alone: membership, ``len``, equality, ``sorted``, ``sum``, ``min`` give
the same results, so a case changes outcome under the rewrite exactly when the order leaks
into what it returns, prints or raises. The pipeline runs the rewritten program next to the
plain one in the second hash-seed pool (same seed, same batch), and drops a case whose
observable outcome differs as ``determinism/set_layout_dependent``. Programs that cannot build a
set (no set display, comprehension or ``set``/``frozenset`` name, no set in the input, no dict
view combined by a set operator) are not rewritten: there is nothing to perturb.

The rewrite is for that comparison only; the recorded case is the original program.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any, Final

from codereasoner.execution import Call

_WRAP: Final = "_cr_setorder"
_ARGS: Final = "_cr_setorder_in"
_RESULT: Final = "_cr_setorder_out"
_SET_METHODS: Final = frozenset(
    {"union", "intersection", "difference", "symmetric_difference", "copy"}
)
_SET_OPERATORS: Final = (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)
_VIEW_METHODS: Final = frozenset({"keys", "items"})

# Defined before the program (inside the batch wrapper when grouped); names start with
# ``_cr_setorder`` so they cannot clash with generated code (no private names there).
PRELUDE: Final = """\
_cr_setorder_set_t, _cr_setorder_frozen_t = set, frozenset
_cr_setorder_list, _cr_setorder_iter = list, iter


class _cr_setorder_set(set):
    __slots__ = ()

    def __iter__(self):
        return _cr_setorder_iter(_cr_setorder_list(_cr_setorder_set_t.__iter__(self))[::-1])

    def pop(self):
        if not self:
            return _cr_setorder_set_t.pop(self)
        item = _cr_setorder_list(_cr_setorder_set_t.__iter__(self))[-1]
        _cr_setorder_set_t.remove(self, item)
        return item

    def __repr__(self):
        if not self:
            return "set()"
        return "{" + ", ".join([repr(item) for item in self]) + "}"


class _cr_setorder_frozen(frozenset):
    __slots__ = ()

    def __iter__(self):
        return _cr_setorder_iter(_cr_setorder_list(_cr_setorder_frozen_t.__iter__(self))[::-1])

    def __repr__(self):
        if not self:
            return "frozenset()"
        return "frozenset({" + ", ".join([repr(item) for item in self]) + "})"


_cr_setorder_set.__name__ = _cr_setorder_set.__qualname__ = "set"
_cr_setorder_frozen.__name__ = _cr_setorder_frozen.__qualname__ = "frozenset"


def _cr_setorder(value):
    kind = type(value)
    if kind is _cr_setorder_set_t:
        return _cr_setorder_set(value)
    if kind is _cr_setorder_frozen_t:
        return _cr_setorder_frozen(value)
    return value


def _cr_setorder_in(value, depth=0):
    kind = type(value)
    if depth > 20:
        return value
    if kind is list:
        return [_cr_setorder_in(item, depth + 1) for item in value]
    if kind is tuple:
        return tuple([_cr_setorder_in(item, depth + 1) for item in value])
    if kind is dict:
        return {key: _cr_setorder_in(item, depth + 1) for key, item in value.items()}
    if kind is _cr_setorder_set_t:
        return _cr_setorder_set([_cr_setorder_in(item, depth + 1) for item in value])
    if kind is _cr_setorder_frozen_t:
        return _cr_setorder_frozen([_cr_setorder_in(item, depth + 1) for item in value])
    return value


def _cr_setorder_out(value, depth=0):
    if depth > 100:
        return value
    kind = type(value)
    if kind is list:
        return [_cr_setorder_out(item, depth + 1) for item in value]
    if kind is tuple:
        return tuple([_cr_setorder_out(item, depth + 1) for item in value])
    if kind is dict:
        return {_cr_setorder_out(key, depth + 1): _cr_setorder_out(item, depth + 1)
                for key, item in value.items()}
    if isinstance(value, _cr_setorder_set_t):
        return _cr_setorder_set_t([_cr_setorder_out(item, depth + 1) for item in value])
    if isinstance(value, _cr_setorder_frozen_t):
        return _cr_setorder_frozen_t([_cr_setorder_out(item, depth + 1) for item in value])
    return value

"""


def _has_set_value(value: Any, depth: int = 0) -> bool:
    if isinstance(value, set | frozenset):
        return True
    if depth > 20:
        return False
    if isinstance(value, list | tuple):
        return any(_has_set_value(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return any(_has_set_value(item, depth + 1) for item in value.values())
    return False


def can_build_sets(tree: ast.AST) -> bool:
    """True when the program can make a set without being given one: a set display or
    comprehension, the name ``set`` or ``frozenset``, or a dict view and a set operator."""
    views = operators = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Set | ast.SetComp):
            return True
        if isinstance(node, ast.Name) and node.id in ("set", "frozenset"):
            return True
        if isinstance(node, ast.Attribute) and node.attr in _VIEW_METHODS:
            views = True
        elif isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, _SET_OPERATORS):
            operators = True
    return views and operators


def involves_sets(tree: ast.AST, calls: Iterable[Call]) -> bool:
    """True when a set can reach the program: it builds one, or one of the calls passes one."""
    if can_build_sets(tree):
        return True
    return any(
        _has_set_value(value) for call in calls for value in (*call.args, *call.kwargs.values())
    )


class _Rewrite(ast.NodeTransformer):
    def _wrap(self, node: ast.expr) -> ast.expr:
        wrapped = ast.Call(ast.Name(_WRAP, ast.Load()), [node], [])
        return ast.copy_location(wrapped, node)

    def visit_Set(self, node: ast.Set) -> ast.expr:
        self.generic_visit(node)
        return self._wrap(node)

    def visit_SetComp(self, node: ast.SetComp) -> ast.expr:
        self.generic_visit(node)
        return self._wrap(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        return self._wrap(node) if isinstance(node.op, _SET_OPERATORS) else node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt | list[ast.stmt]:
        # ``s -= t`` on a frozenset (no in-place form) makes a plain one: wrap the name again
        self.generic_visit(node)
        if isinstance(node.op, _SET_OPERATORS) and isinstance(node.target, ast.Name):
            name = node.target.id
            again = ast.Assign(
                [ast.Name(name, ast.Store())], self._wrap(ast.Name(name, ast.Load()))
            )
            return [node, ast.copy_location(again, node)]
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("set", "frozenset"):
            return self._wrap(node)
        if isinstance(func, ast.Attribute) and func.attr in _SET_METHODS:
            return self._wrap(node)
        return node


class _Returns(ast.NodeTransformer):
    """``return X`` -> ``return _cr_setorder_out(X)`` in one function, not in nested scopes."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        return node  # a nested function's returns are its own

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AsyncFunctionDef:
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        return node

    def visit_Return(self, node: ast.Return) -> ast.Return:
        value = node.value if node.value is not None else ast.Constant(None)
        node.value = ast.Call(ast.Name(_RESULT, ast.Load()), [value], [])
        return node


def _parameters(node: ast.FunctionDef) -> list[str]:
    arguments = node.args
    names = [arg.arg for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    names += [arg.arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
    return names


def perturbed(code: str, entry: str, calls: Iterable[Call] = ()) -> str | None:
    """The program rewritten so that its sets iterate in reverse (see the module docstring),
    or ``None`` when no set can reach it (or it does not parse), so there is nothing to run."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not involves_sets(tree, calls):
        return None
    tree = _Rewrite().visit(tree)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            for statement in node.body:
                _Returns().visit(statement)
            prologue = [
                ast.Assign(
                    [ast.Name(name, ast.Store())],
                    ast.Call(ast.Name(_ARGS, ast.Load()), [ast.Name(name, ast.Load())], []),
                )
                for name in _parameters(node)
            ]
            node.body = [*prologue, *node.body]
    ast.fix_missing_locations(tree)
    try:
        return PRELUDE + ast.unparse(tree) + "\n"
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree
        return None
