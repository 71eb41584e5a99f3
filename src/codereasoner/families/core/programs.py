"""What a CoRE program is, for the builder that writes CoRE-style benchmarks
(:mod:`codereasoner.families.core.build`) and for CoRE's family folder that reads them: the
entry point of an implementation, the preamble it runs with, and the command that builds one."""

from __future__ import annotations

import ast

__all__ = ["BUILD_COMMAND", "PREAMBLE", "entry_point"]

BUILD_COMMAND = "core"  # 'codereasoner core build' writes CoRE-style benchmarks (build.py)
PREAMBLE = "from typing import *"  # LiveCodeBench implementations use List, Optional, ...


def entry_point(code: str) -> str | None:
    """``Solution().<method>`` or a top-level function that no other one calls (the last)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Solution":
            methods = [f for f in node.body if isinstance(f, ast.FunctionDef)]
            public = [f for f in methods if not f.name.startswith("_")] or methods
            name = _root(public)
            return None if name is None else f"Solution().{name}"
    return _root([node for node in tree.body if isinstance(node, ast.FunctionDef)])


def _root(functions: list[ast.FunctionDef]) -> str | None:
    def called(by: ast.FunctionDef) -> set[str]:
        names = set()
        for node in ast.walk(by):
            if isinstance(node, ast.Call):
                func = node.func
                names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
        return names

    callees = set().union(*(called(f) - {f.name} for f in functions)) if functions else set()
    roots = [f.name for f in functions if f.name not in callees] or [f.name for f in functions]
    return roots[-1] if roots else None
