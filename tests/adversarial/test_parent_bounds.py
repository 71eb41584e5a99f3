"""The parent bounds and checks everything it reads from the sandbox.

A program can find its result pipe (fds 3..63) and write a forged result line before the real
one. Each attack here does that through the real sandbox and asserts that the parent turns the
forgery into a ``ProtocolViolation`` error result (or, should the worker itself refuse the line,
the program's honest result), quickly, without a traceback, and that the harness keeps serving
(a canary after every attack). The same forged lines are also fed to ``ExecResult.from_wire``
directly, so the parent's checks are pinned down whatever the worker lets through. The CLI tests
run ``codereasoner run`` / ``trace`` as a user would on programs that print markup and escapes.
"""

from __future__ import annotations

import json
import math
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from codereasoner.execution import (
    CallSyntaxError,
    ExecResult,
    Limits,
    Pool,
    Program,
    Status,
    TraceOptions,
    parse_call,
)
from codereasoner.execution.protocol import WireFormatError, check_trace_wire
from codereasoner.trace import ExecutionTrace, trace_batches, trace_call
from tests.commands import Ran, invoke

CANARY = Program("def f(xs):\n    return sorted(xs) + [len(xs), abs(-2)]")
LIMITS = Limits(timeout_s=5.0, memory_mb=256)
M61 = (1 << 61) - 1

# The forger: writes RESULT_LINE (JSON text, spliced in verbatim) to every fd from 3 to 63, then
# returns honestly. Only the result pipe is open there; the worker reads the first line.
FORGER = """
import os

def f():
    line = RESULT_LINE.encode() + b"\\n"
    for fd in range(3, 64):
        try:
            os.write(fd, line)
        except OSError:
            pass
    return 'honest'
"""


def forger(line: str) -> Program:
    return Program(f"RESULT_LINE = {line!r}\n" + textwrap.dedent(FORGER))


def line_of(**fields: Any) -> str:
    """A result line as the child writes it, with ``fields`` forged (text values verbatim)."""
    parts = {"i": "0", "status": '"ok"', "type": '"int"', "value": '"1"', "literal": "true",
             "exc_type": "null", "exc_message": "null", "cpu_total_ms": "1.0",
             "max_rss_kb": "1000", "stdout": '""', "stderr": '""', "stdout_truncated": "false"}  # fmt: skip
    parts.update(
        {key: text if isinstance(text, str) else json.dumps(text) for key, text in fields.items()}
    )
    return "{" + ", ".join(f"{json.dumps(key)}: {text}" for key, text in parts.items()) + "}"


def assert_serves(pool: Pool) -> None:
    result = pool.run(CANARY, parse_call("f([3, 1, 2])"))
    assert result.ok, result.describe()
    assert result.matches([1, 2, 3, 3, 2], "exact")


def assert_contained(result: ExecResult) -> None:
    """A ProtocolViolation, or the honest result if the worker refused the forged line."""
    if result.ok:
        assert result.value == "'honest'", result.describe()
    else:
        assert result.status is Status.ERROR, result.describe()
        assert result.exception_type == "ProtocolViolation", result.describe()
    json.dumps(result.to_dict(), allow_nan=False)  # always representable as strict JSON
    assert math.isfinite(result.cpu_ms) and math.isfinite(result.wall_ms)


@pytest.fixture(scope="module")
def solo() -> Any:
    with Pool(1, limits=LIMITS) as pool:
        yield pool


# --- forged numbers, through the real sandbox ------------------------------------------------

FORGED_NUMBERS = {
    "rss_10_pow_400": {"max_rss_kb": str(10**400)},
    "rss_negative": {"max_rss_kb": "-5"},
    "rss_beyond_a_pebibyte": {"max_rss_kb": str(1 << 41)},
    "cpu_infinity": {"cpu_total_ms": "Infinity"},
    "cpu_huge": {"cpu_total_ms": "1e308"},
}


