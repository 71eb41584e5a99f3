"""What a sandboxed call returns, and the limits it runs under.

Results are data only. The verdict on a result (does it equal the expected value?) is computed
here, in the trusted parent, from the literal text the child sent; nothing the program returns can
run code in the parent or change how values compare.

The parent trusts nothing it reads from the sandbox: a program can write forged result lines to
its result pipe. :meth:`ExecResult.from_wire` re-checks every field (exact types; finite numbers in
sane ranges; value, output and message lengths within the call's :class:`Limits`; a trace that
follows the tracer's schema and stays within the :class:`TraceOptions` caps, see
:func:`check_trace_wire`). A result that breaks any rule becomes status ``error`` with exception
type ``ProtocolViolation`` (the worker's convention for malformed lines), never an exception.
Where the limits are not known, hard parent caps (``PARENT_CAPS``) apply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from codereasoner import values
from codereasoner.settings import SettingError, check_at_least


class Status(StrEnum):
    OK = "ok"
    ERROR = "error"  # the program raised (or exited before returning)
    TIMEOUT = "timeout"  # CPU or wall-clock limit
    MEMORY = "memory"  # MemoryError under the address-space limit
    OUTPUT_LIMIT = "output_limit"  # printed or returned more than the caps allow
    KILLED = "killed"  # the process died from a signal (e.g. a C-level crash)
    SANDBOX_ERROR = "sandbox_error"  # infrastructure failure, not the program's fault


@dataclass(frozen=True)
class Limits:
    """Per-call resource limits."""

    timeout_s: float = 2.0
    wall_timeout_s: float | None = None  # default: 2 * timeout_s + 1
    memory_mb: int = 512
    max_output_chars: int = 65_536
    max_value_chars: int = 100_000
    max_processes: int = 256

    def __post_init__(self) -> None:
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise SettingError("timeout_s", self.timeout_s, "a positive number")
        check_at_least(16, memory_mb=self.memory_mb)

    @property
    def effective_wall_timeout_s(self) -> float:
        if self.wall_timeout_s is not None:
            return self.wall_timeout_s
        return 2 * self.timeout_s + 1

    def wire(self) -> dict[str, Any]:
        data = dict(vars(self))  # flat fields: no deep copy (asdict) for every job
        data["wall_timeout_s"] = self.effective_wall_timeout_s
        return data


@dataclass(frozen=True)
class TraceOptions:
    """Ask for an execution trace of each call (see :mod:`codereasoner.trace`)."""

    max_steps: int = 10_000
    max_value_chars: int = 200
    max_trace_chars: int = 2_000_000
    # At a cap the trace is marked partial; by default the call then ends (status
    # output_limit). With finish_untraced the call runs on untraced to get its result.
    finish_untraced: bool = False
    # Line handler: "c" (the built fast path; an error where it is not built), "python", or
    # "auto" (C when built). Traces are identical; C is several times faster.
    engine: str = "auto"

    def __post_init__(self) -> None:
        if self.engine not in ("auto", "c", "python"):
            raise SettingError("engine", self.engine, "auto, c or python")
        check_at_least(1, max_steps=self.max_steps)
        check_at_least(16, max_value_chars=self.max_value_chars)

    def wire(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one call."""

    status: Status
    value: str | None = None  # canonical literal text, or "<Type object>" when not a literal
    value_type: str | None = None
    is_literal: bool = False
    exception_type: str | None = None
    exception_message: str | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    wall_ms: float = 0.0
    cpu_ms: float = 0.0
    max_rss_kb: int = 0
    latency_ms: float = (
        0.0  # parent-measured, for the whole batch: from when its worker started it to the answer
    )
    trace: dict[str, Any] | None = None  # the tracer's wire form, when tracing was asked for
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def parsed_value(self) -> Any:
        """The returned value, parsed in the parent; raises ValueError if there is none."""
        if not (self.ok and self.is_literal and self.value is not None):
            raise ValueError(f"no literal value: status {self.status.value}")
        return values.parse(self.value)

    def matches(self, expected: Any, policy: str = "strict") -> bool:
        """True when the call returned a literal equal to ``expected`` under ``policy``."""
        try:
            actual = self.parsed_value()
        except ValueError:
            return False
        return values.equal(actual, expected, policy)

    def describe(self) -> str:
        """A one-line human summary."""
        if self.ok:
            return f"ok: {self.value}"
        detail = ": ".join(part for part in (self.exception_type, self.exception_message) if part)
        return f"{self.status.value}: {detail}" if detail else self.status.value

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_wire(
        cls,
        raw: object,
        limits: Limits | None = None,
        trace_options: TraceOptions | None = None,
    ) -> ExecResult:
        """Read one result of the worker's answer, checking every field (see the module doc).

        ``limits`` / ``trace_options`` are those the call ran under; without them the hard
        parent caps apply. A result that breaks the protocol comes back as
        :meth:`protocol_violation`; this never raises.
        """
        try:
            result = cls._read_wire(raw)
            result._check_bounds(limits, trace_options)
        except WireFormatError as exc:
            return cls.protocol_violation(str(exc))
        return result

    @classmethod
    def protocol_violation(cls, message: str) -> ExecResult:
        """The result that replaces a forged or malformed one (status error, ProtocolViolation)."""
        return cls(
            status=Status.ERROR,
            exception_type="ProtocolViolation",
            exception_message=_clip(message, 500),
        )

    @classmethod
    def _read_wire(cls, raw: object) -> ExecResult:
        if type(raw) is not dict:
            raise WireFormatError(f"result is a {type(raw).__name__}, not an object")
        status = raw.get("status")
        if type(status) is not str or status not in _STATUSES:
            raise WireFormatError(f"unknown status {_clip(repr(status), 60)}")
        value = _optional_str(raw, "value", PARENT_CAPS["value_chars"] + _MARKER_ALLOWANCE)
        literal = _flag(raw, "literal")
        if literal and value is None:
            raise WireFormatError("a literal result without a value")
        trace = raw.get("trace")  # checked by _check_bounds, with the call's trace options
        return cls(
            status=Status(status),
            value=value,
            value_type=_optional_str(raw, "type", _MAX_NAME_CHARS),
            is_literal=literal,
            exception_type=_optional_str(raw, "exc_type", _MAX_NAME_CHARS),
            exception_message=_optional_str(raw, "exc_message", _MAX_MESSAGE_CHARS),
            stdout=_text(raw, "stdout", PARENT_CAPS["output_chars"]),
            stderr=_text(raw, "stderr", PARENT_CAPS["output_chars"]),
            stdout_truncated=_flag(raw, "stdout_truncated"),
            wall_ms=_milliseconds(raw, "wall_ms"),
            cpu_ms=_milliseconds(raw, "cpu_ms"),
            max_rss_kb=_bounded_int(raw, "max_rss_kb", _MAX_RSS_KB),
            trace=trace,
        )

    def _check_bounds(self, limits: Limits | None, trace_options: TraceOptions | None) -> None:
        value_cap = PARENT_CAPS["value_chars"] if limits is None else limits.max_value_chars
        output_cap = PARENT_CAPS["output_chars"] if limits is None else limits.max_output_chars
        if self.value is not None:
            # Non-literal markers ("<TypeName object>") carry a type name the cap does not cover.
            cap = value_cap if self.is_literal else value_cap + _MARKER_ALLOWANCE
            if len(self.value) > cap:
                raise WireFormatError(f"value of {len(self.value)} chars exceeds the cap of {cap}")
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            if len(text) > output_cap:
                raise WireFormatError(
                    f"{name} of {len(text)} chars exceeds the cap of {output_cap}"
                )
        if self.trace is not None:
            check_trace_wire(self.trace, trace_options)

    @classmethod
    def sandbox_failure(cls, message: str) -> ExecResult:
        return cls(
            status=Status.SANDBOX_ERROR, exception_type="SandboxError", exception_message=message
        )


