"""Isolation between jobs and from the host, attacked through the real sandbox (no mocks).

Each test runs the attack in a real ``Pool`` (bubblewrap and, where the class applies there too,
the fallback), asserts containment and the status, and then that the same pool still answers a
canary correctly. Classes covered: System V IPC and POSIX message queues outliving a job,
kernel-sent signals (async I/O owners), advisory locks on host files, scheduling of other
processes, heap residue of earlier jobs, a child forging the infrastructure's ``sandbox_error``,
the host tree seen through the sandbox, and stage directories left behind by killed runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codereasoner.execution import ExecResult, Limits, Pool, Program, Status, parse_call
from codereasoner.execution.sandbox import (
    STAGE_OWNER_FILE,
    SandboxUnavailable,
    check_grading_isolation,
    plan_isolation,
    stage_files,
)
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

CANARY = Program("def f(xs):\n    return sorted(xs) + [len(xs), abs(-2)]")
MODES = ("bubblewrap", "fallback")
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _src(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def _run(pool: Pool, source: str, call: str = "f()", limits: Limits | None = None) -> ExecResult:
    return pool.run(Program(_src(source)), parse_call(call), limits)


def assert_serves(pool: Pool) -> None:
    canary = pool.run(CANARY, parse_call("f([3, 1, 2])"))
    assert canary.matches([1, 2, 3, 3, 2], "exact"), canary.describe()


def returned(result: ExecResult) -> object:
    assert result.ok and result.is_literal, result.describe()
    return result.parsed_value()


@pytest.fixture(scope="module", params=MODES)
def solo(request: pytest.FixtureRequest) -> Iterator[Pool]:
    """One worker per mode, so that consecutive jobs are known to share a worker."""
    with Pool(1, isolation=request.param, limits=Limits(timeout_s=2.0, memory_mb=256)) as pool:
        yield pool


def _worker_host_pid(pool: Pool) -> int:
    """The host pid of the (only) worker interpreter: the launcher itself in the fallback, the
    child of bubblewrap's monitor process otherwise."""
    launcher = pool.worker_pids[0]
    if pool.plan.mode == "fallback":
        return launcher
    children = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _descendants(pid: int) -> list[int]:
    """The live descendants of pid; a job's child may exit (and be reaped) while we look."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return []
    found = []
    for child in children:
        found.append(int(child))
        found += _descendants(int(child))
    return found


# --- 1a. System V IPC and POSIX message queues ----------------------------------------------

IPC_PROBE = """
    import ctypes, os
    def f():
        libc = ctypes.CDLL(None, use_errno=True)
        rt = ctypes.CDLL('librt.so.1', use_errno=True)
        probes = {
            'shmget': lambda: libc.shmget(0x7A11, 40 << 20, 0o1600),
            'shmget_lookup': lambda: libc.shmget(0x1000, 0, 0),
            'shmat': lambda: libc.shmat(0, None, 0),
            'shmdt': lambda: libc.shmdt(ctypes.c_void_p(4096)),
            'shmctl': lambda: libc.shmctl(0, 0, None),
            'msgget': lambda: libc.msgget(0x7A12, 0o1600),
            'msgsnd': lambda: libc.msgsnd(0, b'xxxxxxxxxx', 1, 0),
            'msgrcv': lambda: libc.msgrcv(0, ctypes.create_string_buffer(64), 8, 0, 0o4000),
            'msgctl': lambda: libc.msgctl(0, 0, None),
            'semget': lambda: libc.semget(0x7A13, 1, 0o1600),
            'semop': lambda: libc.semop(0, ctypes.create_string_buffer(6), 1),
            'semtimedop': lambda: libc.semtimedop(0, ctypes.create_string_buffer(6), 1, None),
            'semctl': lambda: libc.semctl(0, 0, 0),
            'mq_open': lambda: rt.mq_open(b'/codereasoner-q', 0o100 | 2, 0o600, None),
            'mq_unlink': lambda: rt.mq_unlink(b'/codereasoner-q'),
            'mq_timedsend': lambda: rt.mq_timedsend(3, b'x', 1, 0, None),
            'mq_timedreceive': lambda: rt.mq_timedreceive(
                3, ctypes.create_string_buffer(64), 64, None, None),
            'mq_notify': lambda: rt.mq_notify(3, None),
            'mq_getsetattr': lambda: libc.syscall(245, 3, None, ctypes.create_string_buffer(64)),
        }
        out = {}
        for name, probe in probes.items():
            ctypes.set_errno(0)
            rc = probe()
            out[name] = 'allowed' if rc != -1 else os.strerror(ctypes.get_errno())
        return out
