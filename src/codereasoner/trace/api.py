"""Trace calls in the sandbox: the ground truth for every intermediate state.

Every result is re-checked here against the limits and trace options it ran under (a forged or
oversized trace from the sandbox becomes a ``ProtocolViolation`` result without a trace), so
that what reaches the caller is bounded whatever the sandboxed program wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from codereasoner.execution import Batch, Call, ExecResult, Executor, Limits, Program, TraceOptions
from codereasoner.execution.protocol import WireFormatError
from codereasoner.trace.model import ExecutionTrace


@dataclass(frozen=True)
class TracedCall:
    """A call's sandbox result and its trace (``None`` when the call died before reporting,
    e.g. on a timeout)."""

    result: ExecResult
    trace: ExecutionTrace | None


def _traced(result: ExecResult, options: TraceOptions) -> TracedCall:
    if result.trace is None:
        return TracedCall(result, None)
    try:
        return TracedCall(result, ExecutionTrace.from_wire(result.trace, options))
    except WireFormatError as exc:
        return TracedCall(ExecResult.protocol_violation(f"trace: {exc}"), None)


def trace_batches(
    pool: Executor,
    work: Iterable[tuple[Program, Sequence[Call]]],
    options: TraceOptions | None = None,
    limits: Limits | None = None,
) -> Iterator[list[TracedCall]]:
    """Trace many programs' calls across the pool's workers, in submission order."""
    chosen = options or TraceOptions()
    batches = (Batch(program, calls, limits, chosen) for program, calls in work)
    for results in pool.map(batches):  # the pool re-checks results against limits and caps
        yield [_traced(result, chosen) for result in results]


def trace_calls(
    pool: Executor,
    program: Program,
    calls: Sequence[Call],
    options: TraceOptions | None = None,
    limits: Limits | None = None,
) -> list[TracedCall]:
    """Trace several calls of one program (one sandboxed process per batch)."""
    (traced,) = trace_batches(pool, [(program, calls)], options, limits)  # consumes it fully
    return traced


def trace_call(
    pool: Executor,
    program: Program,
    call: Call,
    options: TraceOptions | None = None,
    limits: Limits | None = None,
) -> TracedCall:
    """Trace one call in the sandbox."""
    return trace_calls(pool, program, [call], options, limits)[0]
