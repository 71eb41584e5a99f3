"""Semantics-preserving AST rewrites: equivalent implementations of a program.

Each rewrite takes a module's source and a ``random.Random`` and returns new source, or ``None``
where it does not apply. A rewrite applies only at sites whose shape it can prove safe (the checks
are conservative; an unsure site is left alone), picks among the safe sites with the generator,
and writes the result with :func:`ast.unparse` (comments and the original layout are lost).
Rewrites compose: the output of one is valid input to any other (:func:`compose`).

The one deliberate exception to exact equivalence: ``rename`` renames parameters too, so a call
that passes an argument by its old keyword name would fail; benchmark calls pass arguments by
position. Error *messages* that quote a renamed name change too (the exception type does not).

Kinds (:data:`REWRITES`; a new kind is one entry):

- ``rename``: locals and parameters get fresh readable names (never globals, builtins,
  attributes, ``self``/``cls``);
- ``for_to_while`` / ``while_to_for``: ``for i in range(a, b)`` and its counting ``while`` loop;
- ``loop_to_comprehension`` / ``comprehension_to_loop``: ``r = []; for x in xs: [if c:]
  r.append(e)`` and ``r = [e for x in xs if c]``;
- ``swap_if_else``: ``if c: A else: B`` becomes ``if not c: B else: A``, the negation pushed
  inwards (De Morgan; ``==``/``in``/``is`` flipped);
- ``de_morgan``: ``not (a and b)`` and ``not a or not b`` in a condition, either way;
  ``a and b`` becomes ``not (not a or not b)``;
- ``early_return_to_flag``: ``for ...: if c: return E`` then ``return W`` becomes a result
  variable and ``break``;
- ``extract_helper`` / ``inline_helper``: a pure expression into a module-level helper, and a
  one-line helper back into its calls;
- ``iter_to_index``: ``for x in seq`` over a known list/str/tuple becomes
  ``for i in range(len(seq)): x = seq[i]``;
- ``augassign_expand`` / ``augassign_contract``: ``s += x`` and ``s = s + x`` for a number or
  string accumulator.
"""

from __future__ import annotations

import ast
import builtins
import copy
import keyword
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

Function = ast.FunctionDef | ast.AsyncFunctionDef
_T = TypeVar("_T")
Apply = Callable[[ast.Module, random.Random], bool]