"""


def test_sysv_ipc_and_message_queues_are_denied(solo: Pool) -> None:
    result = returned(_run(solo, IPC_PROBE))
    # glibc's mq_unlink reports the kernel's EPERM as EACCES
    assert result.pop("mq_unlink") == os.strerror(13)
    assert result == dict.fromkeys(result, os.strerror(1)) and len(result) == 18, result
    assert_serves(solo)


def test_sysv_shared_memory_cannot_outlive_a_job(solo: Pool) -> None:
    hoarder = """
        import ctypes
        def f():
            libc = ctypes.CDLL(None, use_errno=True)
            libc.shmat.restype = ctypes.c_void_p
            made = 0
            for i in range(40):
                seg = libc.shmget(0x1000 + i, 40 << 20, 0o1600)
                if seg < 0:
                    continue
                address = libc.shmat(seg, None, 0)
                if address not in (None, ctypes.c_void_p(-1).value):
                    ctypes.memset(address, 0x41, 40 << 20)
                    libc.shmdt(ctypes.c_void_p(address))
                made += 1
            return made
    """
    assert returned(_run(solo, hoarder, limits=Limits(timeout_s=2.0, memory_mb=64))) == 0
    # Nothing is held in the worker's IPC namespace (the host's, in the fallback).
    lister = """
        def f():
            with open('/proc/sysvipc/shm') as table:
                return [line.split()[0] for line in table.readlines()[1:]
                        if int(line.split()[0]) in range(0x1000, 0x1000 + 40)]
    """
    assert returned(_run(solo, lister)) == []
    assert_serves(solo)


# --- 1b. Kernel-sent signals: async I/O owners ----------------------------------------------

SIGNAL_PROBE = """
    import ctypes, fcntl, os, struct
    def f(target):
        libc = ctypes.CDLL(None, use_errno=True)
        target = {'init': 1, 'parent': os.getppid(), 'group': -os.getpgrp()}.get(target, target)
        r, w = os.pipe()
        out = {}
        def attempt(name, call):
            try:
                call()
                out[name] = 'allowed'
            except OSError as exc:
                out[name] = exc.strerror
        def raw(*args):
            ctypes.set_errno(0)
            if libc.syscall(*(ctypes.c_long(a) for a in args)) == -1:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        def ioctl(request, value):
            arg = ctypes.c_int(value)
            if libc.ioctl(r, request, ctypes.byref(arg)) == -1:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        attempt('F_SETOWN', lambda: fcntl.fcntl(r, fcntl.F_SETOWN, target))
        attempt('F_SETOWN_EX', lambda: fcntl.fcntl(r, 15, struct.pack('ii', 1, abs(target))))
        attempt('F_SETSIG', lambda: fcntl.fcntl(r, 10, 2))
        attempt('F_SETSIG_KILL', lambda: fcntl.fcntl(w, 10, 9))
        attempt('O_ASYNC', lambda: fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK))
        attempt('O_ASYNC_HIGH_BITS', lambda: raw(72, r, 4 | (1 << 32), os.O_ASYNC))
        attempt('FIOASYNC', lambda: ioctl(0x5452, 1))
        attempt('FIOSETOWN', lambda: ioctl(0x8901, target))
        attempt('SIOCSPGRP', lambda: ioctl(0x8902, target))
        attempt('TIOCSPGRP', lambda: ioctl(0x5410, abs(target)))
        attempt('F_NOTIFY', lambda: fcntl.fcntl(os.open('/tmp', os.O_RDONLY), 1026, 0x80000003))
        attempt('F_SETLEASE', lambda: fcntl.fcntl(r, 1024, 0))
        os.write(w, b'x' * 100)  # would raise the signal were any owner set
        # What must keep working: ordinary flag changes and reads.
        os.set_blocking(r, False)
        os.set_blocking(r, True)
        fcntl.fcntl(r, fcntl.F_SETFL, os.O_NONBLOCK)
        kept = fcntl.fcntl(r, fcntl.F_GETFL) & os.O_NONBLOCK != 0
        owner = fcntl.fcntl(r, fcntl.F_GETOWN)
        return out, kept, owner
