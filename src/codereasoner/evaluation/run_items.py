"""Per-benchmark choices a run reads from the benchmark's declaration: the items (a
deterministic subset for ``--limit``), the prompt style, the benchmarks whose data is at hand,
and a stored report's headline."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codereasoner import benchmarks, tasks
from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.families import load_report
from codereasoner.evaluation.run_settings import RunError, refused
from codereasoner.tasks import Item

__all__ = ["available", "headline", "known_styles", "load_items", "select_items", "style_for"]


def select_items(
    bench: Benchmark, items: Sequence[Item], limit: int | None, skip: int = 0
) -> list[Item]:
    """A deterministic subset of about ``limit`` items: whole groups (``Benchmark.group``: e.g.
    REval's program and input, CoRE's problem) in the order of a hash of their key, until
    ``limit`` is reached, after leaving out the groups of the first ``skip`` items of that
    order. So ``limit=200`` and ``skip=200, limit=100`` are disjoint, and a larger ``limit``
    keeps a smaller one's items."""
    if (limit is None or limit >= len(items)) and not skip:
        return list(items)
    groups: dict[str, list[Item]] = {}
    for item in items:
        groups.setdefault(bench.group(item), []).append(item)
    order = sorted(groups, key=lambda key: hashlib.sha256(key.encode()).hexdigest())
    chosen: set[str] = set()
    skipped = count = 0
    for key in order:
        if skipped < skip:
            skipped += len(groups[key])
            continue
        if limit is not None and count >= limit:
            break
        chosen.add(key)
        count += len(groups[key])
    return [item for item in items if bench.group(item) in chosen]


def known_styles() -> list[str]:
    """Every prompt style some registered task kind has, in registration order."""
    found = [str(style) for name in tasks.names() for style in tasks.get(name).styles]
    return list(dict.fromkeys(found))


def style_for(bench: Benchmark, style: str) -> str:
    """``style`` where the benchmark supports it, else ``direct`` (every benchmark has it)."""
    if style not in known_styles():
        raise refused("style", style, f"one of {', '.join(known_styles())}")
    return style if style in bench.styles else "direct"


def available(data_dir: Path | None = None) -> list[str]:
    """The benchmarks whose data is in ``data_dir`` (or its per-dataset folders) or the cache."""
    found = []
    for name in benchmarks.names():
        try:
            load_items(benchmarks.get(name), data_dir, download=False)
        except (RunError, ValueError, OSError):
            continue
        found.append(name)
    return found


def load_items(bench: Benchmark, data_dir: Path | None, *, download: bool = True) -> list[Item]:
    """``data_dir``: the data root (one folder per dataset) or the benchmark's own folder."""
    try:
        return bench.load(data_dir, download=download)
    except benchmarks.DataUnavailable as exc:
        raise RunError(f"{bench.name}: {exc}") from None


def headline(benchmark: str, report: dict[str, Any]) -> dict[str, float]:
    """A stored report's main metrics (its family's ``headline``)."""
    typed = load_report(benchmark, report)
    return {} if typed is None else typed.headline()