_BUILTINS = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)
_ARITHMETIC = (
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
_FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_NAMES = (
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
_HELPER_NAMES = ("compute", "combine", "evaluate", "calc", "derive", "helper")
_SEQUENCE_ANNOTATIONS = frozenset({"list", "str", "tuple", "List", "Tuple"})
_SEQUENCE_CALLS = frozenset({"list", "sorted", "tuple", "str"})
_SEQUENCE_METHODS = frozenset({"split", "splitlines", "rsplit"})
_READ_ONLY_CALLS = frozenset(
    {"len", "sum", "min", "max", "sorted", "list", "tuple", "set", "str", "any", "all", "print"}
)
_READ_ONLY_METHODS = frozenset(
    {"count", "index", "find", "rfind", "startswith", "endswith", "copy", "isdigit", "isalpha"}
)


@dataclass(frozen=True)
class Rewrite:
    """One kind of rewrite: ``apply`` changes a parsed module in place, True when it did."""

    name: str
    description: str
    apply: Apply

    def __call__(self, source: str, rng: random.Random) -> str | None:
        """The rewritten source, or None when the rewrite does not apply to ``source``."""
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return None
        if not self.apply(tree, rng):
            return None
        ast.fix_missing_locations(tree)
        text = ast.unparse(tree)
        ast.parse(text)  # an invalid output is a bug in a rewrite: let it surface
        return text if _normal(text) != _normal(source) else None


def _normal(source: str) -> str:
    try:
        return ast.unparse(ast.parse(source))
    except (SyntaxError, ValueError):
        return source


def compose(source: str, kinds: Sequence[str], rng: random.Random) -> tuple[str, list[str]]:
    """``source`` after each rewrite of ``kinds`` in turn, and the kinds that applied."""
    applied: list[str] = []
    for kind in kinds:
        changed = REWRITES[kind](source, rng)
        if changed is not None:
            source, applied = changed, [*applied, kind]
    return source, applied


# ---------------------------------------------------------------------------------------
# shared analysis
# ---------------------------------------------------------------------------------------


def _functions(tree: ast.Module) -> list[Function]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _identifiers(tree: ast.AST) -> set[str]:
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


class _Fresh:
    """Fresh readable names that clash with nothing in the module nor the builtins."""

    def __init__(self, tree: ast.AST) -> None:
        self.taken = _identifiers(tree) | _BUILTINS

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


def _module_names(tree: ast.Module) -> set[str]:
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


def _stored(node: ast.AST) -> set[str]:
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _mentioned(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _has(node: ast.AST, *kinds: type[ast.AST]) -> bool:
    return any(isinstance(n, kinds) for n in ast.walk(node))


def _opaque(func: Function) -> bool:
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


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _bodies(tree: ast.AST) -> Iterator[tuple[ast.AST, list[ast.stmt]]]:
    """Every statement list (bodies, else branches, handlers) with its owner."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield node, block


def _enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Function | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


def _inside_try(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try | ast.TryStar | ast.With | ast.AsyncWith):
            return True
        if isinstance(node, _SCOPES):
            return False
    return False


def _loop_exits(loop: ast.For | ast.While | ast.AsyncFor) -> bool:
    """A ``break`` or ``continue`` that belongs to ``loop`` (not to a loop inside it)."""

    def search(nodes: list[ast.stmt]) -> bool:
        for node in nodes:
            if isinstance(node, ast.Break | ast.Continue):
                return True
            if isinstance(node, _LOOPS):
                continue
            if isinstance(node, _SCOPES):
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


def _uses_outside(func: Function, inside: ast.AST, names: set[str]) -> bool:
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


def _int_names(func: Function) -> set[str]:
    """Local names that only ever hold ints: parameters annotated ``int`` and other locals whose
    every binding is an int expression (an assignment, an int augmented assignment, or a ``for``
    over ``range``)."""
    params = {a.arg for a in _all_args(func.args)}
    names = {
        a.arg
        for a in _all_args(func.args)
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
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and _is_range(node):
            bindings.setdefault(node.target.id, []).append(ast.Constant(0))
    stores: dict[str, int] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            stores[node.id] = stores.get(node.id, 0) + 1
    for _ in range(len(bindings) + 1):
        for name, values in bindings.items():
            if name in params or name in names or stores.get(name, 0) != len(values):
                continue
            if all(_is_int(v, names) for v in values):
                names.add(name)
    return names


def _all_args(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return found


def _is_int(node: ast.AST, int_names: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id in int_names
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "len" and len(node.args) == 1 and not node.keywords
    if isinstance(node, ast.BinOp):
        ok = isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Mod)
        return ok and _is_int(node.left, int_names) and _is_int(node.right, int_names)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_int(node.operand, int_names)
    return False


def _is_range(node: ast.For) -> bool:
    call = node.iter
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "range"
        and 1 <= len(call.args) <= 3
        and not call.keywords
        and not any(isinstance(a, ast.Starred) for a in call.args)
    )


_GUARDED = frozenset({"len", "range", "super"}) | _SEQUENCE_CALLS | _READ_ONLY_CALLS


def _shadows_builtins(tree: ast.AST) -> bool:
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


def _captured_late(body: list[ast.stmt], name: str) -> bool:
    """A lambda, nested function or generator expression in ``body`` that reads ``name``: it may
    run after the loop and see the loop variable's final value, which a rewrite could change."""
    return any(
        isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef | ast.GeneratorExp)
        and name in _mentioned(node)
        for statement in body
        for node in ast.walk(statement)
    )


def _pick(sites: list[_T], rng: random.Random) -> _T | None:
    return rng.choice(sites) if sites else None


# ---------------------------------------------------------------------------------------
# rename
# ---------------------------------------------------------------------------------------


def _renamable(func: Function, module_names: set[str]) -> list[str]:
    """The function's locals, parameters, nested functions and their parameters: renamed
    uniformly through the nested scopes (none of them names a global), the result is the
    same program. A name some call passes as a keyword is kept."""
    params = [a.arg for a in _all_args(func.args)]
    nested = [n for n in ast.walk(func) if isinstance(n, _DEFINITIONS) and n is not func]
    inner_params = {a.arg for n in nested for a in _all_args(n.args)}
    nested_defs = {n.name for n in nested if not isinstance(n, ast.Lambda)}
    local = sorted(
        _stored(func) | set(params) | inner_params | nested_defs,
        key=lambda n: (n not in params, n),
    )
    handlers = {n.name for n in ast.walk(func) if isinstance(n, ast.ExceptHandler) and n.name}
    keywords = {k.arg for n in ast.walk(func) if isinstance(n, ast.Call) for k in n.keywords}
    skip = module_names | _BUILTINS | handlers | {"self", "cls", "_"}
    return [name for name in local if name not in skip and name not in keywords]


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _apply_rename(tree: ast.Module, rng: random.Random) -> bool:
    fresh = _Fresh(tree)
    module_names = _module_names(tree)
    changed = False
    top = [f for f in _functions(tree) if not _has_enclosing_function(tree, f)]
    for func in top:
        if _opaque(func) or _has(func, ast.ClassDef):
            continue
        names = _renamable(func, module_names)
        if not names:
            continue
        # most names, often all: CoRE's Jaccard filter needs the surface to change
        chosen = rng.sample(names, k=rng.randint((len(names) + 1) // 2, len(names)))
        mapping = {old: fresh.name(_NAMES, rng) for old in chosen}
        _rename_in(func, mapping)
        changed = True
    return changed


def _has_enclosing_function(tree: ast.Module, func: Function) -> bool:
    return _enclosing_function(func, _parents(tree)) is not None


def _rename_in(func: Function, mapping: dict[str, str]) -> None:
    for arg in _all_args(func.args):
        arg.arg = mapping.get(arg.arg, arg.arg)
    for statement in func.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id in mapping:
                node.id = mapping[node.id]
            elif isinstance(node, ast.arg) and node.arg in mapping:
                node.arg = mapping[node.arg]
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in mapping:
                node.name = mapping[node.name]


# ---------------------------------------------------------------------------------------
# for <-> while
# ---------------------------------------------------------------------------------------


def _for_to_while_site(func: Function, loop: ast.For) -> bool:
    if not (_is_range(loop) and isinstance(loop.target, ast.Name)) or loop.orelse:
        return False
    assert isinstance(loop.iter, ast.Call)
    args = loop.iter.args
    if len(args) == 3 and not _nonzero_int(args[2]):
        return False
    ints = _int_names(func)
    if not all(_is_int(a, ints) for a in args[:2]):
        return False
    name = loop.target.id
    if name in _stored(ast.Module(body=loop.body, type_ignores=[])) or _loop_exits(loop):
        return False
    return not _captured_late(loop.body, name) and not _uses_outside(func, loop, {name})


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


def _for_to_while(loop: ast.For, fresh: _Fresh) -> list[ast.stmt]:
    assert isinstance(loop.iter, ast.Call) and isinstance(loop.target, ast.Name)
    args = loop.iter.args
    start, stop = (ast.Constant(0), args[0]) if len(args) == 1 else (args[0], args[1])
    step = _step(args[2]) if len(args) == 3 else 1
    name = loop.target.id
    before: list[ast.stmt] = []
    body_stores = _stored(ast.Module(body=loop.body, type_ignores=[]))
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


def _replace_statement(
    tree: ast.Module, old: ast.stmt, new: list[ast.stmt], drop_before: int = 0
) -> None:
    for _, block in _bodies(tree):
        for at, statement in enumerate(block):
            if statement is old:
                block[at - drop_before : at + 1] = new
                return
    raise LookupError("statement not found")


def _apply_for_to_while(tree: ast.Module, rng: random.Random) -> bool:
    if _shadows_builtins(tree):
        return False
    parents = _parents(tree)
    sites = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.For)
        and (func := _enclosing_function(n, parents)) is not None
        and not _opaque(func)
        and _for_to_while_site(func, n)
    ]
    loop = _pick(sites, rng)
    if loop is None:
        return False
    _replace_statement(tree, loop, _for_to_while(loop, _Fresh(tree)))
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
    inner_stores = _stored(ast.Module(body=inner, type_ignores=[]))
    ints = _int_names(func)
    if not inner or name in inner_stores or _loop_exits(loop) or _captured_late(inner, name):
        return False
    stop_fixed = isinstance(stop, ast.Constant) or (
        isinstance(stop, ast.Name) and stop.id not in inner_stores
    )
    if not (stop_fixed and _is_int(stop, ints) and _is_int(init.value, ints)):
        return False
    region = ast.Module(body=[init, loop], type_ignores=[])
    return not _uses_outside(func, region, {name})


def _apply_while_to_for(tree: ast.Module, rng: random.Random) -> bool:
    if _shadows_builtins(tree):
        return False
    parents = _parents(tree)
    sites = []
    for _, block in _bodies(tree):
        for at in range(1, len(block)):
            func = _enclosing_function(block[at], parents)
            if func is not None and not _opaque(func) and _while_to_for_site(func, block, at):
                sites.append((block, at))
    site = _pick(sites, rng)
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
    if _has(expr, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await):
        return False
    return "super" not in _mentioned(expr) and "__class__" not in _mentioned(expr)


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
    if at == 0 or _inside_try(block[at], parents):
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
    if any(result in _mentioned(part) or not _comprehension_safe(part) for part in parts):
        return None
    if _uses_outside(func, loop, _stored(loop.target)):
        return None
    generator = ast.comprehension(loop.target, loop.iter, [condition] if condition else [], 0)
    return ast.Assign([ast.Name(result, ast.Store())], ast.ListComp(element, [generator]))


def _apply_loop_to_comprehension(tree: ast.Module, rng: random.Random) -> bool:
    parents = _parents(tree)
    sites = []
    for _, block in _bodies(tree):
        for at in range(1, len(block)):
            func = _enclosing_function(block[at], parents)
            if func is None or _opaque(func):
                continue
            new = _loop_to_comprehension_site(func, block, at, parents)
            if new is not None:
                sites.append((block, at, new))
    site = _pick(sites, rng)
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
    if _inside_try(statement, parents):
        return False
    result = statement.targets[0].id
    comp = statement.value
    generator = comp.generators[0]
    if result in _mentioned(comp):
        return False
    return not _uses_outside(func, comp, _stored(generator.target))


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


def _apply_comprehension_to_loop(tree: ast.Module, rng: random.Random) -> bool:
    parents = _parents(tree)
    sites = []
    for _, block in _bodies(tree):
        for statement in block:
            func = _enclosing_function(statement, parents)
            usable = func is not None and not _opaque(func)
            if usable and _comprehension_to_loop_site(func, statement, parents):  # type: ignore[arg-type]
                sites.append(statement)
    chosen = _pick(sites, rng)
    if chosen is None:
        return False
    assert isinstance(chosen, ast.Assign)
    _replace_statement(tree, chosen, _comprehension_to_loop(chosen))
    return True


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
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _FLIPPED:
        return ast.Compare(test.left, [_FLIPPED[type(test.ops[0])]()], test.comparators)
    return ast.UnaryOp(ast.Not(), test)


def _apply_swap_if_else(tree: ast.Module, rng: random.Random) -> bool:
    parents = _parents(tree)
    sites = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.If) and n.orelse and _enclosing_function(n, parents) is not None
    ]
    branch = _pick(sites, rng)
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


