"""The warm sandbox worker.

Started once per pool slot (inside bubblewrap when available, where it is PID 1 of its namespace),
it reads jobs as JSON lines on stdin and answers each with one JSON line on stdout. It returns
values as data; it never decides whether a value is right.

Processes, and what each may hold:

* the **worker** preloads modules, builds the seccomp filter, makes itself not dumpable, freezes
  the GC and then forks the **template** before it reads any job. It reads jobs, supervises
  children and answers the parent.
* the **template** (a fork server) never sees job data: per child it creates the child's job pipe
  and result pipe, forks, and passes the worker's ends back over a socketpair
  (``socket.send_fds``); on request it reaps a child (``wait4``: status and rusage). Every child
  is a fresh copy of the template, so no child can find fragments of earlier jobs (source,
  arguments, values) in its memory.
* a **child** confines itself as far as no job is needed (own process group, every inherited
  descriptor closed, no stdin, uid drop in the fallback, seccomp), then reads its job from its
  job pipe, lowers its rlimits to the job's, writes a ``ready`` line and only then runs the job's
  calls, one result line per call.

Only the worker reports ``sandbox_error``: before the ``ready`` line no program code has run, so
a set-up failure reported there (or the child dying before it) is an infrastructure failure;
after it, a line claiming ``sandbox_error`` (or any malformed line) is the program's own
``ProtocolViolation``. A result line can only claim a value for the child's own calls, which the
parent compares with expected values the program never sees.

The worker enforces per-call CPU (``/proc/<pid>/stat``) and wall-clock limits from the outside
(the wall clock of a child's first call starts at its ``ready`` line; set-up has its own deadline),
kills the child's process group on overrun, and has the template fork a fresh child for the calls
that remain. The worker and the template ignore stray signals (SIGINT, SIGHUP, SIGTERM, SIGIO,
...); children get the dispositions back.

Runs inside the sandbox as a top-level script: standard library and the staged modules only.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import contextlib
import gc
import json
import math
import resource
import select
import signal
import socket
import time
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from codereasoner.execution.sandboxed import sandbox_child as child
    from codereasoner.execution.sandboxed import sandbox_wire as wire
else:
    import sandbox_child as child
    import sandbox_wire as wire


_TICK_S = 0.05


_MAX_RESULT_LINE = 8 << 20


# The line a child writes once it is confined, before any program code runs.
_READY = b'{"ready": true}'


# Below the pool's grace period, so that a stuck set-up is reported by the worker itself.
_SETUP_TIMEOUT_S = 4.0


# How often the template looks for the end of killed children while it waits for requests.
_REAP_POLL_S = 0.005


# Signals the worker and the template ignore: nothing in the sandbox may end them by a signal
# (children cannot send any, and the kernel cannot be asked to on their behalf; this is a second
# line). Children get the previous dispositions back.
_STRAY_SIGNALS = tuple(
    getattr(signal, name)
    for name in (
        "SIGINT",
        "SIGQUIT",
        "SIGHUP",
        "SIGTERM",
        "SIGIO",
        "SIGURG",
        "SIGUSR1",
        "SIGUSR2",
        "SIGALRM",
        "SIGVTALRM",
        "SIGPROF",
        "SIGPWR",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGPIPE",
    )
    if hasattr(signal, name)
)


class _Image(NamedTuple):
    """What a template's children start from."""

    guard: child._StateGuard
    vm_kb: int  # the template's address space: memory limits count on top of it


