"""Training-data exports of a distillation folder's ``distilled.jsonl``.

One record per case x direction (and per probe of a case, direction ``probe``) comes in (see
:class:`DistilledRecord`); one of these formats goes out:

- ``trl-sft``: JSONL, one ``{"prompt": [user message], "completion": [assistant message]}`` row
  per verified record (TRL's conversational prompt-completion format: plain TRL trains on the
  completion only, with any chat template);
- ``trl-grpo``: JSONL, a chat-list ``prompt`` plus the columns the reward reads
  (``direction``, ``code``, ``entry_point``, ``call``, ``target``, ``case_id``, and ``probes``
  for the optional process term), every record;
- ``llamafactory-alpaca`` / ``llamafactory-sharegpt``: a folder (LLaMA-Factory's
  ``dataset_dir``) holding the data file and its ``dataset_info.json``, verified records;
- ``verl``: parquet in verl's schema (``data_source``, ``prompt``, ``ability``, ``reward_model``,
  ``extra_info``; ``extra_info.probes`` for the process term), every record.

``target`` is the case's output for forward and backward rows, the probe's exact truth for
probe rows. ``probes`` is the JSON text of the case's probed values
(:mod:`codereasoner.training.process`; ``[]`` for records distilled without them).

Outputs are deterministic (same input, same bytes) and written atomically: a temporary file (or
folder) beside the output, fsynced, then renamed into place, so an interrupted export leaves no
half-written output (at most a hidden ``.NAME.*.tmp`` beside it). pyarrow is imported only by the
``verl`` format, when it writes.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codereasoner.families.cases.benchmark import DIRECTIONS as TASKS
from codereasoner.families.cases.benchmark import PROBE
from codereasoner.files import (
    OutputRefused,
    check_output_file,
    fsync_path,
    parse_json,
    replacing,
    umask,
)
from codereasoner.training.process import ProbedValue, probes_column

DISTILLED = "distilled.jsonl"
DIRECTIONS = tuple(TASKS)  # forward, backward, probe
# verl picks the reward function by this column (``data.reward_fn_key=data_source``).
VERL_DATA_SOURCE = "codereasoner"
INSTALL_TRAIN = "pip install 'codereasoner[train]'"

# LLaMA-Factory: the dataset's name in dataset_info.json and its data file inside the folder.
LLAMAFACTORY_NAMES = {
    "llamafactory-alpaca": "codereasoner_alpaca",
    "llamafactory-sharegpt": "codereasoner_sharegpt",
}
DATASET_INFO = "dataset_info.json"

GRPO_COLUMNS = (
    "prompt",
    "direction",
    "code",
    "entry_point",
    "call",
    "target",
    "case_id",
    "probes",
)
VERL_COLUMNS = ("data_source", "prompt", "ability", "reward_model", "extra_info")
VERL_EXTRA_INFO = (
    "code",
    "entry_point",
    "direction",
    "target",
    "call",
    "case_id",
    "split",
    "index",
    "probes",
)


class ExportError(Exception):
    """A problem with the input, the output path or a missing library; the text is one line."""


@dataclass(frozen=True)
class DistilledRecord:
    """The fields of one ``distilled.jsonl`` line that the exports use."""

    id: str
    case_id: str
    direction: str
    code: str
    entry_point: str
    call: str
    output: str
    prompt: str
    verified: bool
    completion: str | None  # kept.completion; None when not verified
    truth: str | None = None  # direction probe: the probe's exact truth
    question: str | None = None  # direction probe: the question asked
    probes: str = "[]"  # the process column: the case's probed values as JSON text
    method: str = ""  # the catalog method the case exercises ("" when the record has none)

    @property
    def target(self) -> str:
        """What an RL answer is checked against: the probe's truth, else the case's output."""
        return self.output if self.truth is None else self.truth


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    format: str
    out: Path
    rows: dict[str, int]  # per direction asked for, in DIRECTIONS order
    unverified_skipped: int
    other_directions: int  # records left out by the direction filter
    files: tuple[Path, ...] = field(default=())
    selected: str | None = None  # what a RecordFilter left out, as a clause of the line
    methods: tuple[str, ...] = ()  # every catalog method of the distillation, read or not

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def line(self) -> str:
        """The one-line summary the command prints."""
        per = ", ".join(f"{direction} {n}" for direction, n in self.rows.items() if n)
        text = f"{self.format}: wrote {self.total} rows ({per}) to {self.out}"
        if self.format in VERIFIED_ONLY:
            text += f"; skipped {self.unverified_skipped} unverified"
        else:
            text += "; unverified kept (RL needs prompts, not chains)"
        if self.other_directions:
            text += f"; {self.other_directions} records of other directions left out"
        if self.selected:
            text += f"; {self.selected}"
        return text


# --- reading ---------------------------------------------------------------------------------

_STRING_FIELDS = ("id", "case_id", "code", "entry_point", "call", "output", "prompt")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _got(value: object) -> str:
    shown = json.dumps(value, ensure_ascii=True, default=str)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{_json_type(value)} {shown}" if value is not None else "null"


def _string(obj: dict[str, Any], name: str, where: str) -> str:
    if name not in obj:
        raise ExportError(f"{where}: field '{name}' missing (expected a string)")
    value = obj[name]
    if not isinstance(value, str):
        raise ExportError(f"{where}: field '{name}' expected a string, got {_got(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ExportError(
            f"{where}: field '{name}' expected valid Unicode, got a lone surrogate"
        ) from None
    return value


def parse_record(obj: object, where: str) -> DistilledRecord:
    """One parsed JSON line as a record; ``where`` (``file:line``) prefixes every error."""
    if not isinstance(obj, dict):
        raise ExportError(f"{where}: expected a JSON object, got {_got(obj)}")
    strings = {name: _string(obj, name, where) for name in _STRING_FIELDS}
    if not strings["id"]:
        raise ExportError(f"{where}: field 'id' expected a non-empty string, got \"\"")
    direction = obj.get("direction")
    if direction not in DIRECTIONS:
        got = _got(direction) if "direction" in obj else "nothing (missing)"
        expected = ", ".join(f'"{name}"' for name in DIRECTIONS)
        raise ExportError(f"{where}: field 'direction' expected one of {expected}, got {got}")
    asked = ("question", "truth") if direction == PROBE else ()
    probe = {name: _string(obj, name, where) for name in asked}
    verified = obj.get("verified")
    if not isinstance(verified, bool):
        got = _got(verified) if "verified" in obj else "nothing (missing)"
        raise ExportError(f"{where}: field 'verified' expected true or false, got {got}")
    completion: str | None = None
    if verified:
        kept = obj.get("kept")
        if not isinstance(kept, dict):
            got = _got(kept) if "kept" in obj else "nothing (missing)"
            raise ExportError(
                f"{where}: field 'kept' expected an object (the record is verified), got {got}"
            )
        value = kept.get("completion")
        if not isinstance(value, str) or not value.strip():
            got = _got(value) if "completion" in kept else "nothing (missing)"
            raise ExportError(
                f"{where}: field 'kept.completion' expected a non-empty string, got {got}"
            )
        completion = _string(kept, "completion", where)
    return DistilledRecord(
        id=strings["id"],
        case_id=strings["case_id"],
        direction=str(direction),
        code=strings["code"],
        entry_point=strings["entry_point"],
        call=strings["call"],
        output=strings["output"],
        prompt=strings["prompt"],
        verified=verified,
        completion=completion,
        truth=probe.get("truth"),
        question=probe.get("question"),
        probes=_probes(obj, where),
        method=_method(obj, where),
    )


def _method(obj: dict[str, Any], where: str) -> str:
    """The record's catalog method; "" for a record written without one."""
    return _string(obj, "method", where) if "method" in obj else ""


