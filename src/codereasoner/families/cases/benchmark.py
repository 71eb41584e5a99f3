"""Synthesized cases (``codereasoner synth``) as a benchmark, each case asked both ways.

    items = case_items(read_cases(Path("runs/synth/cases.jsonl")), ("forward", "backward"))
    codereasoner eval --model M --bench cases --data-dir runs/heldout-synth --style reasoning

A forward item (task ``case_forward``) asks for the value ``call`` returns; a backward item
(``case_backward``) for a call returning ``output``. Both keep the case's code as the program
the sandbox runs, and the case's method, control structures and depth as metadata; ``--limit``
keeps a case's two items together. With ``hints`` (distillation's ``--hint trace``), each item
carries a trace of the case's call in ``fields["hint"]``, which the prompt shows.

A third direction, ``probe`` (task ``case_probe``), asks about an intermediate state of the
call: one item per probe of the case (:mod:`codereasoner.programs.probes`, from our trace of
the call; ``case_items(..., probes=...)`` takes them, training makes them with
``training.cases.case_probes``), id ``<case id>/probe/<n>``, the probe's question in
``fields["question"]`` and its exact truth as the item's truth. The benchmark itself asks the
two directions that need no trace.

There is no upstream: the data is the user's own synthesis output, given with ``--data-dir``
(the folder or its ``cases.jsonl``). Nothing is downloaded, and without ``--data-dir`` the
benchmark's data is never available, so ``eval`` without ``--bench`` leaves it out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codereasoner.benchmarks.cache import LOCAL, DataUnavailable, Source
from codereasoner.benchmarks.case_files import CASES_FILE, Case, is_cases_file, read_cases
from codereasoner.benchmarks.spec import Benchmark
from codereasoner.families.cases.probe import PROBE_TASK
from codereasoner.families.cases.reasoning import BACKWARD_TASK, FORWARD_TASK
from codereasoner.families.cases.reasoning import DIRECTIONS as REASONING_DIRECTIONS
from codereasoner.tasks import Item

if TYPE_CHECKING:
    from codereasoner.programs.probes import Probe

__all__ = [
    "BENCHMARKS",
    "CASES",
    "DIRECTIONS",
    "NAME",
    "PROBE",
    "REASONING_DIRECTIONS",
    "case_items",
    "check_directions",
    "probe_metadata",
]

NAME = "cases"  # the benchmark, and Item.benchmark of every case item
PROBE = "probe"
DIRECTIONS = {**REASONING_DIRECTIONS, PROBE: PROBE_TASK}  # direction -> task kind


def check_directions(directions: Sequence[str]) -> None:
    """ValueError unless ``directions`` names some of forward, backward and probe, and
    nothing else."""
    if not directions or any(name not in DIRECTIONS for name in directions):
        raise ValueError(
            f"--directions: expected some of {', '.join(DIRECTIONS)}, got "
            f"{','.join(directions) or 'nothing'}"
        )


def case_items(
    cases: Iterable[Case],
    directions: Sequence[str],
    hints: Mapping[str, str] | None = None,
    probes: Mapping[str, Sequence[Probe]] | None = None,
) -> list[Item]:
    """One item per case and direction, case by case (forward, backward, then the case's
    probes in order); direction ``probe`` needs ``probes`` (per case id; a case without any
    gets no probe item)."""
    check_directions(directions)
    if PROBE in directions and probes is None:
        raise ValueError("direction probe needs the cases' probes")
    items = []
    for case in cases:
        fields = {"hint": hints[case.id]} if hints and case.id in hints else {}
        metadata = {
            "case_id": case.id,
            "method": case.method,
            "depth": case.depth,
            "control": "+".join(case.control) or "none",
            "input": case.input,
            "license": case.license,
        }
        for direction in (name for name in REASONING_DIRECTIONS if name in directions):
            items.append(
                Item(
                    id=f"{case.id}/{direction}",
                    benchmark=NAME,
                    task=DIRECTIONS[direction],
                    program=case.code,
                    entry=case.entry_point,
                    call=case.call,
                    truth=case.output,
                    fields=fields,
                    metadata={**metadata, "direction": direction},
                )
            )
        if PROBE in directions and probes is not None:
            items += _probe_items(case, probes.get(case.id, ()), fields, metadata)
    return items


def _probe_items(
    case: Case, probes: Sequence[Probe], fields: Mapping[str, str], metadata: Mapping[str, Any]
) -> list[Item]:
    return [
        Item(
            id=f"{case.id}/{PROBE}/{number}",
            benchmark=NAME,
            task=PROBE_TASK,
            program=case.code,
            entry=case.entry_point,
            call=case.call,
            truth=probe.truth,
            fields={**fields, "question": probe.question},
            metadata={
                **metadata,
                "direction": PROBE,
                "output": case.output,
                "probe": probe_metadata(probe),
            },
        )
        for number, probe in enumerate(probes)
    ]


def probe_metadata(probe: Probe) -> dict[str, Any]:
    """What a probe item records of its probe besides question and truth: kind, dimensions,
    target line and variable, and the difficulty features."""
    return {
        "kind": probe.kind,
        "dimensions": list(probe.dimensions),
        "line": probe.line,
        "name": probe.name,
        "trace_distance": probe.trace_distance,
        "nesting_depth": probe.nesting_depth,
        "operators": probe.operators,
    }


def parse(paths: Mapping[str, Path]) -> list[Item]:
    """Both directions of every case in the file."""
    return case_items(read_cases(paths[CASES_FILE]), tuple(REASONING_DIRECTIONS))


@dataclass(frozen=True, kw_only=True)
class _CasesBenchmark(Benchmark):
    """A benchmark whose ``--data-dir`` may also be a file of cases, whatever its name, as
    ``distill --cases`` takes it."""

    def folder(self, data_dir: Path) -> Path:
        data_dir = Path(data_dir)
        return data_dir.parent if is_cases_file(data_dir) else super().folder(data_dir)

    def load(
        self, data_dir: Path | None = None, *, download: bool = True, cache: Path | None = None
    ) -> list[Item]:
        if data_dir is not None and is_cases_file(Path(data_dir)):
            if not Path(data_dir).is_file():
                raise DataUnavailable(f"{data_dir}: not found (expected a file of cases)")
            return self.checked(self.parse({CASES_FILE: Path(data_dir)}))
        return super().load(data_dir, download=download, cache=cache)


CASES = _CasesBenchmark(
    name=NAME,
    title="Synthesized cases",
    description="forward (call -> value) and backward (value -> call) reasoning over the cases "
    "of a 'codereasoner synth' run, e.g. a held-out one",
    tasks=(FORWARD_TASK, BACKWARD_TASK),
    dataset=NAME,
    sources=(
        Source(CASES_FILE, "a 'codereasoner synth' output folder, or its cases.jsonl", kind=LOCAL),
    ),
    parse=parse,
    license="the cases' own (each record's license field)",
    upstream="your own 'codereasoner synth --out DIR' (no download: pass --data-dir DIR)",
    counts={},  # as many as the given cases.jsonl holds, times two
    breakdown="direction",
    breakdown_note="forward or backward",
    metric_note="pass@k x 100, graded strictly whatever --grading says (a literal compared; "
    "a literal call run in the sandbox)",
    group_by=("case_id",),
    decontaminate=False,  # the cases synthesis writes: what it decontaminates, not against
)

BENCHMARKS = (CASES,)
