"""The Ray executor on a real local Ray cluster (a head and a second node process, 1 CPU each).

Every result is compared with the local pool's for the same work: only timing fields may differ.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from codereasoner.execution import (
    Batch,
    Call,
    ExecResult,
    Limits,
    Pool,
    Program,
    SandboxUnavailable,
    Status,
    TraceOptions,
    parse_call,
)
from codereasoner.execution import ray_pool as ray_pool_module
from codereasoner.execution.executor import open_executor
from codereasoner.execution.ray_pool import READ_AHEAD_PER_ACTOR, SHARD_CALLS, RayPool

ray = pytest.importorskip("ray", reason="the Ray executor needs ray (pip install '.[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.ray

LIMITS = Limits(timeout_s=1.0, memory_mb=256)  # as the local `pool` fixture's
NODE_ARGS = {"num_cpus": 1, "object_store_memory": 128 << 20}
SLOW = Program("import time\ndef f(n):\n    time.sleep(0.02)\n    return n * n")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A head node and a second node, each a separate raylet with 1 CPU."""
    local = Cluster(
        initialize_head=True,
        connect=True,
        head_node_args={**NODE_ARGS, "include_dashboard": False},
    )
    local.add_node(**NODE_ARGS)
    local.wait_for_nodes()
    yield local
    ray.shutdown()
    local.shutdown()


def ray_pool(workers: int | None = 2, **options: object) -> RayPool:
    return RayPool(workers, limits=LIMITS, isolation="bubblewrap", **options)  # type: ignore[arg-type]


def stable(result: ExecResult) -> ExecResult:
    """A result without its timing fields, the only ones that may differ between executors."""
    return replace(result, wall_ms=0.0, cpu_ms=0.0, max_rss_kb=0, latency_ms=0.0)


def stable_all(batches: list[list[ExecResult]]) -> list[list[ExecResult]]:
    return [[stable(result) for result in batch] for batch in batches]


def calls(text: str, count: int = 1) -> list:
    return [parse_call(text)] * count


def mixed_batches() -> list[Batch]:
    printer = Program("def f(n):\n    print('n is', n)\n    return {'n': n, 'sq': n * n}")
    hungry = Program("def f(mb):\n    return len(bytearray(mb << 20))")
    noisy = Program("def f():\n    print('y' * 500)\n    return 1")
    words = [f"w{i}" + "x" * i for i in range(12)]
    traced = Program(
        "def f(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total"
    )
    return [
        Batch(printer, [parse_call(f"f({n})") for n in range(5)]),
        Batch(Program("def f(d):\n    return d['missing']"), calls("f({})")),
        Batch(Program("def f(:\n    return 1"), calls("f()")),
        Batch(Program("def g():\n    return 1"), calls("f()")),
        Batch(
            Program("def f():\n    while True:\n        pass"), calls("f()"), Limits(timeout_s=0.2)
        ),
        Batch(hungry, [parse_call("f(10)"), parse_call("f(200)")], Limits(memory_mb=100)),
        Batch(noisy, calls("f()"), Limits(max_output_chars=100)),
        Batch(Program("def f():\n    return (x for x in [1])"), calls("f()")),
        Batch(Program("import random\ndef f():\n    return random.random()"), calls("f()", 2)),
        Batch(Program("def f(words):\n    return '|'.join(set(words))"), calls(f"f({words!r})")),
        Batch(traced, [parse_call("f(3)"), parse_call("f(5)")], trace=TraceOptions()),
        Batch(printer, []),
        Batch(Program("def f(n):\n    return n"), calls("f(7)", 40)),
    ]


def kill_when_first_result_arrives(results: Iterator[list[ExecResult]], kill) -> list:
    first = next(results)
    kill()
    return [first, *results]


@pytest.fixture(scope="class")
def shared(cluster: Cluster) -> Iterator[RayPool]:
    with ray_pool(None) as started:  # None: one actor per CPU of the cluster
        yield started