"""


@pytest.mark.parametrize("target", ["'init'", "'parent'", "'group'", "0"])
def test_async_io_signal_owners_are_denied(solo: Pool, target: str) -> None:
    worker = _worker_host_pid(solo)
    result = _run(solo, SIGNAL_PROBE, f"f({target})")
    out, kept, owner = returned(result)
    assert out == dict.fromkeys(out, os.strerror(1)), out
    assert kept is True and owner == 0
    assert _worker_host_pid(solo) == worker and solo.restarts == 0
    assert_serves(solo)


def test_kernel_sent_sigkill_cannot_reach_a_host_process_in_the_fallback(
    fallback_pool: Pool,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to start a bystander as the sandbox uid")
    bystander = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "60"]
    )
    try:
        attack = f"""
            import fcntl, os
            def f():
                r, w = os.pipe()
                for call in (lambda: fcntl.fcntl(r, fcntl.F_SETOWN, {bystander.pid}),
                             lambda: fcntl.fcntl(r, 10, 9),
                             lambda: fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)):
                    try:
                        call()
                    except OSError:
                        pass
                os.write(w, b'x')
                return 'done'
        """
        assert returned(_run(fallback_pool, attack)) == "done"
        time.sleep(0.2)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
    assert_serves(fallback_pool)


def test_the_worker_ignores_stray_signals(fallback_pool: Pool) -> None:
    """Signals that reach the worker anyway (here sent by the host) do not end it."""
    worker = _worker_host_pid(fallback_pool)
    restarts = fallback_pool.restarts
    for number in (
        signal.SIGINT,
        signal.SIGHUP,
        signal.SIGIO,
        signal.SIGURG,
        signal.SIGTERM,
        signal.SIGUSR1,
        signal.SIGALRM,
    ):
        os.kill(worker, number)
        for process in _descendants(worker):  # the templates and their spare children
            with contextlib.suppress(ProcessLookupError):  # a finished job's child, reaped
                os.kill(process, number)
    time.sleep(0.1)
    assert_serves(fallback_pool)
    assert _worker_host_pid(fallback_pool) == worker and fallback_pool.restarts == restarts
    # Children still get default dispositions (SIGINT is the program's own business).
    probe = """
        import signal
        def f():
            return [signal.getsignal(s) == signal.SIG_DFL for s in
                    (signal.SIGINT, signal.SIGHUP, signal.SIGIO, signal.SIGTERM, signal.SIGPIPE)]
    """
    assert returned(_run(fallback_pool, probe)) == [True] * 5


@pytest.mark.parametrize("which", ["lean_template_pid", "template_pid"])
def test_a_lost_template_ends_its_worker_and_the_pool_recovers(which: str) -> None:
    # The lean template serves programs with no import statement, the other one the rest.
    program = CANARY if which == "lean_template_pid" else Program(f"import math\n{CANARY.source}")
    with Pool(1, isolation="fallback") as pool:
        worker = _worker_host_pid(pool)
        templates = Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
        template = pool.worker_info[which]
        assert sorted(templates) == sorted(
            str(pool.worker_info[key]) for key in ("lean_template_pid", "template_pid")
        )
        os.kill(template, signal.SIGKILL)
        time.sleep(0.1)
        lost = pool.run(program, parse_call("f([1])"))
        assert lost.status is Status.SANDBOX_ERROR, lost.describe()  # the pool's own report
        assert pool.restarts == 1
        assert_serves(pool)


def test_a_running_child_dies_with_its_worker_in_the_fallback() -> None:
    """As root the fallback drops the child to uid 65534, which clears the parent-death signal;
    it is set again after the drop, so a killed worker leaves no program running on the host."""
    sleeper = Program("import time\ndef f():\n    time.sleep(30)\n    return 1")
    limits = Limits(timeout_s=5.0, wall_timeout_s=60.0, memory_mb=256)
    with Pool(1, isolation="fallback", limits=limits) as pool, ThreadPoolExecutor(1) as runner:
        worker = _worker_host_pid(pool)
        running = runner.submit(pool.run, sleeper, parse_call("f()"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the template and its children: spare and running
            family = _descendants(worker)
            if len(family) >= 3:
                break
            time.sleep(0.05)
        assert len(family) >= 3, family
        os.kill(worker, signal.SIGKILL)
        assert running.result(timeout=30).status is Status.SANDBOX_ERROR
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in family):
            time.sleep(0.05)
        alive = [
            pid
            for pid in family
            if Path(f"/proc/{pid}").exists()
            and "zombie" not in Path(f"/proc/{pid}/status").read_text()
        ]
        assert alive == []
        assert_serves(pool)


# --- 1c. Advisory locks on host files --------------------------------------------------------

LOCK_PROBE = """
    import ctypes, fcntl, os, struct, time
    def f(path, hold_s):
        libc = ctypes.CDLL(None, use_errno=True)
        def raw(number, fd, command, data):
            ctypes.set_errno(0)
            if libc.syscall(ctypes.c_long(number), ctypes.c_long(fd), ctypes.c_long(command),
                            ctypes.c_char_p(data)) == -1:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        fd = os.open(path, os.O_RDONLY)
        out = {}
        def attempt(name, call):
            try:
                call()
                out[name] = 'allowed'
            except OSError as exc:
                out[name] = exc.strerror
        flock = struct.pack('hhqqi', fcntl.F_RDLCK, 0, 0, 0, 0)
        attempt('flock_ex', lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
        attempt('flock_sh', lambda: fcntl.flock(fd, fcntl.LOCK_SH))
        attempt('lockf_ex', lambda: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
        attempt('lockf_sh', lambda: fcntl.lockf(fd, fcntl.LOCK_SH))
        attempt('lockf_range', lambda: fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 10, 5))
        attempt('F_SETLK', lambda: fcntl.fcntl(fd, fcntl.F_SETLK, flock))
        attempt('F_SETLKW', lambda: fcntl.fcntl(fd, fcntl.F_SETLKW, flock))
        attempt('F_OFD_SETLK', lambda: fcntl.fcntl(fd, 37, flock))
        attempt('F_OFD_SETLKW', lambda: fcntl.fcntl(fd, 38, flock))
        attempt('F_SETLK_HIGH_BITS', lambda: raw(72, fd, 6 | (1 << 40), flock))
        probe = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0))
        time.sleep(hold_s)
        return out, struct.unpack('hhqqi', probe)[0] == fcntl.F_UNLCK