def _apply_de_morgan(tree: ast.Module, rng: random.Random) -> bool:
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
    site = _pick(sites, rng)
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
    if _has(loop, ast.Try, ast.TryStar, ast.With, ast.AsyncWith, *_SCOPES):
        return None
    return guards[0]


def _apply_early_return_to_flag(tree: ast.Module, rng: random.Random) -> bool:
    sites = []
    for func in _functions(tree):
        if _opaque(func):
            continue
        for at in range(len(func.body)):
            guard = _early_return_site(func, at)
            if guard is not None:
                sites.append((func, at, guard))
    site = _pick(sites, rng)
    if site is None:
        return False
    func, at, guard = site
    flag = _Fresh(tree).name(("result", "answer", "outcome"))
    after = func.body[at + 1]
    assert isinstance(after, ast.Return) and after.value is not None
    returned = guard.body[0]
    assert isinstance(returned, ast.Return) and returned.value is not None
    guard.body = [ast.Assign([ast.Name(flag, ast.Store())], returned.value), ast.Break()]
    func.body[at + 1] = ast.Return(ast.Name(flag, ast.Load()))
    func.body.insert(at, ast.Assign([ast.Name(flag, ast.Store())], after.value))
    return True


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


def _apply_extract_helper(tree: ast.Module, rng: random.Random) -> bool:
    parents = _parents(tree)
    sites: list[tuple[ast.AST, str, int | None, ast.expr, Function]] = []
    for func in _functions(tree):
        if _opaque(func) or _enclosing_function(func, parents) is not None:
            continue
        params = {a.arg for a in _all_args(func.args)}
        local = (_stored(func) | params) - _BUILTINS
        if _has(func, ast.Delete):
            continue
        for statement in func.body:
            for node in ast.walk(statement):
                for field, value in ast.iter_fields(node):
                    items = value if isinstance(value, list) else [value]
                    for at, item in enumerate(items):
                        if isinstance(item, ast.expr) and _extractable(item, local, params):
                            index = at if isinstance(value, list) else None
                            sites.append((node, field, index, item, func))
    site = _pick(sites, rng)
    if site is None:
        return False
    owner, field, index, expr, func = site
    name = _Fresh(tree).name(_HELPER_NAMES, rng)
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
    stores = name in _stored(tree) or name in {
        n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)
    }
    imports = any(
        (a.asname or a.name) == name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    )
    return defs != 1 or stores or imports


