"""Static, result and hash-seed filters: each rule drops what it should, with its reason."""

from __future__ import annotations

import pytest

from codereasoner.execution import (
    Batch,
    ExecResult,
    Limits,
    Pool,
    Program,
    TraceOptions,
    parse_call,
)
from codereasoner.execution.determinism import run_under_seeds
from codereasoner.synth.case import Candidate, Constraints
from codereasoner.synth.filters import (
    REASONS,
    FilterConfig,
    check_determinism,
    check_result,
    check_static,
)

LOOSE = FilterConfig(min_code_chars=1)
CLEAN = "def f(text, sep):\n    parts = text.split(sep)\n    return parts[-1].upper()"


def case(code: str = CLEAN, input_repr: str = "'a,b', ','", entry: str = "f") -> Candidate:
    return Candidate("c0", "str.split", code, input_repr, Constraints(), entry_point=entry)


def body(*lines: str, args: str = "x") -> str:
    return f"def f({args}):\n" + "\n".join(f"    {line}" for line in lines)


def test_a_clean_case_passes_every_static_check() -> None:
    assert check_static(case()) is None


STATIC_DROPS = [
    ("syntax_error", body("return x +"), "1"),
    ("non_printable", body("return 'a\x07b'"), "1"),
    ("code_too_short", "def f(x):\n    return x", "1"),
    ("code_too_long", body(*["x = x + 1"] * 80, "return x"), "1"),
    ("too_few_lines", "def f(x): return [x, x, x, x, x, x, x, x, x]", "1"),
    ("too_many_lines", body(*["x += 1"] * 35, "return x"), "1"),
    ("input_too_long", CLEAN, repr("a" * 200) + ", ','"),
    ("input_not_literal", CLEAN, "'a,b', sep"),
    ("input_not_literal", CLEAN, "'a,b'.upper(), ','"),
    ("no_entry_function", body("return x").replace("def f", "def g"), "1"),
    ("top_level_code", "LIMIT = 3\n\n" + body("return x * LIMIT"), "1"),
    ("import", "import os\n\n" + body("return x"), "1"),
    ("import", body("from math import sqrt", "return sqrt(x)"), "1"),
    ("forbidden_call", body("return eval('x + 1')"), "1"),
    ("forbidden_call", body("exec('y = 1')", "return x"), "1"),
    ("forbidden_call", body("return open('/etc/passwd').read()"), "1"),
    ("forbidden_call", body("return input()"), "1"),
    ("forbidden_call", body("return hash(x) % 7"), "1"),
    ("forbidden_call", body("return id(x) > 0"), "1"),
    ("forbidden_call", body("return compile('1', 's', 'eval')"), "1"),
    ("forbidden_call", body("return globals()"), "1"),
    ("forbidden_name", body("key = hash", "return sorted([x, 2], key=key)"), "1"),
    ("dunder_name", body("return __builtins__"), "1"),
    ("forbidden_call", body("return __import__('os').getcwd()"), "1"),
    ("dunder_name", body("return __name__ + x"), "'a'"),
    ("dunder_attribute", body("return x.__class__.__mro__"), "1"),
    ("dunder_attribute", body("return (1).__add__(x)"), "1"),
    ("dynamic_attribute", body("return getattr(x, '__class__')"), "1"),
    ("dynamic_attribute", body("name = 'upper'", "return getattr(x, name)()"), "'a'"),
    ("nondeterministic_module", body("return random.random() + x"), "1"),
    ("nondeterministic_module", body("return time.time() + x"), "1"),
    ("global_state", "def f(x):\n    global seen\n    seen = x\n    return x", "1"),
    ("async", "async def f(x):\n    return x + 1", "1"),
    ("infinite_loop", body("while True:", "    x += 1", "return x"), "1"),
    # bound names excuse nothing: a default value or an enclosing scope is still the built-in
    ("dunder_name", "def f(x, __import__=__import__):\n    return x", "1"),
    ("dunder_name", body("g = lambda __import__: 0", "return g(x)"), "1"),
    ("forbidden_name", "def f(x, open=open):\n    return x", "1"),
    ("forbidden_name", "def f(input, id):\n    return input + id", "1, 2"),
    ("forbidden_name", body("return [hash for hash in [x]][0]"), "1"),
    # frames, generators and tracebacks lead back to the caller's globals
    ("frame_attribute", body("return (y for y in [x]).gi_frame"), "1"),
    ("frame_attribute", body("g = (y for y in [x])", "return g.gi_code.co_consts"), "1"),
    ("dynamic_attribute", body("return getattr((y for y in [x]), 'gi_frame')"), "1"),
    # A break inside a nested loop leaves the nested loop only.
    ("infinite_loop", body("while 1:", "    for i in [1]:", "        break", "return x"), "1"),
]


@pytest.mark.parametrize(
    ("reason", "code", "input_repr"),
    STATIC_DROPS,
    ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(STATIC_DROPS)],
)
def test_static_rules_drop_with_their_reason(reason: str, code: str, input_repr: str) -> None:
    # Short snippets keep these readable: only the size rules use the default minimum.
    config = FilterConfig() if reason == "code_too_short" else LOOSE
    drop = check_static(case(code, input_repr), config)
    assert drop is not None, code
    assert (drop.stage, drop.reason) == ("static", reason), drop
    assert drop.candidate_id == "c0" and drop.detail and "\n" not in drop.detail


