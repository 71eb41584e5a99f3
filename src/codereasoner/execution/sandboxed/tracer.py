"""Exact line tracer: the ground truth for every intermediate state of one call.

Runs inside the sandboxed child, where it is imported as a flat module: standard library, the
flat ``values`` module and the tracer's own flat modules (see the end of this docstring) only, no
module-level side effects.

Only code objects whose ``co_filename`` equals ``filename`` are traced; pass the program's
``source`` so that loops and conditions can be read from its AST. ``Tracer.call`` returns the
trace in its wire form, a JSON-serialisable dict::

    {"steps": [...], "return": str | None, "return_literal": bool,
     "exception": {"type": str, "message": str} | None,
     "partial": bool, "partial_reason": str | None, "events": int}

(``events``: trace callbacks handled for traced frames, line events included) with one step per
``line`` event of a traced frame::

    {"line": 1-based line, "frame": co_qualname, "fid": frame instance (0 = the entry; numbered
     in order of first appearance), "depth": traced call depth (0 = the entry),
     "loops": [[loop_line, iteration], ...] (tuples until serialised), outermost first,
     and only when they apply: "changes", "args", "cond", "ret", "yield", "exc"}

Policies:

* After-line: a line event fires *before* its line runs. ``changes`` ({name: text}, absent when
  empty) are the locals whose rendered value differs at the *next* event of the same frame (its
  next line, return, yield or exception): "line N ran; afterwards these had changed". Effects of
  callees that ran during the line are included. A text of ``None`` means the name was deleted.
  After a generator resumes, the changes up to its next line event are merged into the step of
  the line that yielded (that line finishes only then).
* ``args``: the first step of every new frame carries the locals at entry (arguments and
  closure variables); its ``changes`` never repeat them.
* ``ret`` / ``yield``: the rendered value on the step that returned or yielded; ``exc``: the type
  name of an exception raised on (or propagating through) that step.
* ``cond``, on the step where an ``if``/``elif``/``while`` test starts: True if the next line of
  that frame is in the statement's body, False if it is elsewhere or the frame returns; absent if
  the test raised and for one-line ``while`` loops. A one-line ``if test: body`` is decided from
  opcode events (3.11); 3.12+ may deliver none, and then only a body that returns is decided.
* ``loops``: iteration k starts at the k-th arrival at the loop's header (3.11 also reports the
  line of ``while True`` on every pass; if the compiler drops it, the top of the body counts).
  The check that leaves the loop belongs to the last iteration; a loop entered anew restarts at
  1. On 3.11 comprehensions are frames of their own, whose ``for`` clauses count the same way
  (line of each clause); 3.12+ inline them (PEP 709) and do not count their iterations.
* Multi-line statements: Python reports a line event each time execution moves to another line
  of the statement, so one statement can give several steps.
* Values: ``values.render(v, max_chars=max_value_chars)``. A value that is not a plain literal is
  shown as ``<TypeName object>`` (no user ``__repr__`` ever runs); a container with more items
  than could fit, or whose text is too long, as ``<list of 5000 items, too large>``; a long str or
  bytes as ``<str of 5000 chars, too large>``; any other oversized value as ``<int, too large>``.
  Locals named ``.0`` and the implicit ``__class__`` cell are left out.
* Exactness: any change of a rendered text is reported. Rebinding is found by identity, using
  the names the line's bytecode can store to; containers are re-checked with a ``marshal``
  fingerprint (C code that never calls user methods) after any line whose bytecode can mutate a
  container, and after any Python-level call. Not seen in time: mutations by C callbacks hidden
  in an iterator that ``for``, unpacking or ``in`` consumes (``for _ in map(xs.append, ys)``),
  and by finalizers that run inside the tracer; they appear at the frame's next full check.
* Exceptions: if the traced function raises, ``call`` records it and re-raises it; the trace is
  then in ``Tracer.last``. Messages are only rendered for builtin ``__str__`` and literal args.
* Caps: past ``max_steps`` steps or ``max_trace_chars`` (an estimate of the JSON size, checked
  every 64 steps) the trace is marked partial and ``on_overflow(trace)`` is called; the sandbox
  passes a callback that writes the trace and calls ``os._exit`` (a program can catch exceptions
  raised by a tracer). If it returns, or there is none, tracing stops and the call finishes
  untraced. A program that removes the tracer (``sys.settrace(None)``, ``frame.f_trace = None``)
  or makes the tracer fail yields ``tracer_removed`` / ``tracer_error: ...``.
* Side effects on the program: reading ``f_locals`` (3.11) makes ``locals()`` list names in the
  order they were first bound; the collector's first threshold is raised tenfold during the call
  so that the trace's own allocations do not make it run more often than in a plain run.

The code is split by job into flat modules, each importing only those before it:
``tracer_accelerator`` (loads the C fast path), ``tracer_analysis`` (the source's AST and each
code object's bytecode), ``tracer_render`` (values as text), ``tracer_locals`` and
``tracer_loops`` (a frame's locals and loop counts), ``tracer_frame`` (a frame's state and its
event handlers) and this module, the tracer itself and the only one other code imports.
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the sandbox imports the same files as flat modules
    from codereasoner.execution.sandboxed.tracer_accelerator import ACCELERATOR, TracerBase
    from codereasoner.execution.sandboxed.tracer_analysis import (
        FULL_POINT,
        NO_OFFSETS,
        NO_POINT,
        CodeInfo,
        Loop,
        Source,
    )
    from codereasoner.execution.sandboxed.tracer_frame import Frame, TraceOverflow, frame_owner
    from codereasoner.execution.sandboxed.tracer_locals import MISSING
    from codereasoner.execution.sandboxed.tracer_render import Renderer, exception_info
else:
    from tracer_accelerator import ACCELERATOR, TracerBase
    from tracer_analysis import FULL_POINT, NO_OFFSETS, NO_POINT, CodeInfo, Loop, Source
    from tracer_frame import Frame, TraceOverflow, frame_owner
    from tracer_locals import MISSING
    from tracer_render import Renderer, exception_info

__all__ = ["ACCELERATOR", "ENGINES", "TraceOverflow", "Tracer"]

ENGINES = ("auto", "c", "python")
_STEP_CHARS = 90  # estimated JSON size of a step without its changes
_SIZE_CHECK_EVERY = 64  # steps between two checks of the trace size


class Tracer(TracerBase):
    """Traces one call at a time; see the module docstring for the trace format and policies.

    With the C fast path, ``steps``, ``size``, ``limit``, ``stopped`` and ``render`` are fields
    of its ``TracerCore`` base, read there on every line event.
    """

    def __init__(
        self,
        *,
        filename: str = "<program>",
        max_steps: int = 10_000,
        max_value_chars: int = 200,
        max_trace_chars: int = 2_000_000,
        on_overflow: Callable[[dict], None] | None = None,
        source: str | None = None,
        engine: str = "auto",
    ) -> None:
        """``engine``: "c" (the C fast path, required), "python", or "auto" (C when built)."""
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        if engine == "c" and ACCELERATOR is None:
            raise ValueError("the tracer's C fast path (_tracecore) is not built")
        self.accelerated = ACCELERATOR is not None and engine != "python"
        self.filename = filename
        self.max_steps = max_steps
        self.max_trace_chars = max_trace_chars
        self.on_overflow = on_overflow
        if max_value_chars < 16:
            raise ValueError("max_value_chars must be at least 16")
        self.render = Renderer(max_value_chars)
        self._source = Source(source)
        self._infos: dict[int, CodeInfo | None] = {}
        # Constants the C fast path needs (fields of its TracerCore base).
        self.frame_type = Frame
        self.full_point = FULL_POINT
        self.no_point = NO_POINT
        self.missing = MISSING
        self.loop_type = Loop
        self.no_offsets = NO_OFFSETS
        self._codes: list[types.CodeType] = []  # keeps the ids in _infos valid
        # Like _infos, kept across calls: see assume_hidden_mutators.
        self.paranoid = False
        self._reset()

    def _reset(self) -> None:
        self.steps: list[dict] = []
        # Estimated JSON size of the trace but for the fixed part of each step
        # (_STEP_CHARS): len(name) + len(text) + 6 (4 for a deletion) per change or argument,
        # counted as they are recorded (a change of a name already in that step's changes,
        # which is rare, is counted twice).
        self.size = 200
        self.limit = min(self.max_steps, _SIZE_CHECK_EVERY)
        self.events = 0
        self.depth = 0
        self.next_fid = 0
        self.stopped = False
        self.partial_reason: str | None = None
        self.last: dict | None = None

    # -- hooks ---------------------------------------------------------------------------------

    def _global(self, frame: types.FrameType, event: str, arg: object):
        if self.stopped:
            return None
        # Python code is about to run: the caller's next event must diff everything.
        caller = frame.f_back
        if caller is not None:
            owner = frame_owner(caller.f_trace)
            if owner is not None:
                owner.point = FULL_POINT
        code = frame.f_code
        key = id(code)
        try:
            info = self._infos[key]
        except KeyError:
            info = self._analyse(code)
        if info is None:
            return None
        try:
            state = frame_owner(frame.f_trace)
            if state is not None and state.tr is not self:
                state = None
            if state is None:
                state = Frame(self, info, self.depth)
            else:
                state.depth = state.template["depth"] = self.depth
                state.point = FULL_POINT
            self.depth += 1
            self.events += 1
            return state.fn
        except Exception as exc:
            return self._call_error(exc)

    def _call_error(self, exc: Exception) -> None:
        """The tracer failed on a call event: stop tracing (the program runs on untraced)."""
        self.fail(f"tracer_error: {type(exc).__name__}: {exc}")

    def assume_hidden_mutators(self) -> None:
        """A class of the program holds a C callable (``property(log.append)``, ``__eq__ =
        staticmethod(log.append)``): attribute reads, comparisons and operators may now run it
        without any Python frame starting, so from here on every line re-checks every local."""
        self.paranoid = True
        for info in self._infos.values():
            if info is not None:
                info.paranoid = True
                info.recs.clear()  # the frames share these: their next lines are re-derived

    def _analyse(self, code: types.CodeType) -> CodeInfo | None:
        info = None
        if code.co_filename == self.filename:
            info = CodeInfo(code, self._source.scope(code))
            info.paranoid = self.paranoid
        self._infos[id(code)] = info
        self._codes.append(code)
        return info

    # -- stopping ------------------------------------------------------------------------------

    def _stop(self) -> None:
        self.stopped = True
        sys.settrace(None)
        frame: types.FrameType | None = sys._getframe()
        while frame is not None:
            if frame_owner(frame.f_trace) is not None:
                frame.f_trace = None
            frame = frame.f_back

    def overflow(self, reason: str) -> None:
        """Mark the trace partial, hand it to on_overflow, then stop tracing."""
        if self.partial_reason is None:
            self.partial_reason = reason
        if self.on_overflow is not None:
            self.on_overflow(self._wire(None, False, None))
        self._stop()
        raise TraceOverflow(reason)

    def check_caps(self) -> None:
        """Called before recording a step once len(steps) reaches ``limit``."""
        steps = self.steps
        count = len(steps)
        if count >= self.max_steps:
            self.overflow("max_steps")
        if self.size + _STEP_CHARS * count > self.max_trace_chars:
            self.overflow("max_trace_chars")
        self.limit = min(self.max_steps, count + _SIZE_CHECK_EVERY)

    def fail(self, reason: str) -> None:
        if self.partial_reason is None:
            self.partial_reason = reason
        self._stop()

    # -- the call ------------------------------------------------------------------------------

    def _wire(self, value: str | None, literal: bool, exception: dict | None) -> dict:
        return {
            "steps": self.steps,
            "return": value,
            "return_literal": literal,
            "exception": exception,
            "partial": self.partial_reason is not None,
            "partial_reason": self.partial_reason,
            "events": self.events + len(self.steps),
        }

    def call(self, function: Callable, args: tuple, kwargs: dict) -> dict:
        """Run ``function(*args, **kwargs)`` under the tracer and return the trace (wire form).

        If the function raises, the exception is recorded in the trace and re-raised; the trace
        is then available as ``self.last``.
        """
        self._reset()
        previous = sys.gettrace()
        thresholds = gc.get_threshold()
        # The trace's own allocations would otherwise make the collector run far more often
        # than in the plain run (and rescan the growing trace each time).
        gc.set_threshold(thresholds[0] * 10, *thresholds[1:])
        hook = self._global
        if self.accelerated:
            ACCELERATOR.settrace(hook)  # type: ignore[union-attr]
        else:
            sys.settrace(hook)
        try:
            value = function(*args, **kwargs)
        except BaseException as exc:
            removed = sys.gettrace() is not hook
            sys.settrace(previous)
            gc.set_threshold(*thresholds)
            self._finish(removed)
            self.last = self._wire(None, False, exception_info(exc))
            raise
        removed = sys.gettrace() is not hook
        sys.settrace(previous)
        gc.set_threshold(*thresholds)
        self._finish(removed)
        self.value = value  # the worker renders it again under the result's own limits
        text = self.render.text(value)
        # Literal renderings never start with "<"; the markers always do.
        self.last = self._wire(text, not text.startswith("<"), None)
        return self.last

    def _finish(self, removed: bool) -> None:
        if self.stopped:
            return
        self.stopped = True
        if (removed or self.depth != 0) and self.partial_reason is None:
            self.partial_reason = "tracer_removed"