def _probes(obj: dict[str, Any], where: str) -> str:
    """The record's probed values as the column's JSON text (``[]`` when it has none)."""
    found = obj.get("probes", [])
    if not isinstance(found, list) or not all(isinstance(entry, dict) for entry in found):
        raise ExportError(
            f"{where}: field 'probes' expected an array of objects, got {_got(found)}"
        )
    try:
        entries = [ProbedValue.from_dict(entry) for entry in found]
    except ValueError as exc:
        raise ExportError(f"{where}: field 'probes': {exc}") from None
    return probes_column(entries)


def locate_distilled(source: Path) -> Path:
    """``source/distilled.jsonl`` (``source`` may also be the file itself), or ExportError."""
    if not source.exists():
        raise ExportError(f"--from {source}: no such folder")
    path = source if source.is_file() else source / DISTILLED
    if not path.is_file():
        raise ExportError(
            f"--from {source}: no {DISTILLED} in it (expected the distillation folder)"
        )
    return path


def read_distilled(source: Path) -> list[DistilledRecord]:
    """The records of ``source/distilled.jsonl`` (``source`` may also be the file itself), in file
    order. Blank lines are skipped; anything else malformed raises :class:`ExportError`."""
    path = locate_distilled(source)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    records: list[DistilledRecord] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        where = f"{path}:{number}"
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ExportError(f"{where}: expected UTF-8 text") from None
        try:
            obj = parse_json(text)
        except json.JSONDecodeError as exc:
            raise ExportError(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        record = parse_record(obj, where)
        if record.id in seen:
            raise ExportError(
                f"{where}: field 'id' expected a unique id, got {record.id!r} "
                f"(already on line {seen[record.id]})"
            )
        seen[record.id] = number
        records.append(record)
    if not records:
        raise ExportError(f"{path}: no records (the file is empty)")
    return records


def parse_directions(text: str) -> tuple[str, ...]:
    """``"forward,backward"`` as a tuple in DIRECTIONS order; raises on unknown or no names."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in DIRECTIONS]
    if unknown or not names:
        raise ExportError(
            f"--directions {text!r}: expected a comma-separated list of {', '.join(DIRECTIONS)}"
        )
    return tuple(direction for direction in DIRECTIONS if direction in names)


# --- rows ------------------------------------------------------------------------------------


def _user(record: DistilledRecord) -> list[dict[str, str]]:
    return [{"role": "user", "content": record.prompt}]


def _sft_row(record: DistilledRecord, index: int, split: str) -> dict[str, Any]:
    # Not one `messages` list: TRL trains every token of those unless told assistant_only_loss.
    return {
        "prompt": _user(record),
        "completion": [{"role": "assistant", "content": record.completion}],
    }


def _grpo_row(record: DistilledRecord, index: int, split: str) -> dict[str, Any]:
    return {
        "prompt": _user(record),
        "direction": record.direction,
        "code": record.code,
        "entry_point": record.entry_point,
        "call": record.call,
        "target": record.target,
        "case_id": record.case_id,
        "probes": record.probes,
    }


def _alpaca_row(record: DistilledRecord, index: int, split: str) -> dict[str, Any]:
    return {"instruction": record.prompt, "input": "", "output": record.completion}


def _sharegpt_row(record: DistilledRecord, index: int, split: str) -> dict[str, Any]:
    return {
        "conversations": [
            {"from": "human", "value": record.prompt},
            {"from": "gpt", "value": record.completion},
        ]
    }


def _verl_row(record: DistilledRecord, index: int, split: str) -> dict[str, Any]:
    return {
        "data_source": VERL_DATA_SOURCE,
        "prompt": _user(record),
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": record.target},
        "extra_info": {
            "code": record.code,
            "entry_point": record.entry_point,
            "direction": record.direction,
            "target": record.target,
            "call": record.call,
            "case_id": record.case_id,
            "split": split,
            "index": index,
            "probes": record.probes,
        },
    }


RowBuilder = Callable[[DistilledRecord, int, str], dict[str, Any]]
# Chooses among the records of the exported directions: those kept, in order, and a clause on
# what it left out (e.g. training.pass_rate.PassRateFilter).
RecordFilter = Callable[[Sequence[DistilledRecord]], tuple[list[DistilledRecord], str]]
BUILDERS: dict[str, RowBuilder] = {
    "trl-sft": _sft_row,
    "trl-grpo": _grpo_row,
    "llamafactory-alpaca": _alpaca_row,
    "llamafactory-sharegpt": _sharegpt_row,
    "verl": _verl_row,
}
FORMATS = tuple(BUILDERS)
VERIFIED_ONLY = frozenset({"trl-sft", "llamafactory-alpaca", "llamafactory-sharegpt"})


def dataset_info(fmt: str) -> dict[str, Any]:
    """The ``dataset_info.json`` of a LLaMA-Factory export: one entry naming the data file."""
    name = LLAMAFACTORY_NAMES[fmt]
    entry: dict[str, Any]
    if fmt == "llamafactory-alpaca":
        entry = {
            "file_name": name + ".jsonl",
            "formatting": "alpaca",
            "columns": {"prompt": "instruction", "query": "input", "response": "output"},
        }
    else:
        entry = {
            "file_name": name + ".jsonl",
            "formatting": "sharegpt",
            "columns": {"messages": "conversations"},
            "tags": {
                "role_tag": "from",
                "content_tag": "value",
                "user_tag": "human",
                "assistant_tag": "gpt",
            },
        }
    return {name: entry}


def build_rows(
    records: Sequence[DistilledRecord],
    fmt: str,
    directions: Iterable[str] = DIRECTIONS,
    split: str = "train",
) -> tuple[list[dict[str, Any]], dict[str, int], int, int]:
    """The rows of ``fmt`` in record order; also the rows per direction, the unverified records
    skipped and the records of other directions left out."""
    if fmt not in BUILDERS:
        raise ExportError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    wanted = set(directions)
    builder = BUILDERS[fmt]
    rows: list[dict[str, Any]] = []
    counts = {direction: 0 for direction in DIRECTIONS if direction in wanted}
    skipped = other = 0
    for record in records:
        if record.direction not in wanted:
            other += 1
            continue
        if fmt in VERIFIED_ONLY and not record.verified:
            skipped += 1
            continue
        rows.append(builder(record, len(rows), split))
        counts[record.direction] += 1
    return rows, counts, skipped, other


# --- writing ---------------------------------------------------------------------------------


def _jsonl(rows: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(
        (json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        for row in rows
    )


def _temporary_folder(out: Path) -> Path:
    name = tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.chmod(name, 0o777 & ~umask())
    return Path(name)


def _write_bytes(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` (verl's schema) as parquet with a fixed schema, so that the bytes depend on
    the rows only (and on the pyarrow version, which is named in the file's metadata)."""
    pa = _import_pyarrow()
    pq = importlib.import_module("pyarrow.parquet")
    string = pa.string()
    schema = pa.schema(
        [
            ("data_source", string),
            ("prompt", pa.list_(pa.struct([("role", string), ("content", string)]))),
            ("ability", string),
            ("reward_model", pa.struct([("style", string), ("ground_truth", string)])),
            (
                "extra_info",
                pa.struct(
                    [(name, pa.int64() if name == "index" else string) for name in VERL_EXTRA_INFO]
                ),
            ),
        ]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, str(path))
    fsync_path(path)


def _import_pyarrow() -> Any:
    try:
        return importlib.import_module("pyarrow")
    except ImportError:
        raise ExportError(
            f"the verl format writes parquet and needs pyarrow: {INSTALL_TRAIN}"
        ) from None


def check_output(out: Path, fmt: str, force: bool, source: Path | None = None) -> None:
    """Refuse an existing output unless ``force``; refuse an output of the wrong kind always,
    and a file output that would replace what the export reads (``source``) or a database."""
    folder = fmt in LLAMAFACTORY_NAMES
    if not folder and not out.is_dir():
        try:
            check_output_file(out, "--out", protected=[source] if source else (), force=True)
        except OutputRefused as exc:
            raise ExportError(str(exc)) from None
    if out.is_symlink() or out.exists():
        if folder and not out.is_dir():
            raise ExportError(f"--out {out}: is a file; {fmt} writes a folder")
        if not folder and out.is_dir():
            raise ExportError(f"--out {out}: is a folder; {fmt} writes a file")
        if not force:
            raise ExportError(f"--out {out}: already exists; pass --force to replace it")
        if folder:
            ours = {DATASET_INFO, LLAMAFACTORY_NAMES[fmt] + ".jsonl"}
            others = sorted(entry.name for entry in out.iterdir() if entry.name not in ours)
            if others:
                raise ExportError(
                    f"--out {out}: holds other files ({', '.join(others[:3])}); "
                    "--force replaces only a folder this export wrote"
                )


def _replace_folder(built: Path, out: Path) -> None:
    if not out.exists():
        os.rename(built, out)
        return
    old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".old"))
    os.rename(out, old / out.name)
    os.rename(built, out)
    shutil.rmtree(old, ignore_errors=True)


