"""The run store: one SQLite file per evaluation run (``RUN_DIR/run.sqlite``).

Every request, completion and score is a row, written as soon as it exists, so a run killed at
any point (``kill -9`` included) resumes without redoing or duplicating work. Primary keys make
every write idempotent.

Tables
- ``run``: one row: ``id``, ``model`` (the run's model identity:
  :func:`codereasoner.models.base.model_identity`, the backend's model id without a server URL,
  e.g. ``openai:NAME``; stores written before held the whole id), ``created``, ``updated``
  (unix seconds), ``config`` (JSON: benchmarks, n, sampling, style, extraction, grading, ...),
  ``status`` (``running``, ``done``, ``failed``), ``message`` (the failure, one line).
- ``prompts``: ``hash`` (see :func:`codereasoner.models.base.prompt_hash`), ``text``, ``chat``,
  ``system``.
- ``completions``: the completion cache, keyed by (``model`` (the identity, as in ``run``),
  ``prompt_hash``, ``sampling``, ``sample``); ``text``, ``finish_reason``, ``prompt_tokens``, ``completion_tokens``,
  ``latency_s``, ``created``.
- ``items``: (``benchmark``, ``item_id``) -> ``task``, ``prompt_hash``, ``truth`` (gold text),
  ``category`` (the benchmark's breakdown key's value), ``metadata`` (JSON).
- ``scores``: (``benchmark``, ``item_id``, ``sample``) -> ``answer`` (extracted text or NULL),
  ``correct`` (0/1), ``reason`` (a :class:`codereasoner.tasks.Reason` value), ``detail``,
  ``skipped`` (0/1).
- ``results``: ``benchmark`` -> ``report`` (JSON: the same report ``codereasoner score --json``
  prints for that benchmark), ``created``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codereasoner.files import parse_json
from codereasoner.models.base import Completion, model_identity
from codereasoner.tasks import Reason, Score

SCHEMA_VERSION = 1
STORE_NAME = "run.sqlite"
STATUSES = ("running", "done", "failed")
TABLES = ("run", "prompts", "completions", "items", "scores", "results")

SCHEMA = """
CREATE TABLE IF NOT EXISTS run (
    id TEXT PRIMARY KEY, model TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
    config TEXT NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS prompts (
    hash TEXT PRIMARY KEY, text TEXT NOT NULL, chat INTEGER NOT NULL, system TEXT
);
CREATE TABLE IF NOT EXISTS completions (
    model TEXT NOT NULL, prompt_hash TEXT NOT NULL, sampling TEXT NOT NULL,
    sample INTEGER NOT NULL, text TEXT NOT NULL, finish_reason TEXT NOT NULL,
    prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (model, prompt_hash, sampling, sample)
);
CREATE TABLE IF NOT EXISTS items (
    benchmark TEXT NOT NULL, item_id TEXT NOT NULL, task TEXT NOT NULL,
    prompt_hash TEXT NOT NULL, truth TEXT NOT NULL, category TEXT NOT NULL,
    metadata TEXT NOT NULL,
    PRIMARY KEY (benchmark, item_id)
);
CREATE TABLE IF NOT EXISTS scores (
    benchmark TEXT NOT NULL, item_id TEXT NOT NULL, sample INTEGER NOT NULL,
    answer TEXT, correct INTEGER NOT NULL, reason TEXT NOT NULL, detail TEXT NOT NULL,
    skipped INTEGER NOT NULL,
    PRIMARY KEY (benchmark, item_id, sample)
);
CREATE TABLE IF NOT EXISTS results (
    benchmark TEXT PRIMARY KEY, report TEXT NOT NULL, created REAL NOT NULL
);
"""


def store_path(run: Path) -> Path:
    """``run`` may be the run directory or the SQLite file itself."""
    run = Path(run)
    return run / STORE_NAME if run.is_dir() or run.suffix != ".sqlite" else run


STORE_TABLES = ("run", "prompts", "completions", "items", "scores", "results")
READ_BUDGET_S = 300.0  # a read-only reader's whole time on one store


def connect(
    path: Path, *, create: bool = False, threads: bool = False, read_only: bool = False
) -> sqlite3.Connection:
    """Open (and with ``create`` initialise) a run store; WAL, so readers never block writers.

    ``threads``: the connection may be used from other threads (callers serialise its use).
    ``read_only``: a store someone else wrote, opened without changing a byte of it (no
    journal mode set); its tables must be tables (a view could hold an endless query), and its
    queries stop after :data:`READ_BUDGET_S` seconds.
    """
    path = Path(path)
    if not create and not path.exists():
        raise FileNotFoundError(f"{path}: no run store here (expected {STORE_NAME})")
    if read_only:
        return _read_only(path)
    if path.is_symlink():  # a link planted in an output folder is never written through
        raise ValueError(f"{path}: a symbolic link; refusing to write through it")
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, check_same_thread=not threads)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    if create:
        connection.executescript(SCHEMA)
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        connection.commit()
    try:
        _check_version(connection, path)
    except ValueError:
        connection.close()
        raise
    return connection


def _check_version(connection: sqlite3.Connection, path: Path) -> None:
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION:
        raise ValueError(f"{path}: run store schema version {version}, expected {SCHEMA_VERSION}")


def _read_only(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    deadline = time.monotonic() + READ_BUDGET_S
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        kinds = dict(
            connection.execute(
                "SELECT name, type FROM sqlite_master WHERE name IN "
                f"({', '.join('?' * len(STORE_TABLES))})",
                STORE_TABLES,
            ).fetchall()
        )
        not_tables = sorted(name for name, kind in kinds.items() if kind != "table")
        if not_tables:
            raise ValueError(
                f"{path}: not a run store ({not_tables[0]} is a {kinds[not_tables[0]]})"
            )
        _check_version(connection, path)
    except BaseException:
        connection.close()
        raise
    return connection


# ---------------------------------------------------------------------------------------
# the typed API the runner uses; every write is idempotent under the primary keys
# ---------------------------------------------------------------------------------------

RUN_ID = "run"


class StoreCorrupt(ValueError):
    """A run store whose content is not what the runner writes (one line, naming the store)."""


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0


@dataclass(frozen=True)
class RunRow:
    model: str
    config: dict[str, Any]
    status: str
    message: str
    created: float
    updated: float


@dataclass(frozen=True)
class ItemRow:
    item_id: str
    task: str
    prompt_hash: str
    truth: str
    category: str
    metadata: str  # JSON


@dataclass(frozen=True)
class StoredCompletion:
    prompt_hash: str
    sample: int
    text: str
    finish_reason: str


class RunStore:
    """One run store, safe to share between threads (a lock serialises the connection).

    Writes commit at once (WAL, ``synchronous=NORMAL``): a ``kill -9`` loses at most the
    write in progress, and SQLite rolls that back.
    """

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = store_path(path)
        self.connection = connect(self.path, create=create, threads=True)
        self.lock = threading.Lock()

    @classmethod
    def exists(cls, run: Path) -> bool:
        return store_path(run).exists()

    def close(self) -> None:
        with self.lock:
            self.connection.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.lock, self.connection:
            self.connection.executemany(sql, rows)

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.connection.execute(sql, args).fetchall()

    # -- the run row ---------------------------------------------------------------------

    def run(self) -> RunRow | None:
        rows = self._read("SELECT model, config, status, message, created, updated FROM run")
        if not rows:
            return None
        model, config, status, message, created, updated = rows[0]
        return RunRow(
            str(model), self._object(config, "run.config"), str(status), str(message),
            _number(created), _number(updated),
        )  # fmt: skip

    def _object(self, text: object, what: str) -> dict[str, Any]:
        """A stored JSON object; :class:`StoreCorrupt` naming ``what`` when it is none (a store
        is a file anyone can change)."""
        try:
            found = parse_json(text) if isinstance(text, str | bytes) else None
        except ValueError:
            found = None
        if not isinstance(found, dict):
            raise StoreCorrupt(f"{self.path}: {what} is not a JSON object (changed by hand?)")
        return found

    def start_run(self, model: str, config: Mapping[str, Any]) -> None:
        """Create the run row, or update its config and mark it running again. ``model``: a
        model id or identity; the row and the cached completions keep its identity (completions
        an older store cached under the whole id, server URL included, are re-keyed)."""
        model = model_identity(model)
        self._rekey_completions(model)
        now = time.time()
        text = json.dumps(config, sort_keys=True)
        with self.lock, self.connection:
            self.connection.execute(
                "INSERT INTO run (id, model, created, updated, config, status, message) "
                "VALUES (?, ?, ?, ?, ?, 'running', '') ON CONFLICT(id) DO UPDATE SET "
                "model=excluded.model, updated=excluded.updated, config=excluded.config, "
                "status='running', message=''",
                (RUN_ID, model, now, now, text),
            )

    def _rekey_completions(self, identity: str) -> None:
        """Completions stored under a model id whose identity is ``identity`` (an older store's
        ``openai:NAME@URL``) re-keyed to the identity, in one transaction."""
        stored = [row[0] for row in self._read("SELECT DISTINCT model FROM completions")]
        old = [m for m in stored if m != identity and model_identity(m) == identity]
        if not old:
            return
        with self.lock, self.connection:
            for model in old:
                self.connection.execute(
                    "UPDATE OR IGNORE completions SET model=? WHERE model=?", (identity, model)
                )
                self.connection.execute("DELETE FROM completions WHERE model=?", (model,))

    def update_config(self, config: Mapping[str, Any]) -> None:
        self._write(
            "UPDATE run SET config=?, updated=? WHERE id=?",
            [(json.dumps(config, sort_keys=True), time.time(), RUN_ID)],
        )

    def set_status(self, status: str, message: str = "") -> None:
        """``running``, ``done`` or ``failed`` (with the failure's one-line message)."""
        if status not in STATUSES:
            raise ValueError(f"run status {status!r}; expected one of {', '.join(STATUSES)}")
        self._write(
            "UPDATE run SET status=?, message=?, updated=? WHERE id=?",
            [(status, message, time.time(), RUN_ID)],
        )

    # -- prompts and completions -----------------------------------------------------------

    def record_prompts(self, rows: Iterable[tuple[str, str, bool, str | None]]) -> None:
        """``(hash, text, chat, system)`` rows; existing hashes are kept."""
        self._write(
            "INSERT OR IGNORE INTO prompts (hash, text, chat, system) VALUES (?, ?, ?, ?)",
            ((h, text, int(chat), system) for h, text, chat, system in rows),
        )

    def record_completions(
        self, model: str, prompt_hash: str, sampling: str, completions: Sequence[Completion]
    ) -> None:
        """One request's completions, in one transaction (first write wins on a re-run);
        ``model``: a model id or identity, stored as the identity."""
        model = model_identity(model)
        now = time.time()
        self._write(
            "INSERT OR IGNORE INTO completions (model, prompt_hash, sampling, sample, text, "
            "finish_reason, prompt_tokens, completion_tokens, latency_s, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    model,
                    prompt_hash,
                    sampling,
                    c.sample,
                    c.text,
                    c.finish_reason,
                    c.prompt_tokens,
                    c.completion_tokens,
                    c.latency_s,
                    now,
                )
                for c in completions
            ],
        )

    def prompts(self, hashes: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """``hash -> (text, system message)`` of the stored prompts among ``hashes``."""
        wanted = set(hashes)
        rows = self._read("SELECT hash, text, system FROM prompts")
        return {row[0]: (row[1], row[2]) for row in rows if row[0] in wanted}

    def cached_samples(self, model: str, sampling: str, n: int) -> dict[str, set[int]]:
        """Sample indices below ``n`` already stored, per prompt hash (``model``: a model id or
        identity, see :meth:`completions`)."""
        found: dict[str, set[int]] = {}
        rows = self._read(
            "SELECT prompt_hash, sample FROM completions WHERE model IN (?, ?) AND sampling=? "
            "AND sample<?",
            (model_identity(model), model, sampling, n),
        )
        for prompt_hash, sample in rows:
            found.setdefault(prompt_hash, set()).add(sample)
        return found

    def completions(
        self, model: str, sampling: str, hashes: Iterable[str], n: int
    ) -> dict[tuple[str, int], StoredCompletion]:
        """The stored completions of ``hashes`` with sample < ``n``, by (hash, sample).
        ``model``: a model id or its identity (both find the completions cached under the
        identity; an older store's, not resumed since, are found under the whole id)."""
        wanted = set(hashes)
        rows = self._read(
            "SELECT prompt_hash, sample, text, finish_reason FROM completions "
            "WHERE model IN (?, ?) AND sampling=? AND sample<?",
            (model_identity(model), model, sampling, n),
        )
        return {(row[0], row[1]): StoredCompletion(*row) for row in rows if row[0] in wanted}

    # -- items, scores, results -------------------------------------------------------------

    def record_items(self, benchmark: str, rows: Iterable[ItemRow]) -> None:
        self._write(
            "INSERT OR REPLACE INTO items (benchmark, item_id, task, prompt_hash, truth, "
            "category, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (benchmark, r.item_id, r.task, r.prompt_hash, r.truth, r.category, r.metadata)
                for r in rows
            ),
        )

    def scored_samples(self, benchmark: str, n: int) -> dict[str, set[int]]:
        found: dict[str, set[int]] = {}
        rows = self._read(
            "SELECT item_id, sample FROM scores WHERE benchmark=? AND sample<?", (benchmark, n)
        )
        for item_id, sample in rows:
            found.setdefault(item_id, set()).add(sample)
        return found

    def record_scores(self, benchmark: str, scores: Iterable[Score]) -> None:
        """Verdicts (replacing any earlier verdict of the same sample), in one transaction."""
        self._write(
            "INSERT OR REPLACE INTO scores (benchmark, item_id, sample, answer, correct, reason, "
            "detail, skipped) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    benchmark,
                    s.item_id,
                    s.sample,
                    s.answer,
                    int(s.correct),
                    s.reason.value,
                    s.detail,
                    int(s.skipped),
                )
                for s in scores
            ),
        )

    def scores(self, benchmark: str, n: int) -> dict[str, list[Score]]:
        """Every stored verdict with sample < ``n``, per item, in sample order."""
        rows = self._read(
            "SELECT item_id, sample, answer, correct, reason, detail, skipped FROM "
            "scores WHERE benchmark=? AND sample<? ORDER BY item_id, sample",
            (benchmark, n),
        )
        found: dict[str, list[Score]] = {}
        for item_id, sample, answer, correct, reason, detail, skipped in rows:
            found.setdefault(item_id, []).append(
                Score(item_id, sample, answer, bool(correct), Reason(reason), detail, bool(skipped))
            )
        return found

    def record_result(self, benchmark: str, report: Mapping[str, Any]) -> None:
        self._write(
            "INSERT OR REPLACE INTO results (benchmark, report, created) VALUES (?, ?, ?)",
            [(benchmark, json.dumps(report), time.time())],
        )

    def results(self) -> dict[str, dict[str, Any]]:
        rows = self._read("SELECT benchmark, report FROM results ORDER BY benchmark")
        return {
            str(benchmark): self._object(report, f"the stored report of {str(benchmark)[:60]!r}")
            for benchmark, report in rows
        }

    def drop_results(self) -> None:
        """Forget every stored report (they are derived; the next run recomputes them)."""
        self._write("DELETE FROM results", [()])

    def counts(self) -> dict[str, int]:
        """Rows per table (for checks and the summary)."""
        return {table: self._read(f"SELECT COUNT(*) FROM {table}")[0][0] for table in TABLES}