@pytest.mark.parametrize("name", FORGED_NUMBERS)
def test_forged_numbers_become_a_protocol_violation(solo: Pool, name: str) -> None:
    result = solo.run(forger(line_of(**FORGED_NUMBERS[name])), parse_call("f()"))
    assert_contained(result)
    assert result.max_rss_kb <= 1 << 40 and result.cpu_ms <= 7 * 24 * 3600 * 1000
    assert_serves(solo)


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("max_rss_kb", str(10**400)),
        ("max_rss_kb", "-1"),
        ("max_rss_kb", "true"),
        ("max_rss_kb", "1.5"),
        ("cpu_ms", "Infinity"),
        ("cpu_ms", "-Infinity"),
        ("cpu_ms", "NaN"),
        ("cpu_ms", "-3.0"),
        ("wall_ms", "1e300"),
        ("wall_ms", str(10**400)),
        ("wall_ms", '"12"'),
        ("wall_ms", "false"),
    ],
)
def test_from_wire_refuses_numbers_out_of_range(field: str, text: str) -> None:
    result = ExecResult.from_wire(json.loads(line_of(**{field: text})))
    assert result.status is Status.ERROR and result.exception_type == "ProtocolViolation"
    assert field in (result.exception_message or "")


@pytest.mark.parametrize(
    "fields",
    [
        {"status": '"fine"'},
        {"status": "1"},
        {"value": "7"},
        {"value": "null", "literal": "true"},
        {"literal": '"yes"'},
        {"type": "[]"},
        {"exc_type": "{}"},
        {"exc_message": "3"},
        {"stdout": "null"},
        {"stdout": "[1]"},
        {"stderr": "0"},
        {"stdout_truncated": "1"},
        {"trace": "[]"},
        {"trace": '"x"'},
        {"exc_message": json.dumps("m" * 30_000)},
        {"type": json.dumps("T" * 20_000)},
    ],
)
def test_from_wire_refuses_wrong_types_and_oversized_fields(fields: dict[str, str]) -> None:
    result = ExecResult.from_wire(json.loads(line_of(**fields)))
    assert result.exception_type == "ProtocolViolation", result.describe()


@pytest.mark.parametrize("raw", [None, [], "ok", 3, {"value": "1"}])
def test_from_wire_refuses_what_is_not_a_result(raw: object) -> None:
    assert ExecResult.from_wire(raw).exception_type == "ProtocolViolation"


def test_from_wire_keeps_an_honest_result() -> None:
    raw = json.loads(line_of(stdout='"hi\\n"'))
    raw.update(wall_ms=3.5, cpu_ms=1)
    result = ExecResult.from_wire(raw, Limits())
    assert result.ok and result.value == "1" and result.stdout == "hi\n" and result.cpu_ms == 1.0
    assert result.matches(1, "exact")


# --- forged sizes: value and output over the call's limits -----------------------------------


def test_forged_oversize_value_and_output_exceed_the_limits(solo: Pool) -> None:
    limits = Limits(timeout_s=5.0, memory_mb=256, max_value_chars=1000, max_output_chars=500)
    for fields in (
        {"value": json.dumps("[" + "1, " * 2000 + "]")},
        {"stdout": json.dumps("x" * 5000)},
        {"stderr": json.dumps("y" * 5000)},
    ):
        # The pool re-checks each result against the limits its call ran under.
        assert_contained(solo.run(forger(line_of(**fields)), parse_call("f()"), limits))
        direct = ExecResult.from_wire(json.loads(line_of(**fields)), limits)
        assert direct.exception_type == "ProtocolViolation"
    assert_serves(solo)


def test_limits_passed_to_from_wire_are_enforced_exactly() -> None:
    limits = Limits(max_value_chars=10, max_output_chars=4)
    assert ExecResult.from_wire(json.loads(line_of(value='"1234567890"')), limits).ok
    assert not ExecResult.from_wire(json.loads(line_of(value='"12345678901"')), limits).ok
    assert ExecResult.from_wire(json.loads(line_of(stdout='"abcd"')), limits).ok
    assert not ExecResult.from_wire(json.loads(line_of(stdout='"abcde"')), limits).ok


# --- forged traces ---------------------------------------------------------------------------

