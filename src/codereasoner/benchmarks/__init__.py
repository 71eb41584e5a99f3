"""The benchmark registry: name -> :class:`Benchmark`, each declared once in its family's folder.

from codereasoner import benchmarks
bench = benchmarks.get("cruxeval-o")
items = bench.load(data_dir)        # the data root or the benchmark's folder; else the cache

A new benchmark is one ``Benchmark(...)`` declaration: in a family folder (``codereasoner/families/``,
named here as a lazy target), by :func:`register`, or from an installed package's entry point;
see docs/architecture.md "How to add a benchmark" and docs/extending.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from codereasoner import tasks
from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.benchmarks.spec import Benchmark, Clock, Metrics, Stops
from codereasoner.registry import Registry, RegistryError, builtin_registrations

__all__ = [
    "REGISTRY",
    "Benchmark",
    "Clock",
    "DataUnavailable",
    "Metrics",
    "Stops",
    "get",
    "names",
    "register",
    "standing_in",
    "unregister",
]

REGISTRY: Registry[Benchmark] = Registry("benchmark")


def register(bench: Benchmark) -> Benchmark:
    """Add a benchmark; RegistryError when its name is taken or a task kind is unknown (the
    declaration itself checks its other fields)."""
    if bench.name in REGISTRY and REGISTRY[bench.name] is not bench:
        raise RegistryError(f"benchmark {bench.name!r} is already registered")
    _check_tasks(bench)
    return REGISTRY.register(bench)


def _check_tasks(bench: Benchmark) -> None:
    for name in bench.tasks:
        tasks.get(name)  # raises naming the known kinds


@contextlib.contextmanager
def standing_in(bench: Benchmark) -> Iterator[Benchmark]:
    """``bench`` registered in place of the benchmark of its name (a run's own variant of a
    declaration, such as distillation's cases with their hints) until the block ends; then the
    original again, in its place, or none if there was none."""
    _check_tasks(bench)
    original = REGISTRY.get(bench.name)
    REGISTRY.put(bench.name, bench)
    try:
        yield bench
    finally:
        if original is not None:
            REGISTRY.put(bench.name, original)
        elif REGISTRY.get(bench.name) is bench:
            REGISTRY.remove(bench.name)


def unregister(name: str) -> Benchmark:
    """Remove a registered benchmark (RegistryError, a KeyError, naming the known ones if there
    is none)."""
    return REGISTRY.unregister(name)


def names() -> list[str]:
    return REGISTRY.names()


def get(name: str) -> Benchmark:
    """The benchmark ``name``; RegistryError (a KeyError) naming the known ones otherwise."""
    return REGISTRY.get_entry(name)


# A benchmark family with a folder of its own (codereasoner/families/) sits above this layer: its
# declarations are found by scanning the folders' manifests and imported on first use.
for _name, _target in builtin_registrations("benchmarks"):
    REGISTRY.register_lazy(_name, _target)
del _name, _target