def write_export(out: Path, fmt: str, rows: list[dict[str, Any]]) -> tuple[Path, ...]:
    """Write ``rows`` in ``fmt`` at ``out`` atomically; returns the files written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt in LLAMAFACTORY_NAMES:
        info = dataset_info(fmt)
        data_name = next(iter(info.values()))["file_name"]
        built = _temporary_folder(out)
        try:
            _write_bytes(built / data_name, _jsonl(rows))
            _write_bytes(built / DATASET_INFO, (json.dumps(info, indent=2) + "\n").encode())
            fsync_path(built)
            _replace_folder(built, out)
        except BaseException:
            shutil.rmtree(built, ignore_errors=True)
            raise
        files: tuple[Path, ...] = (out / data_name, out / DATASET_INFO)
    else:
        if fmt == "verl":
            _import_pyarrow()  # the one-line error before any temporary file exists
        with replacing(out) as temporary:
            if fmt == "verl":
                _write_parquet(temporary, rows)
            else:
                _write_bytes(temporary, _jsonl(rows))
        files = (out,)
    fsync_path(out.parent)
    return files


def export(
    source: Path,
    fmt: str,
    out: Path,
    directions: Iterable[str] = DIRECTIONS,
    force: bool = False,
    split: str = "train",
    select: RecordFilter | None = None,
) -> ExportSummary:
    """Read ``source/distilled.jsonl`` and write ``fmt`` at ``out``; see the module docstring.
    ``select`` chooses among the records of ``directions`` (the others are not exported)."""
    if fmt not in BUILDERS:
        raise ExportError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    wanted = tuple(directions)
    if fmt == "verl":
        _import_pyarrow()
    check_output(out, fmt, force, locate_distilled(source))
    records = read_distilled(source)
    methods = tuple(sorted({record.method for record in records if record.method}))
    selected = None
    if select is not None:
        chosen, selected = select([record for record in records if record.direction in wanted])
        kept = {record.id for record in chosen}
        records = [r for r in records if r.direction not in wanted or r.id in kept]
    rows, counts, skipped, other = build_rows(records, fmt, wanted, split)
    if not rows:
        which = "verified records" if fmt in VERIFIED_ONLY else "records"
        reason = f"; {selected}" if selected else ""
        raise ExportError(
            f"{source}: nothing to export (no {which} of direction {', '.join(wanted)}{reason})"
        )
    try:
        files = write_export(out, fmt, rows)
    except OSError as exc:
        raise ExportError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    return ExportSummary(fmt, out, counts, skipped, other, files, selected, methods)
