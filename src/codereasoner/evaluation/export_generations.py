"""A run store's completions as a generations file that ``codereasoner score`` reads.

Two formats (see :mod:`codereasoner.evaluation.generations`):

- ``jsonl``: one ``{"id", "sample", "completion", "prompt_hash"}`` line per sample, the raw
  model text in item and sample order; scoring it with the run's style, extraction and grading
  reproduces the run's report, and the replay server (``--completions``) can serve it again;
- ``official`` (pass@k benchmarks): CRUXEval's ``{id: [answers]}`` with the answers the run
  extracted (an answer that could not be extracted is written as the empty string).

The file is written to a temporary name beside ``out`` and renamed, so it is complete or absent;
``out`` may not be one of the files the run keeps (its SQLite store with ``-wal``/``-shm``, its
lock, ``results.json``). The ``score`` command that reproduces the run is built from the run's
config (style as the runner resolved it for the benchmark, extraction, grading, data folder; with
``--subset`` when a ``--limit`` run holds fewer items than the benchmark).
"""

from __future__ import annotations

import json
import shlex
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codereasoner import benchmarks
from codereasoner.benchmarks import Benchmark, DataUnavailable
from codereasoner.evaluation.families import family_of
from codereasoner.evaluation.runner import RunError, run_file_at, style_for
from codereasoner.evaluation.store import STORE_NAME, RunRow, RunStore, connect, store_path
from codereasoner.files import OutputRefused, check_output_file, write_atomic

FORMATS = ("jsonl", "official")


class ExportError(ValueError):
    """The export cannot be done; the message is one line."""


@dataclass(frozen=True)
class Exported:
    """What was written, and the ``score`` options that reproduce the run's report."""

    benchmark: str
    path: Path
    format: str
    items: int
    samples: int  # per item
    score_options: dict[str, str | None]  # None: a flag without a value

    def score_command(self) -> str:
        """The ``score`` command line, quoted for a POSIX shell."""
        words = ["codereasoner", "score", "--bench", self.benchmark, "-g", str(self.path)]
        for key, value in self.score_options.items():
            words += [f"--{key}"] if value is None else [f"--{key}", value]
        return shlex.join(words)


def run_benchmarks(run: Path) -> list[str]:
    """The benchmarks a run store holds items of, in the order they were run."""
    path = _existing_store(run)
    try:
        connection = connect(path)
        try:
            rows = connection.execute(
                "SELECT benchmark FROM items GROUP BY benchmark ORDER BY MIN(rowid)"
            ).fetchall()
        finally:
            connection.close()
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise ExportError(f"{path}: not a readable run store ({exc})") from None
    return [row[0] for row in rows]