"""


def test_advisory_locks_on_host_files_are_denied(solo: Pool) -> None:
    # A host file the sandbox also sees: the staged worker (bubblewrap) / this test (fallback).
    host_path = os.path.join(solo._stage, "worker.py")
    inside = "/tmp/codereasoner-sandbox/worker.py" if solo.plan.mode == "bubblewrap" else host_path
    with ThreadPoolExecutor(1) as executor:
        future = executor.submit(_run, solo, LOCK_PROBE, f"f({inside!r}, 1.0)")
        time.sleep(0.6)  # the program holds whatever it got for a second
        with open(host_path, "r+b") as handle:  # a host writer is not blocked
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        out, unlocked = returned(future.result())
    assert out == dict.fromkeys(out, os.strerror(1)) and len(out) == 10, out
    assert unlocked is True  # F_GETLK stays available
    assert_serves(solo)


# --- 1d. Scheduling and priority of other processes -----------------------------------------

SCHED_PROBE = """
    import ctypes, os
    def f():
        libc = ctypes.CDLL(None, use_errno=True)
        me = os.getpid()
        out = {}
        def attempt(name, call):
            try:
                call()
                out[name] = 'allowed'
            except OSError as exc:
                out[name] = exc.strerror
        def raw(*args):
            ctypes.set_errno(0)
            if libc.syscall(*args) == -1:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        idle = os.sched_param(0)
        attr = (ctypes.c_uint32 * 14)(56, os.SCHED_IDLE)
        for label, pid in (('init', 1), ('parent', os.getppid()), ('self_pid', me)):
            attempt(f'setscheduler_{label}', lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, idle))
            attempt(f'setparam_{label}', lambda: os.sched_setparam(pid, idle))
            attempt(f'setaffinity_{label}', lambda: os.sched_setaffinity(pid, {0}))
            attempt(f'setattr_{label}', lambda: raw(314, pid, attr, 0))
            attempt(f'setpriority_{label}', lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
            attempt(f'ioprio_{label}', lambda: raw(251, 1, pid, (3 << 13)))
        attempt('setpriority_pgrp', lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
        attempt('setpriority_user', lambda: os.setpriority(os.PRIO_USER, 0, 19))
        attempt('ioprio_pgrp', lambda: raw(251, 2, 0, (3 << 13)))
        attempt('ioprio_user', lambda: raw(251, 3, os.getuid(), (3 << 13)))
        attempt('setscheduler_high_bits', lambda: raw(144, 1 << 32 | 1, os.SCHED_IDLE, ctypes.byref(ctypes.c_int(0))))
        # Oneself, named as 0, stays allowed.
        os.sched_setaffinity(0, os.sched_getaffinity(0))
        os.setpriority(os.PRIO_PROCESS, 0, 5)
        os.nice(1)
        raw(251, 1, 0, (2 << 13) | 4)
        os.sched_setscheduler(0, os.SCHED_IDLE, idle)
        return out, os.sched_getscheduler(0) == os.SCHED_IDLE, os.getpriority(os.PRIO_PROCESS, 0)
"""


def test_scheduling_of_other_processes_is_denied(solo: Pool) -> None:
    out, idle, nice = returned(_run(solo, SCHED_PROBE))
    assert out == dict.fromkeys(out, os.strerror(1)) and len(out) == 23, out
    assert idle is True and nice == 6
    worker = _worker_host_pid(solo)
    templates = [
        int(pid) for pid in Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
    ]
    for pid in (worker, *templates):
        assert os.sched_getscheduler(pid) == os.SCHED_OTHER, pid
        assert os.getpriority(os.PRIO_PROCESS, pid) == 0, pid
        assert os.sched_getaffinity(pid) == os.sched_getaffinity(0), pid
    later = "import os\ndef f():\n    return [os.sched_getscheduler(0), os.getpriority(0, 0)]"
    assert returned(_run(solo, later)) == [os.SCHED_OTHER, 0]  # nothing carried over
    assert_serves(solo)


LIMITS_PROBE = """
    import ctypes, os, resource
    def f():
        libc = ctypes.CDLL(None, use_errno=True)
        out = {}
        def attempt(name, call):
            try:
                call()
                out[name] = 'allowed'
            except (OSError, ValueError) as exc:
                out[name] = getattr(exc, 'strerror', None) or 'refused'
        for label, pid in (('init', 1), ('parent', os.getppid()), ('self_pid', os.getpid())):
            attempt(f'lower_{label}', lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, 3)))
            attempt(f'read_{label}', lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE))
        def raw(*args):
            ctypes.set_errno(0)
            if libc.syscall(*args) == -1:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        # prlimit64 with pid 0 in the low 32 bits (the kernel's int), not in the 64-bit argument
        attempt('high_bits', lambda: raw(302, ctypes.c_long(1 << 32), 7, None, None))
        for kind in (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_NOFILE):
            soft, hard = resource.getrlimit(kind)
            attempt(f'raise_{kind}', lambda: resource.setrlimit(kind, (hard + 1, hard + 1)))
        resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))  # lowering one's own stays allowed
        return out, resource.getrlimit(resource.RLIMIT_NOFILE)
