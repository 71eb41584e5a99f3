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
import hashlib
import inspect
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codereasoner.programs.rewrites.analysis import Apply
from codereasoner.programs.rewrites.conditions import (
    apply_de_morgan,
    apply_early_return_to_flag,
    apply_swap_if_else,
)
from codereasoner.programs.rewrites.helpers import apply_extract_helper, apply_inline_helper
from codereasoner.programs.rewrites.loops import (
    apply_comprehension_to_loop,
    apply_for_to_while,
    apply_iter_to_index,
    apply_loop_to_comprehension,
    apply_while_to_for,
)
from codereasoner.programs.rewrites.names import apply_rename
from codereasoner.programs.rewrites.surface import (
    apply_augassign_contract,
    apply_augassign_expand,
    apply_characters_literal,
    apply_drop_annotations,
    apply_mirror_comparisons,
    apply_split_conjunction,
)
from codereasoner.registry import Registry

__all__ = ["BUILTIN", "REWRITES", "Apply", "Rewrite", "added_rewrites", "compose"]


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
# the registry
# ---------------------------------------------------------------------------------------

REWRITES: Registry[Rewrite] = Registry("rewrite")
for _rewrite in (
    Rewrite("rename", "locals and parameters get fresh names", apply_rename),
    Rewrite("for_to_while", "for i in range(...) becomes a counting while", apply_for_to_while),
    Rewrite("while_to_for", "a counting while becomes for i in range(...)", apply_while_to_for),
    Rewrite(
        "loop_to_comprehension",
        "r = []; for x in xs: r.append(e) becomes a list comprehension",
        apply_loop_to_comprehension,
    ),
    Rewrite(
        "comprehension_to_loop",
        "r = [e for x in xs] becomes an appending loop",
        apply_comprehension_to_loop,
    ),
    Rewrite("swap_if_else", "if c: A else: B becomes if not c: B else: A", apply_swap_if_else),
    Rewrite("de_morgan", "not (a and b) and not a or not b, either way", apply_de_morgan),
    Rewrite(
        "early_return_to_flag",
        "an early return from a loop becomes a result variable and break",
        apply_early_return_to_flag,
    ),
    Rewrite(
        "extract_helper",
        "a pure expression moves into a module-level helper",
        apply_extract_helper,
    ),
    Rewrite("inline_helper", "a one-line helper is inlined into its calls", apply_inline_helper),
    Rewrite(
        "iter_to_index",
        "for x in seq becomes for i in range(len(seq)): x = seq[i]",
        apply_iter_to_index,
    ),
    Rewrite("augassign_expand", "s += x becomes s = s + x", apply_augassign_expand),
    Rewrite("augassign_contract", "s = s + x becomes s += x", apply_augassign_contract),
    Rewrite(
        "mirror_comparisons",
        "a > b becomes b < a (or the reverse) at every side-effect-free comparison",
        apply_mirror_comparisons,
    ),
    Rewrite(
        "split_conjunction",
        "if a and b: body (no else) becomes nested ifs",
        apply_split_conjunction,
    ),
    Rewrite(
        "characters_literal",
        "a display of one-character strings becomes set('...') / list / tuple",
        apply_characters_literal,
    ),
    Rewrite(
        "drop_annotations",
        "parameter, return and local variable annotations are dropped",
        apply_drop_annotations,
    ),
):
    REWRITES.register(_rewrite)
del _rewrite
BUILTIN = tuple(REWRITES.names())  # the kinds this package defines


def added_rewrites() -> list[str]:
    """The kinds registered beyond :data:`BUILTIN` (by an installed package), in name order,
    each as ``name:HASH``, the hash of the source file that defines it: a build records them,
    so that it is never resumed after a package changed a rewrite under the same name."""
    return [
        f"{name}:{_source_hash(REWRITES[name])}"
        for name in sorted(REWRITES.names())
        if name not in BUILTIN
    ]


def _source_hash(rewrite: Rewrite) -> str:
    """The first 16 hex digits of the sha256 of the file defining ``rewrite.apply`` (of its
    source text when there is no file; "unknown" when there is neither)."""
    try:
        path = inspect.getsourcefile(rewrite.apply)
        data = Path(path).read_bytes() if path else inspect.getsource(rewrite.apply).encode()
    except (OSError, TypeError):
        return "unknown"
    return hashlib.sha256(data).hexdigest()[:16]
