"""Training items from synthesized cases: each record of ``cases.jsonl`` asked both ways.

    items = case_items(read_cases(Path("runs/synth/cases.jsonl")), ("forward", "backward"))

The cases, their items and the benchmark that evaluates them are declared in the benchmarks
layer (:mod:`codereasoner.benchmarks.cases`) and re-exported here. What training adds: with
``hints``, each item carries our exact trace of the case's call (``fields["hint"]``, from
:func:`trace_hints`), which the prompt shows the teacher; the answer is verified all the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from codereasoner.benchmarks.cases import (
    CASES_FILE,
    DIRECTIONS,
    Case,
    case_items,
    check_directions,
    read_cases,
)
from codereasoner.benchmarks.cases import NAME as BENCHMARK
from codereasoner.execution import Pool, Program, TraceOptions, parse_call
from codereasoner.trace import to_text, trace_batches

__all__ = [
    "BENCHMARK",
    "CASES_FILE",
    "DIRECTIONS",
    "Case",
    "case_items",
    "check_directions",
    "read_cases",
    "trace_hints",
]

HINT_CHARS = 4_000  # a trace shown to the teacher is cut (saying so) beyond this


def trace_hints(pool: Pool, cases: Sequence[Case]) -> dict[str, str]:
    """Our exact trace of each case's call, as compact text (cut beyond ``HINT_CHARS``)."""
    work = [(Program(case.code, case.entry_point), [parse_call(case.call)]) for case in cases]
    hints = {}
    for case, (traced,) in zip(cases, trace_batches(pool, work, TraceOptions()), strict=True):
        if traced.trace is not None:
            hints[case.id] = to_text(traced.trace, source=case.code, max_chars=HINT_CHARS)
    return hints
