"""Differential testing of a variant against its original in the sandbox, and CoRE's filters.

:func:`equivalent` runs both programs on the same calls (never in this process) and compares
what a caller can observe: status, returned value, exception type and printed output. Exception
*messages* are not compared (a renamed variable changes ``NameError``'s text, not its type).
:func:`mutated_calls` adds inputs from :mod:`codereasoner.synth.mutate`.

CoRE keeps a variant when its token-set Jaccard similarity to the original is at most
:data:`JACCARD_MAX` (it differs enough on the surface) and its cyclomatic complexity is at least
:data:`CC_MIN` (it has something to reason about).
"""

from __future__ import annotations

import ast
import io
import random
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from codereasoner.execution import (
    Batch,
    Call,
    ExecResult,
    Executor,
    Limits,
    Program,
    Status,
    parse_call,
)
from codereasoner.synth.case import Candidate, Constraints
from codereasoner.synth.mutate import mutants, render_input

JACCARD_MAX: Final = 0.7  # CoRE: keep a variant with token-set Jaccard similarity <= 0.7
CC_MIN: Final = 3  # CoRE: keep a program with cyclomatic complexity >= 3


@dataclass(frozen=True)
class Mismatch:
    """One call on which the variant and the original differ."""

    call: str
    original: tuple[object, ...]
    variant: tuple[object, ...]


@dataclass(frozen=True)
class Equivalence:
    """The verdict of a differential test: equal on every call, or the calls that differ."""

    calls: int
    mismatches: list[Mismatch] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)  # a side hit a resource limit

    @property
    def ok(self) -> bool:
        return not self.mismatches


# hitting a limit is no observation: the slower of two equivalent programs may hit it alone
_RESOURCE_LIMITS: Final = frozenset({Status.TIMEOUT, Status.MEMORY, Status.SANDBOX_ERROR})


def observed(result: ExecResult) -> tuple[object, ...]:
    """What a caller sees: status, value, exception type and stdout (not timings, not the
    exception's message)."""
    return (result.status, result.value, result.exception_type, result.stdout)


def equivalent(
    original: str,
    variant: str,
    calls: Sequence[Call],
    pool: Executor,
    *,
    entry: str = "f",
    preamble: str = "",
    limits: Limits | None = None,
) -> Equivalence:
    """Run ``original`` and ``variant`` on ``calls`` in the sandbox and compare the outcomes."""
    batches = [
        Batch(Program(source, entry, preamble=preamble), list(calls), limits)
        for source in (original, variant)
    ]
    first, second = pool.run_all(batches)
    return compare(calls, first, second)


def compare(
    calls: Sequence[Call], original: Sequence[ExecResult], variant: Sequence[ExecResult]
) -> Equivalence:
    """The verdict on results the two programs already gave on ``calls`` (in that order)."""
    verdict = Equivalence(len(calls))
    for call, a, b in zip(calls, original, variant, strict=True):
        if {a.status, b.status} & _RESOURCE_LIMITS:
            verdict.undecided.append(call.render())
        elif observed(a) != observed(b):
            verdict.mismatches.append(Mismatch(call.render(), observed(a), observed(b)))
    return verdict


def hit_limit(result: ExecResult) -> bool:
    """Whether the run ended on a resource limit (no observation of the program's behaviour)."""
    return result.status in _RESOURCE_LIMITS


def mutated_calls(
    source: str, calls: Sequence[Call], rng: random.Random, per_call: int = 3
) -> list[Call]:
    """Up to ``per_call`` mutated inputs for each call (type-aware mutation from synth)."""
    made: list[Call] = []
    for number, call in enumerate(calls):
        seed = Candidate(
            id=f"c{number}",
            method="",
            code=source,
            input_repr=render_input(call.args, call.kwargs),
            constraints=Constraints(),
            entry_point=call.entry,
        )
        made += [parse_call(m.call) for m in mutants(seed, rng, per_call)]
    return made


# ---------------------------------------------------------------------------------------
# CoRE's filters
# ---------------------------------------------------------------------------------------

_SKIPPED_TOKENS = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
    tokenize.ENCODING,
}


def tokens(source: str) -> set[str]:
    """The set of Python tokens of ``source`` (names, keywords, operators, literals)."""
    found: set[str] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _SKIPPED_TOKENS:
            found.add(token.string)
    return found


def jaccard_similarity(first: str, second: str) -> float:
    """Token-set Jaccard similarity |A & B| / |A | B| (1.0 for two empty programs)."""
    a, b = tokens(first), tokens(second)
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def cyclomatic_complexity(source: str, function: str | None = None) -> int:
    """McCabe complexity as radon counts it and CoRE records it (``cyc_comlexity``).

    A function's: 1 plus one per ``if``, ``elif``, conditional expression, loop (and loop
    ``else``), ``except``, ``assert``, each comprehension ``for`` and ``if``, each extra operand
    of ``and``/``or`` and each ``case``; nested functions are blocks of their own. For an entry
    ``Solution().method`` (or, with no ``function``, a module ending in a class) it is radon's
    class figure: ``(1 + sum of its methods') / methods``, plus 1 for several methods. With no
    ``function``, the last top-level function's."""
    tree = ast.parse(source)
    if function is not None and "." not in function:
        named = [n for n in ast.walk(tree) if isinstance(n, _DEFS) and n.name == function]
        if not named:
            raise ValueError(f"no function named {function!r}")
        return _function_complexity(named[0])
    for node in reversed(tree.body):
        if isinstance(node, _DEFS) and function is None:
            return _function_complexity(node)
        if isinstance(node, ast.ClassDef):
            return _class_complexity(node)
    return _function_complexity(tree)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _function_complexity(block: ast.AST) -> int:
    return 1 + sum(_decisions(node) for node in _own_nodes(block))


def _class_complexity(node: ast.ClassDef) -> int:
    methods = [n for n in node.body if isinstance(n, _DEFS)]
    total = 1 + sum(_function_complexity(m) for m in methods)
    return int(total / max(1, len(methods)) + (len(methods) > 1))


def _own_nodes(block: ast.AST) -> list[ast.AST]:
    """The nodes of ``block`` outside the functions and classes nested in it."""
    found: list[ast.AST] = []
    pending = list(ast.iter_child_nodes(block))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _decisions(node: ast.AST) -> int:
    if isinstance(node, ast.If | ast.IfExp | ast.Assert | ast.ExceptHandler | ast.match_case):
        return 1
    if isinstance(node, ast.For | ast.AsyncFor | ast.While):
        return 1 + bool(node.orelse)
    if isinstance(node, ast.Try | ast.TryStar):
        return int(bool(node.orelse))
    if isinstance(node, ast.BoolOp):
        return len(node.values) - 1
    if isinstance(node, ast.comprehension):
        return 1 + len(node.ifs)
    return 0


def passes_core_filters(
    original: str,
    variant: str,
    function: str | None = None,
    jaccard_max: float = JACCARD_MAX,
    cc_min: int = CC_MIN,
) -> bool:
    """CoRE's selection: different enough on the surface, complex enough to reason about."""
    return (
        jaccard_similarity(original, variant) <= jaccard_max
        and cyclomatic_complexity(variant, function) >= cc_min
    )