GOOD_STEP = {"line": 2, "frame": "f", "fid": 0, "depth": 0, "loops": []}
BAD_STEPS = [
    {"line": "x", "frame": "f"},
    {"frame": "f"},
    {"line": 1},
    {"line": 1, "frame": 7},
    {"line": True, "frame": "f"},
    {"line": -1, "frame": "f"},
    {"line": 1.5, "frame": "f"},
    {"line": 1, "frame": "f", "fid": "0"},
    {"line": 1, "frame": "f", "depth": None},
    {"line": 1, "frame": "f", "loops": [[1]]},
    {"line": 1, "frame": "f", "loops": [["a", 1]]},
    {"line": 1, "frame": "f", "loops": {"1": 2}},
    {"line": 1, "frame": "f", "changes": {"x": 1}},
    {"line": 1, "frame": "f", "changes": ["x"]},
    {"line": 1, "frame": "f", "args": {"x": None}},
    {"line": 1, "frame": "f", "cond": "yes"},
    {"line": 1, "frame": "f", "ret": 5},
    {"line": 1, "frame": "f", "yield": []},
    {"line": 1, "frame": "f", "exc": {}},
    {"line": 1, "frame": "f", "extra": "?"},
    "not a step",
    None,
]


def trace_line(trace: dict[str, Any]) -> str:
    return line_of(trace=json.dumps(trace))


def wire_trace(items: list[Any], **fields: Any) -> dict[str, Any]:
    trace = {
        "steps": items,
        "return": "1",
        "return_literal": True,
        "exception": None,
        "partial": False,
        "partial_reason": None,
        "events": len(items),
    }
    trace.update(fields)
    return trace


@pytest.mark.parametrize("step", BAD_STEPS, ids=[json.dumps(step)[:40] for step in BAD_STEPS])
def test_malformed_trace_steps_are_refused_in_the_parent(step: Any) -> None:
    trace = wire_trace([GOOD_STEP, step])
    with pytest.raises(WireFormatError, match="step 1"):
        check_trace_wire(trace)
    with pytest.raises(ValueError):
        ExecutionTrace.from_wire(trace)
    assert ExecResult.from_wire(json.loads(trace_line(trace))).exception_type == "ProtocolViolation"


@pytest.mark.parametrize(
    "fields",
    [
        {"steps": {"0": GOOD_STEP}},
        {"return": 5},
        {"return_literal": "true"},
        {"partial": 1},
        {"partial_reason": []},
        {"events": -1},
        {"events": "3"},
        {"exception": "boom"},
        {"exception": {"message": "no type"}},
        {"exception": {"type": "E", "message": 3}},
        {"unknown": 1},
    ],
)
def test_malformed_trace_fields_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(WireFormatError):
        check_trace_wire(wire_trace([GOOD_STEP], **fields))


def test_a_forged_malformed_trace_step_through_the_sandbox(solo: Pool) -> None:
    line = trace_line(wire_trace([{"line": "x", "frame": "f"}]))
    program = forger(line)
    traced = trace_call(solo, program, parse_call("f()"), TraceOptions())
    assert traced.trace is None
    assert_contained(traced.result)
    (batch,) = trace_batches(solo, [(program, [parse_call("f()")] * 2)], TraceOptions())
    for one in batch:
        assert one.trace is None or one.result.ok
        assert_contained(one.result)
    assert_contained(solo.run(program, parse_call("f()")))  # untraced: the pool reads it too
    assert_serves(solo)


def test_a_forged_trace_over_the_step_cap_is_refused_fast(solo: Pool) -> None:
    # 150,000 steps against a cap of 10,000: took 159 s and 1 GB in `trace` before.
    steps = ", ".join(['{"line": 1, "frame": "f"}'] * 150_000)
    line = line_of(trace='{"steps": [' + steps + '], "events": 1}')
    started = time.process_time()
    traced = trace_call(solo, forger(line), parse_call("f()"), TraceOptions(max_steps=10_000))
    spent = time.process_time() - started
    assert traced.trace is None
    assert_contained(traced.result)
    # the parent's own CPU: reading 3.75 MB off the pipe and refusing it (159 s before)
    assert spent < 10, spent
    started = time.process_time()
    with pytest.raises(WireFormatError, match="150000 steps"):
        check_trace_wire(json.loads(line)["trace"], TraceOptions(max_steps=10_000))
    assert time.process_time() - started < 5  # the count is checked before any step is read
    assert_serves(solo)


