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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from codereasoner.execution.call import Call, Program
from codereasoner.execution.protocol import ExecResult, Limits, TraceOptions
from codereasoner.execution.sandbox import (
    IsolationPlan,
    SandboxUnavailable,
    plan_isolation,
    sandbox_environment,
    stage_files,
    worker_command,
)

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
    deadline: float
    sent: float
    limits: Limits  # what the calls ran under: the parent re-checks results against them
    trace: TraceOptions | None


class Pool:
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
    ) -> None:
        self.size = workers or os.cpu_count() or 1
        self.limits = limits or Limits()
        self.hash_seed = hash_seed
        self.plan: IsolationPlan = plan_isolation(isolation, python, tuple(hide_paths))
        self.recycle_after = recycle_after
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
        self._idle: list[_Worker] = []
        self._workers: list[_Worker] = []
        # Called with the number of calls of each batch as it finishes (e.g. a progress bar).
        self.on_batch: Callable[[int], None] | None = None
        self.restarts = 0
        try:
            starting = [self._launch() for _ in range(self.size)]
            for worker in starting:
                self._idle.append(self._greet(worker))
        except BaseException:
            self.close()
            raise
        self.worker_info = self._idle[0].hello

    # -- public API ----------------------------------------------------------------------------

    @property
    def isolation(self) -> str:
        return self.plan.description

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.plan.warnings

    def run(self, program: Program, call: Call, limits: Limits | None = None) -> ExecResult:
        return self.run_batch(program, [call], limits)[0]

    def run_batch(
        self, program: Program, calls: Sequence[Call], limits: Limits | None = None
    ) -> list[ExecResult]:
        return self.run_all([Batch(program, calls, limits)])[0]

    def run_all(self, batches: Iterable[Batch]) -> list[list[ExecResult]]:
        """Run batches on all workers and return every batch's results, in submission order."""
        return list(self.map(batches))

    def map(self, batches: Iterable[Batch]) -> Iterator[list[ExecResult]]:
        """Run batches on all workers; yield each batch's results in submission order.

        The pool serves one ``map`` at a time: consume the iterator fully (or close it) before
        the next call; other threads wait until then.
        """
        with self._lock:
            yield from self._dispatch(iter(batches))

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers' outermost processes (the sandbox launchers)."""
        return [worker.process.pid for worker in self._workers]

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._workers.clear()
        self._idle.clear()
        self._finalizer()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

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

    def _encode(self, batch: Batch) -> tuple[bytes, float]:
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
        return json.dumps(job).encode() + b"\n", budget

    def _dispatch(self, batches: Iterator[Batch]) -> Iterator[list[ExecResult]]:
        selector = selectors.DefaultSelector()
        inflight: dict[int, tuple[_Worker, _InFlight]] = {}
        finished: dict[int, list[ExecResult]] = {}
        next_yield = 0
        submitted = 0
        exhausted = False
        try:
            while True:
                while self._idle and not exhausted:
                    batch = next(batches, None)
                    if batch is None:
                        exhausted = True
                        break
                    if not batch.calls:
                        finished[submitted] = []
                        submitted += 1
                        continue
                    payload, budget = self._encode(batch)  # may raise: nothing is taken yet
                    worker = self._idle.pop()
                    now = time.monotonic()
                    job = _InFlight(
                        submitted,
                        len(batch.calls),
                        now + budget,
                        now,
                        batch.limits or self.limits,
                        batch.trace,
                    )
                    submitted += 1
                    try:
                        worker = self._send(worker, payload)
                    except OSError:
                        self._fail(worker, job, finished, "worker closed its input")
                        continue
                    inflight[worker.fd] = (worker, job)
                    selector.register(worker.fd, selectors.EVENT_READ)
                while next_yield in finished:
                    yield finished.pop(next_yield)
                    next_yield += 1
                if not inflight:
                    if exhausted:
                        return
                    continue
                timeout = min(job.deadline for _, job in inflight.values()) - time.monotonic()
                for key, _ in selector.select(max(0.0, timeout)):
                    worker, job = inflight[key.fd]
                    chunk = os.read(key.fd, 1 << 20)
                    if not chunk:
                        selector.unregister(key.fd)
                        del inflight[key.fd]
                        self._fail(
                            worker,
                            job,
                            finished,
                            f"worker exited unexpectedly: {worker.log_tail()}",
                        )
                        continue
                    worker.buffer += chunk
                    if b"\n" not in worker.buffer:
                        continue
                    line, worker.buffer = worker.buffer.split(b"\n", 1)
                    selector.unregister(key.fd)
                    del inflight[key.fd]
                    finished[job.index] = self._decode(line, job)
                    if self.on_batch is not None:
                        self.on_batch(job.size)
                    if worker.jobs >= self.recycle_after:
                        worker = self._replace(worker)
                    self._idle.append(worker)
                now = time.monotonic()
                for fd, (worker, job) in list(inflight.items()):
                    if now > job.deadline:
                        selector.unregister(fd)
                        del inflight[fd]
                        self._fail(worker, job, finished, "worker stopped answering")
        finally:
            for worker, job in inflight.values():
                self._fail(worker, job, finished, "dispatch interrupted")
            selector.close()

    def _send(self, worker: _Worker, payload: bytes) -> _Worker:
        """Send a job; a worker found dead before the job started is replaced once."""
        try:
            worker.send(payload)
        except OSError:
            worker = self._replace(worker)
            worker.send(payload)
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
        latency_ms = round((time.monotonic() - job.sent) * 1000, 3)
        return [replace(result, latency_ms=latency_ms) for result in results]

    def _fail(
        self, worker: _Worker, job: _InFlight, finished: dict[int, list[ExecResult]], why: str
    ) -> None:
        finished[job.index] = [ExecResult.sandbox_failure(why)] * job.size
        self._idle.append(self._replace(worker))
