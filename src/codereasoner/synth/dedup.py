"""Exact and AST-normalised deduplication of candidate cases.

Two candidates are duplicates when they run the same program on the same input:

* **exact**: the same code text and the same input text;
* **ast**: the same code after normalisation (docstrings, comments and formatting dropped, the
  names the code binds renamed ``v0, v1, ...`` in order of first appearance; built-ins, attribute
  and method names kept) and the same input after canonical rendering of its literals.

The first candidate seen with a key keeps it; later ones are reported with the earlier one's id.
Keys are stored as 16-byte digests, so a run of hundreds of thousands of candidates stays small.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from typing import Final

from codereasoner import values
from codereasoner.execution import CallSyntaxError, parse_call
from codereasoner.synth.case import Candidate, Drop
from codereasoner.synth.filters import parse_quietly

EXACT: Final = "exact_duplicate"
AST: Final = "ast_duplicate"


_DEFINITIONS: Final = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _rename(tree: ast.AST) -> dict[str, str]:
    """Rename the names the code binds in place, in source order (a pre-order walk in field
    order), and drop docstrings and annotations; returns the renaming. One explicit walk that
    collects the nodes and the bound names, then one pass over them: this runs for every
    candidate and is several times faster than an ``ast.NodeTransformer``."""
    nodes: list[ast.AST] = []
    bound: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            continue
        if isinstance(node, ast.arg):
            bound.add(node.arg)
            continue
        if isinstance(node, _DEFINITIONS | ast.ExceptHandler) and node.name:
            bound.add(node.name)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))

    names: dict[str, str] = {}

    def rename(name: str) -> str:
        if name not in bound:
            return name
        if name not in names:
            names[name] = f"v{len(names)}"
        return names[name]

    for node in nodes:
        if isinstance(node, ast.Name):
            node.id = rename(node.id)
        elif isinstance(node, ast.arg):
            node.arg = rename(node.arg)
            node.annotation = None
        elif isinstance(node, _DEFINITIONS):
            node.name = rename(node.name)
            if not isinstance(node, ast.ClassDef):
                node.returns = None
            _strip_docstring(node)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            node.name = rename(node.name)
        elif isinstance(node, ast.keyword) and node.arg in names:
            # A keyword argument names a parameter of a function defined here.
            node.arg = names[node.arg]
    return names


def _strip_docstring(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module,
) -> None:
    body = node.body
    first = body[0].value if body and isinstance(body[0], ast.Expr) else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        node.body = body[1:] or [ast.Pass()]


def normalise(code: str) -> tuple[str, dict[str, str]]:
    """The code with docstrings, comments, annotations and formatting dropped and bound names
    renamed in order of appearance, plus the renaming used; raises SyntaxError if it does not
    parse."""
    text, names = _normalise_cached(code)
    return text, dict(names)


@lru_cache(maxsize=1024)
def _normalise_cached(code: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    # Cached: dedup and decontam normalise the same code, and mutants share their parent's.
    tree = parse_quietly(code)
    _strip_docstring(tree)
    names = _rename(tree)
    return ast.unparse(tree), tuple(names.items())


def canonical_input(candidate: Candidate, renames: dict[str, str] | None = None) -> str:
    """The call's arguments rendered canonically (``f( 'a',1 )`` and ``f("a", 1)`` agree);
    keyword names follow ``renames``. Unparseable calls fall back to their stripped text."""
    try:
        call = parse_call(candidate.call)
    except CallSyntaxError:
        return candidate.input_repr.strip()
    names = renames or {}
    parts = [values.render(arg) for arg in call.args]
    parts += [f"{names.get(key, key)}={values.render(value)}" for key, value in call.kwargs.items()]
    return ", ".join(parts)


def _digest(*parts: str) -> bytes:
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8", errors="surrogatepass")
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.digest()


class Deduper:
    """Remembers the cases seen so far; :meth:`seen` says which earlier case a new one repeats."""

    def __init__(self) -> None:
        self._exact: dict[bytes, str] = {}
        self._normal: dict[bytes, str] = {}

    def __len__(self) -> int:
        return len(self._exact)

    def _keys(self, candidate: Candidate) -> tuple[bytes, bytes]:
        exact = _digest(candidate.code, candidate.input_repr)
        try:
            code, renames = normalise(candidate.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return exact, exact
        return exact, _digest(code, canonical_input(candidate, renames))

    def match(self, candidate: Candidate, *, register: bool = True) -> tuple[str, str] | None:
        """``(earlier id, rule)`` when the candidate repeats an earlier one (rule
        :data:`EXACT` or :data:`AST`), else ``None``, remembering it unless ``register`` is
        false."""
        exact, normal = self._keys(candidate)
        if exact in self._exact:
            return self._exact[exact], EXACT
        if normal in self._normal:
            return self._normal[normal], AST
        if register:
            self._exact[exact] = candidate.id
            self._normal.setdefault(normal, candidate.id)
        return None

    def seen(self, candidate: Candidate, *, register: bool = True) -> str | None:
        """The id of the earlier duplicate, or ``None`` (and the candidate is remembered)."""
        found = self.match(candidate, register=register)
        return found[0] if found else None

    def check(self, candidate: Candidate, *, register: bool = True) -> Drop | None:
        """A ``dedup`` drop naming the earlier duplicate, or ``None``."""
        found = self.match(candidate, register=register)
        if found is None:
            return None
        earlier, rule = found
        return Drop(candidate.id, "dedup", rule, f"same as {earlier}")