def _apply_inline_helper(tree: ast.Module, rng: random.Random) -> bool:
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
    chosen = _pick(options, rng)
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


# ---------------------------------------------------------------------------------------
# iteration -> index access
# ---------------------------------------------------------------------------------------


def _sequence_names(func: Function) -> set[str]:
    """Names that always hold a list, str or tuple in ``func``: annotated parameters, and locals
    whose every binding is a list/str/tuple display or ``list(...)``, ``sorted(...)``, ...."""
    names = {
        a.arg
        for a in _all_args(func.args)
        if _annotation_name(a.annotation) in _SEQUENCE_ANNOTATIONS
    }
    params = {a.arg for a in _all_args(func.args)}
    bindings: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _stored(target):
                    value = node.value if isinstance(target, ast.Name) else None
                    bindings.setdefault(name, []).append(value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.comprehension):
            for name in _stored(node.target):
                bindings.setdefault(name, []).append(None)
        elif isinstance(node, ast.NamedExpr | ast.With | ast.Delete):
            for name in _stored(node):
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
        return value.func.id in _SEQUENCE_CALLS
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return value.func.attr in _SEQUENCE_METHODS and isinstance(value.func.value, ast.Constant)
    return False


def _read_only_uses(func: Function, name: str, allowed: ast.AST | None = None) -> bool:
    """Every use of ``name`` in ``func`` only reads it: indexing, ``len(name)``, ``x in name``,
    a read-only method; so no alias is made and nothing changes the sequence."""
    parents = _parents(func)
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
            if isinstance(parent.func, ast.Name) and parent.func.id in _READ_ONLY_CALLS:
                continue
            return False
        if isinstance(parent, ast.Attribute) and parent.attr in _READ_ONLY_METHODS:
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