"""


def test_limits_of_other_processes_cannot_be_changed_nor_own_raised(solo: Pool) -> None:
    worker = _worker_host_pid(solo)
    templates = Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
    before = {pid: Path(f"/proc/{pid}/limits").read_text() for pid in (worker, *templates)}
    out, own = returned(_run(solo, LIMITS_PROBE))
    denied = {name: os.strerror(1) for name in out if not name.startswith("raise_")}
    assert {name: out[name] for name in denied} == denied, out
    assert all(out[name] in ("refused", os.strerror(1)) for name in out if "raise_" in name), out
    assert own == (32, 32)
    assert {pid: Path(f"/proc/{pid}/limits").read_text() for pid in before} == before
    later = "import resource\ndef f():\n    return list(resource.getrlimit(resource.RLIMIT_NOFILE))"
    assert returned(_run(solo, later)) == [64, 64]  # the next child sets its own again
    assert_serves(solo)


# --- 2. Heap residue of earlier jobs ---------------------------------------------------------

RESIDUE_SEARCH = """
    import ctypes
    def f(head, tail):
        head, tail = head.encode(), tail.encode()
        hits = 0
        with open('/proc/self/maps') as maps:
            regions = [line.split() for line in maps]
        for fields in regions:
            if not fields[1].startswith('rw') or fields[1][3] != 'p':
                continue  # the heap and anonymous memory are private and writable
            if len(fields) > 5 and fields[5] not in ('[heap]', '[stack]'):
                continue  # file-backed or special
            start, end = (int(x, 16) for x in fields[0].split('-'))
            data = ctypes.string_at(start, end - start)
            at = data.find(head)
            while at != -1:
                # compare the tail separately: the searcher never holds head + tail itself
                if data[at + len(head): at + len(head) + len(tail)] == tail:
                    hits += 1
                at = data.find(head, at + 1)
        return hits
"""


def test_no_child_finds_an_earlier_jobs_source_in_its_memory(solo: Pool) -> None:
    head, tail = uuid.uuid4().hex, uuid.uuid4().hex
    secret_program = f"""
        KEY = '{head}{tail}'
        def f(x):
            note = KEY * 3 + x
            return len(note)
    """
    assert returned(_run(solo, secret_program, f"f('{head}{tail}')")) == 256
    # The searcher itself works: it finds the token in its own job's text.
    own = textwrap.dedent(RESIDUE_SEARCH) + f"\nMINE = '{head}' + '{tail}'\nMINE2 = MINE * 2\n"
    assert returned(_run(solo, own, f"f('{head}', '{tail}')")) >= 1
    # Jobs of other programs: run the secret program again, several batches, then search.
    for _ in range(3):
        _run(solo, secret_program, f"f('{head}{tail}')")
    assert returned(_run(solo, RESIDUE_SEARCH, f"f('{head}', '{tail}')")) == 0
    assert_serves(solo)


# --- 3. Only the worker reports sandbox_error -----------------------------------------------

FORGER = """
    import json, os
    def f(status, exit_code):
        lines = [
            {"i": 0, "status": status, "exc_type": "SandboxError", "exc_message": "forged"},
            {"setup_error": "forged set-up failure"},
            {"ready": True},
        ]
        for fd in range(3, 64):
            for line in lines:
                try:
                    os.write(fd, (json.dumps(line) + "\\n").encode())
                except OSError:
                    pass
        if exit_code is not None:
            os._exit(exit_code)
        return 'done'
