"""A pool of warm sandbox workers that runs calls and batches of calls.

Each worker is a long-lived sandboxed interpreter (see :mod:`.sandbox`) with a template process
(a fork server that never sees job data) which forks one fresh, confined child per batch, so no
program can find an earlier job's text in its memory (see the sandboxed ``worker`` module). The
pool keeps every worker busy, restarts a worker that dies or stops answering, recycles workers
after a number of jobs, and returns results in submission order. A ``sandbox_error`` result
always comes from the worker or the pool, never from a program.

Each pool stages the sandbox-side files in its own ``codereasoner-stage-*`` directory, removed on
close; creating a pool also removes stage directories whose owner process is gone (runs that
were killed).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import Self

from codereasoner.execution.call import Call, Program
from codereasoner.execution.protocol import ExecResult, Limits, TraceOptions
from codereasoner.execution.sandbox import (
    IsolationPlan,
    SandboxUnavailable,
    check_grading_isolation,
    plan_isolation,
    sandbox_environment,
    stage_files,
    worker_command,
)
from codereasoner.settings import check_at_least

DEFAULT_PRELOAD = (
    "re",
    "math",
    "cmath",
    "collections",
    "itertools",
    "functools",
    "string",
    "heapq",
    "bisect",
    "copy",
    "operator",
    "random",
    "statistics",
    "fractions",
    "decimal",
    "datetime",
    "typing",
    "dataclasses",
    "json",
    "textwrap",
    "unicodedata",
    "array",
    "enum",
    "numbers",
    "hashlib",
    "struct",
    "queue",
    "threading",
    "contextlib",
    "time",
    "io",
    "abc",
    "types",
    "socket",
    "subprocess",
    "ctypes",
    "shutil",
    "tempfile",
    "signal",
    "inspect",
    "tracer",  # the sandbox-side tracer: compiled once per worker, not once per traced fork
)
_HELLO_TIMEOUT_S = 30.0
_QUEUED_BYTES = 32 << 10  # at most this much queued behind a worker's running job
_GRACE_S = 5.0


@dataclass(frozen=True)
class Batch:
    """Calls of one program that may share one sandboxed process (one trust domain)."""

    program: Program
    calls: Sequence[Call]
    limits: Limits | None = None
    trace: TraceOptions | None = None


class _Worker:
    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd="/",
            env=env,
            start_new_session=True,
            bufsize=0,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.fd = self.process.stdout.fileno()
        self.buffer = b""
        self.jobs = 0
        self.hello: dict = {}
        # Jobs sent and not answered, oldest first: the worker runs them in this order.
        self.queue: deque[_InFlight] = deque()

    def await_hello(self, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise SandboxUnavailable(f"sandbox worker did not start: {self.log_tail()}")
        line, self.buffer = self.buffer.split(b"\n", 1)
        self.hello = json.loads(line)
        return self.hello

    def _read(self, timeout_s: float) -> bool:
        selector = selectors.DefaultSelector()
        selector.register(self.fd, selectors.EVENT_READ)
        try:
            if not selector.select(timeout_s):
                return False
        finally:
            selector.close()
        chunk = os.read(self.fd, 1 << 16)
        self.buffer += chunk
        return bool(chunk)

    def send(self, payload: bytes) -> None:
        self.stdin.write(payload)
        self.jobs += 1

    def log_tail(self, limit: int = 2000) -> str:
        try:
            self.log.seek(0)
            text = self.log.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return "(no log)"
        return text[-limit:] or "(no output)"

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stdout.close()  # type: ignore[union-attr]
        self.log.close()


@dataclass
class _InFlight:
    index: int
    size: int
    payload: bytes  # kept so that a job queued behind a failed one can be sent again
    budget: float
    limits: Limits  # what the calls ran under: the parent re-checks results against them
    trace: TraceOptions | None
    # Set when the job reaches the head of its worker's queue (the worker starts it then):
    started: float = 0.0
    deadline: float = 0.0


class BatchRunner:
    """``run``, ``run_batch``, ``run_all`` and the context manager, on top of a ``map`` and a
    ``close``: shared by the local pool and the Ray executor."""

    def map(self, batches: Iterable[Batch]) -> Iterator[list[ExecResult]]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def run(self, program: Program, call: Call, limits: Limits | None = None) -> ExecResult:
        return self.run_batch(program, [call], limits)[0]

    def run_batch(
        self, program: Program, calls: Sequence[Call], limits: Limits | None = None
    ) -> list[ExecResult]:
        return self.run_all([Batch(program, calls, limits)])[0]

    def run_all(self, batches: Iterable[Batch]) -> list[list[ExecResult]]:
        """Run batches on all workers and return every batch's results, in submission order."""
        return list(self.map(batches))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Pool(BatchRunner):
    """Warm sandboxed workers. Use as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        limits: Limits | None = None,
        isolation: str = "auto",
        hash_seed: int = 0,
        python: str | None = None,
        preload: Sequence[str] = DEFAULT_PRELOAD,
        hide_paths: Sequence[str] = (),
        recycle_after: int = 2000,
        require_seccomp: bool = True,
        pipeline: int = 2,
        grading: bool = False,
    ) -> None:
        self.size = workers or os.cpu_count() or 1
        self.limits = limits or Limits()
        self.hash_seed = hash_seed
        self.plan: IsolationPlan = plan_isolation(isolation, python, tuple(hide_paths))
        if grading:
            check_grading_isolation(self.plan, isolation)
        check_at_least(1, recycle_after=recycle_after, pipeline=pipeline)
        self.recycle_after = recycle_after
        self.pipeline = pipeline  # jobs sent to a worker before its first answer arrives
        self.require_seccomp = require_seccomp
        self._config = {
            "preload": list(preload),
            "seccomp": True,
            "drop_to_uid": 65534 if self.plan.mode == "fallback" else None,
        }
        self._stage = stage_files()
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._stage, True)
        self._lock = threading.Lock()
        self._next_job = 0
        self._live: list[_Worker] = []  # started and greeted
        self._workers: list[_Worker] = []
        # Called with the number of calls of each batch as it finishes (e.g. a progress bar).
        self.on_batch: Callable[[int], None] | None = None
        self.restarts = 0
        try:
            starting = [self._launch() for _ in range(self.size)]
            for worker in starting:
                self._live.append(self._greet(worker))
        except BaseException:
            self.close()
            raise
        self.worker_info = self._live[0].hello

    # -- public API ----------------------------------------------------------------------------

    @property
    def isolation(self) -> str:
        return self.plan.description

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.plan.warnings

    def map(self, batches: Iterable[Batch]) -> Iterator[list[ExecResult]]:
        """Run batches on all workers; yield each batch's results in submission order.

        The pool serves one ``map`` at a time: consume the iterator fully (or close it) before
        the next call; other threads wait until then.
        """
        with self._lock:
            yield from self._dispatch(iter(batches))

    @property
    def stage_dir(self) -> str:
        """The directory of the sandbox-side modules this pool's workers run."""
        return self._stage

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers' outermost processes (the sandbox launchers)."""
        return [worker.process.pid for worker in self._workers]

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._workers.clear()
        self._live.clear()
        self._finalizer()

    # -- workers -------------------------------------------------------------------------------

    def _launch(self) -> _Worker:
        command = worker_command(self.plan, self._stage, self.hash_seed, self._config)
        worker = _Worker(command, sandbox_environment(self.hash_seed))
        self._workers.append(worker)
        return worker

    def _greet(self, worker: _Worker) -> _Worker:
        try:
            hello = worker.await_hello(_HELLO_TIMEOUT_S)
            if self.require_seccomp and not hello.get("seccomp"):
                raise SandboxUnavailable(
                    f"seccomp filter unavailable in the sandbox ({hello.get('seccomp_error')}); "
                    "pass require_seccomp=False to run without it"
                )
        except BaseException:
            worker.stop()
            raise
        return worker

    def _replace(self, worker: _Worker) -> _Worker:
        worker.stop()
        self._workers.remove(worker)
        self.restarts += 1
        return self._greet(self._launch())

    # -- dispatch ------------------------------------------------------------------------------

    def _encode(self, batch: Batch, index: int) -> _InFlight:
        limits = batch.limits or self.limits
        self._next_job += 1
        job = {
            "id": self._next_job,
            "source": batch.program.source,
            "preamble": batch.program.preamble,
            "epilogue": batch.program.epilogue,
            "calls": [call.wire() for call in batch.calls],
            "limits": limits.wire(),
            "trace": batch.trace.wire() if batch.trace else None,
        }
        budget = len(batch.calls) * (limits.effective_wall_timeout_s + 0.5) + _GRACE_S
        payload = json.dumps(job).encode() + b"\n"
        return _InFlight(index, len(batch.calls), payload, budget, limits, batch.trace)

    def _free_worker(self, size: int) -> _Worker | None:
        """An idle worker, else one with room in its queue for a job of ``size`` bytes (so that
        a worker never waits for the parent between jobs). A queued job is written whole into
        the worker's pipe, which it reads only after answering the job it runs: the bytes
        queued stay well under a pipe's 64 KiB, so the parent never blocks on a busy worker."""
        best = None
        for worker in self._live:
            if worker.jobs >= self.recycle_after:
                continue
            if not worker.queue:
                return worker
            queued = sum(len(job.payload) for job in islice(worker.queue, 1, None))
            if len(worker.queue) < self.pipeline and queued + size <= _QUEUED_BYTES:
                best = best or worker
        return best

    def _dispatch(self, batches: Iterator[Batch]) -> Iterator[list[ExecResult]]:
        selector = selectors.DefaultSelector()
        by_fd: dict[int, _Worker] = {}
        finished: dict[int, list[ExecResult]] = {}
        resend: deque[_InFlight] = deque()  # queued behind a failed job: never started
        held: _InFlight | None = None  # the next job, encoded, waiting for a worker
        next_yield = 0
        submitted = 0
        exhausted = False

        def start(worker: _Worker, job: _InFlight) -> None:
            if not worker.queue:
                job.started = time.monotonic()
                job.deadline = job.started + job.budget
            try:
                worker.send(job.payload)
            except OSError:
                if worker.queue:  # it died running its head job: that one is lost, not this
                    why = f"worker exited unexpectedly: {worker.log_tail()}"
                    self._fail_head(worker, finished, why)
                    self._retire(worker, by_fd, selector, resend)
                    resend.appendleft(job)
                    return
                worker = self._revive(worker)  # found dead while idle: replaced, once
                try:
                    worker.send(job.payload)
                except OSError:
                    failure = ExecResult.sandbox_failure("worker closed its input")
                    finished[job.index] = [failure] * job.size
                    self._retire(worker, by_fd, selector, resend)
                    return
            worker.queue.append(job)
            if worker.fd not in by_fd:
                by_fd[worker.fd] = worker
                selector.register(worker.fd, selectors.EVENT_READ)

        try:
            while True:
                while True:
                    if not resend and held is None and not exhausted:
                        batch = next(batches, None)
                        if batch is None:
                            exhausted = True
                        elif not batch.calls:
                            finished[submitted] = []
                            submitted += 1
                            continue
                        else:  # may raise: nothing is sent yet
                            held = self._encode(batch, submitted)
                            submitted += 1
                    job = resend[0] if resend else held
                    if job is None:
                        break
                    worker = self._free_worker(len(job.payload))
                    if worker is None:
                        break
                    if resend:
                        resend.popleft()
                    else:
                        held = None
                    start(worker, job)
                while next_yield in finished:
                    yield finished.pop(next_yield)
                    next_yield += 1
                if not by_fd:
                    if exhausted and not resend and held is None:
                        return
                    if not self._live:
                        raise SandboxUnavailable("no sandbox worker is left to run the calls")
                    continue
                heads = [worker.queue[0].deadline for worker in by_fd.values()]
                timeout = min(heads) - time.monotonic()
                for key, _ in selector.select(max(0.0, timeout)):
                    worker = by_fd[key.fd]
                    chunk = os.read(key.fd, 1 << 20)
                    if not chunk:
                        why = f"worker exited unexpectedly: {worker.log_tail()}"
                        self._fail_head(worker, finished, why)
                        self._retire(worker, by_fd, selector, resend)
                        continue
                    worker.buffer += chunk
                    self._collect(worker, finished)
                    if not worker.queue:
                        selector.unregister(worker.fd)
                        del by_fd[worker.fd]
                        if worker.jobs >= self.recycle_after:
                            self._revive(worker)
                now = time.monotonic()
                for worker in list(by_fd.values()):
                    if now > worker.queue[0].deadline:
                        self._fail_head(worker, finished, "worker stopped answering")
                        self._retire(worker, by_fd, selector, resend)
        finally:
            for worker in list(by_fd.values()):
                for job in worker.queue:
                    finished[job.index] = [ExecResult.sandbox_failure("dispatch interrupted")] * (
                        job.size
                    )
                worker.queue.clear()
                # A worker still busy is replaced (no late answer can meet the next map's
                # jobs); a replacement that cannot start must not hide why dispatch ended.
                with contextlib.suppress(SandboxUnavailable):
                    self._retire(worker, by_fd, selector, resend)
            selector.close()

    def _collect(self, worker: _Worker, finished: dict[int, list[ExecResult]]) -> None:
        """Take every complete answer line from the worker's buffer, in its queue's order."""
        while worker.queue and b"\n" in worker.buffer:
            line, worker.buffer = worker.buffer.split(b"\n", 1)
            job = worker.queue.popleft()
            finished[job.index] = self._decode(line, job)
            if self.on_batch is not None:
                self.on_batch(job.size)
            if worker.queue:
                head = worker.queue[0]
                head.started = time.monotonic()
                head.deadline = head.started + head.budget

    def _fail_head(self, worker: _Worker, finished: dict[int, list[ExecResult]], why: str) -> None:
        if worker.queue:
            job = worker.queue.popleft()
            finished[job.index] = [ExecResult.sandbox_failure(why)] * job.size

    def _retire(
        self,
        worker: _Worker,
        by_fd: dict[int, _Worker],
        selector: selectors.BaseSelector,
        resend: deque[_InFlight],
    ) -> None:
        """Replace a failed worker; the jobs queued behind the failed one never started, so
        they are sent again (to any worker), keeping their places in the results."""
        if by_fd.pop(worker.fd, None) is not None:
            selector.unregister(worker.fd)
        resend.extend(worker.queue)
        worker.queue.clear()
        self._revive(worker)

    def _revive(self, worker: _Worker) -> _Worker:
        """Stop ``worker`` and put a fresh one in its place among the live ones."""
        if worker in self._live:
            self._live.remove(worker)
        worker = self._replace(worker)
        self._live.append(worker)
        return worker

    def _decode(self, line: bytes, job: _InFlight) -> list[ExecResult]:
        try:
            raw = json.loads(line)
            results = [ExecResult.from_wire(item, job.limits, job.trace) for item in raw["results"]]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            message = f"unreadable answer from the sandbox worker: {type(exc).__name__}: {exc}"
            return [ExecResult.sandbox_failure(message)] * job.size
        if len(results) != job.size:
            message = f"sandbox worker returned {len(results)} results for {job.size} calls"
            return [ExecResult.sandbox_failure(message)] * job.size
        latency_ms = round((time.monotonic() - job.started) * 1000, 3)
        return [replace(result, latency_ms=latency_ms) for result in results]
