"""Training items from synthesized cases: each record of ``cases.jsonl`` asked both ways, and
probed at its intermediate states.

    items = case_items(read_cases(Path("runs/synth/cases.jsonl")), ("forward", "backward"))
    traces = trace_cases(pool, cases)
    items = case_items(cases, ("forward", "probe"), probes=case_probes(cases, traces, 2))

The cases' file is read by :mod:`codereasoner.benchmarks.case_files`; their items and the
benchmark that evaluates them are the cases family's (:mod:`codereasoner.families.cases`), and
re-exported here. What training adds: with
``hints``, each item carries our exact trace of the case's call (``fields["hint"]``, from
:func:`trace_hints`), which the prompt shows the teacher; the answer is verified all the same.
Probe items (direction ``probe``) come from our trace of the call (:func:`case_probes`), and
so does each record's process column (:func:`codereasoner.training.process.probed_values`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from codereasoner.benchmarks.case_files import CASES_FILE, Case, read_cases
from codereasoner.execution import Executor, Program, TraceOptions, parse_call
from codereasoner.families.cases.benchmark import DIRECTIONS, PROBE, case_items, check_directions
from codereasoner.families.cases.benchmark import NAME as BENCHMARK
from codereasoner.programs.probes import Probe, probes_for
from codereasoner.trace import ExecutionTrace, to_text, trace_batches

__all__ = [
    "BENCHMARK",
    "CASES_FILE",
    "DIRECTIONS",
    "PROBE",
    "PROBE_LIMIT",
    "Case",
    "case_items",
    "case_probes",
    "check_directions",
    "draw_probes",
    "read_cases",
    "trace_cases",
    "trace_hints",
]

HINT_CHARS = 4_000
TRACE_TRIES = 3  # a trace shown to the teacher is cut (saying so) beyond this
PROBE_LIMIT = 8  # probes drawn per case: items take the first --probes-per-case of them


def trace_cases(pool: Executor, cases: Sequence[Case]) -> dict[str, ExecutionTrace]:
    """Our exact trace of each case's call, by case id (cases whose call cannot be traced are
    left out), all cases batched through ``pool``."""
    traces: dict[str, ExecutionTrace] = {}
    missing = list(cases)
    # synthesized cases ran in the sandbox already: a trace lost now is a loaded machine's wall
    # limit, and the records must not depend on it, so such cases are traced again
    for _ in range(TRACE_TRIES):
        work = [(Program(c.code, c.entry_point), [parse_call(c.call)]) for c in missing]
        for case, (traced,) in zip(missing, trace_batches(pool, work, TraceOptions()), strict=True):
            if traced.trace is not None:
                traces[case.id] = traced.trace
        missing = [case for case in missing if case.id not in traces]
        if not missing:
            break
    return traces


def trace_hints(
    pool: Executor, cases: Sequence[Case], traces: Mapping[str, ExecutionTrace] | None = None
) -> dict[str, str]:
    """Our exact trace of each case's call, as compact text (cut beyond ``HINT_CHARS``);
    ``traces`` when the caller has them already."""
    traces = trace_cases(pool, cases) if traces is None else traces
    return {
        case.id: to_text(traces[case.id], source=case.code, max_chars=HINT_CHARS)
        for case in cases
        if case.id in traces
    }


def case_probes(
    cases: Sequence[Case], traces: Mapping[str, ExecutionTrace], limit: int = PROBE_LIMIT
) -> dict[str, list[Probe]]:
    """Up to ``limit`` probes per traced case (:func:`probes_for`, seeded by the case's id, so
    the same cases always get the same probes)."""
    return {
        case.id: probes_for(
            case.code,
            traces[case.id],
            frame=case.entry_point,
            limit=limit,
            rng=random.Random(f"probes:{case.id}"),
        )
        for case in cases
        if case.id in traces
    }


def draw_probes(
    cases: Sequence[Case], traces: Mapping[str, ExecutionTrace], per_case: int
) -> tuple[dict[str, list[Probe]], dict[str, list[Probe]]]:
    """The probes the items of direction probe ask (the first ``per_case`` of each case's),
    and every probe drawn (at least ``PROBE_LIMIT`` per case: the process column's), by case
    id. ``distill`` and the replay teacher draw them so."""
    drawn = case_probes(cases, traces, max(PROBE_LIMIT, per_case))
    return {case_id: found[:per_case] for case_id, found in drawn.items()}, drawn
