"""REval's variable interpreter (upstream's VarInterpreter rules), one implementation for both
sides: the parent evaluates it over values parsed from our traces (``reval_truth``), and the
sandboxed state probe embeds this function's source (``reval_programs``) to evaluate it over live
objects. Keep it self-contained: the probe defines it with only the imports below in scope.
"""

import ast
import contextlib
import itertools
from collections.abc import Mapping, Sequence


def node_values(node: ast.AST, after: Sequence[Mapping[str, object]]) -> list[object] | None:
    """The values ``node`` takes over the states in ``after``; None is REval's Nil."""
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, ast.Name):
        return [state[node.id] for state in after if node.id in state] or None
    if isinstance(node, ast.Attribute):
        found = node_values(node.value, after)
        if found is None:
            return None
        return [getattr(o, node.attr) for o in found if hasattr(o, node.attr)] or None
    if isinstance(node, ast.Subscript):
        found, keys = node_values(node.value, after), node_values(node.slice, after)
        if found is None or keys is None:
            return None
        out = []
        for container, key in itertools.product(found, keys):
            with contextlib.suppress(TypeError, KeyError, IndexError):
                out.append(container[key])  # type: ignore[index]
        return out or None
    if isinstance(node, ast.Tuple):
        parts = [node_values(part, after) for part in node.elts]
        if any(part is None for part in parts):
            return None
        return list(itertools.product(*parts))  # type: ignore[arg-type]
    raise ValueError(f"unsupported node {type(node).__name__}")
