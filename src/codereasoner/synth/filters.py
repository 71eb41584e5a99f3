"""Filters that decide whether a candidate case is kept, each drop with a stable reason.

Three kinds of check, in pipeline order:

* :func:`check_static` reads the code and the call with :mod:`ast` only (nothing runs): size
  bounds, one top-level function, literal-only input, and forbidden constructs (imports, I/O,
  ``eval``/``exec``, introspection that reaches dunders, randomness and clocks, ``id``/``hash``,
  ``while True`` without a way out, ...). ``print`` is allowed: huge output is a dynamic drop.
* :func:`check_result` judges one sandboxed run (:class:`~codereasoner.execution.ExecResult`):
  raised, timed out, memory, output caps, the tracer's step cap, huge stdout, a return value whose canonical rendering
  is longer than ``max_output_chars`` (50 by default, CodeReasoner's rule) or not a literal.
* :func:`check_determinism` compares two runs under different ``PYTHONHASHSEED`` values (see
  :mod:`codereasoner.execution.determinism`); :func:`check_set_order` compares a run with one of
  the same program rewritten so that its sets iterate in reverse (:mod:`.setorder`), which
  catches outputs that depend on CPython's set layout for values whose hash ignores the seed
  (``int``: ``{10, 11, 2, 3}.pop()``).

Every check returns ``None`` (keep) or a :class:`~codereasoner.synth.case.Drop` whose ``reason``
is one of :data:`REASONS` and whose ``detail`` is one human-readable line.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from typing import Final

from codereasoner.execution import CallSyntaxError, ExecResult, Status, parse_call
from codereasoner.execution.code_safety import Finding, unsafe_construct
from codereasoner.execution.determinism import observable
from codereasoner.settings import check_at_least
from codereasoner.synth.case import Candidate, Drop

STATIC: Final = "static"
EXECUTION: Final = "execution"
DETERMINISM: Final = "determinism"

# Every reason a filter can give, by stage; stable identifiers for drop files and summaries.
REASONS: Final[dict[str, tuple[str, ...]]] = {
    STATIC: (
        "syntax_error",
        "non_printable",
        "code_too_short",
        "code_too_long",
        "too_few_lines",
        "too_many_lines",
        "input_too_long",
        "input_not_literal",
        "no_entry_function",
        "top_level_code",
        "import",
        "forbidden_call",
        "forbidden_name",
        "dunder_attribute",
        "dunder_name",
        "frame_attribute",
        "dynamic_attribute",
        "nondeterministic_module",
        "global_state",
        "async",
        "infinite_loop",
    ),
    EXECUTION: (
        "raised",
        "timeout",
        "memory",
        "output_limit",
        "step_limit",
        "killed",
        "sandbox_error",
        "stdout_too_long",
        "not_literal",
        "output_too_long",
        "none_output",
    ),
    DETERMINISM: ("hash_seed_dependent", "set_layout_dependent"),
}


@dataclass(frozen=True)
class FilterConfig:
    """Bounds for the filters; the defaults fit concise CodeReasoner-style cases.

    ``max_output_chars`` bounds the canonical rendering of the returned value (CodeReasoner's
    50-character rule); ``max_stdout_chars`` what the case may print; code and input bounds are
    in characters, line bounds count non-blank lines of the code.
    """

    max_output_chars: int = 50
    max_stdout_chars: int = 200
    min_code_chars: int = 30
    max_code_chars: int = 600
    min_lines: int = 2
    max_lines: int = 30
    max_input_chars: int = 120
    drop_none_output: bool = False  # CodeI/O drops None outputs; CodeReasoner does not

    def __post_init__(self) -> None:
        for name in (
            "max_output_chars",
            "max_stdout_chars",
            "max_code_chars",
            "max_lines",
            "max_input_chars",
        ):
            check_at_least(1, **{name: getattr(self, name)})
        if self.min_code_chars > self.max_code_chars or self.min_lines > self.max_lines:
            raise ValueError("FilterConfig: a minimum is larger than its maximum")


def _drop(candidate: Candidate, stage: str, reason: str, detail: str = "") -> Drop:
    assert reason in REASONS[stage], reason
    return Drop(candidate.id, stage, reason, " ".join(detail.split())[:300])


def parse_quietly(code: str) -> ast.Module:
    """``ast.parse`` without the warnings CPython prints for odd code (invalid escapes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(code)


# ---------------------------------------------------------------------------------------
# static checks
# ---------------------------------------------------------------------------------------


def check_static(candidate: Candidate, config: FilterConfig | None = None) -> Drop | None:
    """Drop a candidate whose code or call breaks a static rule; ``None`` keeps it."""
    config = config or FilterConfig()
    code = candidate.code
    drop = _check_sizes(candidate, config)
    if drop is not None:
        return drop
    try:
        tree = parse_quietly(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return _drop(candidate, STATIC, "syntax_error", str(exc) or type(exc).__name__)
    found = _check_module(tree, candidate.entry_point)
    if found is None:
        found = unsafe_construct(tree)
    if found is not None:
        reason, node, detail = found
        where = f"line {getattr(node, 'lineno', '?')}: " if node is not None else ""
        return _drop(candidate, STATIC, reason, where + detail)
    return _check_input(candidate)


def _check_sizes(candidate: Candidate, config: FilterConfig) -> Drop | None:
    code = candidate.code
    if not all(char.isprintable() or char in "\n\t" for char in code):
        return _drop(candidate, STATIC, "non_printable", "the code has a non-printable character")
    if len(code) < config.min_code_chars:
        return _drop(
            candidate, STATIC, "code_too_short", f"{len(code)} characters < {config.min_code_chars}"
        )
    if len(code) > config.max_code_chars:
        return _drop(
            candidate, STATIC, "code_too_long", f"{len(code)} characters > {config.max_code_chars}"
        )
    lines = sum(1 for line in code.splitlines() if line.strip())
    if lines < config.min_lines:
        return _drop(candidate, STATIC, "too_few_lines", f"{lines} lines < {config.min_lines}")
    if lines > config.max_lines:
        return _drop(candidate, STATIC, "too_many_lines", f"{lines} lines > {config.max_lines}")
    if len(candidate.input_repr) > config.max_input_chars:
        return _drop(
            candidate,
            STATIC,
            "input_too_long",
            f"{len(candidate.input_repr)} characters > {config.max_input_chars}",
        )
    return None


def _check_input(candidate: Candidate) -> Drop | None:
    try:
        parse_call(candidate.call)
    except CallSyntaxError as exc:
        return _drop(candidate, STATIC, "input_not_literal", str(exc))
    return None


def _check_module(tree: ast.Module, entry: str) -> Finding | None:
    """The module holds function definitions only, one of them the entry point."""
    defined = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            defined = defined or node.name == entry
        elif isinstance(node, ast.AsyncFunctionDef):
            return ("async", node, "async function")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            return ("import", node, ast.unparse(node))
        else:
            return ("top_level_code", node, f"top-level {type(node).__name__} statement")
    if not defined:
        return ("no_entry_function", None, f"no top-level 'def {entry}(...)'")
    return None


# ---------------------------------------------------------------------------------------
# dynamic checks
# ---------------------------------------------------------------------------------------

_STATUS_REASONS: Final[dict[Status, str]] = {
    Status.ERROR: "raised",
    Status.TIMEOUT: "timeout",
    Status.MEMORY: "memory",
    Status.OUTPUT_LIMIT: "output_limit",
    Status.KILLED: "killed",
    Status.SANDBOX_ERROR: "sandbox_error",
}


def check_result(
    candidate: Candidate, result: ExecResult, config: FilterConfig | None = None
) -> Drop | None:
    """Drop a candidate whose sandboxed run failed or whose output breaks a bound."""
    config = config or FilterConfig()
    if not result.ok:
        reason = _STATUS_REASONS[result.status]
        trace = result.trace or {}
        if result.status is Status.OUTPUT_LIMIT and trace.get("partial_reason") == "max_steps":
            reason = "step_limit"  # CRUXEval-style cap on the number of traced steps
        return _drop(candidate, EXECUTION, reason, result.describe())
    if result.stdout_truncated or len(result.stdout) > config.max_stdout_chars:
        size = "more than the sandbox cap" if result.stdout_truncated else str(len(result.stdout))
        return _drop(
            candidate,
            EXECUTION,
            "stdout_too_long",
            f"printed {size} characters > {config.max_stdout_chars}",
        )
    if not result.is_literal or result.value is None:
        return _drop(
            candidate, EXECUTION, "not_literal", f"returned {result.value_type or 'a non-literal'}"
        )
    if len(result.value) > config.max_output_chars:
        return _drop(
            candidate,
            EXECUTION,
            "output_too_long",
            f"output renders to {len(result.value)} characters > {config.max_output_chars}",
        )
    if config.drop_none_output and result.value == "None":
        return _drop(candidate, EXECUTION, "none_output", "returned None")
    return None


def check_determinism(
    candidate: Candidate, result_a: ExecResult, result_b: ExecResult
) -> Drop | None:
    """Drop a candidate whose observable outcome differs between two hash-seed runs."""
    if observable(result_a) == observable(result_b):
        return None
    return _drop(
        candidate,
        DETERMINISM,
        "hash_seed_dependent",
        f"{result_a.describe()} vs {result_b.describe()}",
    )


def check_set_order(
    candidate: Candidate, plain: ExecResult, reversed_sets: ExecResult
) -> Drop | None:
    """Drop a candidate whose observable outcome changes when its sets iterate in reverse
    (``plain`` and ``reversed_sets`` ran under the same hash seed)."""
    if observable(plain) == observable(reversed_sets):
        return None
    return _drop(
        candidate,
        DETERMINISM,
        "set_layout_dependent",
        f"{plain.describe()} vs {reversed_sets.describe()} with sets iterating in reverse",
    )