def _apply_iter_to_index(tree: ast.Module, rng: random.Random) -> bool:
    if _shadows_builtins(tree):
        return False
    parents = _parents(tree)
    sites = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Name)) or node.orelse:
            continue
        func = _enclosing_function(node, parents)
        if func is None or _opaque(func):
            continue
        name = node.iter.id
        params = {a.arg for a in _all_args(func.args)}
        if name in _stored(ast.Module(body=node.body, type_ignores=[])):
            continue  # rebinding the sequence in the loop: for keeps the old one
        if name in params and _mutates_something(node.body):
            continue  # an argument might be the same list as another one
        if name in _sequence_names(func) and _read_only_uses(func, name):
            sites.append(node)
    loop = _pick(sites, rng)
    if loop is None:
        return False
    assert isinstance(loop.iter, ast.Name)
    sequence = loop.iter.id
    index = _Fresh(tree).name(("i", "idx", "position", "k"))
    length = ast.Call(ast.Name("len", ast.Load()), [ast.Name(sequence, ast.Load())], [])
    element = ast.Subscript(ast.Name(sequence, ast.Load()), ast.Name(index, ast.Load()), ast.Load())
    loop.body.insert(0, ast.Assign([loop.target], element))
    loop.target = ast.Name(index, ast.Store())
    loop.iter = ast.Call(ast.Name("range", ast.Load()), [length], [])
    return True


