"""The run store: one SQLite file per evaluation run (``RUN_DIR/run.sqlite``).

Every request, completion and score is a row, written as soon as it exists, so a run killed at
any point (``kill -9`` included) resumes without redoing or duplicating work. Primary keys make
every write idempotent.

Tables
- ``run``: one row: ``id``, ``model`` (the backend's model_id), ``created``, ``updated``
  (unix seconds), ``config`` (JSON: benchmarks, n, sampling, style, extraction, grading, ...),
  ``status`` (``running``, ``done``, ``failed``), ``message`` (the failure, one line).
- ``prompts``: ``hash`` (see :func:`codereasoner.models.base.prompt_hash`), ``text``, ``chat``,
  ``system``.
- ``completions``: the completion cache, keyed by (``model``, ``prompt_hash``, ``sampling``,
  ``sample``); ``text``, ``finish_reason``, ``prompt_tokens``, ``completion_tokens``,
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

import sqlite3
from pathlib import Path

SCHEMA_VERSION = 1
STORE_NAME = "run.sqlite"

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


def connect(path: Path, *, create: bool = False) -> sqlite3.Connection:
    """Open (and with ``create`` initialise) a run store; WAL, so readers never block writers."""
    path = Path(path)
    if not create and not path.exists():
        raise FileNotFoundError(f"{path}: no run store here (expected {STORE_NAME})")
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    if create:
        connection.executescript(SCHEMA)
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        connection.commit()
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION:
        connection.close()
        raise ValueError(f"{path}: run store schema version {version}, expected {SCHEMA_VERSION}")
    return connection
