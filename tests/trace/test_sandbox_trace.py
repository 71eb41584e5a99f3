"""Tracing through the real sandbox, including every CoRE program and the REval programs."""

from __future__ import annotations

import json

import pytest

from codereasoner import values
from codereasoner.execution import (
    Batch,
    Call,
    Limits,
    Pool,
    Program,
    Status,
    TraceOptions,
    parse_call,
)
from codereasoner.families.reval.benchmark import case_program as _reval_program
from codereasoner.trace import trace_batches, trace_call, trace_calls
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

REVAL = SHARED_DATA / "reval" / "DREval_data.jsonl"
CORE = SHARED_DATA / "core" / "core_qa.json"
BENCH_LIMITS = Limits(timeout_s=20, memory_mb=1024)


def test_sandbox_trace_matches_the_program(pool: Pool) -> None:
    source = "def f(n):\n    total = 0\n    while n > 0:\n        total += n\n        n -= 2\n    return total\n"
    traced = trace_call(pool, Program(source), parse_call("f(5)"))
    assert traced.result.matches(9)
    trace = traced.trace
    assert trace is not None and not trace.partial
    assert [step.line for step in trace.steps] == [2, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 6]
    assert trace.values_at("total", 4) == ["5", "8", "9"]
    assert [step.cond for step in trace.steps if step.line == 3] == [True, True, True, False]
    assert trace.return_value == "9"


def test_each_call_of_a_batch_has_its_own_trace(pool: Pool) -> None:
    program = Program("def f(x):\n    if x:\n        return 'yes'\n    return 'no'\n")
    first, second = trace_calls(pool, program, [parse_call("f(1)"), parse_call("f(0)")])
    assert first.trace.coverage() == {2, 3} and second.trace.coverage() == {2, 4}
    assert (first.result.value, second.result.value) == ("'yes'", "'no'")


def test_step_cap_ends_the_child_even_if_the_program_swallows_exceptions(pool: Pool) -> None:
    source = (
        "def f():\n    n = 0\n    while True:\n        try:\n            n += 1\n"
        "        except BaseException:\n            pass\n"
    )
    traced = trace_call(pool, Program(source), parse_call("f()"), TraceOptions(max_steps=100))
    assert traced.result.status is Status.OUTPUT_LIMIT
    assert traced.trace.partial and traced.trace.partial_reason == "max_steps"
    assert len(traced.trace.steps) == 100
    assert traced.result.cpu_ms < 1000  # the cap ends it at once (CPU: load does not stretch)


def test_a_program_that_removes_the_tracer_gets_a_partial_trace(pool: Pool) -> None:
    source = "import sys\ndef f():\n    sys.settrace(None)\n    x = 1\n    return x\n"
    traced = trace_call(pool, Program(source), parse_call("f()"))
    assert traced.result.matches(1)
    assert traced.trace.partial_reason == "tracer_removed"


def test_preamble_and_epilogue_are_not_traced(pool: Pool) -> None:
    program = Program(
        "def f(xs: List[int]) -> int:\n    return sum(xs)\n",
        entry="driver",
        preamble="from typing import *",
        epilogue="def driver():\n    return f([1, 2]) + f(list(range(3)))",
    )
    traced = trace_call(pool, program, Call("driver"))
    assert traced.result.matches(6)
    assert [step.line for step in traced.trace.steps] == [2, 2]
    assert {step.frame for step in traced.trace.steps} == {"f"}


def _core_work(records: list[dict]) -> list[tuple[Program, list[Call]]]:
    work = []
    for record in records:
        entry = record["meta_data"]["func_name"]
        program = Program(record["source_code"], entry=entry, preamble="from typing import *")
        args = values.parse("[" + record["input"] + "]")
        work.append((program, [Call(entry, tuple(args))]))
    return work