def test_a_forged_trace_over_the_size_cap_is_refused(solo: Pool) -> None:
    options = TraceOptions(max_steps=10_000, max_value_chars=200, max_trace_chars=50_000)
    change = json.dumps({f"v{k}": "1" * 200 for k in range(40)})
    steps = ", ".join([f'{{"line": 1, "frame": "f", "changes": {change}}}'] * 200)
    line = line_of(trace='{"steps": [' + steps + "]}")
    traced = trace_call(solo, forger(line), parse_call("f()"), options)
    assert traced.trace is None
    assert_contained(traced.result)
    with pytest.raises(WireFormatError, match="larger than the cap"):
        check_trace_wire(json.loads(line)["trace"], options)
    # One value longer than max_value_chars allows (markers aside) is refused too.
    long_value = wire_trace([{**GOOD_STEP, "changes": {"x": "1" * 20_000}}])
    with pytest.raises(WireFormatError, match="value cap"):
        check_trace_wire(long_value, options)
    assert_serves(solo)


def test_real_traces_pass_the_parent_checks(solo: Pool) -> None:
    source = "def f(n):\n    out = []\n    for i in range(n):\n        out.append(i * 'ab')\n    return out\n"
    options = TraceOptions(max_steps=60, max_trace_chars=2_000)
    traced = trace_call(solo, Program(source), parse_call("f(400)"), options)
    assert traced.result.status is Status.OUTPUT_LIMIT, traced.result.describe()
    assert traced.trace is not None and traced.trace.partial  # capped by the tracer, accepted
    full = trace_call(solo, Program(source), parse_call("f(5)"), TraceOptions())
    assert full.result.ok and full.trace is not None and len(full.trace) == 13
    check_trace_wire(full.result.trace, TraceOptions())
    assert_serves(solo)


# --- forged hash-colliding values --------------------------------------------------------------


def colliding_set_text(count: int = 38_000) -> str:
    return "{" + ", ".join(str(M61 * k) for k in range(1, count)) + "}"


def test_a_forged_hash_colliding_set_is_judged_in_well_under_a_second(solo: Pool) -> None:
    text = colliding_set_text()  # 0.95 MB: 14 s in matches() before
    result = solo.run(forger(line_of(type='"set"', value=json.dumps(text))), parse_call("f()"))
    assert result.ok or result.exception_type == "ProtocolViolation", result.describe()
    expected = set(range(1, 38_000))  # building the colliding set itself would take seconds
    for policy in ("strict", "exact", "lenient"):
        started = time.process_time()  # CPU time: a loaded machine does not stretch it
        assert not result.matches(expected, policy)
        assert time.process_time() - started < 1, policy
    assert_serves(solo)


# --- the command line: untrusted text reaches the terminal escaped ------------------------------


def cli(tmp_path: Path, source: str, *args: str) -> Ran:
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(source))
    return invoke(*args[:1], path, "--call", "f()", *args[1:], env={"COLUMNS": "400"})


def no_traceback(done: Ran) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    for raw in ("\x1b", "\x07", "\x9b", "\r"):
        assert raw not in done.stdout + done.stderr


MARKUP_AND_ESCAPES = """
import sys

def f():
    print("[/] [bold]x[/bold] :thumbs_up:")
    print("\\x1b]0;PWNED\\x07\\x1b[2J fake ok\\r\\u202e")
    sys.stderr.write("[/red] \\x1b[31merr\\n")
    raise ValueError("[/bold] \\x1b[1mboom")
"""


