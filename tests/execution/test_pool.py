"""Behaviour of the real sandbox pool on ordinary, broken and unusual programs."""

from __future__ import annotations

import math
import os
import signal
import threading

import pytest

from codereasoner.execution import Batch, Call, Limits, Pool, Program, Status, parse_call
from codereasoner.execution.determinism import nondeterministic_calls, run_under_seeds


def run(pool: Pool, source: str, call: str = "f()", **limits: object):
    return pool.run(Program(source), parse_call(call), Limits(**limits) if limits else None)


def test_value_type_stdout_and_resources_are_reported(pool: Pool) -> None:
    result = run(pool, "def f(n):\n    print('n is', n)\n    return {'n': n, 'sq': n * n}", "f(7)")
    assert result.status is Status.OK
    assert result.value == "{'n': 7, 'sq': 49}"
    assert result.value_type == "dict"
    assert result.parsed_value() == {"n": 7, "sq": 49}
    assert result.stdout == "n is 7\n"
    assert result.wall_ms > 0 and result.cpu_ms >= 0 and result.max_rss_kb > 1000


def test_syntax_error_is_a_clear_error_status(pool: Pool) -> None:
    result = run(pool, "def f(:\n    return 1")
    assert result.status is Status.ERROR
    assert result.exception_type == "SyntaxError"
    assert result.exception_message


def test_missing_entry_point_is_reported(pool: Pool) -> None:
    result = run(pool, "def g():\n    return 1", "f()")
    assert result.status is Status.ERROR
    assert result.exception_type == "EntryPointError"
    assert "'f' is not defined" in result.exception_message


def test_entry_that_is_not_callable(pool: Pool) -> None:
    result = run(pool, "f = 3", "f()")
    assert result.exception_type == "EntryPointError"


def test_solution_method_and_keyword_arguments(pool: Pool) -> None:
    source = (
        "class Solution:\n    def twoSum(self, nums, target, *, offset=0):\n"
        "        seen = {}\n        for i, n in enumerate(nums):\n"
        "            if target - n in seen:\n                return [seen[target - n] + offset, i + offset]\n"
        "            seen[n] = i\n"
    )
    result = run(pool, source, "Solution().twoSum([2, 7, 11], 9, offset=1)")
    assert result.matches([1, 2], "exact")


def test_program_exceptions_keep_type_and_message(pool: Pool) -> None:
    result = run(pool, "def f(d):\n    return d['missing']", "f({})")
    assert (result.status, result.exception_type, result.exception_message) == (
        Status.ERROR,
        "KeyError",
        "'missing'",
    )


def test_non_literal_return_values_are_described_not_parsed(pool: Pool) -> None:
    result = run(pool, "def f():\n    return (x for x in [1])")
    assert result.ok and not result.is_literal
    assert result.value == "<generator object>"
    with pytest.raises(ValueError):
        result.parsed_value()


def test_special_floats_and_sets_round_trip(pool: Pool) -> None:
    result = run(pool, "def f():\n    return [float('inf'), float('nan'), {'b', 'a'}]")
    value = result.parsed_value()
    assert value[0] == math.inf and math.isnan(value[1]) and value[2] == {"a", "b"}
    assert result.value == "[float('inf'), float('nan'), {'a', 'b'}]"


def test_output_is_capped(pool: Pool) -> None:
    result = run(pool, "def f():\n    print('y' * 500)\n    return 1", max_output_chars=100)
    assert result.status is Status.OUTPUT_LIMIT
    assert result.stdout == "y" * 100


def test_memory_limit_is_per_call(pool: Pool) -> None:
    hungry = "def f(mb):\n    return len(bytearray(mb << 20))"
    assert run(pool, hungry, "f(50)", memory_mb=100).matches(50 << 20)
    assert run(pool, hungry, "f(200)", memory_mb=100).status is Status.MEMORY


