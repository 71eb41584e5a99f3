"""The constraint sampler: what each generated case must use (docs/synth.md).

A draw fixes whether the case feeds the method's result into another call (``nested_calls``),
whether it calls other catalog methods (``other_methods``), a blueprint of nested control
structures (outermost first) and extra constructs. ``break``/``continue`` are only drawn when the
blueprint has an ``if`` nested inside a loop, since a bare jump needs a condition to guard it and
an extra ``if`` would change the blueprint.
"""

from __future__ import annotations

import ast
import random

from codereasoner.synth.case import CONTROL, EXTRAS, Constraints

# Depth weights for 0, 1, 2, 3, ... (truncated at max_depth, then renormalised by choices()).
DEPTH_WEIGHTS = (0.2, 0.35, 0.3, 0.15, 0.1, 0.05)
CONTROL_WEIGHTS = {"if": 0.4, "for": 0.4, "while": 0.2}
EXTRA_PROBABILITY = {
    "try": 0.15,
    "comprehension": 0.2,
    "slicing": 0.25,
    "break": 0.25,
    "continue": 0.2,
}
NESTED_CALLS_PROBABILITY = 0.5
OTHER_METHODS_PROBABILITY = 0.5


def has_guarded_loop(control: tuple[str, ...]) -> bool:
    """True when some ``if`` lies inside a loop in the blueprint (a place for break/continue)."""
    for position, kind in enumerate(control):
        if kind in ("for", "while") and "if" in control[position + 1 :]:
            return True
    return False


def sample_constraints(rng: random.Random, max_depth: int = 3) -> Constraints:
    """Draw one set of constraints; deterministic for the state of ``rng``."""
    if max_depth < 0:
        raise ValueError(f"max_depth must be >= 0, got {max_depth}")
    weights = [DEPTH_WEIGHTS[min(depth, len(DEPTH_WEIGHTS) - 1)] for depth in range(max_depth + 1)]
    depth = rng.choices(range(max_depth + 1), weights=weights)[0]
    kinds = list(CONTROL_WEIGHTS)
    control = tuple(
        rng.choices(kinds, weights=[CONTROL_WEIGHTS[k] for k in kinds])[0] for _ in range(depth)
    )
    assert set(control) <= set(CONTROL)
    nested_calls = rng.random() < NESTED_CALLS_PROBABILITY
    other_methods = rng.random() < OTHER_METHODS_PROBABILITY
    jumps_allowed = has_guarded_loop(control)
    extras: list[str] = []
    for extra in EXTRAS:
        drawn = rng.random() < EXTRA_PROBABILITY[extra]
        if drawn and (extra not in ("break", "continue") or jumps_allowed):
            extras.append(extra)
    return Constraints(nested_calls, other_methods, control, tuple(extras))


# -- checking a program against its constraints -------------------------------------------------

FORBIDDEN_NAMES = frozenset(
    {
        "eval",
        "exec",
        "open",
        "print",
        "input",
        "compile",
        "__import__",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "exit",
        "quit",
    }
)
_CONTROL_NODES = {ast.If: "if", ast.For: "for", ast.While: "while"}
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def control_paths(tree: ast.AST) -> list[tuple[str, ...]]:
    """Every chain of nested if/for/while from the function body down, outermost first.

    An ``elif`` continues its ``if`` (it is not a nested ``if``); ``try`` is transparent.
    """
    paths: list[tuple[str, ...]] = []

    def visit(statements: list[ast.stmt], path: tuple[str, ...]) -> None:
        for node in statements:
            if not isinstance(node, ast.If | ast.For | ast.While):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(node, block, []) or [], path)
                for handler in getattr(node, "handlers", []) or []:
                    visit(handler.body, path)
                continue
            kind = _CONTROL_NODES[type(node)]
            inner = (*path, kind)
            paths.append(inner)
            visit(node.body, inner)
            orelse = node.orelse
            if kind == "if" and len(orelse) == 1 and isinstance(orelse[0], ast.If):
                visit(orelse, path)  # elif: same level as this if
            else:
                visit(orelse, inner)

    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        visit(function.body, ())
    return paths


def _has_nested_call(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        inner = [*node.args, *(keyword.value for keyword in node.keywords)]
        if isinstance(node.func, ast.Attribute):
            inner.append(node.func.value)
        if any(isinstance(sub, ast.Call) for part in inner for sub in ast.walk(part)):
            return True
    return False


def called_methods(tree: ast.AST, builtin_names: frozenset[str]) -> set[str]:
    """Names of methods called (``x.name(...)``) and of catalog built-ins called."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                names.add(node.func.attr)
            elif isinstance(node.func, ast.Name) and node.func.id in builtin_names:
                names.add(node.func.id)
    return names


def violations(code: str, constraints: Constraints, method: str) -> list[str]:
    """What in ``code`` breaks ``constraints`` for catalog method ``method`` (empty when none).

    Checks: the control blueprint is the longest chain of nested if/for/while and every chain
    is a prefix of it; each extra is present; a call is nested in another call's arguments (or
    receiver) exactly when ``nested_calls``; another catalog method is called exactly when
    ``other_methods``; the method itself is used; no imports, I/O, eval/exec or dunder access.
    """
    from codereasoner.synth.catalog import BUILTINS

    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"syntax error: {exc.msg}"]
    problems: list[str] = []
    paths = control_paths(tree)
    blueprint = constraints.control
    longest = max(paths, key=len, default=())
    if longest != blueprint:
        problems.append(f"control {longest} is not the blueprint {blueprint}")
    if any(path != blueprint[: len(path)] for path in paths):
        problems.append(f"a control chain is not a prefix of the blueprint {blueprint}")
    nodes = list(ast.walk(tree))
    present = {
        "try": any(isinstance(n, ast.Try) for n in nodes),
        "comprehension": any(isinstance(n, _COMPREHENSIONS) for n in nodes),
        "break": any(isinstance(n, ast.Break) for n in nodes),
        "continue": any(isinstance(n, ast.Continue) for n in nodes),
        "slicing": any(
            isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice) for n in nodes
        ),
    }
    problems += [
        f"extra {extra!r} is missing" for extra in constraints.extras if not present[extra]
    ]
    if _has_nested_call(tree) != constraints.nested_calls:
        problems.append(f"nested calls should be {constraints.nested_calls}")
    owner, _, name = method.rpartition(".")
    builtin_names = frozenset(BUILTINS)
    others = called_methods(tree, builtin_names) - {name}
    if bool(others) != constraints.other_methods:
        problems.append(f"other methods should be {constraints.other_methods}: {sorted(others)}")
    if owner == "builtins":
        used = any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
            for n in nodes
        )
    else:
        used = any(isinstance(n, ast.Attribute) and n.attr == name for n in nodes)
    if not used:
        problems.append(f"{method} is not used")
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            problems.append("imports a module")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            problems.append(f"uses {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            problems.append(f"uses {node.attr}")
    return problems
