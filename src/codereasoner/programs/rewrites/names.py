"""The ``rename`` rewrite: locals and parameters get fresh readable names."""

from __future__ import annotations

import ast
import random

from codereasoner.programs.rewrites.analysis import (
    BUILTINS,
    NAMES,
    FreshNames,
    Function,
    all_args,
    enclosing_function,
    functions_of,
    has,
    module_level_names,
    opaque,
    parent_map,
    stored,
)

# ---------------------------------------------------------------------------------------
# rename
# ---------------------------------------------------------------------------------------


def _renamable(func: Function, module_names: set[str]) -> list[str]:
    """The function's locals, parameters, nested functions and their parameters: renamed
    uniformly through the nested scopes (none of them names a global), the result is the
    same program. A name some call passes as a keyword is kept."""
    params = [a.arg for a in all_args(func.args)]
    nested = [n for n in ast.walk(func) if isinstance(n, _DEFINITIONS) and n is not func]
    inner_params = {a.arg for n in nested for a in all_args(n.args)}
    nested_defs = {n.name for n in nested if not isinstance(n, ast.Lambda)}
    local = sorted(
        stored(func) | set(params) | inner_params | nested_defs,
        key=lambda n: (n not in params, n),
    )
    handlers = {n.name for n in ast.walk(func) if isinstance(n, ast.ExceptHandler) and n.name}
    keywords = {k.arg for n in ast.walk(func) if isinstance(n, ast.Call) for k in n.keywords}
    skip = module_names | BUILTINS | handlers | {"self", "cls", "_"}
    return [name for name in local if name not in skip and name not in keywords]


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def apply_rename(tree: ast.Module, rng: random.Random) -> bool:
    fresh = FreshNames(tree)
    module_names = module_level_names(tree)
    changed = False
    top = [f for f in functions_of(tree) if not _has_enclosing_function(tree, f)]
    for func in top:
        if opaque(func) or has(func, ast.ClassDef):
            continue
        names = _renamable(func, module_names)
        if not names:
            continue
        # most names, often all: CoRE's Jaccard filter needs the surface to change
        chosen = rng.sample(names, k=rng.randint((len(names) + 1) // 2, len(names)))
        mapping = {old: fresh.name(NAMES, rng) for old in chosen}
        _rename_in(func, mapping)
        changed = True
    return changed


def _has_enclosing_function(tree: ast.Module, func: Function) -> bool:
    return enclosing_function(func, parent_map(tree)) is not None


def _rename_in(func: Function, mapping: dict[str, str]) -> None:
    for arg in all_args(func.args):
        arg.arg = mapping.get(arg.arg, arg.arg)
    for statement in func.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id in mapping:
                node.id = mapping[node.id]
            elif isinstance(node, ast.arg) and node.arg in mapping:
                node.arg = mapping[node.arg]
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in mapping:
                node.name = mapping[node.name]