class TestSameResultsAsTheLocalPool:
    def test_one_actor_per_cluster_cpu_on_the_same_isolation(
        self, shared: RayPool, pool: Pool
    ) -> None:
        assert shared.size == 2 and len(set(shared.actor_pids)) == 2
        assert shared.isolation == pool.isolation
        assert shared.plan.mode == "bubblewrap" and shared.worker_info

    def test_mixed_results_are_identical(self, shared: RayPool, pool: Pool) -> None:
        batches = mixed_batches()
        expected = stable_all(pool.run_all(batches))
        assert stable_all(shared.run_all(batches)) == expected
        statuses = {result.status for batch in expected for result in batch}
        assert statuses == {
            Status.OK,
            Status.ERROR,
            Status.TIMEOUT,
            Status.MEMORY,
            Status.OUTPUT_LIMIT,
        }
        assert expected[-3][0].trace and expected[0][0].stdout == "n is 0\n"

    def test_run_and_run_batch_are_identical(self, shared: RayPool, pool: Pool) -> None:
        program = Program("def f(a, b=2):\n    return [a] * b")
        call = parse_call("f('x', b=3)")
        assert stable(shared.run(program, call)) == stable(pool.run(program, call))
        assert shared.run_batch(program, []) == []
        many = [parse_call(f"f({n})") for n in range(5)]
        ours = [stable(result) for result in shared.run_batch(program, many)]
        assert ours == [stable(result) for result in pool.run_batch(program, many)]

    def test_many_small_batches_keep_order_and_report_every_call(self, shared: RayPool) -> None:
        program = Program("def f(n):\n    return n")
        sizes = [(n * 7) % 4 for n in range(300)]  # 0 to 3 calls, empty batches included
        batches = (Batch(program, calls(f"f({n})", size)) for n, size in enumerate(sizes))
        seen: list[int] = []
        shared.on_batch = seen.append
        try:
            results = list(shared.map(batches))
        finally:
            shared.on_batch = None
        assert [[r.parsed_value() for r in batch] for batch in results] == [
            [n] * size for n, size in enumerate(sizes)
        ]
        assert sorted(seen) == sorted(size for size in sizes if size)

    def test_map_reads_its_input_lazily(self, shared: RayPool) -> None:
        program = Program("def f(n):\n    return n")
        taken = itertools.count()
        endless = (Batch(program, calls(f"f({next(taken)})")) for _ in itertools.count())
        results = shared.map(endless)
        first = [batch[0].parsed_value() for batch in itertools.islice(results, 3)]
        results.close()
        assert first == [0, 1, 2]
        assert next(taken) <= READ_AHEAD_PER_ACTOR * shared.size * SHARD_CALLS

    def test_a_call_that_cannot_be_sent_raises_as_locally(self, shared: RayPool) -> None:
        program = Program("def f(x):\n    return x")
        with pytest.raises(TypeError):
            shared.run(program, Call("f", (object(),)))
        assert shared.run(program, Call("f", (3,))).matches(3)


def test_the_hash_seed_reaches_every_actor(cluster: Cluster, pool: Pool) -> None:
    program = Program("def f(words):\n    return '|'.join(set(words))")
    call = parse_call(f"f({[f'w{i}' + 'x' * i for i in range(12)]!r})")
    with Pool(1, hash_seed=1, isolation="bubblewrap") as local, ray_pool(1, hash_seed=1) as ours:
        seeded = ours.run(program, call)
        assert stable(seeded) == stable(local.run(program, call))
    assert seeded.value != pool.run(program, call).value  # hash seed 0 orders the set otherwise


def test_a_killed_actor_loses_and_duplicates_nothing(cluster: Cluster, pool: Pool) -> None:
    batches = [Batch(SLOW, [parse_call(f"f({n})")]) for n in range(120)]
    expected = stable_all(pool.run_all(batches))
    with ray_pool(2, shard_calls=10) as pooled:
        victim = pooled.actor_pids[0]
        results = kill_when_first_result_arrives(
            pooled.map(batches), lambda: os.kill(victim, signal.SIGKILL)
        )
        assert stable_all(results) == expected
        assert pooled.restarts >= 1 and pooled.resubmitted >= 1
        assert victim not in pooled.actor_pids


