"""What generated code may not contain, checked on its syntax tree before it ever runs.

Generated programs (a teacher's candidate cases, an LLM's rewrites of CoRE programs) become
ground truth, so they must not reach what reports their results: the rules are an allow-list in
effect, sound whatever the code binds. Dunder names and attributes, the built-ins that import,
evaluate, open or introspect (:data:`FORBIDDEN_NAMES`), frame, code and traceback attributes
(``gi_frame``, ``f_back``, ``tb_frame``, ``co_code``...), computed attribute names, imports (but
those a rewrite's original already has), ``global``, async code and ``while True`` with no way
out are all refused, whether the name is free or bound: a parameter called ``__import__`` or
``open`` would take the built-in as its default value (``def f(x, open=open)``).
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from typing import Final

__all__ = [
    "ATTRIBUTE_FUNCTIONS",
    "FORBIDDEN_CALLS",
    "FORBIDDEN_NAMES",
    "FRAME_ATTRIBUTE_PREFIXES",
    "NONDETERMINISTIC_MODULES",
    "Finding",
    "ForbiddenFinder",
    "bound_names",
    "is_dunder",
    "unsafe_construct",
]

# Built-ins whose use makes a case unsafe, impure or irreproducible. ``hash`` and ``id`` depend on
# the process (string hashes are seeded per process); ``vars``/``dir`` expose namespaces.
FORBIDDEN_CALLS: Final = frozenset(
    {
        "__import__",
        "open",
        "input",
        "eval",
        "exec",
        "compile",
        "globals",
        "locals",
        "vars",
        "dir",
        "breakpoint",
        "exit",
        "quit",
        "help",
        "id",
        "hash",
        "memoryview",
        "aiter",
        "anext",
        "copyright",
        "credits",
        "license",
    }
)
# Names that are forbidden even when not called (e.g. passed as a key function or aliased).
FORBIDDEN_NAMES: Final = FORBIDDEN_CALLS | {"__builtins__", "__builtin__", "__loader__", "__spec__"}
# Attribute access by computed name: allowed only with a literal, non-dunder attribute name.
ATTRIBUTE_FUNCTIONS: Final = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# Modules whose names signal randomness, clocks or the environment (import is already forbidden,
# so these can only appear as free names, which would fail anyway; the reason says why).
NONDETERMINISTIC_MODULES: Final = frozenset(
    {
        "random",
        "time",
        "datetime",
        "os",
        "sys",
        "secrets",
        "uuid",
        "subprocess",
        "socket",
        "threading",
        "multiprocessing",
        "signal",
        "shutil",
        "pathlib",
        "io",
        "tempfile",
        "gc",
        "inspect",
        "ctypes",
        "importlib",
        "builtins",
    }
)
# Attributes of frames, generators, coroutines, tracebacks and code objects: a way from a value
# back to the frames (and globals) of whoever called the program.
FRAME_ATTRIBUTE_PREFIXES: Final = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")

Finding = tuple[str, ast.AST | None, str]


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def unsafe_construct(tree: ast.AST, allowed_imports: Collection[str] = ()) -> Finding | None:
    """The first forbidden construct of ``tree`` in source order, or None."""
    return ForbiddenFinder(allowed_imports).first(tree)


class ForbiddenFinder(ast.NodeVisitor):
    """Finds the first forbidden construct, in source order."""

    def __init__(self, allowed_imports: Collection[str] = ()) -> None:
        self.found: Finding | None = None
        self.bound: set[str] = set()
        self.allowed_imports = frozenset(allowed_imports)

    def first(self, tree: ast.AST) -> Finding | None:
        # Bound names are only ever excused for the module-like names below (a variable called
        # ``time``); a forbidden or dunder name is refused bound or free, as its default value
        # or an enclosing scope could still be the built-in.
        self.bound = bound_names(tree)
        self.visit(tree)
        return self.found

    def report(self, reason: str, node: ast.AST, detail: str) -> None:
        if self.found is None:
            self.found = (reason, node, detail)

    def generic_visit(self, node: ast.AST) -> None:
        if self.found is None:
            super().generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        if not all(alias.name in self.allowed_imports for alias in node.names):
            self.report("import", node, ast.unparse(node))
        for alias in node.names:
            self._check_bound(alias.asname or alias.name.split(".")[0], node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module not in self.allowed_imports:
            self.report("import", node, ast.unparse(node))
        for alias in node.names:
            self._check_bound(alias.asname or alias.name, node)

    def _check_bound(self, name: str, node: ast.AST) -> None:
        if is_dunder(name):
            self.report("dunder_name", node, f"binds {name!r}")
        elif name in FORBIDDEN_NAMES:
            self.report("forbidden_name", node, f"binds {name!r}")

    def visit_arg(self, node: ast.arg) -> None:
        self._check_bound(node.arg, node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._check_bound(node.name, node)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_bound(node.name, node)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._check_bound(node.name, node)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.report("global_state", node, ast.unparse(node))

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.generic_visit(node)  # closes over an enclosing function only: harmless

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.report("async", node, f"async def {node.name}")

    def visit_Await(self, node: ast.Await) -> None:
        self.report("async", node, "await")

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self.report("async", node, "async for")

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self.report("async", node, "async with")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if is_dunder(node.attr) or node.attr.startswith("_"):
            self.report("dunder_attribute", node, f"private or dunder attribute {node.attr!r}")
        elif node.attr.startswith(FRAME_ATTRIBUTE_PREFIXES):
            self.report("frame_attribute", node, f"frame or code attribute {node.attr!r}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if is_dunder(name):
            self.report("dunder_name", node, f"use of {name!r}")
        elif name in FORBIDDEN_NAMES:
            self.report("forbidden_name", node, f"use of {name!r}")
        elif name in NONDETERMINISTIC_MODULES and name not in self.bound:
            self.report("nondeterministic_module", node, f"use of {name!r}")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in FORBIDDEN_CALLS:
                self.report("forbidden_call", node, f"call of {func.id}()")
            elif func.id in ATTRIBUTE_FUNCTIONS:
                name = node.args[1] if len(node.args) > 1 else None
                attribute = name.value if isinstance(name, ast.Constant) else None
                if (
                    not isinstance(attribute, str)
                    or attribute.startswith("_")
                    or attribute.startswith(FRAME_ATTRIBUTE_PREFIXES)
                ):
                    self.report(
                        "dynamic_attribute",
                        node,
                        f"{func.id}() with a computed or private attribute name",
                    )
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        test = node.test
        always = isinstance(test, ast.Constant) and bool(test.value)
        if always and not _can_leave(node.body):
            self.report("infinite_loop", node, "'while True' with no break, return or raise")
        self.generic_visit(node)


_DEFINITIONS: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)


def bound_names(tree: ast.AST) -> set[str]:
    """Names the code binds: parameters, assignment targets, definitions, ``except`` names."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, _DEFINITIONS) and node.name:
            bound.add(node.name)
    return bound


def _can_leave(body: list[ast.stmt]) -> bool:
    """True when a ``break`` of this loop, or a ``return``/``raise``, occurs in ``body``."""
    for stmt in body:
        for node in _walk_same_loop(stmt):
            if isinstance(node, ast.Break | ast.Return | ast.Raise):
                return True
    return False


def _walk_same_loop(node: ast.AST) -> list[ast.AST]:
    """Nodes under ``node`` whose ``break`` would leave the current loop (not nested loops or
    functions); ``return`` and ``raise`` inside nested loops still count, so those are kept."""
    found: list[ast.AST] = [node]
    stack: list[tuple[ast.AST, bool]] = [(child, False) for child in ast.iter_child_nodes(node)]
    if isinstance(node, ast.For | ast.While):
        stack = [(child, True) for child in ast.iter_child_nodes(node)]
    while stack:
        child, nested_loop = stack.pop()
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(child, ast.Break) and nested_loop:
            continue
        found.append(child)
        inner = nested_loop or isinstance(child, ast.For | ast.While)
        stack.extend((grandchild, inner) for grandchild in ast.iter_child_nodes(child))
    return found
