"""The tracer's optional C fast path (``_tracecore``, built from _tracecore.c next to this file)
and the base classes it gives the tracer's frame and tracer classes.

Part of the sandbox-side tracer (see ``tracer``), imported as a flat module: standard library
only, no module-level side effects beyond loading the extension.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import types

__all__ = ["ACCELERATOR"]

_CORE_ABI = 3  # the _tracecore.c build this module is written against (its CORE_ABI)


def _load_accelerator() -> types.ModuleType | None:
    """The C fast path (``_tracecore``, built from _tracecore.c next to this file), or None.

    Optional: without it (not built, another interpreter, an ABI mismatch) every event runs
    through ``_Frame.local``, with identical traces.
    """
    directory = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(directory, "_tracecore" + suffix)
        if not os.path.exists(path):
            continue
        try:
            spec = importlib.util.spec_from_file_location("_tracecore", path)
            if spec is None or spec.loader is None:
                return None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except (ImportError, OSError):
            return None
        return module if getattr(module, "ABI", None) == _CORE_ABI else None
    return None


ACCELERATOR = _load_accelerator()

# The fields _tracecore.FrameCore holds in C (the ones its line-event fast path uses).
_CORE_FIELDS = (
    "cond_step",
    "cond_test",
    "counts",
    "depth",
    "enc",
    "fid",
    "fn",
    "info",
    "inline_offs",
    "inline_seen",
    "inline_step",
    "loops",
    "max_chars",
    "off",
    "point",
    "qual",
    "raised",
    "recs",
    "rev_index",
    "rev_loop",
    "rev_more",
    "rev_step",
    "snap",
    "step",
    "template",
    "tr",
    "watch",
)
_FrameBase: type = object if ACCELERATOR is None else ACCELERATOR.FrameCore
TracerBase: type = object if ACCELERATOR is None else ACCELERATOR.TracerCore


class FrameFields(_FrameBase):
    """The fields of a frame's trace state (``tracer_frame.Frame``, whose bases all derive from
    this class): those of the C ``FrameCore``, or without it the same fields as slots."""

    __slots__ = _CORE_FIELDS if ACCELERATOR is None else ()
