"""The files ``codereasoner synth`` writes, as the readers of its cases see them: a ``cases.jsonl``
record per case (:class:`Case`), checked as it is read. Read by the ``cases`` benchmark family
and by the CoRE-style builder, which builds from a synthesis folder."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codereasoner import values
from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.benchmarks.records import read_jsonl
from codereasoner.execution import CallSyntaxError, parse_call

__all__ = ["CASES_FILE", "Case", "cases_file", "cases_folder", "is_cases_file", "read_cases"]

CASES_FILE = "cases.jsonl"
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
    """The fields of a case record that the items read."""

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


def is_cases_file(path: Path) -> bool:
    """True for a file of cases, ``NAME.jsonl`` under any name (a folder is a synthesis
    folder)."""
    path = Path(path)
    return path.suffix == ".jsonl" and not path.is_dir()


def cases_file(path: Path) -> Path:
    """The cases of ``path``: the file itself, whatever its name, or a synthesis folder's
    ``cases.jsonl``."""
    path = Path(path)
    return path if is_cases_file(path) else path / CASES_FILE


def cases_folder(path: Path) -> Path:
    """The synthesis folder of ``path``: the folder itself, or the one holding the file."""
    return cases_file(path).parent