class Worker:
    def __init__(self, config: dict) -> None:
        self.config = config
        self.drop_to_uid = config.get("drop_to_uid")
        self.filter = None
        self.seccomp_error = None
        if config.get("seccomp", True):
            try:
                if TYPE_CHECKING:
                    from codereasoner.execution.sandboxed import seccomp_filter
                else:
                    import seccomp_filter

                self.filter = seccomp_filter.SeccompFilter()
            except Exception as exc:  # reported to the parent, which decides whether to refuse
                self.seccomp_error = f"{type(exc).__name__}: {exc}"
        self._set_not_dumpable()
        self.devnull_r = os.open(os.devnull, os.O_RDONLY)
        self.devnull_w = os.open(os.devnull, os.O_WRONLY)
        # Children run with every stray signal at its default, whatever the harness was started
        # with (under nohup SIGHUP arrives ignored): a program's behaviour does not depend on it.
        self.child_signals = {number: signal.SIG_DFL for number in _STRAY_SIGNALS}
        for number in _STRAY_SIGNALS:
            signal.signal(number, signal.SIG_IGN)
        # Two fork servers, both forked before any job is read (no child ever holds an earlier
        # job's data). The lean one, forked before the preloads, serves jobs with no import
        # statement and no trace: a smaller image forks and exits in about half the time. Which
        # one a job uses depends only on its text, so results never depend on load or order.
        self.lean = _Template(self, self._image())
        for name in config.get("preload", ()):
            with contextlib.suppress(Exception):
                __import__(name)
        self.image = self._image()
        self.template = _Template(self, self.image)

    @staticmethod
    def _image() -> _Image:
        # Taken once per template: its children start from this state, and restore it
        # between calls.
        image = _Image(child._StateGuard(), child._vm_size_kb())
        gc.collect()
        gc.freeze()
        return image

    @staticmethod
    def _set_not_dumpable() -> None:
        # Keeps children (same uid) from reading this process through /proc/<pid>/mem.
        with contextlib.suppress(Exception):
            wire._PRCTL(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4

    def hello(self) -> dict:
        return {
            "ready": True,
            "python": sys.version.split()[0],
            "implementation": sys.implementation.name,
            "seccomp": self.filter is not None,
            "seccomp_error": self.seccomp_error,
            "uid": os.getuid(),
            "pid": os.getpid(),
            "template_pid": self.template.pid,
            "lean_template_pid": self.lean.pid,
            "vm_kb": self.image.vm_kb,
            "tracer_engine": _tracer_engine(),
        }

    def serve(self) -> None:
        out = sys.stdout.fileno()
        child._write_all(out, json.dumps(self.hello()).encode() + b"\n")
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            job = json.loads(line)
            results = self.run_job(job, line.rstrip(b"\n"))
            child._write_all(
                out, json.dumps({"id": job["id"], "results": results}).encode() + b"\n"
            )

    # -- the child (forked by the template) ----------------------------------------------------

    def enter_child(self, job_fd: int, result_fd: int, image: _Image) -> None:
        """Read the job, confine this process, acknowledge, run the calls; never returns."""
        try:
            template = os.getppid()
            os.setpgid(0, 0)
            wire._prctl_parent_death_kill()
            # Done before the job arrives, so that a job waits for none of it.
            os.dup2(self.devnull_r, 0)
            os.dup2(self.devnull_w, 1)
            os.dup2(self.devnull_w, 2)
            low, high = sorted((job_fd, result_fd))
            os.closerange(3, low)
            os.closerange(low + 1, high)
            os.closerange(high + 1, 1 << 16)
            # The children's dispositions, with the signals blocked: a spare stays as deaf as
            # the template while it waits, and what reached it meanwhile is dropped below.
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STRAY_SIGNALS)
            for number, handler in self.child_signals.items():
                signal.signal(number, handler)
            # Confined as far as no job is needed, before one arrives: the uid and seccomp.
            if self.drop_to_uid is not None and os.getuid() == 0:
                os.setgroups([])
                os.setgid(self.drop_to_uid)
                os.setuid(self.drop_to_uid)
                wire._prctl_parent_death_kill()  # a change of credentials clears it
                if os.getppid() != template:  # the template died before it was set again
                    os._exit(70)
            if self.filter is not None:
                self.filter.load()
            start, line = wire._read_job(job_fd)  # a spare child waits here
            os.close(job_fd)
            for number in signal.sigpending() & set(_STRAY_SIGNALS):
                signal.sigtimedwait([number], 0)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            job = json.loads(line)
            del line
            # Lowered from the template's: the filter lets a process lower its own limits, and
            # the kernel lets nobody unprivileged raise a hard one.
            self._set_limits(job, start, image.vm_kb)
            child._write_all(result_fd, _READY + b"\n")
        except BaseException as exc:
            # No program code has run yet: this report is the sandbox's own.
            failure = {"setup_error": f"{type(exc).__name__}: {exc}"}
            with contextlib.suppress(BaseException):
                child._write_all(result_fd, json.dumps(failure).encode() + b"\n")
            os._exit(70)
        try:
            child._Child(job, start, result_fd).run(image.guard)
        finally:
            os._exit(0)

    @staticmethod
    def _set_limits(job: dict, start: int, vm_kb: int) -> None:
        limits = job["limits"]
        remaining = len(job["calls"]) - start
        cpu = math.ceil(float(limits["timeout_s"]) * remaining) + 1
        memory = (vm_kb << 10) + (int(limits["memory_mb"]) << 20)
        settings = (
            (resource.RLIMIT_CPU, cpu, cpu + 1),
            (resource.RLIMIT_AS, memory, memory),
            (resource.RLIMIT_FSIZE, 1 << 20, 1 << 20),
            (resource.RLIMIT_NOFILE, 64, 64),
            (resource.RLIMIT_CORE, 0, 0),
            (resource.RLIMIT_NPROC, int(limits["max_processes"]), int(limits["max_processes"])),
        )
        for kind, soft, hard in settings:
            current_hard = resource.getrlimit(kind)[1]
            if current_hard != resource.RLIM_INFINITY:
                hard = min(hard, current_hard)
                soft = min(soft, hard)
            resource.setrlimit(kind, (soft, hard))

    # -- the worker's side of a job ------------------------------------------------------------

    def run_job(self, job: dict, line: bytes) -> list[dict]:
        calls = job["calls"]
        lean = job.get("trace") is None and not any(
            "import" in (job.get(part) or "") for part in child._PARTS
        )
        template = self.lean if lean else self.template
        results: list[dict] = []
        while len(results) < len(calls):
            results.extend(self._run_child(job, line, len(results), template))
        return results

    def _run_child(self, job: dict, line: bytes, start: int, template: _Template) -> list[dict]:
        limits = job["limits"]
        timeout_s = float(limits["timeout_s"])
        wall_timeout_s = float(limits["wall_timeout_s"])
        try:
            pid, child_fd, read_fd = template.fork()
        except _TemplateError as exc:
            return [wire._sandbox_error(f"cannot start a sandboxed child: {exc}")]
        pending = memoryview(b"%d %d\n" % (start, len(line)) + line)
        os.set_blocking(child_fd, False)
        job_fd: int | None = child_fd  # None once the whole job is written
        results: list[dict] = []
        buffer = b""
        ready = False
        item_started = time.monotonic()
        setup_deadline = item_started + _SETUP_TIMEOUT_S
        cpu_base_ms = 0.0
        failure = None
        total = len(job["calls"])
        try:
            while failure is None:
                now = time.monotonic()
                if not ready:
                    wall_left = setup_deadline - now
                    if wall_left <= 0:
                        failure = wire._sandbox_error("sandboxed child did not finish its set-up")
                        break
                else:
                    wall_left = item_started + wall_timeout_s - now
                    if wall_left <= 0:
                        failure = wire._timeout(
                            f"wall-clock limit of {wall_timeout_s:g} s exceeded"
                        )
                        break
                writers = [job_fd] if job_fd is not None else []
                readable, writable, _ = select.select(
                    [read_fd], writers, [], min(wall_left, _TICK_S)
                )
                if writable and job_fd is not None:
                    try:
                        written = os.write(job_fd, pending)
                    except BlockingIOError:
                        written = 0
                    except BrokenPipeError:  # the child is gone; how it ended says why
                        written = len(pending)
                    pending = pending[written:]
                    if not pending:
                        os.close(job_fd)
                        job_fd = None
                if not readable:
                    if ready and wire._cpu_ms(pid) - cpu_base_ms > timeout_s * 1000:
                        failure = wire._timeout(f"CPU time limit of {timeout_s:g} s exceeded")
                    continue
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                if len(buffer) > _MAX_RESULT_LINE:
                    failure = wire._violation("result line too long")
                    break
                *lines, buffer = buffer.split(b"\n")
                for result_line in lines:
                    if not ready:
                        if result_line == _READY:
                            ready = True
                            item_started = time.monotonic()
                            continue
                        failure = wire._sandbox_error(wire._setup_failure(result_line))
                        break
                    result = wire._sanitize(result_line, start + len(results))
                    if result is None:
                        failure = wire._violation("malformed result from the sandboxed child")
                        break
                    finished = time.monotonic()
                    result["wall_ms"] = round((finished - item_started) * 1000, 3)
                    cpu_total = result.pop("cpu_total_ms")
                    result["cpu_ms"] = round(max(0.0, cpu_total - cpu_base_ms), 3)
                    cpu_base_ms = cpu_total
                    item_started = finished
                    results.append(result)
                    if start + len(results) == total:
                        break
                if start + len(results) == total:
                    break
        finally:
            os.close(read_fd)
            if job_fd is not None:
                os.close(job_fd)
            wire._kill_group(pid)
            # The exit status matters only when calls remain; otherwise the template reaps the
            # child while this worker answers the parent.
            reaped = template.reap(pid, wait=start + len(results) < total)
        if reaped is None:
            return results
        wait_status, usage = reaped
        restart = (
            results
            and os.WIFEXITED(wait_status)
            and os.WEXITSTATUS(wait_status) == child._EXIT_RESTART
        )
        if failure is None and start + len(results) < total and not restart:
            failure = wire._classify_exit(wait_status)
            if not ready:  # died before any program code ran
                failure = wire._sandbox_error(
                    f"sandboxed child ended during set-up: {failure['exc_message']}"
                )
        if failure is not None and start + len(results) < total:
            failure["wall_ms"] = round((time.monotonic() - item_started) * 1000, 3)
            failure["max_rss_kb"] = usage[0]
            cpu_ms = (usage[1] + usage[2]) * 1000 - cpu_base_ms
            failure["cpu_ms"] = round(max(0.0, cpu_ms), 3)
            results.append(failure)
        return results