def test_calls_in_a_batch_do_not_share_program_state(pool: Pool) -> None:
    program = Program(
        "seen = []\ndef f(x, acc=[]):\n    acc.append(x)\n    seen.append(x)\n"
        "    return (len(acc), len(seen))"
    )
    results = pool.run_batch(program, [parse_call(f"f({n})") for n in range(4)])
    assert [result.parsed_value() for result in results] == [(1, 1)] * 4


def test_random_is_seeded_identically_for_every_call(pool: Pool) -> None:
    program = Program("import random\ndef f():\n    return random.random()")
    first, second = pool.run_batch(program, [parse_call("f()"), parse_call("f()")])
    again = pool.run(program, parse_call("f()"))
    assert first.value == second.value == again.value


def test_map_keeps_submission_order_across_workers(pool: Pool) -> None:
    program = Program("import time\ndef f(n, pause):\n    time.sleep(pause)\n    return n")
    batches = [
        Batch(program, [parse_call(f"f({n}, {0.05 if n % 3 == 0 else 0})")]) for n in range(12)
    ]
    values = [results[0].parsed_value() for results in pool.map(batches)]
    assert values == list(range(12))


def test_empty_batches_are_allowed(pool: Pool) -> None:
    assert pool.run_batch(Program("def f(): pass"), []) == []


def test_a_killed_worker_is_replaced_and_reported_as_infrastructure() -> None:
    with Pool(2) as small:
        program = Program("import time\ndef f():\n    time.sleep(1)\n    return 1")
        victims = small.worker_pids
        killer = threading.Timer(0.3, lambda: [os.kill(pid, signal.SIGKILL) for pid in victims])
        killer.start()
        outcome = small.run(program, parse_call("f()"))
        killer.join()
        assert outcome.status is Status.SANDBOX_ERROR
        assert "worker exited unexpectedly" in outcome.exception_message
        # The other worker died idle: it is replaced when next used, without failing the job.
        quick = Program("def f(n):\n    return n * 5")
        batches = [Batch(quick, [parse_call(f"f({n})")]) for n in range(4)]
        assert [r[0].parsed_value() for r in small.run_all(batches)] == [0, 5, 10, 15]
        assert small.restarts == 2
        assert not set(victims) & set(small.worker_pids)


def test_workers_are_recycled_after_their_quota() -> None:
    with Pool(1, recycle_after=3) as small:
        program = Program("def f(n):\n    return n + 1")
        outcomes = [small.run(program, parse_call(f"f({n})")).parsed_value() for n in range(7)]
        assert outcomes == list(range(1, 8))
        assert small.restarts == 2


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        Limits(timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=1)


def test_isolation_mode_is_validated() -> None:
    with pytest.raises(ValueError, match="isolation 'docker': expected one of"):
        Pool(1, isolation="docker")


def test_hash_seed_nondeterminism_is_detected() -> None:
    program = Program("def f(words):\n    return '|'.join(set(words))")
    words = [f"w{i}" + "x" * i for i in range(12)]
    calls = [parse_call(f"f({words!r})"), parse_call("f([])")]
    outcomes = run_under_seeds(program, calls, seeds=(0, 1, 2))
    assert nondeterministic_calls(outcomes) == [0]
    assert outcomes[0][1].value == outcomes[1][1].value == "''"
    assert sorted(outcomes[0][0].parsed_value().split("|")) == sorted(words)


def test_non_literal_arguments_are_refused_before_anything_runs(pool: Pool) -> None:
    program = Program("def f(x):\n    return x")
    with pytest.raises(TypeError):
        pool.run(program, Call("f", (object(),)))
    assert pool.run(program, Call("f", (3,))).matches(3)


def test_on_batch_reports_every_finished_call(pool: Pool) -> None:
    seen: list[int] = []
    pool.on_batch = seen.append
    try:
        program = Program("def f(n):\n    return n")
        batches = [
            Batch(program, [parse_call(f"f({n})")] * size) for n, size in enumerate((1, 3, 2))
        ]
        pool.run_all(batches)
    finally:
        pool.on_batch = None
    assert sorted(seen) == [1, 2, 3]


