"""Trace teachers: chains of thought written from our exact trace of each item's call, no model.

    codereasoner distill --teacher trace --cases runs/synth --out runs/distill-trace --k 1
    codereasoner distill --teacher trace-corrupted --cases runs/synth --out runs/distill-control --k 1

For each request, the item's program is traced on its call in the sandbox, and the completion
is the chain (:func:`codereasoner.trace.chains.to_chain`: forward for an input -> output item,
backward for an item whose metadata says ``direction: backward``) inside
``<Reasoning>…</Reasoning>``, then the task kind's own answer (its oracle, ``direct`` style),
so that the run verifies it as it verifies any teacher's. Requests in the ``direct`` style get
the answer alone.

``trace-corrupted`` is the control: the same chains written from a corrupted trace
(:func:`codereasoner.trace.chains.corrupted`, seeded by the item's id): every stated value
wrong, the format and the final answer right. Training on it separates what a student learns
from the reasoning from what it learns from the format and the answer.

An item whose call cannot be traced, or whose kind has no oracle, gets a completion that says
so (finish reason ``trace_no_chain``), which verification rejects. Deterministic: every sample
of a request is the same text.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from codereasoner.execution import (
    Call,
    CallSyntaxError,
    Pool,
    Program,
    SandboxUnavailable,
    TraceOptions,
    parse_call,
)
from codereasoner.models.base import BackendError, Completion, OnResult, Request
from codereasoner.models.oracle import oracle_completion
from codereasoner.tasks.base import Item
from codereasoner.tasks.oracle import NoOracleAnswer
from codereasoner.trace import ExecutionTrace, trace_batches
from codereasoner.trace.chains import corrupted, to_chain

__all__ = ["NO_CHAIN", "CorruptedTraceTeacher", "TraceTeacher"]

NO_CHAIN = "trace_no_chain"  # finish_reason of an item the teacher cannot write a chain for
REASONING_STYLE = "reasoning"
BACKWARD = "backward"


class TraceTeacher:
    """The trace teacher (see the module): ``model_id`` ``trace``."""

    model_id = "trace"
    corrupt = False

    def __init__(self) -> None:
        self._pool: Pool | None = None
        self.requests = 0

    def preflight(self) -> None:
        """Start the sandbox that traces the items' calls."""
        self._sandbox()

    def _sandbox(self) -> Pool:
        if self._pool is None:
            try:
                self._pool = Pool(workers=1)
            except SandboxUnavailable as exc:
                raise BackendError(f"the trace teacher's sandbox cannot start: {exc}") from None
        return self._pool

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        traces = self._traces([request.item for request in requests])
        for index, request in enumerate(requests):
            text, reason = self._answer(request, traces[index])
            on_result(index, [Completion(sample, text, reason) for sample in request.samples])
            self.requests += 1

    def _traces(self, items: Sequence[Item | None]) -> list[ExecutionTrace | None]:
        work: list[tuple[Program, list[Call]]] = []
        where: list[int | None] = []
        for item in items:
            try:
                call = parse_call(item.call) if item is not None and item.call else None
            except CallSyntaxError:
                call = None
            if item is None or call is None:
                where.append(None)
                continue
            where.append(len(work))
            work.append((Program(item.program, item.entry), [call]))
        traced = list(trace_batches(self._sandbox(), work, TraceOptions())) if work else []
        return [None if at is None else traced[at][0].trace for at in where]

    def _answer(self, request: Request, trace: ExecutionTrace | None) -> tuple[str, str]:
        item = request.item
        if item is None:
            raise BackendError("the trace teacher needs each request's item (its program)")
        try:
            answer = oracle_completion(item, "direct")
        except NoOracleAnswer as exc:
            return f"[trace teacher: no answer: {exc}]", NO_CHAIN
        if (request.style or REASONING_STYLE) != REASONING_STYLE:
            return answer, "stop"
        if trace is None or trace.partial or trace.return_value is None:
            return f"[trace teacher: {item.id}: the call could not be traced]", NO_CHAIN
        if self.corrupt:
            trace = corrupted(trace, random.Random(f"corrupt:{item.id}"))
        backward = item.metadata.get("direction") == BACKWARD
        chain = to_chain(trace, source=item.program, call=item.call, backward=backward)
        return f"<Reasoning>\n{chain}\n</Reasoning>\n{answer}", "stop"

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


class CorruptedTraceTeacher(TraceTeacher):
    """The control (see the module): ``model_id`` ``trace-corrupted``."""

    model_id = "trace-corrupted"
    corrupt = True
