"""A sandbox child's runtime: it confines itself, reads its job, runs the calls and writes one
result line per call (see worker.py for the processes and what each may hold).

Runs inside the sandbox as a flat module beside worker.py: standard library and the staged
modules only.
"""

from __future__ import annotations

import builtins
import json
import os
import random
import resource
import signal
import sys
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # the sandbox imports the same file as the flat module `values`
    from codereasoner import values
else:
    import values


CHILD_STATUSES = ("ok", "error", "memory", "output_limit")


# A child that stops on purpose after reporting (output flood, a thread outliving its call) exits
# with this code so the worker starts a fresh child for the calls that remain.
_EXIT_RESTART = 75


# Source parts of a job, run in this order in one namespace; only "<program>" is traced.
_PARTS = {"preamble": "<preamble>", "source": "<program>", "epilogue": "<epilogue>"}


class _OutputLimit(Exception):
    pass


class _CappedText:
    """A text stream that keeps at most ``cap`` characters and calls ``on_overflow`` past that."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, cap: int, on_overflow) -> None:
        self.cap = cap
        self.on_overflow = on_overflow
        self.parts: list[str] = []
        self.size = 0

    def write(self, text: str) -> int:
        if type(text) is not str:
            raise TypeError(f"write() argument must be str, not {values.type_name(text)}")
        self.size += len(text)
        if self.size > self.cap:
            keep = self.cap - (self.size - len(text))
            if keep > 0:
                self.parts.append(text[:keep])
            self.on_overflow()
        self.parts.append(text)
        return len(text)

    def text(self) -> str:
        return "".join(self.parts)[: self.cap]

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("captured stream has no file descriptor")


class _EmptyStdin:
    """Standard input of a sandboxed call: always at end of file."""

    encoding = "utf-8"

    def read(self, size: int = -1) -> str:
        return ""

    def readline(self, size: int = -1) -> str:
        return ""

    def readlines(self, hint: int = -1) -> list[str]:
        return []

    def __iter__(self):
        return iter(())

    def readable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _vm_size_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


def _safe_str(exc: BaseException, cap: int) -> str:
    try:
        text = str(exc)
    except BaseException as inner:  # a hostile __str__
        return f"<unprintable {values.type_name(exc)}: {values.type_name(inner)}>"
    if type(text) is not str:
        return "<non-string message>"
    return text[:cap]


def _resolve_entry(entry: str, namespace: dict):
    head, *rest = entry.split(".")
    instantiate = head.endswith("()")
    name = head[:-2] if instantiate else head
    if name not in namespace:
        raise NameError(f"{name!r} is not defined by the program")
    target = namespace[name]
    if instantiate:
        target = target()
    for attribute in rest:
        target = getattr(target, attribute)
    if not callable(target):
        raise TypeError(f"{entry!r} is not callable")
    return target


class _StateGuard:
    """Restores interpreter state that one call could tamper with before the next call runs."""

    def __init__(self) -> None:
        self.builtins = dict(builtins.__dict__)
        self.modules = dict(sys.modules)
        self.recursion_limit = sys.getrecursionlimit()
        self.int_digits = sys.get_int_max_str_digits()
        self.sys_hooks = {name: getattr(sys, name) for name in ("displayhook", "excepthook")}

    def restore(self) -> None:
        current = builtins.__dict__
        current.clear()
        current.update(self.builtins)
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
        self.reset()

    def reset(self) -> None:
        """The part a fresh child needs before its first call: its builtins and modules are
        the snapshot's already (restoring them would touch, and so copy, every page holding
        one of them), but the random seed, for one, is not."""
        sys.settrace(None)
        sys.setprofile(None)
        sys.setrecursionlimit(self.recursion_limit)
        sys.set_int_max_str_digits(self.int_digits)
        for name, hook in self.sys_hooks.items():
            setattr(sys, name, hook)
        for number in (signal.SIGINT, signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU):
            signal.signal(number, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, 0)
        random.seed(0)


class _Child:
    """Runs calls ``start..`` of one job in the current (forked, confined) process."""

    def __init__(self, job: dict, start: int, result_fd: int) -> None:
        self.job = job
        self.start = start
        self.result_fd = result_fd
        limits = job["limits"]
        self.stdout_cap = int(limits["max_output_chars"])
        self.value_cap = int(limits["max_value_chars"])
        self.message_cap = 2000
        self.index = start
        self.stdout = _CappedText(self.stdout_cap, self._overflow)
        self.stderr = _CappedText(self.stdout_cap, self._overflow)

    def send(self, result: dict) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        result["i"] = self.index
        result["cpu_total_ms"] = round((usage.ru_utime + usage.ru_stime) * 1000, 3)
        result["max_rss_kb"] = usage.ru_maxrss
        result["stdout"] = self.stdout.text()
        result["stderr"] = self.stderr.text()
        result["stdout_truncated"] = self.stdout.size > self.stdout_cap
        _write_all(self.result_fd, json.dumps(result).encode() + b"\n")

    def _overflow(self) -> None:
        # Raising would let the program catch it; report and end this child instead.
        self.send(
            {
                "status": "output_limit",
                "exc_type": None,
                "exc_message": f"output exceeded {self.stdout_cap} characters",
            }
        )
        os._exit(_EXIT_RESTART)

    def run(self, guard: _StateGuard) -> None:
        job = self.job
        try:
            # The preamble and epilogue run in the program's namespace but are not traced.
            codes = [
                compile(job.get(part) or "", filename, "exec") for part, filename in _PARTS.items()
            ]
        except BaseException as exc:
            for index in range(self.start, len(job["calls"])):
                self.index = index
                self.send(
                    {
                        "status": "error",
                        "exc_type": values.type_name(exc),
                        "exc_message": _safe_str(exc, self.message_cap),
                    }
                )
            return
        # sys.__stdin__ too, on purpose, although the stubs declare it Final (a TextIOWrapper).
        sys.stdin = sys.__stdin__ = _EmptyStdin()  # type: ignore[misc, assignment]
        guard.reset()
        for index in range(self.start, len(job["calls"])):
            self.index = index
            call = job["calls"][index]
            self.stdout.parts.clear()
            self.stdout.size = 0
            self.stderr.parts.clear()
            self.stderr.size = 0
            sys.stdout, sys.stderr = self.stdout, self.stderr
            self.send(self._run_call(codes, call))
            if index + 1 == len(job["calls"]):
                os._exit(0)  # straight away: the worker ends this child after its last result
            guard.restore()
            sys.stdout, sys.stderr = self.stdout, self.stderr
            if len(os.listdir("/proc/self/task")) > 1:
                os._exit(_EXIT_RESTART)  # a thread outlived its call

    def _run_call(self, codes: list, call: dict) -> dict:
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        # The renderer this worker reports with stays its own: a program's ``import values``
        # loads a fresh copy, so replacing ``values.render`` there changes nothing reported.
        sys.modules.pop("values", None)
        try:
            for code in codes:
                exec(code, namespace)
        except BaseException as exc:
            return self._error(exc)
        try:
            function = _resolve_entry(call["entry"], namespace)
        except BaseException as exc:
            result = self._error(exc)
            if result["status"] == "error":
                result["exc_type"] = "EntryPointError"
                result["exc_message"] = f"{call['entry']}: {result['exc_message']}"
            return result
        try:
            # The parent renders them from a tuple and a dict (Call.wire).
            args, kwargs = (
                cast("tuple", values.parse(call["args"])),
                cast("dict[str, object]", values.parse(call["kwargs"])),
            )
        except BaseException as exc:
            return self._error(exc)
        options = self.job.get("trace")
        if options is None:
            try:
                value = function(*args, **kwargs)
            except BaseException as exc:
                return self._error(exc)
            return self._render(value)
        if TYPE_CHECKING:
            from codereasoner.execution.sandboxed import tracer
        else:
            import tracer

        options = dict(options)
        on_overflow = None if options.pop("finish_untraced", False) else self._trace_overflow
        traced = tracer.Tracer(source=self.job["source"], on_overflow=on_overflow, **options)
        try:
            traced.call(function, args, kwargs)
        except BaseException as exc:
            result = self._error(exc)
        else:
            result = self._render(traced.value)
        result["trace"] = traced.last
        return result

    def _trace_overflow(self, trace: dict) -> None:
        # The program could catch an exception raised to stop it, so the child ends here.
        self.send(
            {
                "status": "output_limit",
                "exc_type": None,
                "trace": trace,
                "exc_message": f"trace stopped early ({trace['partial_reason']})",
            }
        )
        os._exit(_EXIT_RESTART)

    def _error(self, exc: BaseException) -> dict:
        status = "memory" if isinstance(exc, MemoryError) else "error"
        return {
            "status": status,
            "exc_type": values.type_name(exc),
            "exc_message": _safe_str(exc, self.message_cap),
        }

    def _render(self, value) -> dict:
        result: dict[str, object] = {
            "status": "ok",
            "type": values.type_name(value),
            "exc_type": None,
            "exc_message": None,
        }
        try:
            result["value"] = values.render(value, max_chars=self.value_cap)
            result["literal"] = True
        except values.NotALiteral:
            result["value"] = f"<{result['type']} object>"
            result["literal"] = False
        except values.RenderLimitExceeded as exc:
            result.update(
                status="output_limit",
                value=None,
                literal=False,
                exc_message=f"return value: {_safe_str(exc, self.message_cap)}",
            )
        except MemoryError:
            result.update(
                status="memory",
                value=None,
                literal=False,
                exc_type="MemoryError",
                exc_message="while rendering the return value",
            )
        return result