def test_jobs_queued_behind_a_lost_job_are_sent_again() -> None:
    """A worker holds up to ``pipeline`` jobs; when it dies, the one it was running is reported
    as the sandbox's failure and the ones queued behind it (never started) run elsewhere."""
    with Pool(1, pipeline=2) as small:
        slow = Program("import time\ndef f():\n    time.sleep(2)\n    return 1")
        quick = Program("def f(n):\n    return n * 3")
        victim = small.worker_pids[0]
        killer = threading.Timer(0.5, os.kill, (victim, signal.SIGKILL))
        killer.start()
        batches = [Batch(slow, [parse_call("f()")])]
        batches += [Batch(quick, [parse_call(f"f({n})")]) for n in range(3)]
        results = small.run_all(batches)
        killer.join()
        assert results[0][0].status is Status.SANDBOX_ERROR
        assert [batch[0].parsed_value() for batch in results[1:]] == [0, 3, 6]
        assert small.restarts == 1


def test_one_job_at_a_time_gives_the_same_results(pool: Pool) -> None:
    program = Program("def f(n):\n    return [n] * (n % 4)")
    batches = [Batch(program, [parse_call(f"f({n})"), parse_call(f"f({n + 1})")]) for n in range(9)]
    with Pool(2, pipeline=1, limits=pool.limits) as unpipelined:
        expected = unpipelined.run_all(batches)
    assert [[r.value for r in rs] for rs in pool.run_all(batches)] == [
        [r.value for r in rs] for rs in expected
    ]
    with pytest.raises(ValueError, match="pipeline 0: expected a positive number"):
        Pool(1, pipeline=0)


def test_programs_without_imports_fork_from_the_lean_template(pool: Pool) -> None:
    # No import statement in the text: the child is forked from the template taken before
    # the preloads; a module can still be imported at run time.
    lean = Program("def f():\n    os = eval('__im' + 'port__')('os')\n    return os.getppid()")
    full = Program("import os\ndef f():\n    return os.getppid()")
    # (pids inside each worker's own namespace: the same in every worker)
    info = pool.worker_info
    assert info["lean_template_pid"] != info["template_pid"]
    parents = {pool.run(lean, parse_call("f()")).parsed_value() for _ in range(3)}
    assert parents == {info["lean_template_pid"]}
    parents = {pool.run(full, parse_call("f()")).parsed_value() for _ in range(3)}
    assert parents == {info["template_pid"]}
    sqrt = Program("def f(x):\n    return eval('__im' + 'port__')('math').sqrt(x)")
    assert pool.run(sqrt, parse_call("f(16)")).parsed_value() == 4.0


def test_a_large_job_never_waits_in_a_busy_workers_pipe() -> None:
    """A job is queued behind a running one only if it fits in the pipe: a large job behind a
    job with a large answer would otherwise leave parent and worker each waiting on the other."""
    big_answer = Program("def f():\n    return 'x' * 90_000")
    big_job = Program("# " + "y" * 100_000 + "\ndef f():\n    return 7")
    batches = [Batch(big_answer, [parse_call("f()")]), Batch(big_job, [parse_call("f()")])] * 3
    done: list[list] = []
    with Pool(1, pipeline=2) as small:
        runner = threading.Thread(target=lambda: done.extend(small.run_all(batches)))
        runner.start()
        runner.join(60)
        assert not runner.is_alive(), "the dispatch is stuck"
    assert [len(rs[0].parsed_value()) if i % 2 == 0 else rs[0].parsed_value()
            for i, rs in enumerate(done)] == [90_000, 7] * 3  # fmt: skip


def test_recycling_needs_a_positive_quota() -> None:
    with pytest.raises(ValueError, match="recycle_after 0: expected a positive number"):
        Pool(1, recycle_after=0)
