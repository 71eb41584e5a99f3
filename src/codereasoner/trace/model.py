"""Typed view of an execution trace produced by the sandboxed tracer.

The wire form (a JSON object) is documented in ``codereasoner/execution/sandboxed/tracer.py``.
In short, each step is one line event of a traced frame and follows the *after-line* policy:
a step says "line N ran; afterwards these locals had changed", with the changes observed at the
next event of the same frame. The first step of each frame carries its arguments (``args``);
``cond`` is the outcome of an ``if``/``elif``/``while`` test; ``loops`` lists the enclosing
loops of the line as (loop line, iteration), outermost first.

Values are texts: canonical literals (``values.render``) or markers such as ``<Node object>``,
``<list of 5000 items, too large>`` and ``<str of 300 chars, too large>``. In ``changes`` a
value of ``None`` means the name was deleted (or went out of scope); the wire form leaves
``changes`` out when nothing changed. ``fid`` numbers frame instances (0 is the entry call), so
recursive calls and resumed generators can be told apart.

The wire form comes from the sandbox, so ``from_wire`` checks it first
(:func:`codereasoner.execution.protocol.check_trace_wire`: exact field types, step count and size
within the caps) and raises :class:`~codereasoner.execution.protocol.WireFormatError`, a
``ValueError``, naming the first problem.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from codereasoner.execution.protocol import (
    TraceOptions,
    WireFormatError,
    check_step_wire,
    check_trace_wire,
)

__all__ = ["ExceptionInfo", "ExecutionTrace", "Step", "WireFormatError"]

_EMPTY: Mapping[str, str | None] = MappingProxyType({})


@dataclass(frozen=True)
class Step:
    """One line event: ``line`` ran in frame instance ``fid``; ``changes`` are its effects."""

    line: int
    frame: str
    fid: int = 0
    depth: int = 0
    loops: tuple[tuple[int, int], ...] = ()
    changes: Mapping[str, str | None] = field(default_factory=lambda: _EMPTY)
    args: Mapping[str, str] | None = None
    cond: bool | None = None
    ret: str | None = None
    yielded: str | None = None
    exc: str | None = None

    @property
    def iteration(self) -> int | None:
        """Iteration of the innermost enclosing loop, if any."""
        return self.loops[-1][1] if self.loops else None

    @property
    def iteration_label(self) -> str:
        """The enclosing loops' iterations, outermost first: ``2``, or ``2.3`` for iteration 3
        of an inner loop in iteration 2 of the outer one ("" outside loops)."""
        return ".".join(str(count) for _, count in self.loops)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any], *, checked: bool = False) -> Step:
        """A step from its wire form; checked first unless ``checked`` says it already was."""
        if not checked:
            check_step_wire(data)
        args = data.get("args")
        return cls(
            line=int(data["line"]),
            frame=str(data["frame"]),
            fid=int(data.get("fid", 0)),
            depth=int(data.get("depth", 0)),
            loops=tuple((int(line), int(count)) for line, count in data.get("loops") or ()),
            changes=MappingProxyType(dict(data.get("changes") or {})),
            args=None if args is None else MappingProxyType(dict(args)),
            cond=None if data.get("cond") is None else bool(data["cond"]),
            ret=data.get("ret"),
            yielded=data.get("yield"),
            exc=data.get("exc"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "line": self.line,
            "frame": self.frame,
            "fid": self.fid,
            "depth": self.depth,
            "loops": [list(pair) for pair in self.loops],
        }
        optional = {
            "args": None if self.args is None else dict(self.args),
            "changes": dict(self.changes) or None,
            "cond": self.cond,
            "ret": self.ret,
            "yield": self.yielded,
            "exc": self.exc,
        }
        out.update((key, value) for key, value in optional.items() if value is not None)
        return out


@dataclass(frozen=True)
class ExceptionInfo:
    type: str
    message: str


@dataclass(frozen=True)
class ExecutionTrace:
    """A whole trace: the steps of one call plus its outcome."""

    steps: tuple[Step, ...]
    return_value: str | None = None
    return_literal: bool = False
    exception: ExceptionInfo | None = None
    partial: bool = False
    partial_reason: str | None = None
    events: int = 0

    @classmethod
    def from_wire(
        cls, data: Mapping[str, Any], options: TraceOptions | None = None
    ) -> ExecutionTrace:
        """A trace from its wire form, checked against the schema and ``options``' caps (the
        hard parent caps without them); raises WireFormatError."""
        check_trace_wire(data, options)
        exception = data.get("exception")
        return cls(
            steps=tuple(Step.from_wire(step, checked=True) for step in data.get("steps") or ()),
            return_value=data.get("return"),
            return_literal=bool(data.get("return_literal", False)),
            exception=None
            if exception is None
            else ExceptionInfo(str(exception["type"]), str(exception.get("message", ""))),
            partial=bool(data.get("partial", False)),
            partial_reason=data.get("partial_reason"),
            events=int(data.get("events", 0)),
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form (``from_wire(to_dict())`` gives an equal trace)."""
        return {
            "steps": [step.to_dict() for step in self.steps],
            "return": self.return_value,
            "return_literal": self.return_literal,
            "exception": None
            if self.exception is None
            else {"type": self.exception.type, "message": self.exception.message},
            "partial": self.partial,
            "partial_reason": self.partial_reason,
            "events": self.events,
        }

    # -- views ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    @property
    def line_count(self) -> int:
        """Number of line events recorded."""
        return len(self.steps)

    def coverage(self, frame: str | None = None) -> set[int]:
        """Lines that ran (in frames with qualified name ``frame``, if given)."""
        return {step.line for step in self.steps if frame is None or step.frame == frame}

    def coverage_by_frame(self) -> dict[str, set[int]]:
        """Lines that ran, per qualified frame name."""
        out: dict[str, set[int]] = {}
        for step in self.steps:
            out.setdefault(step.frame, set()).add(step.line)
        return out

    def path(self, frame: str | None = None) -> list[tuple[int, int | None]]:
        """(line, next line of the same frame instance) for every step, in trace order.

        The last step of a frame instance has ``None`` as its next line (the frame returned,
        raised, or the trace ended).
        """
        following: dict[int, int | None] = {}
        last_of: dict[int, int] = {}
        for index, step in enumerate(self.steps):
            previous = last_of.get(step.fid)
            if previous is not None:
                following[previous] = step.line
            last_of[step.fid] = index
        return [
            (step.line, following.get(index))
            for index, step in enumerate(self.steps)
            if frame is None or step.frame == frame
        ]

    def _states(self) -> Iterator[tuple[int, Step, dict[str, str | None]]]:
        """Yield (index, step, locals of its frame after the step), replaying the changes."""
        states: dict[int, dict[str, str | None]] = {}
        for index, step in enumerate(self.steps):
            state = states.get(step.fid)
            if state is None or step.args is not None:
                state = states[step.fid] = dict(step.args or {})
            state.update(step.changes)
            yield index, step, state

    def state_after(self, step_index: int) -> dict[str, str]:
        """All locals of the step's frame known after it ran (deleted names left out)."""
        if not -len(self.steps) <= step_index < len(self.steps):
            raise IndexError(f"step {step_index} out of range")
        step_index %= len(self.steps)
        for index, _, state in self._states():
            if index == step_index:
                return {name: text for name, text in state.items() if text is not None}
        raise AssertionError("unreachable")

    def values_at(self, name: str, line: int, frame: str | None = None) -> list[str | None]:
        """The value of ``name`` right after each execution of ``line`` (``None``: unbound)."""
        return [
            state.get(name)
            for _, step, state in self._states()
            if step.line == line and (frame is None or step.frame == frame)
        ]

    def final_locals(self, fid: int = 0) -> dict[str, str]:
        """Locals of frame instance ``fid`` after its last step (the entry frame by default)."""
        found: dict[str, str | None] | None = None
        for _, step, state in self._states():
            if step.fid == fid:
                found = state
        return {} if found is None else {k: v for k, v in found.items() if v is not None}
