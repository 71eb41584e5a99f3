"""Benchmark programs for decontamination: every registered benchmark's code, read through its
loader (never downloading), as :class:`~codereasoner.synth.decontam.BenchmarkProgram` values.

It lives here, not in ``synth``, because synthesis sits above the benchmarks in the pipeline:
the caller (the CLI, a bench script) loads the programs and hands synthesis the index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from codereasoner import benchmarks, tasks
from codereasoner.synth.decontam import BenchmarkProgram, LoadedBenchmarks
from codereasoner.tasks.output_prediction import OutputPrediction

__all__ = ["decontamination_benchmarks", "load_benchmark_programs"]


def decontamination_benchmarks() -> list[str]:
    """Every registered benchmark whose programs are shown to models (its declaration's
    ``decontaminate``): the shipped ones and any a plugin adds, none listed by hand."""
    return [name for name in benchmarks.names() if benchmarks.get(name).decontaminate]


def answer_is_shown(task: str) -> bool:
    """An output-prediction kind's gold is the answer a model writes for the shown call: that
    text is benchmark content too (the other kinds' truths are not shown answers)."""
    return isinstance(tasks.get(task), OutputPrediction)


def _data_dir_for(
    name: str, dataset: str, data_dir: Path | Mapping[str, Path] | None
) -> Path | None:
    """A folder per benchmark or dataset, or one path (``Benchmark.load`` reads either the data
    root or the benchmark's own folder from it)."""
    if isinstance(data_dir, Mapping):
        chosen = data_dir.get(name, data_dir.get(dataset))
        return Path(chosen) if chosen is not None else None
    return None if data_dir is None else Path(data_dir)


def load_benchmark_programs(
    data_dir: Path | Mapping[str, Path] | None = None,
    names: Sequence[str] | None = None,
    *,
    cache: Path | None = None,
) -> LoadedBenchmarks:
    """The programs of ``names`` (default: :func:`decontamination_benchmarks`).

    ``data_dir`` is a root holding one folder per dataset (``/work/shared/data`` with
    ``cruxeval/``, ``reval/``, ...), or a mapping from benchmark or dataset name to its folder,
    or ``None`` for the local benchmark cache (never downloads). A benchmark whose files are
    missing is skipped and its reason recorded; programs shared by several views of one dataset
    (CoRE's output and probe views) are kept once.
    """
    wanted = list(names) if names is not None else decontamination_benchmarks()
    programs: list[BenchmarkProgram] = []
    checked: list[str] = []
    skipped: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    for name in wanted:
        if name not in benchmarks.REGISTRY:
            raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(benchmarks.names())}")
        bench = benchmarks.get(name)
        folder = _data_dir_for(name, bench.dataset, data_dir)
        if data_dir is not None and folder is None:
            skipped[name] = "no data directory given for it"
            continue
        try:
            items = bench.load(folder, download=False, cache=cache)
        except benchmarks.DataUnavailable as exc:
            skipped[name] = str(exc)
            continue
        checked.append(name)
        by_code: dict[str, list[Any]] = {}
        for item in items:
            # The displayed code when the program merely adds a preamble to it (LiveCodeBench's
            # imports); the program itself when the display differs (REval numbers its lines).
            shown = str(item.fields.get("code") or "")
            code = shown if shown and shown in item.program else item.program
            by_code.setdefault(code, []).append(item)
        for code, group in by_code.items():
            key = (bench.dataset, code)
            if key in seen:
                continue
            seen.add(key)
            strings: list[str] = []
            for item in group:
                for text in (item.call, item.truth if answer_is_shown(item.task) else ""):
                    if text and text not in strings:
                        strings.append(text)
            programs.append(BenchmarkProgram(name, group[0].id, code, tuple(strings)))
    return LoadedBenchmarks(programs, checked, skipped)