def test_run_shows_markup_and_escapes_from_the_child_as_text(tmp_path: Path) -> None:
    done = cli(tmp_path, MARKUP_AND_ESCAPES, "run")
    assert done.returncode == 1, done.stdout + done.stderr
    no_traceback(done)
    out = done.stdout
    assert "[/] [bold]x[/bold] :thumbs_up:" in out
    assert "\\x1b]0;PWNED\\x07\\x1b[2J fake ok\\x0d\\u202e" in out
    assert "[/red] \\x1b[31merr" in out
    assert "ValueError: [/bold] \\x1b[1mboom" in out
    payload = json.loads(cli(tmp_path, MARKUP_AND_ESCAPES, "run", "--json").stdout)
    assert payload["result"]["stdout"].startswith("[/] [bold]x[/bold]")
    assert "\x1b]0;PWNED" in payload["result"]["stdout"]  # JSON keeps the exact text, escaped


def test_run_with_forged_numbers_exits_cleanly_with_valid_json(tmp_path: Path) -> None:
    for fields in ({"max_rss_kb": str(10**400)}, {"cpu_total_ms": "Infinity"}):
        source = f"RESULT_LINE = {line_of(**fields)!r}\n" + FORGER
        done = cli(tmp_path, source, "run", "--json")
        no_traceback(done)
        payload = json.loads(done.stdout, parse_constant=lambda name: pytest.fail(name))
        result = payload["result"]
        assert result["exception_type"] == "ProtocolViolation" or result["value"] == "'honest'"
        table = cli(tmp_path, source, "run")
        no_traceback(table)
        assert "ProtocolViolation" in table.stdout or "'honest'" in table.stdout


def test_trace_escapes_values_and_shows_stdout(tmp_path: Path) -> None:
    source = """
    def f():
        s = "[/]\\x1b[2J"
        print("printed [/] \\x1b]0;T\\x07")
        raise ValueError("[/bold] \\x1b[1m")
    """
    done = cli(tmp_path, source, "trace")
    assert done.returncode == 1
    no_traceback(done)
    assert "printed [/] \\x1b]0;T\\x07" in done.stdout  # stdout is shown
    assert "raises ValueError: [/bold] \\x1b[1m" in done.stdout
    text = cli(tmp_path, source, "trace", "--text")
    no_traceback(text)
    assert "raises ValueError: [/bold] \\x1b[1m" in text.stdout
    payload = json.loads(cli(tmp_path, source, "trace", "--json").stdout)
    assert payload["exception"]["message"] == "[/bold] \x1b[1m"


def test_trace_of_a_capped_call_does_not_claim_it_returned(tmp_path: Path) -> None:
    done = cli(
        tmp_path,
        "def f():\n    n = 0\n    while True:\n        n += 1\n",
        "trace",
        "--max-steps",
        "20",
    )
    assert done.returncode == 1
    no_traceback(done)
    assert "returns None" not in done.stdout
    assert "did not finish" in done.stdout and "--max-steps cap" in done.stdout


def test_trace_of_a_forged_bad_step_is_one_clear_error(tmp_path: Path) -> None:
    source = f"RESULT_LINE = {trace_line(wire_trace([{'line': 'x', 'frame': 'f'}]))!r}\n" + FORGER
    done = cli(tmp_path, source, "trace")
    no_traceback(done)
    assert done.returncode == 1
    assert "ProtocolViolation" in done.stderr + done.stdout or "honest" in done.stdout


@pytest.mark.parametrize(
    "text",
    [
        "f(0x" + "f" * 4000 + ")",  # parses as an int, cannot be written in decimal
        "f(*[0x" + "f" * 4000 + "])",
        "f(k=0x" + "f" * 4000 + ")",
        "f(" + "(" * 3000 + "1" + ")" * 3000 + ")",
        "f(" + "[" * 3000 + "]" * 3000 + ")",
        "f(1" + ", 1" * 20_000 + ")",
        "f('é', '\u2028', k='ü')",  # columns count UTF-8 bytes
    ],
    ids=[
        "huge hex",
        "huge hex starred",
        "huge hex keyword",
        "deep parens",
        "deep list",
        "wide",
        "utf8",
    ],
)
def test_any_call_text_parses_or_is_a_call_syntax_error(text: str) -> None:
    """Model answers reach parse_call in the parent: whatever they hold, the only failure is
    CallSyntaxError, which every grader turns into a verdict."""
    try:
        call = parse_call(text)
    except CallSyntaxError:
        return
    call.wire()  # what parsed goes to the sandbox as it is