"""


@pytest.mark.parametrize("exit_code", [None, 70, 0])
def test_a_child_cannot_claim_an_infrastructure_failure(solo: Pool, exit_code: int | None) -> None:
    result = _run(solo, FORGER, f"f('sandbox_error', {exit_code})")
    assert result.status is Status.ERROR, result.describe()
    assert result.exception_type == "ProtocolViolation", result.describe()
    assert_serves(solo)


def test_a_forged_sandbox_error_in_a_batch_costs_only_the_program(solo: Pool) -> None:
    program = Program(
        _src("""
        import json, os
        def f(n):
            if n == 1:
                for i in range(3):
                    line = {"i": i, "status": "sandbox_error"}
                    for fd in range(3, 64):
                        try:
                            os.write(fd, (json.dumps(line) + "\\n").encode())
                        except OSError:
                            pass
            return n
    """)
    )
    results = solo.run_batch(program, [parse_call(f"f({n})") for n in range(3)])
    assert [r.status for r in results].count(Status.SANDBOX_ERROR) == 0, results
    assert results[0].matches(0)
    assert all(r.status in (Status.OK, Status.ERROR) for r in results)
    assert_serves(solo)


def test_forged_result_values_are_only_ever_the_programs_own(solo: Pool) -> None:
    forged = """
        import json, os
        def f():
            line = {"i": 0, "status": "ok", "value": "'passed'", "literal": True,
                    "max_rss_kb": 10 ** 400, "cpu_total_ms": float('inf')}
            for fd in range(3, 64):
                try:
                    os.write(fd, (json.dumps(line) + "\\n").encode())
                except OSError:
                    pass
            return 'honest'
    """
    result = _run(solo, forged)
    # Whatever the line said, it is a value for this call only, with sane numbers.
    assert result.max_rss_kb < 1 << 40 and 0 <= result.cpu_ms < 1e9
    json.dumps(result.to_dict(), allow_nan=False)
    assert_serves(solo)


def test_a_program_cannot_replace_the_renderer(solo: Pool) -> None:
    """``import values`` in the program is a copy of its own: what it replaces there is not
    what the worker reports with (a generated program forged its recorded output so)."""
    source = """
        import values
        values.render = lambda value, **options: "'FORGED'"
        values.type_name = lambda value: "str"
        def f():
            import values as again
            again.render = lambda value, **options: "'FORGED'"
            return 42
    """
    result = _run(solo, source)
    assert returned(result) == 42 and result.value_type == "int", result.describe()
    assert_serves(solo)


def test_a_real_setup_failure_is_still_a_sandbox_error(solo: Pool) -> None:
    # An address-space limit no rlimit can hold makes the child's set-up itself fail.
    result = _run(solo, "def f():\n    return 1", limits=Limits(memory_mb=1 << 45))
    assert result.status is Status.SANDBOX_ERROR, result.describe()
    assert "set-up" in (result.exception_message or ""), result.describe()
    assert_serves(solo)


# --- 4. The host tree is not visible ---------------------------------------------------------

HOST_PATHS = [
    str(SHARED_DATA / "cruxeval" / "cruxeval.jsonl"),
    str(SHARED_DATA),
    str(PROJECT_ROOT),
    str(PROJECT_ROOT / ".git"),
    str(PROJECT_ROOT / ".venv"),
    str(PROJECT_ROOT / "README.md"),
    str(PROJECT_ROOT / "src" / "codereasoner"),
    "/var/log",
    "/var",
    "/opt",
    "/root",
    "/home",
    "/srv",
    "/mnt",
    "/media",
    "/work",
    "/run",
    "/boot",
    "/sys/class",
    "/etc/shadow",
    "/etc/hostname",
    "/etc/ssh",
    "/usr/local/src/.never",
    os.path.expanduser("~"),
    os.path.realpath(sys.prefix),
]


def test_only_what_the_sandbox_needs_is_bound(pool: Pool) -> None:
    probe = """
        import os
        def f(paths):
            seen = [p for p in paths if os.path.lexists(p)]
            readable = []
            for p in paths:
                try:
                    open(p, 'rb').read(1)
                    readable.append(p)
                except OSError:
                    pass
            return sorted(os.listdir('/')), sorted(os.listdir('/etc')), seen, readable
    """
    wanted = [p for p in HOST_PATHS if not p.startswith("/usr/")]
    if pool.plan.python.startswith(os.path.realpath(sys.prefix) + "/"):
        wanted.remove(os.path.realpath(sys.prefix))  # the interpreter's own prefix is bound
    root, etc, seen, readable = returned(_run(pool, probe, f"f({wanted!r})"))
    assert set(root) <= {
        "bin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "sbin",
        "usr",
        "etc",
        "proc",
        "dev",
        "tmp",
    } | {p.split("/")[1] for p in pool.plan.bound_paths}
    assert "work" not in root and "root" not in root and "home" not in root
    assert set(etc) <= {
        "alternatives",
        "ld.so.cache",
        "ld.so.conf",
        "ld.so.conf.d",
        "localtime",
        "passwd",
        "group",
        "nsswitch.conf",
        "mime.types",
        "os-release",
        "timezone",
        "host.conf",
        "gai.conf",
        "python3",
        f"python{pool.plan.python_version[:4]}",
        "python" + ".".join(pool.plan.python_version.split(".")[:2]),
    }, etc
    assert seen == [] and readable == [], (seen, readable)
    # The sandbox user is known to libc without the host's user list.
    who = "import getpass, os\ndef f():\n    return getpass.getuser(), os.path.expanduser('~')"
    user = "nobody" if os.geteuid() == 0 else __import__("getpass").getuser()
    assert returned(_run(pool, who)) == (user, "/tmp")
    assert_serves(pool)


def test_debian_packages_still_import_through_site(pool: Pool) -> None:
    if not Path("/usr/lib/python3/dist-packages/numpy").is_dir():
        pytest.skip("python3-numpy not installed")
    probe = """
        import site, sys
        sys.path.extend(site.getsitepackages())
        import numpy
        def f():
            return int(numpy.arange(10).sum()), numpy.__file__.startswith('/usr/lib/python3/')
    """
    # A first numpy import reads its shared objects from disk: on a fresh machine's cold cache
    # that takes seconds of wall time for a few ms of CPU, so the limit is generous here.
    slow_disk = Limits(timeout_s=5.0, wall_timeout_s=30.0, memory_mb=256)
    assert returned(_run(pool, probe, limits=slow_disk)) == (45, True)
    assert_serves(pool)


def test_hide_paths_still_hides_inside_what_is_bound() -> None:
    target = "/usr/share/doc"
    with Pool(1, isolation="bubblewrap", hide_paths=[target]) as pool:
        assert target in pool.plan.hidden_paths
        listing = "import os\ndef f(p):\n    return os.listdir(p)"
        assert returned(_run(pool, listing, f"f({target!r})")) == []
        assert_serves(pool)


# --- 5. Stage directories of killed runs -----------------------------------------------------

HOLDER = """
import sys, time
from codereasoner.execution import Pool
pool = Pool(1, isolation=sys.argv[1])
print(pool._stage, flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("mode", MODES)
def test_stage_dirs_of_killed_runs_are_removed(mode: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, mode], stdout=subprocess.PIPE, text=True, cwd=PROJECT_ROOT
    )
    try:
        stage = holder.stdout.readline().strip()  # type: ignore[union-attr]
        assert stage and os.path.isdir(stage)
        assert json.loads(Path(stage, STAGE_OWNER_FILE).read_text())["pid"] == holder.pid
        live = stage_files()  # a live owner's directory is left alone
        assert os.path.isdir(stage) and os.path.isdir(live)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert os.path.isdir(stage)  # left behind by the kill
    with Pool(1, isolation=mode) as pool:
        assert not os.path.exists(stage)
        assert os.path.isdir(live)  # this process is alive: its directory stays
        assert_serves(pool)
    shutil.rmtree(live)


