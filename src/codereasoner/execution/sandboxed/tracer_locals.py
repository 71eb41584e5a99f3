"""The tracer's tracking of a frame's locals: a snapshot of their texts, and what changed.

Part of the sandbox-side tracer (see ``tracer``), imported as a flat module: standard library,
``values`` and the tracer's accelerator, analysis and rendering modules only, no module-level side
effects.
``LocalTracking`` is a base of ``tracer_frame.Frame``; the C fast path (``_tracecore``) calls
its methods by name and reads the entries it builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the sandbox imports the same files as flat modules
    from codereasoner import values
    from codereasoner.execution.sandboxed.tracer_accelerator import FrameFields
    from codereasoner.execution.sandboxed.tracer_analysis import FULL, HARD, MUTATE
    from codereasoner.execution.sandboxed.tracer_render import (
        ATOMS,
        Renderer,
        deep_immutable,
        dumps,
        value_fingerprint,
    )
else:
    import values
    from tracer_accelerator import FrameFields
    from tracer_analysis import FULL, HARD, MUTATE
    from tracer_render import ATOMS, Renderer, deep_immutable, dumps, value_fingerprint

# Entry layout for one tracked local: [value, text, kind, extra]; the C fast path may append a
# 5th element (a snapshot of the items), which any change of `extra` here must drop.
ID, _FOREIGN, _FP = 0, 1, 2  # identity only / identity + type / marshal fingerprint
MISSING = object()  # the value of a deleted (or not yet bound) local
_MUTABLE = (list, dict, set)


class Recorder(Protocol):
    """What the tracking of locals uses of the tracer (``tracer.Tracer``)."""

    render: Renderer
    size: int  # estimated JSON size of the trace's changes and arguments


class LocalTracking(FrameFields):
    """Snapshot and diff of one frame's locals (a base of ``_Frame``; the fields it uses below).

    ``snap`` maps every tracked name to its entry, ``watch`` the names whose entries must be
    re-checked for in-place changes (containers and other objects).
    """

    __slots__ = ()

    tr: Recorder
    snap: dict[str, list]
    watch: dict[str, list]
    point: tuple

    def entry(self, value: object) -> list:
        """A tracking entry [value, text, kind, extra] for a freshly bound value."""
        kind = type(value)
        render = self.tr.render
        if kind in ATOMS:
            return [value, render.text(value), ID, None]
        if kind in _MUTABLE or kind is tuple or kind is frozenset:
            if (kind is tuple or kind is frozenset) and deep_immutable(value):
                return [value, render.text(value), ID, None]
            size = len(value)  # type: ignore[arg-type]
            if size > render.bound:
                return [value, render.text(value), _FP, size]
            fp = value_fingerprint(value)
            return [value, render.with_fingerprint(value, fp), _FP, fp]
        return [value, render.text(value), _FOREIGN, kind]

    def bind(self, name: str, value: object, old: list | None, step: dict) -> None:
        """Track a new binding of ``name`` (``MISSING``: deleted) and record any change."""
        snap = self.snap
        if value is MISSING:
            if old is None:
                return
            del snap[name]
            self.watch.pop(name, None)
            text = None
        else:
            entry = snap[name] = self.entry(value)
            if entry[2] != ID:
                self.watch[name] = entry
            elif old is not None and old[2] != ID:
                del self.watch[name]
            text = entry[1]
            if old is not None and text == old[1]:
                return
        if name[0] != "." and name != "__class__":
            self.note(step, name, text)

    def note(self, step: dict, name: str, text: str | None) -> None:
        """Record ``changes[name] = text`` in ``step`` (this frame's latest step)."""
        changes = step.get("changes")
        if changes is None:
            step["changes"] = {name: text}
        else:
            changes[name] = text
        self.tr.size += len(name) + (4 if text is None else len(text)) + 6

    def store(self, name: str, value: object, entry: list | None, step: dict) -> None:
        """A stored-to name whose value is not the tracked object any more (or is new)."""
        if entry is not None and entry[2] == ID and type(value) in ATOMS:
            entry[0] = value
            text = self.tr.render.text(value)
            if text != entry[1]:
                entry[1] = text
                self.note(step, name, text)
        else:
            self.bind(name, value, entry, step)

    def rebind_all(self, loc, step: dict) -> None:
        snap = self.snap
        text_of = self.tr.render.text
        for name, value in loc.items():
            entry = snap.get(name)
            if entry is not None:
                if entry[0] is value:
                    continue
                if entry[2] == ID and type(value) in ATOMS:
                    entry[0] = value  # an atom replaced by an atom: reuse the entry
                    text = text_of(value)
                    if text != entry[1]:
                        entry[1] = text
                        if name[0] != "." and name != "__class__":
                            self.note(step, name, text)
                    continue
            self.bind(name, value, entry, step)
        if len(snap) > len(loc):
            self.drop_missing(loc, step)

    def drop_missing(self, loc, step: dict) -> None:
        """Names tracked but no longer in the frame's locals were deleted."""
        snap = self.snap
        for name in [name for name in snap if name not in loc]:
            self.bind(name, MISSING, snap[name], step)

    def recheck(self, step: dict) -> None:
        """Look for in-place changes of the tracked containers and objects."""
        render = self.tr.render
        bound = render.bound
        for name, entry in self.watch.items():
            value = entry[0]
            if entry[2] == _FOREIGN:
                if type(value) is entry[3]:
                    continue
                text = self.recheck_foreign(entry)
            else:
                size = len(value)
                if size > bound:
                    # Too many items to fit: the text depends on the length only.
                    if size == entry[3]:
                        continue
                    entry[3] = size
                    del entry[4:]  # the C fast path's snapshot (see _tracecore.c) is stale
                    text = f"<{type(value).__name__} of {size} items, too large>"
                else:
                    try:  # value_fingerprint, inlined
                        fp = dumps(value, 2)
                    except (ValueError, RecursionError, MemoryError):
                        fp = None
                    if fp is not None and fp == entry[3]:
                        continue
                    entry[3] = fp
                    del entry[4:]
                    text = render.with_fingerprint(value, fp)
            if text != entry[1]:
                entry[1] = text
                if name[0] != "." and name != "__class__":
                    self.note(step, name, text)

    @staticmethod
    def recheck_foreign(entry: list) -> str:
        """The text of a tracked non-literal object whose type changed (``__class__ = ...``)."""
        value = entry[0]
        entry[3] = type(value)
        return f"<{values.type_name(value)} object>"

    def update(self, loc, step: dict) -> None:
        """Record in ``step`` the locals that changed since the snapshot (the line just ran)."""
        snap = self.snap
        flags, stores, inplace = self.point
        if flags & FULL or (flags & MUTATE and len(loc) != len(snap)):
            self.rebind_all(loc, step)
        else:
            # Only the names the line stores to can have been rebound (no Python call ran).
            for name in stores:
                value = loc.get(name, MISSING)
                entry = snap.get(name)
                if entry is None or entry[0] is not value:
                    self.store(name, value, entry, step)
        if self.watch:
            if flags & HARD:
                self.recheck(step)
            elif inplace:
                self.recheck_inplace(inplace, step)

    def recheck_inplace(self, names: tuple[str, ...], step: dict) -> None:
        snap = self.snap
        for name in names:
            entry = snap.get(name)
            if entry is not None and entry[2] != ID:
                self.recheck(step)  # `x += ...` mutated a container in place (maybe aliased)
                return