def _json_like(value: object) -> object:
    if type(value) in (list, tuple):
        return [_json_like(item) for item in value]  # type: ignore[union-attr]
    if type(value) is dict:
        return {key: _json_like(item) for key, item in value.items()}  # type: ignore[union-attr]
    return value


@pytest.mark.skipif(not CORE.exists(), reason="shared benchmark data not available")
def test_every_core_program_traces_in_the_sandbox_and_returns_the_recorded_output(
    pool: Pool,
) -> None:
    records = json.loads(CORE.read_text())
    assert len(records) == 243
    options = TraceOptions(finish_untraced=True)
    mismatches = []
    outcomes = trace_batches(pool, _core_work(records), options, BENCH_LIMITS)
    for record, (traced,) in zip(records, outcomes, strict=True):
        trace = traced.trace
        capped = trace is not None and trace.partial_reason not in (None, "max_steps")
        if not traced.result.ok or trace is None or capped or not trace.return_literal:
            mismatches.append(f"{record['id']}: {traced.result.describe()}")
            continue
        if _json_like(values.parse(trace.return_value)) != json.loads(record["output"]):
            mismatches.append(f"{record['id']}: traced {trace.return_value} != {record['output']}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.skipif(not CORE.exists(), reason="shared benchmark data not available")
def test_core_probe_numbering_matches_the_documented_count(pool: Pool) -> None:
    """docs/benchmark-rules.md, "CoRE: data, probe labels and counts": the k-th line event's line minus 1 is the probe's target line for 216
    of the 242 probes on Python 3.11 (the sandbox's interpreter here)."""
    records = [r for r in json.loads(CORE.read_text()) if r["target_step_index"] is not None]
    options = TraceOptions(max_steps=20_000, finish_untraced=True)
    hits = 0
    for record, (traced,) in zip(
        records, trace_batches(pool, _core_work(records), options, BENCH_LIMITS), strict=True
    ):
        index = record["target_step_index"] - 1
        steps = traced.trace.steps
        hits += index < len(steps) and steps[index].line - 1 == record["target_line_number"]
    assert (hits, len(records)) == (216, 242)


def _reval_work(rows: list[dict]) -> tuple[list[tuple[Program, list[Call]]], list[str]]:
    """Every REval program with one of its inputs, and a name for each."""
    work, names = [], []
    for row in rows:
        for index, case in enumerate(row["inputs"]):
            work.append((_reval_program(row, case), [Call("__reval_case__")]))
            names.append(f"{row['task_id']} input {index}")
    return work, names


@pytest.mark.skipif(not REVAL.exists(), reason="shared benchmark data not available")
def test_reval_programs_trace_in_the_sandbox_like_plain_execution(pool: Pool) -> None:
    rows = [json.loads(line) for line in REVAL.read_text().splitlines() if line.strip()]
    work, names = _reval_work(rows)
    assert len(work) == 987
    plain = pool.run_all([Batch(program, calls, BENCH_LIMITS) for program, calls in work])
    options = TraceOptions(finish_untraced=True)
    problems, traced_count, missing_modules = [], 0, 0
    outcomes = trace_batches(pool, work, options, BENCH_LIMITS)
    for name, (untraced,), (traced,) in zip(names, plain, outcomes, strict=True):
        if untraced.exception_type == "ModuleNotFoundError":
            missing_modules += 1  # numpy / gensim programs: not installed in the sandbox
            continue
        traced_count += 1
        if traced.trace is None:  # failed before the entry point ran: so must plain execution
            assert not untraced.ok and untraced.exception_type == traced.result.exception_type
            continue
        reason = traced.trace.partial_reason
        if reason not in (None, "max_steps"):
            problems.append(f"{name}: {reason}")
        if (traced.result.status, traced.result.value) != (untraced.status, untraced.value):
            problems.append(
                f"{name}: plain {untraced.describe()} but traced {traced.result.describe()}"
            )
    assert not problems, "\n".join(problems)
    assert traced_count >= 900, (traced_count, missing_modules)
