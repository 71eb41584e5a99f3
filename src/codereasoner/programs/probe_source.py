"""Which lines of a program a probe can ask about, and their difficulty features (nesting, operators,
arithmetic, compound conditions), read from its syntax tree."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------
# the source: which lines can be probed, and their difficulty features
# ---------------------------------------------------------------------------------------

_ARITHMETIC_UNARY = (ast.USub, ast.UAdd, ast.Invert)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True)
class Line:
    node: ast.stmt
    code: str  # the stripped line as shown
    depth: int  # enclosing loops and ifs, within its function
    operators: int
    arithmetic: bool
    targets: tuple[str, ...] = ()  # names a simple statement binds or mutates
    accumulates: tuple[str, ...] = ()  # targets updated from their own value
    constant: bool = False  # a simple statement that reads no variable
    compound: bool = False  # a test with and, or, not


@dataclass(frozen=True)
class Source:
    lines: dict[int, Line]
    loop_names: dict[int, tuple[str, ...]]  # loop line -> variables that may name iterations
    functions: dict[str, int]  # function name -> how many functions of the source have it


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` without entering nested functions, lambdas or classes."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        todo.extend(
            child for child in ast.iter_child_nodes(current) if not isinstance(child, _SCOPES)
        )


def _operators(node: ast.AST) -> int:
    count = 0
    for sub in _walk(node):
        if isinstance(sub, ast.BinOp | ast.UnaryOp | ast.Subscript | ast.AugAssign):
            count += 1
        elif isinstance(sub, ast.BoolOp):
            count += len(sub.values) - 1
        elif isinstance(sub, ast.Compare):
            count += len(sub.ops)
    return count


def _is_arithmetic(sub: ast.AST) -> bool:
    unary = isinstance(sub, ast.UnaryOp) and isinstance(sub.op, _ARITHMETIC_UNARY)
    return unary or isinstance(sub, ast.BinOp | ast.AugAssign)


def _arithmetic(node: ast.AST) -> bool:
    """Two or more arithmetic operators, or arithmetic inside an index."""
    subs = list(_walk(node))
    indexed = any(
        isinstance(sub, ast.Subscript) and any(map(_is_arithmetic, _walk(sub.slice)))
        for sub in subs
    )
    return indexed or sum(map(_is_arithmetic, subs)) >= 2


def _compound(test: ast.expr) -> bool:
    return any(
        isinstance(sub, ast.BoolOp)
        or (isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.Not))
        for sub in _walk(test)
    )


def _names(target: ast.expr) -> list[str]:
    """The variables an assignment target binds or mutates (``a[i].x = ...`` mutates ``a``)."""
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _names(element)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    while isinstance(target, ast.Subscript | ast.Attribute):
        target = target.value
    return [target.id] if isinstance(target, ast.Name) else []


def _targets(node: ast.stmt) -> tuple[list[str], ast.AST | None]:
    """Names a simple statement binds or mutates, and the expression it reads them from."""
    if isinstance(node, ast.Assign):
        return [name for target in node.targets for name in _names(target)], node.value
    if isinstance(node, ast.AugAssign):
        return _names(node.target), node
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return _names(node.target), node.value
    call = node.value if isinstance(node, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        return _names(call.func.value), call  # xs.append(x) mutates xs
    return [], None


def _simple(node: ast.stmt, code: str, depth: int) -> Line | None:
    names, read_from = _targets(node)
    if isinstance(node, ast.Return) and node.value is not None:
        read_from = node.value
    elif not names:
        return None
    assert read_from is not None
    read = {sub.id for sub in _walk(read_from) if isinstance(sub, ast.Name)}
    unique = tuple(dict.fromkeys(names))
    mutating = isinstance(node, ast.AugAssign | ast.Expr)
    accumulates = tuple(name for name in unique if mutating or name in read)
    features = (_operators(read_from), _arithmetic(read_from))
    return Line(node, code, depth, *features, unique, accumulates, constant=not read)


def _line_info(node: ast.stmt, code: str, depth: int) -> Line | None:
    if isinstance(node, ast.If | ast.While | ast.For):
        header = node.iter if isinstance(node, ast.For) else node.test
        if header.end_lineno != node.lineno or node.body[0].lineno == node.lineno:
            return None
        features = (_operators(header), _arithmetic(header))
        return Line(node, code, depth, *features, compound=_compound(header))
    return _simple(node, code, depth) if node.end_lineno == node.lineno else None


def names_of_loop(node: ast.For) -> tuple[str, ...]:
    if not isinstance(node.target, ast.Name | ast.Tuple):
        return ()
    rebound = {
        sub.id
        for statement in node.body
        for sub in _walk(statement)
        if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load)
    }
    return tuple(name for name in _names(node.target) if name not in rebound)


def _statements(body: list[ast.stmt], depth: int) -> Iterator[tuple[ast.stmt, int]]:
    """Statements of one function body with their depth (loops and ifs), nested defs left out."""
    for node in body:
        if isinstance(node, _SCOPES):
            continue
        yield node, depth
        inner = depth + isinstance(node, ast.For | ast.While | ast.If)
        for block in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(node, block, []), inner)
        for handler in getattr(node, "handlers", []):
            yield from _statements(handler.body, inner)


def _entry(tree: ast.Module, frame: str) -> bool:
    """Whether the source defines the function whose qualified name is ``frame``."""
    scope: list[ast.stmt] = tree.body
    found: ast.stmt | None = None
    for part in frame.split("."):
        if part == "<locals>":
            continue
        found = next((n for n in scope if isinstance(n, _SCOPES[:3]) and n.name == part), None)
        if found is None:
            return False
        scope = found.body
    return isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef)


def analyse(source: str, frame: str) -> Source | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if not _entry(tree, frame):
        return None
    shown = source.splitlines()
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    found = [pair for function in functions for pair in _statements(function.body, 0)]
    starts: dict[int, int] = {}
    for node, _ in found:
        starts[node.lineno] = starts.get(node.lineno, 0) + 1
    analysed = Source({}, {}, {})
    for function in functions:
        analysed.functions[function.name] = analysed.functions.get(function.name, 0) + 1
    for node, depth in found:
        code = shown[node.lineno - 1].strip()
        info = None if starts[node.lineno] > 1 or "`" in code else _line_info(node, code, depth)
        if info is None:
            continue
        analysed.lines[node.lineno] = info
        if isinstance(node, ast.For | ast.While):
            names = names_of_loop(node) if isinstance(node, ast.For) else ()
            analysed.loop_names[node.lineno] = names
    return analysed
