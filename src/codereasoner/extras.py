"""Which optional libraries are installed, found without importing them (importing torch or
TRL takes seconds; a missing one must be said before anything else is checked)."""

from __future__ import annotations

import importlib.util
import sys


def missing(*modules: str) -> str | None:
    """The first of ``modules`` that cannot be imported (a module set to None in
    ``sys.modules`` counts as missing, as ``import`` treats it), else None."""
    for name in modules:
        if name in sys.modules:
            if sys.modules[name] is None:
                return name
            continue
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None
