"""Extensions from installed packages, through entry points: a package adds a task kind, a
benchmark, a model backend or a rewrite without editing this one.

A package declares, in its ``pyproject.toml``::

    [project.entry-points."codereasoner.tasks"]
    my_kind = "my_package:KIND"            # a TaskKind (an object with its name)
    [project.entry-points."codereasoner.benchmarks"]
    my-bench = "my_package:BENCHMARK"      # a Benchmark declaration
    [project.entry-points."codereasoner.backends"]
    mine = "my_package:BACKEND"            # a BackendType
    [project.entry-points."codereasoner.rewrites"]
    my_rewrite = "my_package:REWRITE"      # a programs.Rewrite, drawn by CoRE-style builds

:func:`load_plugins` registers them, task kinds first (a benchmark names its kinds); the command
line, :func:`codereasoner.evaluation.evaluate`, :func:`~codereasoner.evaluation.synthesize` and
:func:`~codereasoner.families.core.api.build_core` call it before anything else. A plugin that
cannot be loaded or registered is one :class:`PluginError` line naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from codereasoner import benchmarks, models, tasks
from codereasoner.evaluation.families import FAMILIES, MetricFamily
from codereasoner.programs.rewrites import REWRITES, Rewrite

__all__ = ["GROUPS", "PluginError", "load_plugins"]


class PluginError(RuntimeError):
    """A plugin could not be loaded or registered (one line, naming it)."""


def _benchmark(found: Any) -> None:
    if benchmarks.REGISTRY.get(str(getattr(found, "name", ""))) is not found:
        benchmarks.register(found)


def _backend(found: Any) -> None:
    if models.BACKENDS.get(str(getattr(found, "name", ""))) is not found:
        models.register(found)


def _rewrite(found: Any) -> None:
    if not isinstance(found, Rewrite):
        raise TypeError(f"expected a codereasoner.programs.Rewrite, got {type(found).__name__}")
    if REWRITES.get(found.name) is not found:
        REWRITES.register(found)


def _metric_family(found: Any) -> None:
    if not isinstance(found, MetricFamily) or not found.name:
        raise TypeError(
            "expected a named codereasoner.evaluation.families.MetricFamily, got "
            f"{type(found).__name__}"
        )
    if FAMILIES.get(found.name) is not found:
        FAMILIES.register(found)


# In registration order; each registers one loaded object.
GROUPS: dict[str, Callable[[Any], None]] = {
    "codereasoner.tasks": tasks.register,  # registering the same kind again does nothing
    "codereasoner.metric_families": _metric_family,
    "codereasoner.benchmarks": _benchmark,
    "codereasoner.backends": _backend,
    "codereasoner.rewrites": _rewrite,
}


def load_plugins() -> list[str]:
    """Register every installed plugin (again: nothing new); returns ``group:name`` of each."""
    loaded = []
    for group, register in GROUPS.items():
        for entry in sorted(entry_points(group=group), key=lambda found: found.name):
            _load(entry, group, register)
            loaded.append(f"{group}:{entry.name}")
    return loaded


def _load(entry: EntryPoint, group: str, register: Callable[[Any], None]) -> None:
    where = f"plugin {entry.name} = {entry.value} ({group}"
    where += f", package {entry.dist.name})" if entry.dist is not None else ")"
    try:
        found = entry.load()
    except (Exception, SystemExit) as exc:  # a plugin's own import error, or its exit, whatever
        reason = (
            f"exits at import (code {exc.code!r})"
            if isinstance(exc, SystemExit)
            else (f"cannot be loaded ({type(exc).__name__}: {exc})")
        )
        raise PluginError(f"{where}: {reason}") from None
    try:
        register(found)
    except (ValueError, TypeError, AttributeError) as exc:
        raise PluginError(f"{where}: cannot be registered ({exc})") from None
