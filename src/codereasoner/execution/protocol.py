"""What a sandboxed call returns, and the limits it runs under.

Results are data only. The verdict on a result (does it equal the expected value?) is computed
here, in the trusted parent, from the literal text the child sent; nothing the program returns can
run code in the parent or change how values compare.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from codereasoner import values


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
            raise ValueError(f"timeout_s must be a positive number, got {self.timeout_s!r}")
        if self.memory_mb < 16:
            raise ValueError(f"memory_mb must be at least 16, got {self.memory_mb!r}")

    @property
    def effective_wall_timeout_s(self) -> float:
        if self.wall_timeout_s is not None:
            return self.wall_timeout_s
        return 2 * self.timeout_s + 1

    def wire(self) -> dict[str, Any]:
        data = asdict(self)
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
            raise ValueError(f"engine must be auto, c or python, got {self.engine!r}")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps!r}")
        if self.max_value_chars < 16:
            raise ValueError(f"max_value_chars must be at least 16, got {self.max_value_chars!r}")

    def wire(self) -> dict[str, Any]:
        return asdict(self)


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
    latency_ms: float = 0.0  # parent-measured, dispatch to answer, for the whole batch
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
    def from_wire(cls, raw: dict[str, Any]) -> ExecResult:
        return cls(
            status=Status(raw["status"]),
            value=raw.get("value"),
            value_type=raw.get("type"),
            is_literal=bool(raw.get("literal", False)),
            exception_type=raw.get("exc_type"),
            exception_message=raw.get("exc_message"),
            stdout=raw.get("stdout", ""),
            stderr=raw.get("stderr", ""),
            stdout_truncated=bool(raw.get("stdout_truncated", False)),
            wall_ms=float(raw.get("wall_ms", 0.0)),
            cpu_ms=float(raw.get("cpu_ms", 0.0)),
            max_rss_kb=int(raw.get("max_rss_kb", 0)),
            trace=raw.get("trace"),
        )

    @classmethod
    def sandbox_failure(cls, message: str) -> ExecResult:
        return cls(status=Status.SANDBOX_ERROR, exception_type="SandboxError",
                   exception_message=message)  # fmt: skip