# ---------------------------------------------------------------------------------------
# accumulator style
# ---------------------------------------------------------------------------------------


def _immutable_accumulators(func: Function) -> set[str]:
    """Local names first bound to a number or string literal and only ever rebound to literals,
    arithmetic on themselves, or augmented assignments (so ``+=`` never mutates in place)."""
    params = {a.arg for a in _all_args(func.args)}
    good: dict[str, bool] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _stored(target):
                    ok = isinstance(target, ast.Name) and _literal_or_self_arithmetic(
                        node.value, name
                    )
                    good[name] = good.get(name, True) and ok
        elif isinstance(node, ast.AugAssign):
            for name in _stored(node.target):
                good.setdefault(name, True)
                good[name] = good[name] and isinstance(node.target, ast.Name)
        elif isinstance(node, ast.For | ast.comprehension | ast.NamedExpr | ast.With):
            for name in _stored(node):
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
        and isinstance(value.op, _ARITHMETIC)
    )


def _accumulator_sites(tree: ast.Module, expand: bool) -> list[tuple[Function, ast.stmt]]:
    sites: list[tuple[Function, ast.stmt]] = []
    for func in _functions(tree):
        if _opaque(func) or any(isinstance(n, _SCOPES) for n in ast.walk(func) if n is not func):
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


def _apply_augassign_expand(tree: ast.Module, rng: random.Random) -> bool:
    sites = _accumulator_sites(tree, expand=True)
    if not sites:
        return False
    for _, node in sites:
        assert isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
        name = node.target.id
        value = ast.BinOp(ast.Name(name, ast.Load()), node.op, node.value)
        _replace_statement(tree, node, [ast.Assign([ast.Name(name, ast.Store())], value)])
    return True


def _apply_augassign_contract(tree: ast.Module, rng: random.Random) -> bool:
    sites = _accumulator_sites(tree, expand=False)
    if not sites:
        return False
    for _, node in sites:
        assert isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp)
        target = node.targets[0]
        assert isinstance(target, ast.Name)
        new = ast.AugAssign(ast.Name(target.id, ast.Store()), node.value.op, node.value.right)
        _replace_statement(tree, node, [new])
    return True


# ---------------------------------------------------------------------------------------
# annotations
# ---------------------------------------------------------------------------------------

_INTROSPECTION = frozenset({"__annotations__", "get_type_hints", "signature", "inspect"})


