"""Reading generations files, with one-line errors naming the file, record and field.

Two formats:

- official (CRUXEval ``generations.json``): one JSON object ``{"sample_0": ["gen", ...], ...}``
  whose strings are already extracted answers (a literal for output prediction, a call ``f(...)``
  for input prediction);
- JSON Lines, one sample per line: ``{"id": "sample_0", "sample": 0, "completion": "..."}`` with
  the raw model text (extracted with the task's rules), or ``"answer"`` instead of
  ``"completion"`` for already extracted text. Samples of an id are numbered 0..n-1.

Every item of the benchmark must have at least one sample (with ``subset``: the items the file
has, at least one); unknown ids are errors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codereasoner.files import read_text_bounded
from codereasoner.tasks import Answer, Extracted, Item

Extractor = Callable[[Item, str], Extracted]  # the item's task kind's extraction


class GenerationsError(ValueError):
    """The generations file cannot be used; the message is one line."""


def check_generations_path(path: Path, *, folder: bool = False) -> None:
    """A one-line GenerationsError unless ``path`` is a readable file (or, with ``folder``, a
    folder): checked before any benchmark data is loaded or downloaded."""
    if path.is_dir():
        if folder:
            return
        raise GenerationsError(f"{path}: is a folder; expected a generations file")
    if not path.exists():
        raise GenerationsError(f"{path}: no such file")
    if not os.access(path, os.R_OK):  # not opened: a pipe (-g <(...)) is read only once
        raise GenerationsError(f"{path}: cannot read (permission denied)")


def read_generations(
    path: Path, items: Sequence[Item], extract: Extractor, *, subset: bool = False
) -> tuple[str, dict[str, list[Extracted]]]:
    """``(format, {item id: answers in sample order})`` for every item, in item order; with
    ``subset``, for the items the file has (``score --subset``)."""
    try:
        text = read_text_bounded(Path(path))
    except FileNotFoundError:
        raise GenerationsError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GenerationsError(f"{path}: cannot read ({exc})") from None
    if not text.strip():
        raise GenerationsError(f"{path}: empty file; expected {{id: [generations]}} or JSON Lines")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":  # else: several documents, i.e. JSON Lines
            raise GenerationsError(
                f"{path}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})"
            ) from None
        data = None
    except RecursionError:
        raise GenerationsError(f"{path}: JSON nested too deeply") from None
    if data is not None and not isinstance(data, dict):
        raise GenerationsError(
            f"{path}: top level is {_kind(data)}; expected an object "
            "{id: [generations]} or JSON Lines"
        )
    if data is not None and not _looks_like_sample(data):
        return "official", _complete(path, _official(path, data), items, subset)
    return "jsonl", _complete(path, _jsonl(path, text, items, extract), items, subset)


def _looks_like_sample(data: dict[str, Any]) -> bool:
    return isinstance(data.get("id"), str) and "sample" in data


def _official(path: Path, data: dict[str, Any]) -> dict[str, list[Extracted]]:
    samples: dict[str, list[Extracted]] = {}
    for key, generations in data.items():
        if not isinstance(generations, list):
            raise GenerationsError(
                f"{path}: record {key!r}: expected a list of generation "
                f"strings, got {_kind(generations)}"
            )
        for index, generation in enumerate(generations):
            if not isinstance(generation, str):
                raise GenerationsError(
                    f"{path}: record {key!r} generation {index}: expected a "
                    f"string, got {_kind(generation)}"
                )
        samples[key] = [Answer(generation) for generation in generations]
    return samples


def _jsonl(
    path: Path, text: str, items: Sequence[Item], extract: Extractor
) -> dict[str, list[Extracted]]:
    by_id = {item.id: item for item in items}
    found: dict[str, dict[int, tuple[int, Extracted]]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise GenerationsError(f"{where}: invalid JSON ({exc})") from None
        if not isinstance(record, dict):
            raise GenerationsError(f"{where}: expected a JSON object, got {_kind(record)}")
        item_id, sample = record.get("id"), record.get("sample")
        if not isinstance(item_id, str):
            raise GenerationsError(f"{where}: field 'id' must be a string, got {_kind(item_id)}")
        if not isinstance(sample, int) or isinstance(sample, bool) or sample < 0:
            raise GenerationsError(
                f"{where}: field 'sample' must be an integer >= 0, got {sample!r}"
            )
        answer = _answer(where, record, by_id.get(item_id), extract)
        earlier = found.setdefault(item_id, {}).get(sample)
        if earlier is not None:
            raise GenerationsError(
                f"{where}: duplicate sample {sample} of {item_id!r} (first on line {earlier[0]})"
            )
        found[item_id][sample] = (number, answer)
    samples = {}
    for item_id, by_index in found.items():
        missing = sorted(set(range(len(by_index))) - set(by_index))
        if missing:
            raise GenerationsError(
                f"{path}: {item_id!r} has samples {_numbers(sorted(by_index))}; "
                f"sample {missing[0]} is missing"
            )
        samples[item_id] = [by_index[index][1] for index in range(len(by_index))]
    return samples


def _answer(where: str, record: dict[str, Any], item: Item | None, extract: Extractor) -> Extracted:
    """The record's answer; an unknown id's is kept unread (the id is refused afterwards)."""
    has_completion, has_answer = "completion" in record, "answer" in record
    if has_completion == has_answer:
        raise GenerationsError(
            f"{where}: give exactly one of 'completion' (raw model text) and "
            "'answer' (extracted text)"
        )
    field = "completion" if has_completion else "answer"
    value = record[field]
    if not isinstance(value, str):
        raise GenerationsError(f"{where}: field {field!r} must be a string, got {_kind(value)}")
    return extract(item, value) if has_completion and item is not None else Answer(value)


def _complete(
    path: Path, samples: dict[str, list[Extracted]], items: Sequence[Item], subset: bool
) -> dict[str, list[Extracted]]:
    known = {item.id for item in items}
    unknown = [key for key in samples if key not in known]
    if unknown:
        example = items[0].id if items else "?"
        raise GenerationsError(
            f"{path}: record {unknown[0]!r}: unknown id for "
            f"{items[0].benchmark if items else 'this benchmark'} "
            f"({len(unknown)} unknown; ids look like {example!r})"
        )
    empty = next((key for key, answers in samples.items() if not answers), None)
    if empty is not None:
        raise GenerationsError(f"{path}: record {empty!r}: no generations; expected at least one")
    if subset and not samples:
        raise GenerationsError(f"{path}: no generations; expected at least one id's")
    missing = [item.id for item in items if item.id not in samples]
    if missing and not subset:
        raise GenerationsError(
            f"{path}: {len(missing)} of {len(items)} ids have no generations "
            f"(first: {missing[0]!r}); every id needs at least one, or score only the ids the "
            "file has with --subset"
        )
    return {item.id: samples[item.id] for item in items if item.id in samples}


def _kind(value: object) -> str:
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


def _numbers(values: list[int]) -> str:
    return ", ".join(map(str, values[:8])) + (", ..." if len(values) > 8 else "")
