"""Sandboxed execution of untrusted Python calls: a pool of warm, isolated fork-server workers.

from codereasoner.execution import Pool, Program, parse_call
with Pool() as pool:
    result = pool.run(Program("def f(x):\\n    return x * 2"), parse_call("f(21)"))
    result.matches(42)  # decided here, in the parent
"""

from codereasoner.execution.call import Call, CallSyntaxError, Program, parse_call
from codereasoner.execution.executor import (
    EXECUTOR_ENV,
    Executor,
    ExecutorSpec,
    check_executor,
    open_executor,
    parse_executor,
)
from codereasoner.execution.pool import Batch, Pool
from codereasoner.execution.protocol import ExecResult, Limits, Status, TraceOptions
from codereasoner.execution.sandbox import IsolationPlan, SandboxUnavailable, plan_isolation

__all__ = [
    "EXECUTOR_ENV",
    "Batch",
    "Call",
    "CallSyntaxError",
    "ExecResult",
    "Executor",
    "ExecutorSpec",
    "IsolationPlan",
    "Limits",
    "Pool",
    "Program",
    "SandboxUnavailable",
    "Status",
    "TraceOptions",
    "check_executor",
    "open_executor",
    "parse_call",
    "parse_executor",
    "plan_isolation",
]
