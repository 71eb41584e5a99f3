"""Where ``core build`` takes its programs from: a benchmark's data or a synthesis folder.

    problems = read_problems("core", data_dir=Path("/work/shared/data"))
    problems = read_problems("synth:runs/synth")

A :class:`SourceProblem` is one problem: its implementations (one or more programs computing the
same function), the entry point they share and the calls its data holds. Problems come in the
source's order. A program whose entry point the CoRE loader would not find from its code, or a
call with keyword arguments (CoRE's ``input`` is positional), is left out, and the reason
counted in :attr:`SourceProblems.skipped`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from codereasoner import benchmarks
from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.benchmarks.case_files import cases_file, read_cases
from codereasoner.execution import CallSyntaxError, parse_call
from codereasoner.families.core.programs import entry_point

__all__ = ["ALIASES", "SYNTH_PREFIX", "SourceProblem", "SourceProblems", "read_problems"]

SYNTH_PREFIX = "synth:"
# --from names that stand for benchmarks; CoRE's output file is read too when the data holds it
ALIASES: dict[str, tuple[str, ...]] = {
    "core": ("core-probe", "core-output"),
    "cruxeval": ("cruxeval-o",),
    "reval": ("reval",),
}
_OPTIONAL = frozenset({"core-output"})  # not offline: used when present, else skipped
_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")


@dataclass(frozen=True)
class SourceProblem:
    """``id``: a CoRE problem key (no ``_`` or ``/``); ``origin``: the source's own id."""

    id: str
    origin: str
    implementations: tuple[str, ...]
    entry: str
    calls: tuple[str, ...]


@dataclass
class SourceProblems:
    problems: list[SourceProblem]
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> programs or calls left out
    notes: list[str] = field(default_factory=list)


def problem_id(origin: str) -> str:
    """A CoRE problem key from any id: ``HumanEval/3`` -> ``HumanEval-3``, ``sample_7`` ->
    ``sample-7`` (CoRE's loader cuts ids at ``/`` and ``_``)."""
    return _UNSAFE.sub("-", origin).strip("-") or "problem"


def read_problems(source: str, data_dir: Path | None = None) -> SourceProblems:
    """The problems of ``source``: a benchmark name (or an alias of :data:`ALIASES`) read from
    ``data_dir`` (else the cache; nothing is downloaded), or ``synth:DIR``. DataUnavailable
    naming the file and what was expected when the data cannot be read."""
    if source.startswith(SYNTH_PREFIX):
        return _from_synth(Path(source[len(SYNTH_PREFIX) :]))
    names = ALIASES.get(source, (source,))
    for name in names:
        if name not in benchmarks.REGISTRY:
            known = ", ".join(dict.fromkeys([*ALIASES, *benchmarks.names(), f"{SYNTH_PREFIX}DIR"]))
            raise ValueError(f"--from {source!r}: expected one of {known}")
    collected = _Collector()
    for name in names:
        bench = benchmarks.get(name)
        try:
            items = bench.load(data_dir, download=False)
        except DataUnavailable as exc:
            if name in _OPTIONAL:
                collected.result.notes.append(f"{name} left out: {exc}")
                continue
            raise
        for item in items:
            origin = str(item.metadata.get("problem") or item.metadata.get("task_id") or item.id)
            collected.add(origin, item.program, item.entry, item.call)
    return collected.done()


def _from_synth(path: Path) -> SourceProblems:
    found = cases_file(path)
    if not found.is_file():
        raise DataUnavailable(
            f"{found}: not found (synth:PATH must be a synth output folder or a file of cases)"
        )
    collected = _Collector()
    for case in read_cases(found):
        collected.add(case.method, case.code, case.entry_point, case.call)
    return collected.done()


class _Collector:
    """Groups programs and calls by problem, in first-seen order, checking each one."""

    def __init__(self) -> None:
        self.result = SourceProblems([])
        self._programs: dict[str, list[str]] = {}
        self._calls: dict[str, list[str]] = {}
        self._entries: dict[str, str] = {}
        self._origin: dict[str, str] = {}
        self._checked: dict[str, str | None] = {}
        self._skipped: set[tuple[str, str]] = set()

    def add(self, origin: str, program: str, entry: str, call: str) -> None:
        key = problem_id(origin)
        reason = self._check(program, entry)
        if reason is not None:
            self._skip(program, reason)
            return
        try:
            parsed = parse_call(call)
        except CallSyntaxError:
            self._skip(call, "a call that is not a literal call")
            return
        if parsed.kwargs or parsed.entry != entry:
            self._skip(call, "a call with keyword arguments or another entry point")
            return
        known = self._entries.setdefault(key, entry)
        if known != entry:
            self._skip(program, "an implementation with another entry point")
            return
        self._origin.setdefault(key, origin)
        programs = self._programs.setdefault(key, [])
        if program not in programs:
            programs.append(program)
        calls = self._calls.setdefault(key, [])
        text = parsed.render()
        if text not in calls:
            calls.append(text)

    def _skip(self, text: str, reason: str) -> None:
        if (text, reason) not in self._skipped:
            self._skipped.add((text, reason))
            self.result.skipped[reason] += 1

    def _check(self, program: str, entry: str) -> str | None:
        if program not in self._checked:
            found = entry_point(program)
            self._checked[program] = (
                None
                if found == entry
                else "a program whose entry point the CoRE loader would not find from its code"
            )
        return self._checked[program]

    def done(self) -> SourceProblems:
        for key, programs in self._programs.items():
            self.result.problems.append(
                SourceProblem(
                    key,
                    self._origin[key],
                    tuple(programs),
                    self._entries[key],
                    tuple(self._calls[key]),
                )
            )
        return self.result
