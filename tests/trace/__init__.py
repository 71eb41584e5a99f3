"""Tests of the execution tracer (sandbox side) and of codereasoner.trace (parent side)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from codereasoner.execution.sandboxed import TRACER_MODULES

_SRC = Path(__file__).resolve().parents[2] / "src" / "codereasoner"
_SANDBOXED = _SRC / "execution" / "sandboxed"
_FLAT_MODULES = {
    "values": _SRC / "values.py",
    **{name: _SANDBOXED / f"{name}.py" for name in TRACER_MODULES},
}


def load_flat(name: str) -> ModuleType:
    """Import a sandbox module the way the sandbox does: as a flat top-level module.

    Loaded from its file (not by putting src/codereasoner on sys.path, which would shadow the
    standard library's ``trace`` module with the ``codereasoner.trace`` package), after the flat
    modules it imports (``values``, and the tracer's modules before it in TRACER_MODULES).
    """
    path = _FLAT_MODULES[name]
    module = sys.modules.get(name)
    if module is not None and Path(getattr(module, "__file__", "")) == path:
        return module
    if name in TRACER_MODULES:
        load_flat("values")
        for earlier in TRACER_MODULES[: TRACER_MODULES.index(name)]:
            load_flat(earlier)
    return _execute(name, path)


def load_tracer_copy(directory: Path) -> ModuleType:
    """The ``tracer`` module run afresh from copies of the tracer's modules in ``directory``;
    ``sys.modules`` keeps (or gets back) the tracer modules it held before."""
    saved = {name: sys.modules.pop(name) for name in TRACER_MODULES if name in sys.modules}
    load_flat("values")
    try:
        for name in TRACER_MODULES:
            module = _execute(name, directory / f"{name}.py")
        return module
    finally:
        for name in TRACER_MODULES:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


def _execute(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