ALLOWED = [
    body("print(x)", "return x"),  # small prints are allowed; huge stdout is a dynamic drop
    "def f(data, ident):\n    return data + ident",
    body("time = 3", "return x + time"),  # a variable named like a module is a variable
    body("return getattr(x, 'upper')()"),  # literal, public attribute name
    body("while True:", "    x += 1", "    if x > 3:", "        break", "return x"),
    body("while True:", "    x += 1", "    if x > 3:", "        return x"),
    body("return sorted(set(x))"),  # sets are fine; order-dependence is a dynamic check
    "def f(x):\n    def g(y):\n        return y * 2\n    return [g(v) for v in x]",
    body("try:", "    return int(x)", "except ValueError:", "    return -1"),
]


@pytest.mark.parametrize("code", ALLOWED)
def test_ordinary_code_is_not_dropped(code: str) -> None:
    assert check_static(case(code, "'12'"), LOOSE) is None


def test_size_bounds_follow_the_config() -> None:
    long_output_code = body(*["x = x + 1"] * 10, "return x")
    assert check_static(case(long_output_code, "1"), FilterConfig(max_code_chars=1000)) is None
    drop = check_static(case(long_output_code, "1"), FilterConfig(max_code_chars=100))
    assert drop is not None and drop.reason == "code_too_long"
    assert check_static(case(CLEAN), FilterConfig(max_input_chars=5)).reason == "input_too_long"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="max_output_chars"):
        FilterConfig(max_output_chars=0)
    with pytest.raises(ValueError, match="minimum"):
        FilterConfig(min_lines=5, max_lines=2)


# -- dynamic checks, on real sandboxed runs ----------------------------------------------------


def run(pool: Pool, code: str, input_repr: str, limits: Limits | None = None) -> ExecResult:
    return pool.run(Program(code), parse_call(f"f({input_repr})"), limits)


RESULT_DROPS = [
    ("raised", body("return x[5]"), "[1]"),
    ("memory", body("return len([0] * x)"), "1000000000"),
    ("output_limit", body("print('x' * x)", "return 1"), "100000"),
    ("stdout_too_long", body("print('y' * x)", "return 1"), "500"),
    ("not_literal", body("return iter([x])"), "1"),
    ("not_literal", body("return (v for v in x)"), "[1]"),
    ("output_too_long", body("return 'z' * x"), "60"),
    ("output_too_long", body("return list(range(x))"), "20"),
]


@pytest.mark.parametrize(
    ("reason", "code", "input_repr"), RESULT_DROPS, ids=[r for r, _, _ in RESULT_DROPS]
)
def test_result_rules_drop_with_their_reason(
    pool: Pool, reason: str, code: str, input_repr: str
) -> None:
    candidate = case(code, input_repr)
    assert check_static(candidate, LOOSE) is None  # these pass statically: only running shows them
    drop = check_result(candidate, run(pool, code, input_repr))
    assert drop is not None and (drop.stage, drop.reason) == ("execution", reason), drop


def test_a_timeout_is_dropped(pool: Pool) -> None:
    code = body("while x > 0:", "    x += 1", "return x")
    result = run(pool, code, "1", Limits(timeout_s=0.2, memory_mb=256))
    drop = check_result(case(code, "1"), result)
    assert drop is not None and drop.reason == "timeout"


def test_the_trace_step_cap_is_its_own_reason(pool: Pool) -> None:
    code = body("t = 0", "for i in range(x):", "    t += i", "return t")
    batch = Batch(
        Program(code), [parse_call("f(1000)"), parse_call("f(3)")], None, TraceOptions(max_steps=50)
    )
    long, short = pool.run_all([batch])[0]
    drop = check_result(case(code, "1000"), long)
    assert drop is not None and drop.reason == "step_limit", drop
    assert short.trace is not None and check_result(case(code, "3"), short) is None


def test_a_good_result_is_kept_and_the_output_bound_is_configurable(pool: Pool) -> None:
    code = body("return 'z' * x")
    short, long = run(pool, code, "10"), run(pool, code, "55")
    assert check_result(case(code, "10"), short) is None
    assert check_result(case(code, "55"), long).reason == "output_too_long"  # type: ignore[union-attr]
    assert check_result(case(code, "55"), long, FilterConfig(max_output_chars=60)) is None
    printed = run(pool, body("print(x)", "return x"), "3")
    assert printed.stdout == "3\n" and check_result(case(code, "3"), printed) is None


def test_none_outputs_are_dropped_only_when_asked(pool: Pool) -> None:
    code = body("x.append(1)")
    result = run(pool, code, "[]")
    assert check_result(case(code, "[]"), result) is None
    drop = check_result(case(code, "[]"), result, FilterConfig(drop_none_output=True))
    assert drop is not None and drop.reason == "none_output"


def test_hash_seed_dependence_is_caught_and_stable_code_passes() -> None:
    words = "['apple', 'kiwi', 'fig', 'plum', 'pear', 'lime', 'date', 'yuzu']"
    unstable = Program(body("return ''.join(set(x))"))
    stable = Program(body("return ''.join(sorted(set(x)))"))
    calls = [parse_call(f"f({words})")]
    for program, dependent in ((unstable, True), (stable, False)):
        outcomes = run_under_seeds(program, calls, (0, 1), isolation="bubblewrap")
        drop = check_determinism(case(program.source, words), outcomes[0][0], outcomes[1][0])
        if dependent:
            assert drop is not None and (drop.stage, drop.reason) == (
                "determinism",
                "hash_seed_dependent",
            )
            assert " vs " in drop.detail
        else:
            assert outcomes[0][0].ok and drop is None


def test_every_reason_is_declared_once() -> None:
    reasons = [reason for group in REASONS.values() for reason in group]
    assert len(reasons) == len(set(reasons))
    tested_elsewhere = {"timeout", "step_limit", "none_output", "hash_seed_dependent"}
    used = {reason for reason, _, _ in STATIC_DROPS + RESULT_DROPS} | tested_elsewhere
    assert used <= set(reasons)
