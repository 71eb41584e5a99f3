"""Training items from synthesized cases: each record of ``cases.jsonl`` asked both ways.

    items = case_items(read_cases(Path("runs/synth/cases.jsonl")), ("forward", "backward"))

A forward item (task ``case_forward``) asks for the value ``call`` returns; a backward item
(``case_backward``) for a call returning ``output``. Both keep the case's code as the program
the sandbox runs, and the case's method, control structures and depth as metadata. With
``hints``, each item carries our exact trace of the case's call (``fields["hint"]``), which the
prompt shows the teacher; the answer is verified all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codereasoner import values
from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.benchmarks.records import read_jsonl
from codereasoner.execution import CallSyntaxError, Pool, Program, TraceOptions, parse_call
from codereasoner.tasks import Item
from codereasoner.tasks.case_reasoning import DIRECTIONS
from codereasoner.trace import to_text, trace_batches

__all__ = [
    "CASES_FILE",
    "DIRECTIONS",
    "Case",
    "case_items",
    "check_directions",
    "read_cases",
    "trace_hints",
]

CASES_FILE = "cases.jsonl"
BENCHMARK = "cases"  # Item.benchmark of every training item
HINT_CHARS = 4_000  # a trace shown to the teacher is cut (saying so) beyond this
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "method": str,
    "constraints": dict,
    "code": str,
    "entry_point": str,
    "call": str,
    "input": str,
    "output": str,
}


@dataclass(frozen=True)
class Case:
    """The fields of a case record that training reads."""

    id: str
    method: str
    code: str
    entry_point: str
    call: str
    input: str
    output: str
    depth: int
    control: tuple[str, ...]
    license: str


def read_cases(path: Path) -> list[Case]:
    """Every case of a ``cases.jsonl``; DataUnavailable naming the file, line and field of the
    first record that is not a usable case (ids must be unique, ``output`` a literal, ``call``
    a literal call of ``entry_point``)."""
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for record in read_jsonl(path, _FIELDS):
        where = f"{path}:{record['_line']}"
        cases.append(_case(where, record))
        if record["id"] in seen:
            raise DataUnavailable(
                f"{where}: duplicate id {record['id']!r} (first on line {seen[record['id']]})"
            )
        seen[record["id"]] = record["_line"]
    return cases


def _case(where: str, record: Mapping[str, Any]) -> Case:
    try:
        values.parse(record["output"])
    except values.ValueParseError as exc:
        raise DataUnavailable(f"{where}: field 'output' is not a literal ({exc})") from None
    try:
        call = parse_call(record["call"])
    except CallSyntaxError as exc:
        raise DataUnavailable(f"{where}: field 'call' is not a literal call ({exc})") from None
    if call.entry != record["entry_point"]:
        raise DataUnavailable(
            f"{where}: field 'call' calls {call.entry}, not the entry point "
            f"{record['entry_point']!r}"
        )
    constraints = record["constraints"]
    depth = constraints.get("depth", 0)
    control = constraints.get("control", [])
    if type(depth) is not int or not isinstance(control, list):
        raise DataUnavailable(
            f"{where}: field 'constraints' must hold an integer 'depth' and a list 'control'"
        )
    return Case(
        id=record["id"],
        method=record["method"],
        code=record["code"],
        entry_point=record["entry_point"],
        call=record["call"],
        input=record["input"],
        output=record["output"],
        depth=depth,
        control=tuple(str(name) for name in control),
        license=str(record.get("license", "")),
    )


def check_directions(directions: Sequence[str]) -> None:
    """ValueError unless ``directions`` names forward and/or backward, and nothing else."""
    if not directions or any(name not in DIRECTIONS for name in directions):
        raise ValueError(
            f"--directions: expected forward and/or backward, got "
            f"{','.join(directions) or 'nothing'}"
        )


def case_items(
    cases: Iterable[Case],
    directions: Sequence[str],
    hints: Mapping[str, str] | None = None,
) -> list[Item]:
    """One item per case and direction, case by case (forward before backward)."""
    check_directions(directions)
    items = []
    for case in cases:
        for direction in (name for name in DIRECTIONS if name in directions):
            fields = {"hint": hints[case.id]} if hints and case.id in hints else {}
            items.append(
                Item(
                    id=f"{case.id}/{direction}",
                    benchmark=BENCHMARK,
                    task=DIRECTIONS[direction],
                    program=case.code,
                    entry=case.entry_point,
                    call=case.call,
                    truth=case.output,
                    fields=fields,
                    metadata={
                        "case_id": case.id,
                        "direction": direction,
                        "method": case.method,
                        "depth": case.depth,
                        "control": "+".join(case.control) or "none",
                        "input": case.input,
                        "license": case.license,
                    },
                )
            )
    return items


def trace_hints(pool: Pool, cases: Sequence[Case]) -> dict[str, str]:
    """Our exact trace of each case's call, as compact text (cut beyond ``HINT_CHARS``)."""
    work = [(Program(case.code, case.entry_point), [parse_call(case.call)]) for case in cases]
    hints = {}
    for case, (traced,) in zip(cases, trace_batches(pool, work, TraceOptions()), strict=True):
        if traced.trace is not None:
            hints[case.id] = to_text(traced.trace, source=case.code, max_chars=HINT_CHARS)
    return hints