def test_stage_cleanup_leaves_foreign_and_unrelated_entries_alone() -> None:
    base = tempfile.gettempdir()
    dead = {"pid": 2**22 + 12345, "start": 1, "boot": "gone"}

    def planted(tag: str) -> str:
        path = os.path.join(base, f"codereasoner-stage-{tag}{uuid.uuid4().hex[:6]}")
        os.mkdir(path)
        Path(path, STAGE_OWNER_FILE).write_text(json.dumps(dead))
        return path

    ours, foreign, target = planted("ours"), planted("foreign"), planted("target")
    link = os.path.join(base, f"codereasoner-stage-link{uuid.uuid4().hex[:6]}")
    os.symlink(target, link)
    if os.geteuid() == 0:
        os.chown(foreign, 65534, 65534)
    try:
        fresh = stage_files()
        assert not os.path.exists(ours)  # ours, owner dead: removed
        assert os.path.isdir(foreign) == (os.geteuid() == 0)  # another user's: left alone
        assert os.path.islink(link)  # a symlink is never followed nor removed
        assert os.path.isdir(fresh)
    finally:
        os.unlink(link)
        for path in (foreign, target, fresh):
            shutil.rmtree(path, ignore_errors=True)


HOST_PROC_PROBE = """
import os
def f():
    found = {}
    for name in os.listdir('/proc'):
        path = '/proc/' + name
        if name.isdigit() or name in ('self', 'thread-self'):
            continue
        try:
            if os.path.isdir(path):
                found[path] = 'folder:' + ','.join(sorted(os.listdir(path)))
            else:
                with open(path, 'rb') as handle:
                    found[path] = len(handle.read(1 << 16))
        except OSError as exc:
            found[path] = type(exc).__name__
    try:
        with open('/proc/sys/kernel/random/boot_id') as handle:
            found['boot_id'] = handle.read()
    except OSError as exc:
        found['boot_id'] = type(exc).__name__
    return found
"""
# what the sandbox may show of /proc's own entries (a process's own links, its namespaces'
# views, CPU features, sys)
PROC_SHOWN = {"/proc/mounts", "/proc/net", "/proc/sysvipc", "/proc/cpuinfo", "/proc/sys"}


