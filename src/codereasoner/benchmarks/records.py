"""Reading JSON Lines data files with one-line errors that name the file, line and field."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.files import parse_json


def read_jsonl(path: Path, fields: Mapping[str, type | tuple[type, ...]]) -> list[dict[str, Any]]:
    """Every non-empty line as an object holding at least ``fields`` with those types."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataUnavailable(f"{path}: cannot read ({exc})") from None
    records = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = parse_json(line)
        except ValueError as exc:
            raise DataUnavailable(f"{path}:{number}: invalid JSON ({exc})") from None
        if not isinstance(record, dict):
            raise DataUnavailable(f"{path}:{number}: expected a JSON object per line")
        for name, kind in fields.items():
            if name not in record:
                raise DataUnavailable(f"{path}:{number}: missing field {name!r}")
            if not isinstance(record[name], kind) or (
                isinstance(record[name], bool) and kind is int
            ):
                expected = (
                    kind.__name__
                    if isinstance(kind, type)
                    else " or ".join(k.__name__ for k in kind)
                )
                got = type(record[name]).__name__
                raise DataUnavailable(
                    f"{path}:{number}: field {name!r} must be {expected}, got {got}"
                )
        record["_line"] = number
        records.append(record)
    return records


def unique_ids(path: Path, records: list[dict[str, Any]], key: str) -> None:
    seen: dict[Any, int] = {}
    for record in records:
        value = record[key]
        if value in seen:
            raise DataUnavailable(
                f"{path}:{record['_line']}: duplicate {key} {value!r} (first on line {seen[value]})"
            )
        seen[value] = record["_line"]