# ---------------------------------------------------------------------------------------
# checks of what the sandbox sends
# ---------------------------------------------------------------------------------------


class WireFormatError(ValueError):
    """Something read from the sandbox breaks the protocol (forged, malformed or oversized)."""


# Caps for when the call's limits are unknown: the worker's cap on one result line (8 MiB).
PARENT_CAPS: Mapping[str, int] = {
    "value_chars": 8 << 20,
    "output_chars": 8 << 20,
    "trace_steps": 1_000_000,
    "trace_chars": 16 << 20,
}
_STATUSES = frozenset(status.value for status in Status)
_MAX_NAME_CHARS = 10_000  # type, frame and variable names
_MAX_MESSAGE_CHARS = 20_000  # the child caps messages at 2,000; the worker may prefix the entry
_MARKER_ALLOWANCE = 10_000  # "<TypeName object>" and similar markers, beyond the value cap
_MAX_MS = 7 * 24 * 3600 * 1000.0  # a week
_MAX_RSS_KB = 1 << 40  # 1 PiB
_MAX_COUNT = 1 << 62  # line numbers, frame ids, depths, iterations, events
# Per step, the tracer's own size estimate (execution/sandboxed/tracer.py): 90 chars plus
# len(name) + len(text) + 6 for each change and argument; it checks every 64 steps.
_STEP_CHARS = 90
_CHECK_EVERY = 64
_STEP_KEYS = frozenset(
    {"line", "frame", "fid", "depth", "loops", "changes", "args", "cond", "ret", "yield", "exc"}
)
_TRACE_KEYS = frozenset(
    {"steps", "return", "return_literal", "exception", "partial", "partial_reason", "events"}
)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _optional_str(raw: Mapping[str, object], key: str, cap: int) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if type(value) is not str:
        raise WireFormatError(f"{key} is a {type(value).__name__}, not a string")
    if len(value) > cap:
        raise WireFormatError(f"{key} of {len(value)} chars exceeds the cap of {cap}")
    return value