def test_proc_tells_nothing_about_the_host_under_bubblewrap() -> None:
    with Pool(1, isolation="bubblewrap", limits=Limits(timeout_s=5.0)) as pool:
        shown = returned(pool.run(Program(HOST_PROC_PROBE), parse_call("f()")))
    assert isinstance(shown, dict)
    host_boot = Path("/proc/sys/kernel/random/boot_id").read_text()
    assert shown.pop("boot_id") in ("", "PermissionError", "FileNotFoundError")
    assert host_boot not in shown.values()
    told = {
        path: value for path, value in shown.items()
        if path not in PROC_SHOWN and value not in (0, "folder:", "PermissionError", "FileNotFoundError")
    }  # fmt: skip
    assert not told, told  # pressure, interrupts, diskstats, config.gz, stat, version, ...
    assert {"/proc/interrupts", "/proc/diskstats", "/proc/stat"} <= set(shown)  # looked at


INOTIFY_PROBE = """
import ctypes
def f():
    libc = ctypes.CDLL(None, use_errno=True)
    made = libc.inotify_init1(0)
    return [made, ctypes.get_errno()]
"""


def test_a_job_gets_no_inotify_instance() -> None:
    """inotify instances and watches are counted per uid: one job could take them all from the
    next one (and from the host's own processes of that uid)."""
    with Pool(1, limits=Limits(timeout_s=5.0)) as pool:
        made, errno = returned(pool.run(Program(INOTIFY_PROBE), parse_call("f()")))
    assert made == -1 and errno == 1  # EPERM, from seccomp


def _eval_without_bubblewrap(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``eval`` on a PATH where no bubblewrap is found (the interpreter is named in full)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    out = tmp_path / f"run{len(flags)}"
    return subprocess.run(
        [sys.executable, "-m", "codereasoner", "eval", "--model", "oracle", "--bench",
         "cruxeval-o", "--limit", "2", "--data-dir", str(PROJECT_ROOT / "tests" / "fixtures"),
         "--out", str(out), *flags],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PATH": str(empty)},
    )  # fmt: skip


def test_grading_refuses_the_fallback_unless_it_is_asked_for(tmp_path: Path) -> None:
    """Without bubblewrap an answer can read the benchmark's truths, so ``auto`` does not quietly
    grade under the fallback; ``--isolation fallback`` by name still grades, with its warning."""
    refused = _eval_without_bubblewrap(tmp_path)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "--isolation fallback" in lines[0], refused.stderr
    assert "Traceback" not in refused.stderr
    asked = _eval_without_bubblewrap(tmp_path, "--isolation", "fallback")
    assert asked.returncode == 0, asked.stderr
    assert "bubblewrap unavailable" in asked.stderr
    assert "pass@1" in asked.stdout


def test_only_grading_refuses_the_fallback() -> None:
    plan = plan_isolation("fallback")
    check_grading_isolation(plan, "fallback")
    with pytest.raises(SandboxUnavailable, match="benchmark's truths"):
        check_grading_isolation(plan, "auto")
    with Pool(1, isolation="fallback", grading=True) as pool:
        assert_serves(pool)


def test_children_get_default_signals_whatever_the_harness_ignores() -> None:
    """A harness started under nohup ignores SIGHUP; its programs must not inherit that."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with Pool(1, isolation="fallback") as pool:
            probe = "import signal\ndef f():\n    return signal.getsignal(signal.SIGHUP) == signal.SIG_DFL"
            assert returned(_run(pool, probe)) is True
    finally:
        signal.signal(signal.SIGHUP, previous)
