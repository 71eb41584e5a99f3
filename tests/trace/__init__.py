"""Tests of the execution tracer (sandbox side) and of codereasoner.trace (parent side)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_SRC = Path(__file__).resolve().parents[2] / "src" / "codereasoner"
_FLAT_MODULES = {
    "values": _SRC / "values.py",
    "tracer": _SRC / "execution" / "sandboxed" / "tracer.py",
}


def load_flat(name: str) -> ModuleType:
    """Import a sandbox module the way the sandbox does: as a flat top-level module.

    Loaded from its file (not by putting src/codereasoner on sys.path, which would shadow the
    standard library's ``trace`` module with the ``codereasoner.trace`` package).
    """
    path = _FLAT_MODULES[name]
    module = sys.modules.get(name)
    if module is not None and Path(getattr(module, "__file__", "")) == path:
        return module
    if name == "tracer":
        load_flat("values")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
