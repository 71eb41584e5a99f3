"""Adversarial programs against the real sandbox.

Each attack asserts two things: the attack is contained (with the right status and verdict), and
the harness keeps serving correct results afterwards (a canary runs after every attack).
"""

from __future__ import annotations

import os
import socket
import tempfile
import textwrap
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from codereasoner.execution import ExecResult, Limits, Pool, Program, Status, parse_call
from tests.conftest import SECRET

CANARY = Program("def f(xs):\n    return sorted(xs) + [len(xs), abs(-2)]")


@dataclass(frozen=True)
class Attack:
    name: str
    source: str
    check: Callable[[ExecResult], None]
    call: str = "f()"
    limits: Limits | None = None


def status_is(*statuses: Status) -> Callable[[ExecResult], None]:
    def check(result: ExecResult) -> None:
        assert result.status in statuses, result.describe()

    return check


def raises(*exc_types: str) -> Callable[[ExecResult], None]:
    def check(result: ExecResult) -> None:
        assert result.status is Status.ERROR, result.describe()
        assert result.exception_type in exc_types, result.describe()

    return check


def returns(expected: object) -> Callable[[ExecResult], None]:
    def check(result: ExecResult) -> None:
        assert result.ok, result.describe()
        assert result.matches(expected, "exact"), result.describe()

    return check


def never_matches(*candidates: object) -> Callable[[ExecResult], None]:
    """The verdict against any of these expected values must be 'wrong'."""

    def check(result: ExecResult) -> None:
        for candidate in candidates:
            assert not result.matches(candidate), (candidate, result.describe())

    return check


def both(*checks: Callable[[ExecResult], None]) -> Callable[[ExecResult], None]:
    def check(result: ExecResult) -> None:
        for one in checks:
            one(result)

    return check


