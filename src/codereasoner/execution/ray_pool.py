"""The Ray executor: batches of calls sharded over Ray actors, each running a local sandboxed pool.

Each actor (one CPU, or a share of the free ones) holds the project's own :class:`~codereasoner.execution.pool.Pool` of one
worker, so every isolation property is the local pool's; Ray only carries :class:`Batch` objects
in and ``ExecResult`` lists out. :meth:`RayPool.map` groups consecutive batches into shards, keeps
at most a few shards in flight per actor, and yields results in submission order.

When an actor or its node is lost mid-shard, the actor is replaced and the shard resubmitted to
any live actor; a shard is tried ``max_tries`` times in all; after that its calls come back as ``sandbox_error``,
never as an answer. Results are identical to the local pool's but for the timing fields.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from codereasoner.execution.pool import DEFAULT_PRELOAD, Batch, BatchRunner, Pool
from codereasoner.execution.protocol import ExecResult, Limits
from codereasoner.execution.sandbox import (
    IsolationPlan,
    SandboxUnavailable,
    check_grading_isolation,
)

SHARD_CALLS = 32  # calls per shard: enough to amortise Ray's cost per task (about a millisecond)
SHARDS_PER_ACTOR = 2  # one running, one queued, so an actor never waits for the driver
READ_AHEAD_PER_ACTOR = 4  # shards read but not yet yielded: bounds memory behind a slow shard
MAX_TRIES = 3
_CONNECT_TIMEOUT_S = 5.0
_START_TIMEOUT_S = 120.0
_CLOSE_TIMEOUT_S = 5.0
_SHARD_SLACK_S = 30.0  # beyond the calls' own wall limits: transfers and worker restarts
_LOCAL_OBJECT_STORE_BYTES = 256 << 20


class SandboxActor:
    """What runs inside one Ray actor: a local sandboxed pool of one worker."""

    def __init__(self, pool_options: dict[str, Any]) -> None:
        self.error: Exception | None = None
        try:
            self.pool: Pool | None = Pool(1, **pool_options)
        except Exception as exc:  # reported by hello(), so the driver sees the plain message
            self.pool, self.error = None, exc

    def hello(self) -> tuple[IsolationPlan, dict, int]:
        if self.pool is None:
            raise self.error or SandboxUnavailable("sandbox pool did not start")
        return self.pool.plan, self.pool.worker_info, os.getpid()

    def run(self, batches: list[Batch]) -> list[list[ExecResult]]:
        assert self.pool is not None
        return list(self.pool.map(batches))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


@dataclass
class _Shard:
    first: int  # the output index of its first batch
    batches: list[Batch]
    calls: int
    budget_s: float  # the longest its calls may take under their limits, plus slack
    tries: int = 0


@dataclass(eq=False)
class _Actor:
    handle: Any
    hello: Any  # the ObjectRef of its hello() call, until it has answered
    started: float
    pid: int = 0
    ready: bool = False
    lost: bool = False
    queue: list[_Task] = field(default_factory=list)  # its shards in flight, in order

    @property
    def inflight(self) -> int:
        return len(self.queue)

    def push(self, task: _Task) -> None:
        self.queue.append(task)
        self._set_deadlines()

    def pop(self, task: _Task) -> None:
        self.queue.remove(task)
        self._set_deadlines()

    def _set_deadlines(self) -> None:
        """An actor runs its shards one after another: each may take its budget once the one
        before it is done (the first, from now on)."""
        deadline = time.monotonic()
        for task in self.queue:
            deadline += task.shard.budget_s
            task.deadline = min(task.deadline, deadline)


@dataclass
class _Task:
    shard: _Shard
    actor: _Actor
    sent: float
    deadline: float


class RayPool(BatchRunner):
    """Sandboxed calls on a Ray cluster; the same interface and results as the local ``Pool``."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        address: str | None = None,
        limits: Limits | None = None,
        isolation: str = "auto",
        hash_seed: int = 0,
        python: str | None = None,
        preload: Sequence[str] = DEFAULT_PRELOAD,
        hide_paths: Sequence[str] = (),
        recycle_after: int = 2000,
        require_seccomp: bool = True,
        shard_calls: int = SHARD_CALLS,
        max_tries: int = MAX_TRIES,
        grading: bool = False,
    ) -> None:
        self._ray = _import_ray()
        self.limits = limits or Limits()
        self.hash_seed = hash_seed
        self.shard_calls = max(1, shard_calls)
        self.max_tries = max(1, max_tries)
        # Called with the number of calls of each batch as its results arrive, in the driver.
        self.on_batch: Callable[[int], None] | None = None
        self.restarts = 0  # actors replaced after they were lost
        self.resubmitted = 0  # shards sent again after their actor was lost
        self._pool_options: dict[str, Any] = {
            "limits": self.limits,
            "isolation": isolation,
            "hash_seed": hash_seed,
            "python": python,
            "preload": tuple(preload),
            "hide_paths": tuple(hide_paths),
            "recycle_after": recycle_after,
            "require_seccomp": require_seccomp,
        }
        self._lock = threading.Lock()
        self._actors: list[_Actor] = []
        self._failed_starts = 0
        _OPEN[0] += 1  # counted before connecting: close() undoes both
        self._open = True
        try:
            if _connect(self._ray, address):
                _OPEN[1] = True
            self._actor_class = self._ray.remote(SandboxActor)
            self.size = workers or _default_workers(self._ray)
            self._actor_cpus = _actor_cpus(self._ray, self.size)
            self._hello = self._start_all()
            if grading:
                check_grading_isolation(self.plan, isolation)
        except BaseException:
            self.close()
            raise

    # -- public API ----------------------------------------------------------------------------

    @property
    def plan(self) -> IsolationPlan:
        return self._hello[0]

    @property
    def worker_info(self) -> dict:
        return self._hello[1]

    @property
    def isolation(self) -> str:
        return self.plan.description

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.plan.warnings

    @property
    def actor_pids(self) -> list[int]:
        """Process ids of the live actors (each the parent of one sandbox worker)."""
        return [actor.pid for actor in self._actors if actor.ready and not actor.lost]

    def map(self, batches: Iterable[Batch]) -> Iterator[list[ExecResult]]:
        """Run batches on all actors; yield each batch's results in submission order.

        The input is read lazily, a few shards ahead. As with the local pool, one ``map`` runs
        at a time: consume the iterator fully (or close it) before the next call.
        """
        with self._lock:
            shard_calls = self._shard_calls_for(batches)
            yield from self._dispatch(_shards(iter(batches), shard_calls, self.limits))

    def close(self) -> None:
        actors, self._actors = self._actors, []
        if actors and self._ray.is_initialized():
            closing = [actor.handle.close.remote() for actor in actors if actor.ready]
            if closing:
                self._ray.wait(closing, num_returns=len(closing), timeout=_CLOSE_TIMEOUT_S)
            for actor in actors:
                with contextlib.suppress(Exception):
                    self._ray.kill(actor.handle)
        if not self._open:
            return
        self._open = False
        _OPEN[0] -= 1
        # The Ray this process started goes down with the last pool open on it, never sooner.
        if _OPEN[0] == 0 and _OPEN[1]:
            _OPEN[1] = False
            self._ray.shutdown()

    # -- actors --------------------------------------------------------------------------------

    def _launch(self) -> _Actor:
        handle = self._actor_class.options(
            num_cpus=self._actor_cpus,
            scheduling_strategy="SPREAD",
            max_restarts=0,
            max_task_retries=0,
        ).remote(self._pool_options)
        actor = _Actor(handle, handle.hello.remote(), time.monotonic())
        self._actors.append(actor)
        return actor

    def _start_all(self) -> tuple[IsolationPlan, dict, int]:
        actors = [self._launch() for _ in range(self.size)]
        refs = [actor.hello for actor in actors]
        done, _ = self._ray.wait(refs, num_returns=len(refs), timeout=_START_TIMEOUT_S)
        if len(done) < len(refs):
            raise SandboxUnavailable(
                f"Ray started {len(done)} of {self.size} sandbox workers within "
                f"{_START_TIMEOUT_S:.0f} s (the cluster has "
                f"{self._ray.cluster_resources().get('CPU', 0):g} CPUs)"
            )
        hellos = [self._answer(actor) for actor in actors]
        return hellos[0]

    def _answer(self, actor: _Actor) -> tuple[IsolationPlan, dict, int]:
        """The hello of an actor that has answered; raises its sandbox's own error."""
        try:
            hello = self._ray.get(actor.hello)
        except self._ray.exceptions.RayTaskError as exc:
            raise _unwrap(exc) from None
        except self._ray.exceptions.RayError as exc:
            message = f"a Ray sandbox worker died while starting: {_line(exc)}"
            raise SandboxUnavailable(message) from None
        actor.ready, actor.pid, actor.hello = True, hello[2], None
        return hello

    def _lose(self, actor: _Actor) -> None:
        """Forget an actor that died or stopped answering, and start its replacement."""
        if actor.lost:
            return
        actor.lost = True
        self._ray.kill(actor.handle)
        self._actors.remove(actor)
        if self._failed_starts < self.max_tries:
            self.restarts += 1
            self._launch()

    def _on_hello(self, actor: _Actor) -> None:
        try:
            self._answer(actor)
            self._failed_starts = 0
        except SandboxUnavailable:
            self._failed_starts += 1
            self._lose(actor)

    def _starting(self) -> list[_Actor]:
        return [actor for actor in self._actors if not actor.ready]

    def _free_actor(self) -> _Actor | None:
        ready = [a for a in self._actors if a.ready and a.inflight < SHARDS_PER_ACTOR]
        return min(ready, key=lambda actor: actor.inflight, default=None)

    # -- dispatch ------------------------------------------------------------------------------

    def _shard_calls_for(self, batches: Iterable[Batch]) -> int:
        """Smaller shards when a known, small input would not otherwise reach every actor."""
        if not isinstance(batches, Sequence):
            return self.shard_calls
        total = sum(len(batch.calls) for batch in batches)
        return max(1, min(self.shard_calls, math.ceil(total / (SHARDS_PER_ACTOR * self.size))))

    def _dispatch(self, shards: Iterator[_Shard]) -> Iterator[list[ExecResult]]:
        waiting: deque[_Shard] = deque()  # lost shards to resubmit, before any new one
        unyielded: deque[int] = deque()  # where each shard read and not yet yielded ends
        tasks: dict[Any, _Task] = {}
        finished: dict[int, list[ExecResult]] = {}
        next_yield = 0
        exhausted = False
        try:
            while True:
                while (actor := self._free_actor()) is not None:
                    if waiting:
                        shard: _Shard | None = waiting.popleft()
                    elif len(unyielded) < READ_AHEAD_PER_ACTOR * self.size and not exhausted:
                        shard = next(shards, None)
                    else:
                        break
                    if shard is None:
                        exhausted = True
                        break
                    if not shard.tries:
                        unyielded.append(shard.first + len(shard.batches))
                    if shard.calls == 0:
                        self._finish(shard, [[] for _ in shard.batches], finished)
                        continue
                    tasks[actor.handle.run.remote(shard.batches)] = self._submit(actor, shard)
                if next_yield in finished:
                    while next_yield in finished:
                        yield finished.pop(next_yield)
                        next_yield += 1
                    while unyielded and unyielded[0] <= next_yield:
                        unyielded.popleft()
                    continue  # the read-ahead window has moved: fill it before waiting
                if not tasks and not waiting and exhausted:
                    return
                if not tasks and not self._starting():
                    raise SandboxUnavailable("every Ray sandbox worker was lost")
                self._wait(tasks, waiting, finished)
        finally:
            for task in tasks.values():  # abandoned: the actor still runs it, then the next
                task.actor.queue.clear()

    def _submit(self, actor: _Actor, shard: _Shard) -> _Task:
        task = _Task(shard, actor, time.monotonic(), math.inf)
        actor.push(task)
        return task

    def _wait(
        self, tasks: dict[Any, _Task], waiting: deque[_Shard], finished: dict[int, list[ExecResult]]
    ) -> None:
        starting = {actor.hello: actor for actor in self._starting()}
        now = time.monotonic()
        deadlines = [task.deadline for task in tasks.values()]
        if not tasks:  # only starting actors could run what is left: bound that wait
            deadlines += [actor.started + _START_TIMEOUT_S for actor in starting.values()]
        timeout = max(0.0, min(deadlines) - now) if deadlines else None
        done, _ = self._ray.wait([*tasks, *starting], num_returns=1, timeout=timeout)
        for ref in done:
            if ref in starting:
                self._on_hello(starting[ref])
            else:
                self._collect(tasks.pop(ref), ref, waiting, finished)
        if not done:
            self._expire(tasks, waiting, finished)

    def _collect(
        self, task: _Task, ref: Any, waiting: deque[_Shard], finished: dict[int, list[ExecResult]]
    ) -> None:
        task.actor.pop(task)
        try:
            results = self._ray.get(ref)
        except self._ray.exceptions.RayTaskError as exc:
            error = _unwrap(exc)
            if not isinstance(error, SandboxUnavailable):
                raise error from None  # the caller's mistake (e.g. a non-literal argument)
            self._lose(task.actor)  # its sandbox broke: replace it, run the shard elsewhere
            self._retry(task.shard, _line(error), waiting, finished)
            return
        except self._ray.exceptions.RayError as exc:
            self._lose(task.actor)
            self._retry(task.shard, f"{type(exc).__name__}: {_line(exc)}", waiting, finished)
            return
        latency_ms = round((time.monotonic() - task.sent) * 1000, 3)
        self._finish(
            task.shard,
            [[replace(result, latency_ms=latency_ms) for result in batch] for batch in results],
            finished,
        )

    def _expire(
        self, tasks: dict[Any, _Task], waiting: deque[_Shard], finished: dict[int, list[ExecResult]]
    ) -> None:
        """After a wait that timed out: drop actors past their deadline, or give up starting."""
        now = time.monotonic()
        overdue = {task.actor for task in tasks.values() if now > task.deadline}
        for actor in overdue:
            for ref, task in list(tasks.items()):
                if task.actor is actor:
                    del tasks[ref]
                    self._retry(task.shard, "stopped answering", waiting, finished)
            self._lose(actor)
        starting = self._starting()
        stuck = starting and all(now > actor.started + _START_TIMEOUT_S for actor in starting)
        if stuck and not tasks and self._free_actor() is None:
            raise SandboxUnavailable(
                f"no Ray sandbox worker could be started within {_START_TIMEOUT_S:.0f} s"
            )

    def _retry(
        self, shard: _Shard, why: str, waiting: deque[_Shard], finished: dict[int, list[ExecResult]]
    ) -> None:
        shard.tries += 1
        if shard.tries < self.max_tries:
            self.resubmitted += 1
            waiting.appendleft(shard)
            return
        message = f"Ray sandbox worker lost on each of {shard.tries} tries ({why})"
        self._finish(shard, _failures(shard, message), finished)

    def _finish(
        self, shard: _Shard, results: list[list[ExecResult]], finished: dict[int, list[ExecResult]]
    ) -> None:
        for offset, batch_results in enumerate(results):
            finished[shard.first + offset] = batch_results
            if batch_results and self.on_batch is not None:
                self.on_batch(len(batch_results))


