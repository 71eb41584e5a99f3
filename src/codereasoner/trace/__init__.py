"""Execution traces: the typed model of the tracer's output and compact renderings.

from codereasoner.execution import Pool, Program, parse_call
from codereasoner.trace import to_text, trace_call
with Pool() as pool:
    traced = trace_call(pool, Program(source), parse_call("f([1, 2])"))
print(to_text(traced.trace, source=source))
"""

from codereasoner.trace.api import TracedCall, trace_batches, trace_call, trace_calls
from codereasoner.trace.model import ExceptionInfo, ExecutionTrace, Step
from codereasoner.trace.render import to_json, to_text

__all__ = [
    "ExceptionInfo",
    "ExecutionTrace",
    "Step",
    "TracedCall",
    "to_json",
    "to_text",
    "trace_batches",
    "trace_call",
    "trace_calls",
]