def _src(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


@pytest.fixture(scope="module")
def victim() -> Iterator[str]:
    """A world-writable directory with a file, visible to the host but not to the sandbox."""
    directory = tempfile.mkdtemp(prefix="codereasoner-victim-")
    os.chmod(directory, 0o777)
    path = os.path.join(directory, "precious.txt")
    with open(path, "w") as handle:
        handle.write("intact")
    os.chmod(path, 0o666)
    yield directory


def victim_intact(directory: str) -> None:
    assert os.listdir(directory) == ["precious.txt"]
    with open(os.path.join(directory, "precious.txt")) as handle:
        assert handle.read() == "intact"


ATTACKS: list[Attack] = [
    # --- secrets ---
    Attack(
        "read_shadow",
        _src("""
        def f():
            return open('/etc/shadow').read()
    """),
        # not bound under bubblewrap; unreadable after the uid drop in the fallback
        raises("PermissionError", "FileNotFoundError"),
    ),
    Attack(
        "env_secret",
        _src("""
        import os
        def f():
            return sorted(v for v in os.environ.values() if 'canary' in v)
    """),
        returns([]),
    ),
    Attack(
        "proc_environ_scan",
        _src(f"""
        import os
        def f():
            found = []
            for pid in os.listdir('/proc'):
                for name in ('environ', 'cmdline'):
                    try:
                        if b'{SECRET}' in open(f'/proc/{{pid}}/{{name}}', 'rb').read():
                            found.append(pid)
                    except OSError:
                        pass
            return found
    """),
        returns([]),
    ),
    Attack(
        "read_parent_memory",
        _src("""
        import os
        def f():
            opened = []
            for pid in {os.getppid(), 1}:
                try:
                    with open(f'/proc/{pid}/mem', 'rb') as mem:
                        opened.append(pid)
                except OSError:
                    pass
            return opened
    """),
        returns([]),
    ),
    Attack(
        "process_vm_readv",
        _src("""
        import ctypes, os
        def f():
            libc = ctypes.CDLL(None, use_errno=True)
            rc = libc.syscall(310, os.getppid(), 0, 1, 0, 1, 0)  # process_vm_readv on x86-64
            return rc == -1
    """),
        returns(True),
    ),
    Attack(
        "host_home_hidden",
        _src("""
        import os
        def f():
            return {p: sorted(os.listdir(p)) if os.path.lexists(p) else None
                    for p in ('/root', '/home', '/tmp')}
    """),
        returns({"/root": None, "/home": None, "/tmp": ["codereasoner-sandbox"]}),
    ),
    # --- filesystem ---
    Attack(
        "write_system_file",
        _src("""
        def f():
            with open('/etc/codereasoner-pwned', 'w') as out:
                out.write('x')
    """),
        raises("PermissionError"),
    ),
    Attack(
        "os_remove_victim", "", raises("PermissionError")
    ),  # source filled per test (victim path)
    Attack("posix_unlink_victim", "", status_is(Status.ERROR)),
    Attack("write_victim", "", status_is(Status.ERROR)),
    Attack("ctypes_system", "", status_is(Status.OK, Status.ERROR)),
    Attack(
        "create_empty_files",
        _src("""
        import os
        def f():
            made = []
            for directory in ('/tmp', '/dev/shm', '/root', '/home', '/tmp/codereasoner-sandbox'):
                try:
                    os.close(os.open(directory + '/planted', os.O_CREAT | os.O_RDONLY))
                    made.append(directory)
                except OSError:
                    pass
            return made
    """),
        returns([]),
    ),
    Attack(
        "os_system",
        _src("""
        import os
        def f():
            return os.system('echo pwned > /dev/shm/pwned')
    """),
        returns(127 << 8),
    ),
    Attack(
        "subprocess_run",
        _src("""
        import subprocess
        def f():
            return subprocess.run(['id'], capture_output=True).returncode
    """),
        raises("PermissionError"),
    ),
    # --- network ---
    Attack("network_connect", "", status_is(Status.ERROR)),  # port filled per test
    Attack(
        "network_listen",
        _src("""
        import socket
        def f():
            s = socket.socket()
            s.bind(('0.0.0.0', 8099))
            s.listen()
            return 'listening'
    """),
        raises("PermissionError"),
    ),
    # --- processes ---
    Attack(
        "fork_bomb",
        _src("""
        import os
        def f():
            while True:
                os.fork()
    """),
        raises("PermissionError"),
    ),
    Attack(
        "fork_orphans",
        _src("""
        import os, time
        def f():
            for _ in range(20):
                if os.fork() == 0:
                    time.sleep(60)
            return 'forked'
    """),
        raises("PermissionError"),
    ),
    Attack(
        "kill_parent",
        _src("""
        import os, signal
        def f():
            os.kill(os.getppid(), signal.SIGKILL)
    """),
        raises("PermissionError"),
    ),
    Attack(
        "kill_everything",
        _src("""
        import os, signal
        def f():
            os.kill(-1, signal.SIGKILL)
    """),
        raises("PermissionError"),
    ),
    Attack(
        "orphan_thread",
        _src("""
        import threading, time
        def f():
            def spin():
                while True:
                    time.sleep(0.001)
            threading.Thread(target=spin, daemon=True).start()
            return 'started'
    """),
        returns("started"),
    ),
    # --- resources ---
    Attack(
        "memory_bomb",
        _src("""
        def f():
            return len(b'x' * (4 << 30))
    """),
        status_is(Status.MEMORY),
    ),
    Attack(
        "memory_growth",
        _src("""
        def f():
            hoard = []
            while True:
                hoard.append(bytearray(50 << 20))
    """),
        status_is(Status.MEMORY),
    ),
    Attack(
        "cpu_loop",
        _src("""
        def f():
            while True:
                pass
    """),
        status_is(Status.TIMEOUT),
    ),
    Attack(
        "c_level_sum",
        _src("""
        def f():
            return sum(range(10 ** 15))
    """),
        status_is(Status.TIMEOUT),
    ),
    Attack(
        "c_level_repeat",
        _src("""
        import itertools
        def f():
            return sum(itertools.repeat(1))
    """),
        status_is(Status.TIMEOUT),
    ),
    Attack(
        "catastrophic_regex",
        _src("""
        import re
        def f():
            return bool(re.match(r'(a+)+$', 'a' * 64 + 'b'))
    """),
        status_is(Status.TIMEOUT),
    ),
    Attack(
        "sleep_forever",
        _src("""
        import time
        def f():
            time.sleep(3600)
    """),
        status_is(Status.TIMEOUT),
    ),
    Attack(
        "swallow_everything",
        _src("""
        def f():
            while True:
                try:
                    while True:
                        pass
                except BaseException:
                    pass
    """),
        status_is(Status.TIMEOUT),
    ),
    Attack(
        "signal_tampering",
        _src("""
        import signal
        def f():
            for sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            while True:
                pass
    """),
        status_is(Status.TIMEOUT),
    ),
    Attack(
        "raise_own_limits",
        _src("""
        import resource
        def f():
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)
    """),
        status_is(Status.ERROR),
    ),
    Attack(
        "deep_recursion",
        _src("""
        def f(n=0):
            return f(n + 1)
    """),
        raises("RecursionError"),
    ),
    Attack(
        "c_stack_overflow",
        _src("""
        import sys
        sys.setrecursionlimit(10 ** 8)
        def f(n=0):
            return list(map(f, [n + 1]))  # each level recurses through C
    """),
        status_is(Status.KILLED),
    ),
    Attack(
        "ctypes_segfault",
        _src("""
        import ctypes
        def f():
            return ctypes.string_at(0)
    """),
        status_is(Status.KILLED),
    ),
    # --- output and input ---
    Attack(
        "output_flood",
        _src("""
        def f():
            while True:
                print('x' * 1000)
    """),
        status_is(Status.OUTPUT_LIMIT),
    ),
    Attack(
        "raw_fd_flood",
        _src("""
        import os
        def f():
            for _ in range(10000):
                os.write(1, b'{"id": 1, "results": []}\\n' * 100)
                os.write(2, b'noise' * 1000)
            return 'done'
    """),
        returns("done"),
    ),
    Attack(
        "huge_return_value",
        _src("""
        def f():
            return list(range(10 ** 6))
    """),
        status_is(Status.OUTPUT_LIMIT),
    ),
    Attack(
        "read_stdin",
        _src("""
        def f():
            return input()
    """),
        raises("EOFError"),
    ),
    Attack(
        "read_stdin_fd",
        _src("""
        import os
        def f():
            return os.read(0, 100)
    """),
        returns(b""),
    ),
    # --- exits and exceptions ---
    Attack(
        "sys_exit",
        _src("""
        import sys
        def f():
            sys.exit(0)
    """),
        raises("SystemExit"),
    ),
    Attack(
        "os_exit",
        _src("""
        import os
        def f():
            os._exit(0)
    """),
        both(status_is(Status.ERROR), never_matches(None, 0, True)),
    ),
    Attack(
        "keyboard_interrupt",
        _src("""
        def f():
            raise KeyboardInterrupt
    """),
        raises("KeyboardInterrupt"),
    ),
    Attack(
        "custom_base_exception",
        _src("""
        class Escape(BaseException):
            def __str__(self):
                while True:
                    pass
        def f():
            raise Escape()
    """),
        status_is(Status.TIMEOUT),
    ),
    # --- forging verdicts ---
    Attack(
        "always_equal_object",
        _src("""
        class Anything:
            def __eq__(self, other):
                return True
            def __repr__(self):
                return '[1, 2, 3]'
        def f():
            return Anything()
    """),
        both(
            never_matches([1, 2, 3], 0, None, "Anything"),
            lambda r: (r.ok and not r.is_literal) or pytest.fail(r.describe()),
        ),
    ),
    Attack(
        "int_subclass",
        _src("""
        class Sneaky(int):
            def __eq__(self, other):
                return True
            __hash__ = int.__hash__
        def f():
            return Sneaky(7)
    """),
        never_matches(8, 7),
    ),
    Attack(
        "forge_result_fds",
        _src("""
        import json, os
        def f():
            line = json.dumps({"i": 0, "status": "ok", "value": "'passed'", "literal": True}) + "\\n"
            for fd in range(3, 64):
                try:
                    os.write(fd, line.encode())
                except OSError:
                    pass
            assert False
    """),
        never_matches(2),
    ),
    Attack(
        "frame_walk",
        _src("""
        import sys
        def f():
            frame = sys._getframe()
            while frame is not None:
                for name in ('result', 'results', 'expected', 'job'):
                    if name in frame.f_locals:
                        try:
                            frame.f_locals[name] = 'passed'
                        except Exception:
                            pass
                frame = frame.f_back
            return 'wrong answer'
    """),
        both(returns("wrong answer"), never_matches(2)),
    ),
    Attack(
        "exit_zero_then_fail",
        _src("""
        import os
        def f():
            os._exit(0)
            assert False
    """),
        both(never_matches(2), status_is(Status.ERROR)),
    ),
]

FILLED: dict[str, Callable[[str, int], str]] = {
    "os_remove_victim": lambda victim, port: _src(f"""
        import os
        def f():
            os.remove('{victim}/precious.txt')
    """),
    "posix_unlink_victim": lambda victim, port: _src(f"""
        import posix
        def f():
            posix.unlink('{victim}/precious.txt')
    """),
    "write_victim": lambda victim, port: _src(f"""
        def f():
            with open('{victim}/precious.txt', 'w') as out:
                out.write('pwned')
    """),
    "ctypes_system": lambda victim, port: _src(f"""
        import ctypes
        def f():
            return ctypes.CDLL(None).system(b'rm -rf {victim}')
    """),
    "network_connect": lambda victim, port: _src(f"""
        import socket
        def f():
            socket.create_connection(('127.0.0.1', {port}), timeout=0.5).sendall(b'pwned')
            return 'connected'
    """),
}


@pytest.fixture(scope="module")
def listener() -> Iterator[tuple[int, list[bytes]]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            received.append(connection.recv(100) or b"<connected>")
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join()
    server.close()


def _run_attack(pool: Pool, attack: Attack, victim: str, port: int) -> ExecResult:
    source = FILLED[attack.name](victim, port) if attack.name in FILLED else attack.source
    return pool.run(Program(source), parse_call(attack.call), attack.limits)


def test_the_suite_has_at_least_30_distinct_attacks() -> None:
    assert len({attack.name for attack in ATTACKS}) == len(ATTACKS) >= 30


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda attack: attack.name)
def test_attack_is_contained(
    pool: Pool, attack: Attack, victim: str, listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener
    result = _run_attack(pool, attack, victim, port)
    attack.check(result)
    assert result.status is not Status.SANDBOX_ERROR, result.describe()
    victim_intact(victim)
    assert received == []
    assert not os.path.exists("/etc/codereasoner-pwned")
    canary = pool.run(CANARY, parse_call("f([3, 1, 2])"))
    assert canary.matches([1, 2, 3, 3, 2], "exact"), canary.describe()


def test_timeouts_are_enforced_promptly(pool: Pool) -> None:
    result = pool.run(
        Program("def f():\n    while True:\n        pass"), parse_call("f()"), Limits(timeout_s=0.5)
    )
    assert result.status is Status.TIMEOUT
    # CPU time, which a loaded machine does not stretch: stopped at the limit, not long after
    assert 400 <= result.cpu_ms <= 1500, result.cpu_ms


def test_builtins_tampering_does_not_leak_into_later_calls_of_a_batch(pool: Pool) -> None:
    program = Program(
        _src("""
        import builtins
        def f(poison):
            if poison:
                builtins.sorted = lambda xs: ['poisoned']
                builtins.len = lambda xs: -1
            return sorted([3, 1, 2]) + [len('ab')]
    """)
    )
    calls = [parse_call("f(True)"), parse_call("f(False)"), parse_call("f(False)")]
    first, second, third = pool.run_batch(program, calls)
    assert first.matches(["poisoned", -1])
    assert second.matches([1, 2, 3, 2], "exact")
    assert third.matches([1, 2, 3, 2], "exact")
    assert pool.run(CANARY, parse_call("f([2, 1])")).matches([1, 2, 2, 2])


def test_a_thread_left_running_does_not_touch_later_calls(pool: Pool) -> None:
    program = Program(
        _src("""
        import threading
        state = []
        def f(start):
            if start:
                def meddle():
                    while True:
                        state.append(1)
                threading.Thread(target=meddle, daemon=True).start()
            return len(state) if not start else 'started'
    """)
    )
    results = pool.run_batch(program, [parse_call("f(True)"), parse_call("f(False)")])
    assert results[0].matches("started")
    assert results[1].matches(0), results[1].describe()


def test_a_timeout_in_a_batch_only_costs_that_call(pool: Pool) -> None:
    program = Program("def f(n):\n    while n < 0:\n        pass\n    return n * 2")
    calls = [parse_call(f"f({n})") for n in (1, -1, 3, -1, 5)]
    results = pool.run_batch(program, calls, Limits(timeout_s=0.3))
    assert [result.status for result in results] == [
        Status.OK,
        Status.TIMEOUT,
        Status.OK,
        Status.TIMEOUT,
        Status.OK,
    ]
    assert [results[i].parsed_value() for i in (0, 2, 4)] == [2, 6, 10]


def test_nothing_leaks_between_programs_through_tmp(pool: Pool) -> None:
    writer = Program("def f():\n    open('/tmp/note', 'w').write('hi')\n    return 1")
    reader = Program("import os\ndef f():\n    return os.listdir('/tmp')")
    assert pool.run(writer, parse_call("f()")).status is Status.ERROR
    assert pool.run(reader, parse_call("f()")).matches(["codereasoner-sandbox"])


FALLBACK_ATTACKS = [
    "write_system_file", "os_remove_victim", "posix_unlink_victim", "write_victim",
    "ctypes_system", "subprocess_run", "network_connect", "network_listen", "fork_bomb",
    "kill_parent", "kill_everything", "memory_bomb", "cpu_loop", "c_level_repeat",
    "output_flood", "read_shadow", "env_secret",
]  # fmt: skip


@pytest.mark.parametrize("name", FALLBACK_ATTACKS)
def test_fallback_mode_still_contains(
    fallback_pool: Pool, name: str, victim: str, listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener
    attack = next(attack for attack in ATTACKS if attack.name == name)
    result = _run_attack(fallback_pool, attack, victim, port)
    if name == "read_shadow" and os.geteuid() != 0:
        pytest.skip("only meaningful when the harness runs as root (uid drop)")
    attack.check(result)
    victim_intact(victim)
    assert received == []
    canary = fallback_pool.run(CANARY, parse_call("f([3, 1, 2])"))
    assert canary.matches([1, 2, 3, 3, 2], "exact"), canary.describe()


def test_fallback_mode_reports_its_weakness(fallback_pool: Pool) -> None:
    assert fallback_pool.plan.mode == "fallback"
    assert any("not isolated" in warning for warning in fallback_pool.warnings)
    assert "fallback" in fallback_pool.isolation