def export_generations(
    run: Path, benchmark: str | None, out: Path, fmt: str = "jsonl", *, force: bool = False
) -> Exported:
    """Write ``benchmark``'s samples (the only one of the run when None) to ``out``."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    names = run_benchmarks(run)
    name = _chosen(names, benchmark)
    _check_out(out, store_path(run), force=force)
    with RunStore(store_path(run)) as store:
        row = _checked_run(store)
        n = _samples(row.config, name)
        order = _item_order(store.path, name)
        if fmt == "official":
            _check_official(name)
            payload = _official(store, name, order, n)
        else:
            payload = _jsonl(store, row.model, row.config, name, order, n)
    options = _score_options(benchmarks.get(name), row.config, fmt, len(order))
    try:
        write_atomic(out, payload)
    except OSError as exc:
        raise ExportError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    return Exported(name, out, fmt, len(order), n, options)


def write_sample_log(run: Path, out: Path, flag: str = "--out") -> int:
    """Every graded sample of the run, one JSON line each (as lm-eval's ``--log_samples``):
    benchmark, item id, sample, prompt (and system message), completion, finish reason, the
    extracted answer and the verdict (correct, reason, detail), in item and sample order.
    Written atomically; returns the number of lines (errors name ``flag``, the file's option)."""
    _check_out(out, store_path(run), force=True, flag=flag)
    names = run_benchmarks(run)
    lines: list[str] = []
    with RunStore(store_path(run)) as store:
        row = _checked_run(store)
        for name in names:
            n = _samples(row.config, name)
            key = row.config.get("sampling_keys", {}).get(name)
            order = _item_order(store.path, name)
            hashes = {digest for _, digest in order}
            prompts = store.prompts(hashes)
            texts = store.completions(row.model, key, hashes, n) if key else {}
            verdicts = store.scores(name, n)
            for item_id, digest in order:
                prompt, system = prompts.get(digest, ("", None))
                for verdict in verdicts.get(item_id, []):
                    completion = texts.get((digest, verdict.sample))
                    record = {
                        "benchmark": name,
                        "id": item_id,
                        "sample": verdict.sample,
                        "prompt": prompt,
                        "system": system,
                        "completion": None if completion is None else completion.text,
                        "finish_reason": None if completion is None else completion.finish_reason,
                        "answer": verdict.answer,
                        "correct": verdict.correct,
                        "reason": verdict.reason.value,
                        "detail": verdict.detail,
                    }
                    lines.append(json.dumps(record, ensure_ascii=False))
    try:
        write_atomic(out, "".join(line + "\n" for line in lines))
    except OSError as exc:
        raise ExportError(f"{flag} {out}: cannot write ({exc.strerror or exc})") from None
    return len(lines)


def _check_out(out: Path, store: Path, *, force: bool, flag: str = "--out") -> None:
    """``out`` must be a file name whose folder is (or can be made) a folder, and none of the
    files the run keeps, however it is spelt (symlinks, ``..``, hard links)."""
    if out.is_dir():
        raise ExportError(f"{flag} {out}: is a folder; expected a file name")
    for parent in out.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise ExportError(f"{flag} {out}: {parent} is not a folder")
            break
    kept = run_file_at(out, store)
    if kept is not None:
        raise ExportError(
            f"{flag} {out}: that is the run's own {kept.name}; give another file name"
        )
    try:
        check_output_file(out, flag, force=force)
    except OutputRefused as exc:
        raise ExportError(str(exc)) from None


# the run config's fields an export reads, and the types it may hold them in (a store is a file
# anyone can craft: a field of another type is one error line)
_CONFIG_FIELDS: dict[str, tuple[type, ...]] = {
    "n": (int,),
    "reported_n": (dict,),
    "sampling_keys": (dict,),
    "style": (str, type(None)),
    "extraction": (str, type(None)),
    "grading": (str, type(None)),
    "data_dir": (str, type(None)),
    "limit": (int, type(None)),
    "timeout": (int, float, type(None)),
}


def _checked_run(store: RunStore) -> RunRow:
    """The store's run row, its config of the shape exports read; ExportError naming the
    first field that is not."""
    try:
        row = store.run()
    except ValueError as exc:  # the store's own one-line account of what it holds
        raise ExportError(str(exc)) from None
    if row is None:
        raise ExportError(f"{store.path}: no run recorded in this store")
    config = row.config
    if not isinstance(config, dict):
        raise ExportError(f"{store.path}: run.config: expected a JSON object")
    for field, kinds in _CONFIG_FIELDS.items():
        value = config.get(field)
        if field in config and (not isinstance(value, kinds) or isinstance(value, bool)):
            names = " or ".join("null" if kind is type(None) else kind.__name__ for kind in kinds)
            raise ExportError(f"{store.path}: run.config field {field!r}: expected {names}")
    for field, kind in (("reported_n", int), ("sampling_keys", str)):
        entries = config.get(field, {})
        if not all(isinstance(v, kind) and not isinstance(v, bool) for v in entries.values()):
            raise ExportError(
                f"{store.path}: run.config field {field!r}: expected {kind.__name__} values"
            )
    return row


def _samples(config: dict[str, Any], name: str) -> int:
    n = config.get("reported_n", {}).get(name, config.get("n", 1))
    return max(1, min(int(n), 1_000_000))


def _existing_store(run: Path) -> Path:
    path = store_path(run)
    if not path.is_file():
        raise ExportError(f"{run}: no run store here (expected {STORE_NAME})")
    return path


def _chosen(names: list[str], benchmark: str | None) -> str:
    if not names:
        raise ExportError("the run holds no benchmark items yet; nothing to export")
    if benchmark is None:
        if len(names) > 1:
            raise ExportError(
                f"--bench: the run holds several benchmarks; give one of {', '.join(names)}"
            )
        return names[0]
    if benchmark not in names:
        raise ExportError(f"--bench {benchmark!r}: not in this run (it holds {', '.join(names)})")
    return benchmark


def _item_order(path: Path, benchmark: str) -> list[tuple[str, str]]:
    """``(item id, prompt hash)`` in the order the run recorded its items."""
    connection = connect(path)
    try:
        return connection.execute(
            "SELECT item_id, prompt_hash FROM items WHERE benchmark=? ORDER BY rowid", (benchmark,)
        ).fetchall()
    finally:
        connection.close()


def _jsonl(
    store: RunStore,
    model: str,
    config: dict[str, Any],
    name: str,
    order: list[tuple[str, str]],
    n: int,
) -> str:
    key = config.get("sampling_keys", {}).get(name)
    if key is None:
        raise ExportError(f"{name}: the run recorded no completions for it; resume the run first")
    texts = store.completions(model, key, {digest for _, digest in order}, n)
    lines = []
    for item_id, digest in order:
        for sample in range(n):
            completion = texts.get((digest, sample))
            if completion is None:
                raise ExportError(_incomplete(name, item_id, sample))
            record = {
                "id": item_id,
                "sample": sample,
                "completion": completion.text,
                "prompt_hash": digest,  # ignored by score; the replay server keys on it
            }
            lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def _check_official(name: str) -> None:
    family = family_of(benchmarks.get(name))
    if not family.pass_at_k:
        raise ExportError(
            f"--format official: {name} reports {family.name} metrics; "
            "the official {id: [answers]} format is for pass@k benchmarks (use jsonl)"
        )


def _official(store: RunStore, name: str, order: list[tuple[str, str]], n: int) -> str:
    verdicts = store.scores(name, n)
    answers: dict[str, list[str]] = {}
    for item_id, _ in order:
        graded = verdicts.get(item_id, [])
        if len(graded) != n:
            raise ExportError(_incomplete(name, item_id, len(graded)))
        answers[item_id] = [verdict.answer or "" for verdict in graded]
    return json.dumps(answers, ensure_ascii=False, indent=1) + "\n"


def _incomplete(name: str, item_id: str, sample: int) -> str:
    return (
        f"{name}: item {item_id!r} sample {sample} is missing from the run; "
        "resume the run (the same eval command) before exporting"
    )


def _score_options(
    bench: Benchmark, config: dict[str, Any], fmt: str, items: int
) -> dict[str, str | None]:
    """The ``score`` options under which the run grades ``bench``, from the run's config (so a
    benchmark not graded yet gets them too): the style the runner used for it (the run's
    ``--style`` where the benchmark supports it, else direct) and the extraction (the run's, or
    the benchmark's default) for completions; the grading where the benchmark's metrics use
    it; the run's data folder; ``--subset`` when the run holds only part of the benchmark.
    The prompt mode (``--chat``/``--raw``) changes prompts, not how completions are read, so
    ``score`` has no option for it."""
    options: dict[str, str | None] = {}
    if fmt == "jsonl":  # the official format holds answers already extracted
        try:
            options["style"] = style_for(bench, str(config.get("style") or "direct"))
            options["extraction"] = bench.choose_extraction(config.get("extraction")).value
        except (RunError, ValueError) as exc:
            raise ExportError(
                f"the run's config no longer applies to {bench.name}: {exc}"
            ) from None
    if family_of(bench).uses_grading:
        options["grading"] = str(config.get("grading") or "official")
    data_dir = config.get("data_dir")
    if data_dir:
        options["data-dir"] = str(data_dir)
    if config.get("timeout") is not None:  # the run's sandbox limit: it can change verdicts
        options["timeout"] = f"{config['timeout']:g}"
    if config.get("limit") is not None and _is_part(bench, data_dir, items):
        options["subset"] = None
    return options


def _is_part(bench: Benchmark, data_dir: str | None, items: int) -> bool:
    """Whether ``items`` is fewer than the benchmark has where ``score`` will load it from
    (True when that cannot be told: the data is not there without a download)."""
    try:
        total = len(bench.load(None if data_dir is None else Path(data_dir), download=False))
    except (DataUnavailable, OSError):
        return True
    return items < total
