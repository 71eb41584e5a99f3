"""What the rewrites share: constants and the analyses that decide where a rewrite is safe."""

from __future__ import annotations

import ast
import builtins
import keyword
import random
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

Function = ast.FunctionDef | ast.AsyncFunctionDef
_T = TypeVar("_T")
Apply = Callable[[ast.Module, random.Random], bool]

BUILTINS = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)
ARITHMETIC = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.BitAnd,
    ast.BitOr,
    ast.BitXor,
    ast.LShift,
    ast.RShift,
)
FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
NAMES = (
    "value",
    "item",
    "total",
    "index",
    "current",
    "temp",
    "acc",
    "elem",
    "entry",
    "part",
    "piece",
    "token",
    "count",
    "result",
    "data",
    "number",
    "key",
    "word",
    "size",
    "pos",
)
_FRAME = frozenset({"locals", "vars", "eval", "exec", "globals", "dir"})
HELPER_NAMES = ("compute", "combine", "evaluate", "calc", "derive", "helper")
SEQUENCE_ANNOTATIONS = frozenset({"list", "str", "tuple", "List", "Tuple"})
SEQUENCE_CALLS = frozenset({"list", "sorted", "tuple", "str"})
SEQUENCE_METHODS = frozenset({"split", "splitlines", "rsplit"})
READ_ONLY_CALLS = frozenset(
    {"len", "sum", "min", "max", "sorted", "list", "tuple", "set", "str", "any", "all", "print"}
)
READ_ONLY_METHODS = frozenset(
    {"count", "index", "find", "rfind", "startswith", "endswith", "copy", "isdigit", "isalpha"}
)


# ---------------------------------------------------------------------------------------
# shared analysis
# ---------------------------------------------------------------------------------------


def functions_of(tree: ast.Module) -> list[Function]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def identifiers(tree: ast.AST) -> set[str]:
    """Every identifier the module spells (names, arguments, attributes, definitions)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
        elif isinstance(node, ast.keyword) and node.arg:
            found.add(node.arg)
    return found


class FreshNames:
    """Fresh readable names that clash with nothing in the module nor the builtins."""

    def __init__(self, tree: ast.AST) -> None:
        self.taken = identifiers(tree) | BUILTINS

    def name(self, preferred: Sequence[str], rng: random.Random | None = None) -> str:
        choices = [name for name in preferred if name not in self.taken]
        if choices:
            chosen = rng.choice(choices) if rng else choices[0]
        else:
            base, number = preferred[0], 1
            while f"{base}_{number}" in self.taken:
                number += 1
            chosen = f"{base}_{number}"
        self.taken.add(chosen)
        return chosen


def module_level_names(tree: ast.Module) -> set[str]:
    """Names bound at module level (functions, classes, imports, globals)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return names


def stored(node: ast.AST) -> set[str]:
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def mentioned(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def has(node: ast.AST, *kinds: type[ast.AST]) -> bool:
    return any(isinstance(n, kinds) for n in ast.walk(node))


def opaque(func: Function) -> bool:
    """Constructs whose meaning depends on names as text or on the frame: leave them alone."""
    for node in ast.walk(func):
        if isinstance(node, ast.Global | ast.Nonlocal | ast.Match | ast.Yield | ast.YieldFrom):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FRAME
        ):
            return True
        if isinstance(node, ast.JoinedStr) and any(
            isinstance(part, ast.Constant) and str(part.value).endswith("=") for part in node.values
        ):
            return True  # f"{x=}" prints the name
    return False


def parent_map(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def statement_lists(tree: ast.AST) -> Iterator[tuple[ast.AST, list[ast.stmt]]]:
    """Every statement list (bodies, else branches, handlers) with its owner."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield node, block


def enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Function | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


def inside_try(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try | ast.TryStar | ast.With | ast.AsyncWith):
            return True
        if isinstance(node, SCOPES):
            return False
    return False


def loop_exits(loop: ast.For | ast.While | ast.AsyncFor) -> bool:
    """A ``break`` or ``continue`` that belongs to ``loop`` (not to a loop inside it)."""

    def search(nodes: list[ast.stmt]) -> bool:
        for node in nodes:
            if isinstance(node, ast.Break | ast.Continue):
                return True
            if isinstance(node, _LOOPS):
                continue
            if isinstance(node, SCOPES):
                continue
            children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
            handlers = getattr(node, "handlers", [])
            children += [s for h in handlers for s in h.body]
            cases = getattr(node, "cases", [])
            children += [s for c in cases for s in c.body]
            if search(children):
                return True
        return False

    return search(loop.body)


def uses_outside(func: Function, inside: ast.AST, names: set[str]) -> bool:
    """Whether any of ``names`` appears in ``func`` outside the subtree ``inside``."""
    within = {id(n) for n in ast.walk(inside)}
    for node in ast.walk(func):
        if id(node) in within:
            continue
        if isinstance(node, ast.Name) and node.id in names:
            return True
        if isinstance(node, ast.arg) and node.arg in names:
            return True
    return False


def int_only_names(func: Function) -> set[str]:
    """Local names that only ever hold ints: parameters annotated ``int`` and other locals whose
    every binding is an int expression (an assignment, an int augmented assignment, or a ``for``
    over ``range``)."""
    params = {a.arg for a in all_args(func.args)}
    names = {
        a.arg
        for a in all_args(func.args)
        if isinstance(a.annotation, ast.Name) and a.annotation.id == "int"
    }
    bindings: dict[str, list[ast.AST]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            for target in node.targets:
                assert isinstance(target, ast.Name)
                bindings.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            ok = isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Mod)
            bindings.setdefault(node.target.id, []).append(node.value if ok else node)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and is_range(node):
            bindings.setdefault(node.target.id, []).append(ast.Constant(0))
    stores: dict[str, int] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            stores[node.id] = stores.get(node.id, 0) + 1
    for _ in range(len(bindings) + 1):
        for name, values in bindings.items():
            if name in params or name in names or stores.get(name, 0) != len(values):
                continue
            if all(is_int(v, names) for v in values):
                names.add(name)
    return names


def all_args(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return found


def is_int(node: ast.AST, int_names: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id in int_names
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "len" and len(node.args) == 1 and not node.keywords
    if isinstance(node, ast.BinOp):
        ok = isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Mod)
        return ok and is_int(node.left, int_names) and is_int(node.right, int_names)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return is_int(node.operand, int_names)
    return False


def is_range(node: ast.For) -> bool:
    call = node.iter
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "range"
        and 1 <= len(call.args) <= 3
        and not call.keywords
        and not any(isinstance(a, ast.Starred) for a in call.args)
    )


_GUARDED = frozenset({"len", "range", "super"}) | SEQUENCE_CALLS | READ_ONLY_CALLS


def shadows_builtins(tree: ast.AST) -> bool:
    """Whether the module binds a builtin the rewrites call or reason about (``len``, ``list``,
    ...): their meaning is then unknown, so those rewrites do not apply."""
    bound = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    bound |= {
        (a.asname or a.name)
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    return bool(bound & _GUARDED)


def captured_late(body: list[ast.stmt], name: str) -> bool:
    """A lambda, nested function or generator expression in ``body`` that reads ``name``: it may
    run after the loop and see the loop variable's final value, which a rewrite could change."""
    return any(
        isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef | ast.GeneratorExp)
        and name in mentioned(node)
        for statement in body
        for node in ast.walk(statement)
    )


def pick(sites: list[_T], rng: random.Random) -> _T | None:
    return rng.choice(sites) if sites else None