def _text(raw: Mapping[str, object], key: str, cap: int) -> str:
    if raw.get(key, "") is None:
        raise WireFormatError(f"{key} is null, not a string")
    return _optional_str(raw, key, cap) or ""


def _flag(raw: Mapping[str, object], key: str) -> bool:
    value = raw.get(key, False)
    if type(value) is not bool:
        raise WireFormatError(f"{key} is a {type(value).__name__}, not a boolean")
    return value


def _milliseconds(raw: Mapping[str, object], key: str) -> float:
    value = raw.get(key, 0.0)
    if type(value) is not float and type(value) is not int:
        raise WireFormatError(f"{key} is a {type(value).__name__}, not a number")
    if type(value) is int and not 0 <= value <= _MAX_MS:  # compared as int: no OverflowError
        raise WireFormatError(f"{key} out of range")
    number = float(value)
    if not (math.isfinite(number) and 0.0 <= number <= _MAX_MS):
        raise WireFormatError(f"{key} is not a finite duration in range: {number!r}")
    return number


def _bounded_int(raw: Mapping[str, object], key: str, cap: int, default: int = 0) -> int:
    value = raw.get(key, default)
    if type(value) is not int:
        raise WireFormatError(f"{key} is a {type(value).__name__}, not an integer")
    if not 0 <= value <= cap:
        raise WireFormatError(f"{key} out of range (0..{cap})")
    return value


def trace_size_bound(options: TraceOptions | None) -> tuple[int, int]:
    """(most steps, largest size estimate) the parent accepts for a trace under ``options``.

    The tracer stops at ``max_steps`` exactly; it checks its size estimate every 64 steps, so a
    real trace can pass ``max_trace_chars`` by what 64 steps add. The parent allows that much:
    twice the cap, and at least 64 steps of four full-size values each.
    """
    if options is None:
        return PARENT_CAPS["trace_steps"], PARENT_CAPS["trace_chars"]
    per_step = _STEP_CHARS + 4 * (options.max_value_chars + 40)
    slack = max(options.max_trace_chars, _CHECK_EVERY * per_step)
    return options.max_steps, options.max_trace_chars + slack