def _shards(batches: Iterator[Batch], shard_calls: int, limits: Limits) -> Iterator[_Shard]:
    """Consecutive batches grouped into shards of about ``shard_calls`` calls, read lazily.

    Each batch carries its limits, so the actors run it under the driver's current ones.
    """
    group: list[Batch] = []
    calls = first = 0
    budget_s = _SHARD_SLACK_S
    for batch in batches:
        batch_limits = batch.limits or limits
        group.append(replace(batch, limits=batch_limits))
        calls += len(batch.calls)
        budget_s += len(batch.calls) * (batch_limits.effective_wall_timeout_s + 0.5)
        if calls >= shard_calls:
            yield _Shard(first, group, calls, budget_s)
            first, group, calls, budget_s = first + len(group), [], 0, _SHARD_SLACK_S
    if group:
        yield _Shard(first, group, calls, budget_s)


def _failures(shard: _Shard, message: str) -> list[list[ExecResult]]:
    return [[ExecResult.sandbox_failure(message)] * len(batch.calls) for batch in shard.batches]


def _unwrap(error: Any) -> BaseException:
    """The exception an actor raised, as it was raised there (its sandbox's own message)."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, SandboxUnavailable):
        return SandboxUnavailable(_line(cause, 2000))  # one line: worker logs hold newlines
    return cause if isinstance(cause, BaseException) else SandboxUnavailable(_line(error))


def _line(error: BaseException, limit: int = 300) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# [pools open in this process, whether this process started the Ray they use]
_OPEN: list[Any] = [0, False]


def _default_workers(ray: Any) -> int:
    """One worker per free CPU of the cluster; when none is free (a second pool of the same
    command, or a cluster whose CPUs other actors hold), one per CPU of the cluster, sharing."""
    free = int(ray.available_resources().get("CPU", 0))
    return free if free >= 1 else max(1, int(ray.cluster_resources().get("CPU", 1)))


def _actor_cpus(ray: Any, actors: int) -> float:
    """The CPU each actor reserves: one while the cluster has a free CPU per actor, else an
    equal share of what is free (Ray's resources are bookkeeping: the work is done by the
    actors' sandbox processes). Actors asked for beyond the free CPUs would otherwise wait for
    CPUs that never come free: the second pool of a command (synth and core build run two),
    or verl's reward workers, whose cluster holds CPUs for its own actors."""
    free = float(ray.available_resources().get("CPU", 0.0))
    if free >= actors:
        return 1.0
    return math.floor(free / actors * 10_000) / 10_000  # Ray counts in units of 0.0001


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SandboxUnavailable(
            "the Ray executor needs Ray: pip install 'codereasoner[ray]'"
        ) from None
    return ray


def _connect(ray: Any, address: str | None) -> bool:
    """Join a running Ray, the cluster at ``address`` or ``RAY_ADDRESS``, or start a local one.

    Returns whether this call started Ray (and so whether closing the pool shuts it down).
    """
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        try:
            ray.init(
                address="local",  # a new one even on a node where `ray start` ran
                num_cpus=os.cpu_count(),
                include_dashboard=False,
                object_store_memory=_LOCAL_OBJECT_STORE_BYTES,
                logging_level="warning",
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise SandboxUnavailable(f"cannot start a local Ray: {_line(exc)}") from None
        return True
    _check_reachable(address)
    try:
        ray.init(address=address, logging_level="warning")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SandboxUnavailable(
            f"cannot connect to the Ray cluster at {address}: {_line(exc)}"
        ) from None
    return False


def check_available(address: str | None) -> None:
    """Ray importable, and ``address`` (or ``RAY_ADDRESS``) answering when it is HOST:PORT."""
    _import_ray()
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        _check_reachable(address)


def _check_reachable(address: str) -> None:
    """Fail fast on a HOST:PORT that does not answer (ray.init would retry for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not (host and port.isdecimal()):
        return  # "auto", "local" and the like: ray.init resolves them
    try:
        socket.create_connection((host.strip("[]"), int(port)), _CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise SandboxUnavailable(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}"
        ) from None
