"""What the worker reads and checks on its pipes: job lines, result lines (bounded, typed,
shallow), a child's end (exit status, CPU time) and the failure results it reports itself.

Runs inside the sandbox as a flat module beside worker.py: standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codereasoner.execution.sandboxed.sandbox_child import (
        CHILD_STATUSES,
    )
else:
    from sandbox_child import (
        CHILD_STATUSES,
    )


_CLK_TCK = os.sysconf("SC_CLK_TCK")


_MAX_RSS_KB = 1 << 40


_MAX_CPU_MS = 1e12


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up once: children only call it


def _prctl_parent_death_kill() -> None:
    with contextlib.suppress(Exception):
        _PRCTL(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _read_job(fd: int) -> tuple[int, bytes]:
    """Read ``b"<start> <size>\\n"`` and then ``size`` bytes of job JSON from the job pipe."""
    data = b""
    while b"\n" not in data:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError("job pipe closed before a job arrived")
        data += chunk
    head, data = data.split(b"\n", 1)
    start, size = (int(part) for part in head.split())
    parts, have = [data], len(data)
    while have < size:
        chunk = os.read(fd, min(size - have, 1 << 20))
        if not chunk:
            raise EOFError("job pipe closed mid-job")
        parts.append(chunk)
        have += len(chunk)
    return start, b"".join(parts)


def _setup_failure(line: bytes) -> str:
    try:
        message = json.loads(line)["setup_error"]
    except (ValueError, KeyError, TypeError):
        message = None
    if type(message) is not str:
        return "sandboxed child sent no acknowledgement of its set-up"
    return f"sandbox set-up failed: {message[:2000]}"


def _cpu_ms(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / _CLK_TCK
    except (OSError, IndexError, ValueError):
        return 0.0


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _failure(status: str, exc_type: str | None, message: str) -> dict:
    return {
        "status": status,
        "type": None,
        "value": None,
        "literal": False,
        "exc_type": exc_type,
        "exc_message": message,
        "stdout": "",
        "stderr": "",
        "stdout_truncated": False,
    }


def _timeout(message: str) -> dict:
    return _failure("timeout", None, message)


def _violation(message: str) -> dict:
    return _failure("error", "ProtocolViolation", message)


def _sandbox_error(message: str) -> dict:
    return _failure("sandbox_error", "SandboxError", message)


def _classify_exit(wait_status: int) -> dict:
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        if number == signal.SIGXCPU:
            return _timeout("CPU time limit exceeded (SIGXCPU)")
        name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
        return _failure("killed", None, f"process killed by signal {name}")
    code = os.WEXITSTATUS(wait_status)
    return _failure("error", "ProcessExit", f"process exited with code {code} before returning")


_RESULT_FIELDS = {
    "value": (str, type(None)),
    "type": (str, type(None)),
    "literal": (bool,),
    "exc_type": (str, type(None)),
    "exc_message": (str, type(None)),
    "stdout": (str,),
    "stderr": (str,),
    "stdout_truncated": (bool,),
    "max_rss_kb": (int,),
    "trace": (dict,),
}


# The deepest nesting a real result has (a trace step's fields) is far below this; a deeper
# forged line could make the parent's JSON reader recurse past its limit.
_MAX_DEPTH = 16


def _shallow(data: object) -> bool:
    """True when ``data`` nests containers at most _MAX_DEPTH deep (no recursion here)."""
    stack = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > _MAX_DEPTH:
            return False
        if type(item) is dict:
            stack.extend((value, depth + 1) for value in item.values())
        elif type(item) is list:
            stack.extend((value, depth + 1) for value in item)
    return True


def _sanitize(line: bytes, expected_index: int) -> dict | None:
    """Keep a child's result only if it has exactly the shape the child code writes, with sane
    numbers (a forged line cannot make the parent overflow or print non-JSON)."""
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if type(raw) is not dict or raw.get("i") != expected_index or not _shallow(raw):
        return None
    status = raw.get("status")
    if status not in CHILD_STATUSES:  # never sandbox_error: only the worker reports that
        return None
    cpu_total = raw.get("cpu_total_ms", 0.0)
    if type(cpu_total) not in (int, float) or not 0 <= cpu_total <= _MAX_CPU_MS:
        return None
    if "max_rss_kb" in raw and not (
        type(raw["max_rss_kb"]) is int and 0 <= raw["max_rss_kb"] <= _MAX_RSS_KB
    ):
        return None
    clean = {"status": status, "cpu_total_ms": float(cpu_total)}
    for key, kinds in _RESULT_FIELDS.items():
        if key in raw:
            if type(raw[key]) not in kinds:
                return None
            clean[key] = raw[key]
    return clean