def check_trace_wire(data: object, options: TraceOptions | None = None) -> int:
    """Check a trace's wire form against the tracer's schema and caps; return its size estimate.

    Raises :class:`WireFormatError` naming the first problem. Steps need ``line`` and
    ``frame``; the other fields are optional, as in the tracer's output, but must have their
    exact types (``loops`` a list of [line, iteration] pairs, ``changes`` {name: text or None},
    ``args`` {name: text}, ``cond`` a bool, ``ret``/``yield``/``exc`` texts). The step count
    and the size are checked before any step is looked at in detail, then as steps are read.
    """
    if type(data) is not dict:
        raise WireFormatError(f"trace is a {type(data).__name__}, not an object")
    unknown = data.keys() - _TRACE_KEYS
    if unknown:
        raise WireFormatError(f"trace has unknown field {_clip(repr(sorted(unknown)[0]), 60)}")
    max_steps, max_chars = trace_size_bound(options)
    value_cap = (
        PARENT_CAPS["value_chars"]
        if options is None
        else options.max_value_chars + _MARKER_ALLOWANCE
    )
    steps = data.get("steps", [])
    if type(steps) is not list and type(steps) is not tuple:
        raise WireFormatError("trace steps are not a list")
    if len(steps) > max_steps:
        raise WireFormatError(f"trace has {len(steps)} steps, more than the cap of {max_steps}")
    size = 200 + _STEP_CHARS * len(steps)
    if size > max_chars:
        raise WireFormatError(f"trace larger than the cap of {max_chars} chars")
    for index, step in enumerate(steps):
        try:
            size += check_step_wire(step, value_cap)
        except WireFormatError as exc:
            raise WireFormatError(f"trace step {index}: {exc}") from None
        if size > max_chars:
            raise WireFormatError(f"trace larger than the cap of {max_chars} chars")
    _optional_str(data, "return", value_cap)
    _flag(data, "return_literal")
    _flag(data, "partial")
    _optional_str(data, "partial_reason", _MAX_MESSAGE_CHARS)
    _bounded_int(data, "events", _MAX_COUNT)
    exception = data.get("exception")
    if exception is not None:
        if type(exception) is not dict or exception.keys() - {"type", "message"}:
            raise WireFormatError("trace exception is not a {type, message} object")
        if _optional_str(exception, "type", _MAX_NAME_CHARS) is None:
            raise WireFormatError("trace exception has no type")
        _optional_str(exception, "message", _MAX_MESSAGE_CHARS)
    return size


def check_step_wire(step: object, value_cap: int | None = None) -> int:
    """Check one step's wire form (see :func:`check_trace_wire`); return its size estimate."""
    if value_cap is None:
        value_cap = PARENT_CAPS["value_chars"]
    if type(step) is not dict:
        raise WireFormatError(f"a {type(step).__name__}, not an object")
    unknown = step.keys() - _STEP_KEYS
    if unknown:
        raise WireFormatError(f"unknown field {_clip(repr(sorted(unknown)[0]), 60)}")
    if "line" not in step:
        raise WireFormatError("no line")
    _bounded_int(step, "line", _MAX_COUNT)
    if _optional_str(step, "frame", _MAX_NAME_CHARS) is None:
        raise WireFormatError("no frame name")
    _bounded_int(step, "fid", _MAX_COUNT)
    _bounded_int(step, "depth", _MAX_COUNT)
    loops = step.get("loops")
    if loops is not None:
        if type(loops) is not list and type(loops) is not tuple:
            raise WireFormatError("loops is not a list")
        for pair in loops:
            if (type(pair) is not list and type(pair) is not tuple) or len(pair) != 2:
                raise WireFormatError("a loop is not a [line, iteration] pair")
            for number in pair:
                if type(number) is not int or not 0 <= number <= _MAX_COUNT:
                    raise WireFormatError("a loop line or iteration is not a count")
    size = 0
    for key, deletions in (("changes", True), ("args", False)):
        mapping = step.get(key)
        if mapping is None:
            continue
        if type(mapping) is not dict:
            raise WireFormatError(f"{key} is not an object")
        for name, text in mapping.items():
            if type(name) is not str or len(name) > _MAX_NAME_CHARS:
                raise WireFormatError(f"a name in {key} is not a string of sane length")
            if text is None and deletions:
                size += len(name) + 10
                continue
            if type(text) is not str:
                raise WireFormatError(f"{key}[{_clip(repr(name), 40)}] is not a text")
            if len(text) > value_cap:
                raise WireFormatError(f"{key}[{_clip(repr(name), 40)}] exceeds the value cap")
            size += len(name) + len(text) + 6
    cond = step.get("cond")
    if cond is not None and type(cond) is not bool:
        raise WireFormatError("cond is not a boolean")
    for key in ("ret", "yield"):
        text = _optional_str(step, key, value_cap)
        size += 0 if text is None else len(text)
    text = _optional_str(step, "exc", _MAX_NAME_CHARS)
    size += 0 if text is None else len(text)
    return size
