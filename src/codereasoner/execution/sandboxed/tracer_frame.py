"""The tracer's per-frame state and its event handlers (the frame's trace function).

Part of the sandbox-side tracer (see ``tracer``), imported as a flat module: standard library,
``values`` and the tracer's other modules but ``tracer`` itself, no module-level side effects.
With the C fast path, ``Frame`` is a subclass of ``_tracecore.FrameCore``, which holds its
fields and calls the methods here by name.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the sandbox imports the same files as flat modules
    from codereasoner import values
    from codereasoner.execution.sandboxed.tracer_accelerator import ACCELERATOR
    from codereasoner.execution.sandboxed.tracer_analysis import (
        EMPTY,
        FULL,
        FULL_POINT,
        HARD,
        MUTATE,
        NO_OFFSETS,
        NO_POINT,
        CodeInfo,
        Loop,
        Test,
    )
    from codereasoner.execution.sandboxed.tracer_locals import (
        ID,
        MISSING,
        LocalTracking,
        Recorder,
    )
    from codereasoner.execution.sandboxed.tracer_loops import LoopCounting
    from codereasoner.execution.sandboxed.tracer_render import (
        ATOMS,
        NEG_SMALL,
        SMALL,
        hidden_mutator,
    )
else:
    import values
    from tracer_accelerator import ACCELERATOR
    from tracer_analysis import (
        EMPTY,
        FULL,
        FULL_POINT,
        HARD,
        MUTATE,
        NO_OFFSETS,
        NO_POINT,
        CodeInfo,
        Loop,
        Test,
    )
    from tracer_locals import ID, MISSING, LocalTracking, Recorder
    from tracer_loops import LoopCounting
    from tracer_render import ATOMS, NEG_SMALL, SMALL, hidden_mutator

_METHOD = types.MethodType


class TraceOverflow(Exception):
    """Raised inside the tracer to abandon tracing once a cap is reached."""


class _TracerState(Recorder, Protocol):
    """What frames read and update of their tracer (``tracer.Tracer``)."""

    accelerated: bool
    steps: list[dict]
    limit: int
    stopped: bool
    events: int
    depth: int
    next_fid: int
    paranoid: bool

    def check_caps(self) -> None: ...

    def fail(self, reason: str) -> None: ...

    def assume_hidden_mutators(self) -> None: ...


class Frame(LocalTracking, LoopCounting):
    """Trace state of one frame instance. The frame's ``f_trace`` is the instance itself when
    the C fast path is used (it handles common line events and calls ``local`` for the rest),
    else its bound ``local``."""

    __slots__ = ()

    tr: _TracerState

    def __init__(self, tr: _TracerState, info: CodeInfo, depth: int) -> None:
        # _tracecore.c's new_frame sets the same fields: keep the two in step.
        self.tr = tr
        self.info = info
        self.qual = info.qualname
        self.max_chars = tr.render.max_chars
        self.fid = tr.next_fid
        tr.next_fid += 1
        self.depth = depth
        self.snap: dict[str, list] = {}
        self.watch: dict[str, list] = {}
        self.step: dict | None = None
        self.off = -1  # of the latest line event (-1: none yet)
        self.point: tuple = FULL_POINT
        self.counts: dict[object, int] = {}
        self.enc: tuple = EMPTY
        self.loops: tuple = EMPTY
        self.cond_test: Test | None = None
        self.cond_step: dict | None = None
        self.rev_loop: object = None
        self.rev_index = 0
        self.rev_step: dict | None = None
        self.rev_more: list | None = None
        self.inline_step: dict | None = None
        self.inline_offs: frozenset[int] = NO_OFFSETS
        self.inline_seen = False  # an opcode event arrived (3.12 may not deliver any)
        self.raised = False  # an exception reached this frame since its last line event
        # The fields every step starts with, copied (dict.copy) for each step. Built with room
        # for the optional keys: a copy keeps the template's table size, so adding `changes`
        # or `cond` to a step does not resize it.
        template = {
            "line": 0,
            "frame": self.qual,
            "fid": self.fid,
            "depth": depth,
            "loops": EMPTY,
            "changes": None,
        }
        del template["changes"]
        self.template = template
        self.recs = info.recs
        self.fn = self if tr.accelerated else self.local

    # -- the trace function ------------------------------------------------------------------

    def local(self, frame: types.FrameType, event: str, arg: object):
        tr = self.tr
        try:
            if tr.stopped:
                frame.f_trace = None
                return None
            if event != "line":
                tr.events += 1
                if event == "opcode":
                    if self.inline_step is not None:
                        self.inline_seen = True
                        if frame.f_lasti in self.inline_offs:
                            self.inline_step["cond"] = True
                            self.inline_step = None
                            frame.f_trace_opcodes = False
                elif event == "return":
                    self.on_return(frame, arg)
                    return None
                elif event == "exception":
                    self.on_exception(frame, arg)
                return self.fn
            # The hot path: one line event.
            off = frame.f_lasti
            rec = self.recs.get(off)
            if rec is None:
                rec = self.info.record(off, frame.f_lineno)
            # What is static about this event, for this offset (the line included).
            point, enc, special, test, target, index, line = rec
            # First finish the previous step of this frame.
            step = self.step
            if step is None:
                new = self.first_step(frame, line)
            else:
                self.raised = False
                flags, stores, inplace = self.point
                if flags:
                    loc = frame.f_locals
                    snap = self.snap
                    if flags & FULL or (flags & MUTATE and len(loc) != len(snap)):
                        self.rebind_all(loc, step)
                    else:
                        # The common case, inlined: only the names the line stores to can have
                        # been rebound (no Python call ran).
                        for name in stores:
                            try:
                                value = loc[name]
                            except KeyError:
                                value = MISSING
                            entry = snap.get(name)
                            if entry is None or entry[0] is not value:
                                # An atom replacing an atom, inlined from store(): an int that
                                # renders as its repr (16 chars at most) or a str that may.
                                kind = type(value)
                                if entry is None or entry[2] != ID:
                                    self.store(name, value, entry, step)
                                    continue
                                if kind is int and NEG_SMALL < value < SMALL:
                                    text = repr(value)
                                elif kind is str and len(value) <= self.max_chars:
                                    text = repr(value)
                                    if len(text) > self.max_chars:  # many escapes
                                        text = tr.render.text(value)
                                else:
                                    self.store(name, value, entry, step)
                                    continue
                                entry[0] = value
                                if text != entry[1]:
                                    entry[1] = text
                                    # self.note(step, name, text), inlined
                                    changes = step.get("changes")
                                    if changes is None:
                                        step["changes"] = {name: text}
                                    else:
                                        changes[name] = text
                                    tr.size += len(name) + len(text) + 6
                    if self.watch:
                        if flags & HARD:
                            self.recheck(step)
                        elif inplace:
                            for name in inplace:
                                entry = snap.get(name)
                                if entry is not None and entry[2] != ID:
                                    # `x += ...` mutated a container in place (maybe aliased)
                                    self.recheck(step)
                                    break
                rev = self.rev_loop
                if rev is not None:
                    if rev.__class__ is Loop and rev.body_lo <= line <= rev.body_hi:
                        self.rev_loop = None  # the header check entered the body
                    else:
                        self.resolve_rev(line, off)
                pending = self.cond_test
                if pending is not None and not pending.lo <= line <= pending.hi:
                    self.cond_step["cond"] = pending.body_lo <= line <= pending.body_hi  # type: ignore[index]
                    self.cond_test = None
                if self.inline_step is not None:
                    if self.inline_seen:  # the body's first instruction never ran
                        self.inline_step["cond"] = False
                    self.inline_step = None
                    frame.f_trace_opcodes = False
                if len(tr.steps) >= tr.limit:
                    tr.check_caps()
                new = self.template.copy()  # faster than a dict display
                new["line"] = line
            if enc is not self.enc or special:
                if target is not None and enc is self.enc and enc[-1] is target:
                    # The common case, inlined from count_loops: the next iteration of the
                    # innermost `for` loop.
                    counts = self.counts
                    count = counts[target] = counts[target] + 1
                    loops = self.loops
                    loops = (
                        (*loops[:-1], (target.line, count))
                        if len(loops) > 1
                        else ((target.line, count),)
                    )
                    self.loops = new["loops"] = self.template["loops"] = loops
                    self.rev_loop = target
                    self.rev_index = index
                    self.rev_step = new
                    self.rev_more = None
                else:
                    self.count_loops(line, off, new, enc)
            if test is not None and self.cond_test is None:
                if not test.inline:
                    self.cond_test = test
                    self.cond_step = new
                elif test.lo == line:
                    self.start_inline(frame, test, new)
            tr.steps.append(new)
            self.step = new
            self.off = off
            self.point = point
            return self.fn
        except Exception as exc:
            return self.abandon(frame, exc)

    def abandon(self, frame: types.FrameType, exc: Exception) -> None:
        """Stop tracing this frame: a cap was reached (TraceOverflow) or the tracer failed (a
        tracer bug must not change the program's behaviour)."""
        if not isinstance(exc, TraceOverflow):
            self.tr.fail(f"tracer_error: {type(exc).__name__}: {exc}")
        frame.f_trace = None

    def start_inline(self, frame: types.FrameType, test: Test, step: dict) -> None:
        """A one-line ``if test: body`` starts: decide it from opcode events."""
        self.inline_step = step
        self.inline_offs = self.info.body_offsets(test)
        self.inline_seen = False
        frame.f_trace_opcodes = True

    def first_step(self, frame: types.FrameType, line: int) -> dict:
        tr = self.tr
        text_of = tr.render.text
        snap = self.snap
        args = {}
        for name, value in frame.f_locals.items():
            if type(value) in ATOMS:  # self.entry(value), inlined
                entry = snap[name] = [value, text_of(value), ID, None]
            else:
                entry = snap[name] = self.entry(value)
                if entry[2] != ID:
                    self.watch[name] = entry
            if name[0] != "." and name != "__class__":
                args[name] = entry[1]
        if len(tr.steps) >= tr.limit:
            tr.check_caps()
        for name, text in args.items():
            tr.size += len(name) + len(text) + 6  # args never change: counted at once
        return {
            "line": line,
            "frame": self.qual,
            "fid": self.fid,
            "depth": self.depth,
            "loops": self.loops,
            "args": args,
        }

    def on_return(self, frame: types.FrameType, arg: object) -> None:
        tr = self.tr
        tr.depth -= 1
        step = self.step
        if step is None:
            return
        # Since the latest line event only the rest of that line ran (a Python call or an
        # exception since then has made the point FULL_POINT).
        if self.point[0]:
            if tr.accelerated:
                self.finish(frame, step)  # FrameCore.finish (in C)
            else:
                self.update(frame.f_locals, step)
        self.point = NO_POINT
        off = frame.f_lasti
        info = self.info
        if off in info.yields and not self.raised:
            step["yield"] = tr.render.text(arg)
            return
        if self.inline_step is not None:
            if off in self.inline_offs:
                self.inline_step["cond"] = True  # the body returned
            elif self.inline_seen:
                self.inline_step["cond"] = False
            self.inline_step = None
        if self.cond_test is not None:
            self.cond_step["cond"] = False  # type: ignore[index]
            self.cond_test = None
        if self.rev_loop is not None:
            self.resolve_rev(None, None)
        if off in info.returns and not self.raised:
            step["ret"] = tr.render.text(arg)
        if info.class_body and not tr.paranoid:
            namespace = frame.f_locals
            if any(hidden_mutator(value) for value in list(namespace.values())):
                tr.assume_hidden_mutators()

    def on_exception(self, frame: types.FrameType, arg: object) -> None:
        self.point = FULL_POINT
        if type(arg) is tuple and arg[0] is StopIteration and frame.f_lasti in self.info.fiter:
            return  # a `for` loop over a generator that returned a value: plain iteration
        self.raised = True
        self.cond_test = None
        if self.inline_step is not None:
            self.inline_step = None
            frame.f_trace_opcodes = False
        step = self.step
        if step is not None and type(arg) is tuple and len(arg) == 3:
            step["exc"] = values.type_name(arg[1])


if ACCELERATOR is not None:
    ACCELERATOR.enable_vectorcall(Frame)


def frame_owner(trace_function: object) -> Frame | None:
    """The Frame behind a frame's ``f_trace`` (itself, or its bound ``local``), if any."""
    owner = trace_function.__self__ if type(trace_function) is _METHOD else trace_function
    return owner if type(owner) is Frame else None