def test_an_actor_that_stops_answering_is_replaced(
    cluster: Cluster, pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ray_pool_module, "_SHARD_SLACK_S", 1.0)  # a shard's deadline: ~2.7 s
    quick = Limits(timeout_s=0.1)
    batches = [Batch(SLOW, [parse_call(f"f({n})")], quick) for n in range(60)]
    expected = stable_all(pool.run_all(batches))
    with ray_pool(2, shard_calls=1) as pooled:
        victim = pooled.actor_pids[0]
        try:
            results = kill_when_first_result_arrives(
                pooled.map(batches), lambda: os.kill(victim, signal.SIGSTOP)
            )
        finally:
            with contextlib.suppress(ProcessLookupError):  # killed as lost, the usual case
                os.kill(victim, signal.SIGCONT)
        assert stable_all(results) == expected
        assert pooled.resubmitted >= 1 and victim not in pooled.actor_pids


def test_retries_exhausted_come_back_as_sandbox_errors(cluster: Cluster, pool: Pool) -> None:
    batches = [Batch(SLOW, [parse_call(f"f({n})")]) for n in range(40)]
    expected = stable_all(pool.run_all(batches))
    with ray_pool(1, shard_calls=5, max_tries=1) as pooled:
        victim = pooled.actor_pids[0]
        results = kill_when_first_result_arrives(
            pooled.map(batches), lambda: os.kill(victim, signal.SIGKILL)
        )
        assert len(results) == len(expected)
        lost = [
            index for index, batch in enumerate(results) if batch[0].status is Status.SANDBOX_ERROR
        ]
        assert lost, "the killed actor's shards should have failed"
        for index, batch in enumerate(results):
            if index in lost:
                assert "Ray sandbox worker lost" in (batch[0].exception_message or "")
            else:
                assert stable_all([batch]) == [expected[index]]
        assert lost[-1] < len(results) - 1, "the replacement actor should run the rest"


def test_a_lost_node_mid_map_loses_nothing(cluster: Cluster, pool: Pool) -> None:
    batches = [Batch(SLOW, [parse_call(f"f({n})")]) for n in range(120)]
    expected = stable_all(pool.run_all(batches))
    second = next(node for node in cluster.list_all_nodes() if not node.head)
    try:
        with ray_pool(2, shard_calls=10) as pooled:  # one actor on each node
            results = kill_when_first_result_arrives(
                pooled.map(batches), lambda: cluster.remove_node(second)
            )
            assert stable_all(results) == expected
            assert pooled.resubmitted >= 1
    finally:
        if second in cluster.list_all_nodes():
            cluster.remove_node(second)
        cluster.add_node(**NODE_ARGS)
        cluster.wait_for_nodes()


def test_a_sandbox_that_cannot_start_is_reported_with_its_message(cluster: Cluster) -> None:
    with pytest.raises(
        SandboxUnavailable, match="cannot start the sandbox interpreter /nonexistent"
    ):
        RayPool(1, isolation="fallback", python="/nonexistent/python")


def test_without_ray_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(SandboxUnavailable, match=r"pip install 'codereasoner\[ray\]'"):
        open_executor("ray", 1)


def test_an_unreachable_address_is_named_quickly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"  # nothing listens once it is closed
    script = (
        "from codereasoner.execution.executor import open_executor\n"
        f"open_executor('ray:{address}', 1)\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode != 0
    last_line = done.stderr.strip().splitlines()[-1]
    assert last_line.startswith("codereasoner.execution.sandbox.SandboxUnavailable: ")
    assert address in last_line
    # a hang guard: six times the 5 s connection timeout, where Ray's own retries would wait
    # minutes for a head that is not there
    assert time.monotonic() - started < 30