def _apply_drop_annotations(tree: ast.Module, rng: random.Random) -> bool:
    """Parameter and return annotations go, and ``x: T = v`` in a function becomes ``x = v``.

    Annotations do nothing at run time unless read back (left alone then); class-level ones are
    kept (dataclasses and named tuples read them), and so is a bare ``x: T`` (it makes ``x``
    local)."""
    if _identifiers(tree) & _INTROSPECTION:
        return False
    changed = False
    for func in _functions(tree):
        for arg in _all_args(func.args):
            changed |= arg.annotation is not None
            arg.annotation = None
        changed |= func.returns is not None
        func.returns = None
        for body_owner, body in _bodies(func):
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


def _apply_mirror_comparisons(tree: ast.Module, rng: random.Random) -> bool:
    """``a > b`` becomes ``b < a`` (and ``>=`` ``<=``), or the other way, at every such site."""
    if _shadows_builtins(tree):
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


def _apply_split_conjunction(tree: ast.Module, rng: random.Random) -> bool:
    """``if a and b: body`` with no ``else`` becomes ``if a: if b: body`` (the same
    short-circuit order)."""
    parents = _parents(tree)
    sites = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.If)
        and not n.orelse
        and isinstance(n.test, ast.BoolOp)
        and isinstance(n.test.op, ast.And)
        and _enclosing_function(n, parents) is not None
    ]
    branch = _pick(sites, rng)
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


def _apply_characters_literal(tree: ast.Module, rng: random.Random) -> bool:
    """``{'a', 'e', 'i'}`` becomes ``set('aei')`` (lists and tuples alike)."""
    if _shadows_builtins(tree):  # set, list and tuple among the guarded builtins
        return False
    parents = _parents(tree)
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


# ---------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------

REWRITES: dict[str, Rewrite] = {
    rewrite.name: rewrite
    for rewrite in (
        Rewrite("rename", "locals and parameters get fresh names", _apply_rename),
        Rewrite(
            "for_to_while", "for i in range(...) becomes a counting while", _apply_for_to_while
        ),
        Rewrite(
            "while_to_for", "a counting while becomes for i in range(...)", _apply_while_to_for
        ),
        Rewrite(
            "loop_to_comprehension",
            "r = []; for x in xs: r.append(e) becomes a list comprehension",
            _apply_loop_to_comprehension,
        ),
        Rewrite(
            "comprehension_to_loop",
            "r = [e for x in xs] becomes an appending loop",
            _apply_comprehension_to_loop,
        ),
        Rewrite("swap_if_else", "if c: A else: B becomes if not c: B else: A", _apply_swap_if_else),
        Rewrite("de_morgan", "not (a and b) and not a or not b, either way", _apply_de_morgan),
        Rewrite(
            "early_return_to_flag",
            "an early return from a loop becomes a result variable and break",
            _apply_early_return_to_flag,
        ),
        Rewrite(
            "extract_helper",
            "a pure expression moves into a module-level helper",
            _apply_extract_helper,
        ),
        Rewrite(
            "inline_helper", "a one-line helper is inlined into its calls", _apply_inline_helper
        ),
        Rewrite(
            "iter_to_index",
            "for x in seq becomes for i in range(len(seq)): x = seq[i]",
            _apply_iter_to_index,
        ),
        Rewrite("augassign_expand", "s += x becomes s = s + x", _apply_augassign_expand),
        Rewrite("augassign_contract", "s = s + x becomes s += x", _apply_augassign_contract),
        Rewrite(
            "mirror_comparisons",
            "a > b becomes b < a (or the reverse) at every side-effect-free comparison",
            _apply_mirror_comparisons,
        ),
        Rewrite(
            "split_conjunction",
            "if a and b: body (no else) becomes nested ifs",
            _apply_split_conjunction,
        ),
        Rewrite(
            "characters_literal",
            "a display of one-character strings becomes set('...') / list / tuple",
            _apply_characters_literal,
        ),
        Rewrite(
            "drop_annotations",
            "parameter, return and local variable annotations are dropped",
            _apply_drop_annotations,
        ),
    )
}
