"""Several small programs per sandboxed batch: one fork runs the calls of up to 16 programs.

A generated case is tiny, so a batch per program spends most of its time on the fork. Here each
program of a group is wrapped in its own function::

    def _codereasoner_case3():
        <the program, indented>
        return _codereasoner_case_entry(f)

and its calls go to the entry ``_codereasoner_case3().run`` (resolved outside the traced call,
so a trace holds only the program's own frames). The wrapping does not change what a call
returns or prints: generated code cannot rebind globals (``global`` is a static drop) and each
call gets a fresh namespace. Line numbers move by a known offset per program, which
:func:`run_grouped` returns so that traces can be read in the program's own numbering.

Programs the indentation could change (a string or line continuation spanning lines) run in a
batch of their own, unchanged.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from codereasoner.execution import (
    Batch,
    Call,
    ExecResult,
    Executor,
    Limits,
    Program,
    Status,
    TraceOptions,
)

GROUP_PROGRAMS = 16
_WRAPPER = "_codereasoner_case"
_HEADER = f"class {_WRAPPER}_entry:\n    def __init__(self, run):\n        self.run = run\n"


@dataclass(frozen=True)
class Work:
    """The calls of one program."""

    code: str
    entry: str
    calls: Sequence[Call]


def groupable(code: str) -> bool:
    """True when indenting ``code`` cannot change it (no string or continuation spans lines)."""
    return '"""' not in code and "'''" not in code and "\\\n" not in code


def _wrapped(position: int, work: Work) -> str:
    body = "\n".join("    " + line if line.strip() else line for line in work.code.splitlines())
    return f"def {_WRAPPER}{position}():\n{body}\n    return {_WRAPPER}_entry({work.entry})\n"


def _plan(
    work: Sequence[Work], limits: Limits, trace: TraceOptions | None
) -> tuple[list[Batch], list[list[int]], list[int]]:
    """Batches, the work position of each batch call, and each program's line offset."""
    batches: list[Batch] = []
    owners: list[list[int]] = []
    offsets = [0] * len(work)
    group: list[int] = []

    def alone(position: int) -> None:
        item = work[position]
        batches.append(Batch(Program(item.code, item.entry), list(item.calls), limits, trace))
        owners.append([position] * len(item.calls))

    def flush() -> None:
        if not group:
            return
        parts, lines = [_HEADER], _HEADER.count("\n")
        calls: list[Call] = []
        owner: list[int] = []
        for position in group:
            text = _wrapped(position, work[position])
            offsets[position] = lines + 1  # the program's line 1 is the line after the def
            parts.append(text)
            lines += text.count("\n")
            entry = f"{_WRAPPER}{position}().run"
            calls += [Call(entry, call.args, call.kwargs) for call in work[position].calls]
            owner += [position] * len(work[position].calls)
        source = "".join(parts)
        try:
            ast.parse(source)
        except (SyntaxError, ValueError):  # never expected; run each program on its own then
            for position in group:
                offsets[position] = 0
                alone(position)
        else:
            batches.append(Batch(Program(source, f"{_WRAPPER}_entry"), calls, limits, trace))
            owners.append(owner)
        group.clear()

    for position, item in enumerate(work):
        if not item.calls:
            continue
        if not groupable(item.code):
            alone(position)
            continue
        group.append(position)
        if len(group) == GROUP_PROGRAMS:
            flush()
    flush()
    return batches, owners, offsets


def run_batches(pool: Executor, batches: Sequence[Batch]) -> list[list[ExecResult]]:
    """Results of every batch; a batch hit by an infrastructure failure (a worker that died or
    stopped answering, never the program's own verdict) runs once more, so that a passing
    hiccup does not become a drop that an uninterrupted run would not have."""
    results = list(pool.map(batches))
    failed = [
        index
        for index, batch_results in enumerate(results)
        if any(result.status is Status.SANDBOX_ERROR for result in batch_results)
    ]
    if failed:
        for index, again in zip(failed, pool.map(batches[i] for i in failed), strict=True):
            results[index] = again
    return results


def run_grouped(
    pool: Executor, work: Sequence[Work], limits: Limits, trace: TraceOptions | None = None
) -> list[tuple[list[ExecResult], int]]:
    """Each program's results (in call order) and the line offset of its traces: a traced line
    ``n`` is line ``n - offset`` of the program."""
    batches, owners, offsets = _plan(work, limits, trace)
    results: list[list[ExecResult]] = [[] for _ in work]
    for owner, batch_results in zip(owners, run_batches(pool, batches), strict=True):
        for position, result in zip(owner, batch_results, strict=True):
            results[position].append(result)
    return [(results[position], offsets[position]) for position in range(len(work))]