class _TemplateError(RuntimeError):
    pass


class _Template:
    """The fork server: a copy of the worker taken before any job, which forks the children.

    Requests over a SOCK_SEQPACKET socketpair, answered in order: ``fork`` (answer: the child's
    pid, with the job pipe's write end and the result pipe's read end attached),
    ``reap <pid>`` (answer: ``[wait status, ru_maxrss, ru_utime, ru_stime]``) and
    ``forget <pid>`` (no answer: the killed child is reaped once it has ended, so that tearing
    down its memory never delays the next fork). It holds nothing
    but pids and the pipe ends of one spare child, forked ahead so that a job does not wait for
    the fork; the spare waits for its job in its job pipe, a copy of the template like any child.
    """

    def __init__(self, worker: Worker, image: _Image) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            ours.close()
            earlier = getattr(worker, "lean", None)
            if earlier is not None:  # the worker's end of the other template's channel
                earlier.socket.close()
            try:
                self._serve(worker, theirs, image)
            finally:
                os._exit(0)
        theirs.close()
        self.socket = ours

    @staticmethod
    def _serve(worker: Worker, channel: socket.socket, image: _Image) -> None:
        wire._prctl_parent_death_kill()
        os.dup2(worker.devnull_r, 0)  # the worker's job stream and answers are not ours
        os.dup2(worker.devnull_w, 1)
        spare: tuple[int, int, int] | None = None

        def make_spare() -> tuple[int, int, int]:
            job_r, job_w = os.pipe()
            result_r, result_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                channel.close()
                for fd in (job_w, result_r):
                    os.close(fd)
                worker.enter_child(job_r, result_w, image)
            os.close(job_r)
            os.close(result_w)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)
            return pid, job_w, result_r

        forgotten: set[int] = set()  # killed children nobody waits for: reaped when they end

        while True:
            if forgotten:
                for pid in list(forgotten):
                    with contextlib.suppress(ChildProcessError):
                        if os.waitpid(pid, os.WNOHANG)[0] == 0:
                            continue
                    forgotten.discard(pid)
                if forgotten and not select.select([channel], [], [], _REAP_POLL_S)[0]:
                    continue
            request = channel.recv(64)
            if not request:
                return
            if request.startswith(b"forget "):
                forgotten.add(int(request[7:]))
            elif request == b"fork":
                try:
                    forked = spare or make_spare()
                except OSError as exc:
                    channel.send(f"error {exc}".encode())
                    continue
                spare = None
                socket.send_fds(channel, [b"%d" % forked[0]], list(forked[1:]))
                os.close(forked[1])
                os.close(forked[2])
                with contextlib.suppress(OSError):
                    spare = make_spare()
            elif request.startswith(b"reap "):
                _, status, usage = os.wait4(int(request[5:]), 0)
                answer = [status, usage.ru_maxrss, usage.ru_utime, usage.ru_stime]
                channel.send(json.dumps(answer).encode())

    def fork(self) -> tuple[int, int, int]:
        self.socket.send(b"fork")
        message, fds, _, _ = socket.recv_fds(self.socket, 256, 2)
        if not message:  # the template is gone: end the worker, the pool starts a new one
            raise SystemExit("sandbox template process ended")
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            raise _TemplateError(message.decode(errors="replace"))
        return int(message), fds[0], fds[1]

    def reap(self, pid: int, wait: bool = True) -> tuple[int, tuple[int, float, float]] | None:
        """Have the template reap ``pid`` (killed already): now, for its status and usage, or
        (``wait=False``) whenever it has ended, while the template goes on serving forks."""
        if not wait:
            self.socket.send(b"forget %d" % pid)
            return None
        self.socket.send(b"reap %d" % pid)
        answer = self.socket.recv(256)
        if not answer:
            raise SystemExit("sandbox template process ended")
        status, maxrss, utime, stime = json.loads(answer)
        return status, (maxrss, utime, stime)


def _tracer_engine() -> str | None:
    """Which line handler traced calls use here: "c" (the built fast path), "python", or None
    when the tracer is not preloaded."""
    module = sys.modules.get("tracer")
    if module is None:
        return None
    return "python" if getattr(module, "ACCELERATOR", None) is None else "c"


def main() -> None:
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # the children's disposition (the worker ignores)
    Worker(config).serve()


if __name__ == "__main__":
    main()
