"""A run's settings and the checks made before any work: options, the data folder, the output
folder, and the run folder's name (:mod:`codereasoner.evaluation.runner` runs them)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codereasoner import benchmarks
from codereasoner.evaluation.store import STORE_NAME
from codereasoner.execution import SandboxUnavailable, check_executor
from codereasoner.execution.sandbox import ISOLATION_MODES
from codereasoner.models.base import Sampling, model_identity
from codereasoner.settings import SettingError
from codereasoner.synth.writer import LOCK_FILE

FORMAT = "run-store"  # the reports' "format" field
SCORE_CHUNK = 500  # items graded and stored per transaction
FIXED = ("sampling", "style", "extraction", "grading", "chat", "limit", "skip", "ids", "system")
ORACLE = "oracle"
SELF_CHECK = "SELF-CHECK: the oracle answers from the ground truth; this is not a model score"
RESULTS_JSON = "results.json"  # the summary of the last run (done or failed), beside run.sqlite
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")  # a SQLite database's files
# What a folder may hold before its run store exists: the store's own files as SQLite creates
# them, and the lock.
RUN_FILES = frozenset({*(STORE_NAME + suffix for suffix in SQLITE_SUFFIXES), LOCK_FILE})
LIMIT_WARNING_SHARE = 0.5  # warn when at least this share of completions hit --max-tokens


def run_file_at(out: Path, store: Path) -> Path | None:
    """The file of the run whose store is ``store`` that writing ``out`` would replace (its
    store and the store's journals, under either spelling, its lock, its ``results.json``),
    however ``out`` is spelt (symlinks, ``..``, hard links); None when ``out`` is none of them."""
    folder = store.parent
    kept = [store.with_name(store.name + suffix) for suffix in SQLITE_SUFFIXES]
    kept += [folder / (STORE_NAME + suffix) for suffix in SQLITE_SUFFIXES]
    kept += [folder / LOCK_FILE, folder / RESULTS_JSON]
    target = out.resolve()
    for path in kept:
        if path.resolve() == target or (
            out.exists() and path.exists() and os.path.samefile(out, path)
        ):
            return path
    return None


class RunError(RuntimeError):
    """A run that cannot start or continue; the message is one line."""


@dataclass(frozen=True)
class RunSettings:
    """What a run does. ``extraction`` and ``timeout`` None: each benchmark's default."""

    benchmarks: tuple[str, ...]
    n: int = 1
    sampling: Sampling = field(default_factory=Sampling)
    style: str = "direct"
    extraction: str | None = None
    grading: str = "official"
    chat: bool = False
    limit: int | None = None
    data_dir: Path | None = None
    timeout: float | None = None
    workers: int | None = None
    isolation: str = "auto"
    executor: str | None = None  # local, ray or ray:ADDRESS (default: $CODEREASONER_EXECUTOR)
    skip: int = 0  # items of the fixed order left out before the --limit ones
    ids: tuple[str, ...] = ()  # --ids: only these items (of every benchmark that has them)
    system: str | None = None  # --system: this system message instead of the benchmarks'

    def config(self) -> dict[str, Any]:
        """The run row's config (JSON)."""
        sampling = {  # the benchmarks' stops are theirs; --gen-kwargs stops are the run's
            key: value
            for key, value in json.loads(self.sampling.key()).items()
            if key != "stop" or value
        }
        config = {
            "benchmarks": list(self.benchmarks),
            "n": self.n,
            "sampling": sampling,
            "style": self.style,
            "extraction": self.extraction,
            "grading": self.grading,
            "chat": self.chat,
            "limit": self.limit,
            "data_dir": None if self.data_dir is None else str(self.data_dir),
        }
        if self.skip:  # absent when 0: run folders from before --skip keep their config and hash
            config["skip"] = self.skip
        if self.ids:  # absent when unset, for the same reason
            config["ids"] = list(self.ids)
        if self.system is not None:
            config["system"] = self.system
        if self.timeout is not None:  # not kept on resume, but what a re-score must repeat
            config["timeout"] = self.timeout
        return config

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must keep (``FIXED``), as stored in the config."""
        config = self.config()
        return {key: config[key] for key in FIXED if key in config}


def refused(setting: str, value: object, expected: str) -> RunError:
    """A RunError caused by the :class:`SettingError` it words, to raise: the command line
    names the setting's flag from its cause."""
    error = SettingError(setting, value, expected)
    refusal = RunError(str(error))
    refusal.__cause__ = error
    return refusal


def check_settings(settings: RunSettings) -> None:
    """RunError (one line naming the setting, raised from a SettingError) for settings no run
    can use; checks nothing on disk, so it can run before anything is created."""
    _check_sampling(settings.sampling)
    if settings.n < 1:
        raise refused("n", settings.n, "at least 1 sample per item")
    if settings.limit is not None and settings.limit < 1:
        raise refused("limit", settings.limit, "at least 1 item")
    if settings.skip < 0:
        raise refused("skip", settings.skip, "0 or more items")
    if settings.ids and (settings.limit is not None or settings.skip):
        raise refused("ids", ",".join(settings.ids)[:60], "no --limit or --skip beside it")
    if settings.system is not None and not settings.chat:
        raise refused("system", settings.system[:60], "--chat (raw prompts have no system message)")
    if settings.timeout is not None and not settings.timeout > 0:
        raise refused("timeout", settings.timeout, "a positive number of seconds")
    if settings.workers is not None and settings.workers < 1:
        raise refused("workers", settings.workers, "at least 1 sandbox worker")
    if settings.isolation not in ISOLATION_MODES:
        raise refused("isolation", settings.isolation, f"one of {', '.join(ISOLATION_MODES)}")
    try:
        check_executor(settings.executor)
    except ValueError as exc:  # a SettingError stays the cause: the command line names its flag
        raise RunError(str(exc)) from exc
    except SandboxUnavailable as exc:
        raise RunError(f"sandbox unavailable: {exc}") from None


def _check_sampling(sampling: Sampling) -> None:
    if not (math.isfinite(sampling.temperature) and sampling.temperature >= 0):
        raise refused("temperature", sampling.temperature, "a number >= 0")
    if not 0 < sampling.top_p <= 1:
        raise refused("top_p", sampling.top_p, "a number in (0, 1]")
    if sampling.max_tokens is not None and sampling.max_tokens < 1:
        raise refused("max_tokens", sampling.max_tokens, "at least 1 token")
    if sampling.seed is not None and sampling.seed < 0:
        raise refused("seed", sampling.seed, "an integer >= 0")


def check_data_dir(data_dir: Path | None) -> None:
    """RunError (one line naming ``--data-dir``) when ``data_dir`` is a file no benchmark reads
    as its data (``cases`` reads a ``cases.jsonl``); reads no data. A path that does not exist
    is left to each benchmark, whose error names the file it expects there."""
    if data_dir is None or not data_dir.exists():
        return
    if not any(benchmarks.get(name).folder(data_dir).is_dir() for name in benchmarks.names()):
        raise RunError(
            f"--data-dir {data_dir}: not a folder; expected the data root (one folder per "
            "dataset) or a benchmark's folder"
        )


def check_out(run_dir: Path) -> None:
    """RunError (one line naming ``--out``) when ``run_dir`` is a file, or cannot be created (a
    file on its path, a folder that cannot be written); creates nothing."""
    run_dir = Path(run_dir)
    where = f"--out {run_dir}"
    if run_dir.exists():
        if not run_dir.is_dir():
            raise RunError(f"{where}: is a file; expected a run folder (new or existing)")
        if not os.access(run_dir, os.W_OK | os.X_OK):
            raise RunError(f"{where}: the folder is not writable; expected a run folder to write")
        return
    parent = run_dir.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise RunError(f"{where}: {parent} is a file; expected a run folder (new or existing)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise RunError(f"{where}: cannot create it ({parent} is not writable)")


# The flags that set each FIXED setting (the sampling ones: per field of the sampling dict).
FLAGS = {
    "style": "--style",
    "extraction": "--extraction",
    "grading": "--grading",
    "chat": "--chat/--raw",
    "limit": "--limit",
    "skip": "--skip",
    "ids": "--ids",
    "system": "--system",
    "temperature": "--temperature",
    "top_k": "--gen-kwargs top_k",
    "repetition_penalty": "--gen-kwargs repetition_penalty",
    "stop": "--gen-kwargs stop",
    "top_p": "--top-p",
    "max_tokens": "--max-tokens",
    "seed": "--seed",
}


def differing_option(key: str, stored: Any, asked: Any) -> tuple[str, Any, Any]:
    """The flag of a FIXED setting that differs, with both values (a sampling field's own)."""
    if key == "sampling" and isinstance(stored, dict) and isinstance(asked, dict):
        for field_name in asked:
            if stored.get(field_name) != asked[field_name]:
                flag = FLAGS.get(field_name, f"sampling {field_name}")
                return flag, stored.get(field_name), asked[field_name]
    return FLAGS.get(key, key), stored, asked


def default_run_dir(model_id: str, settings: RunSettings) -> Path:
    """``runs/<model slug>-<hash>``: the hash covers the model's identity (the id without a
    server URL: a server moved to another host or port keeps the folder) and the settings a
    resumed run must keep, so re-running the same command (any day) resumes, and another
    setting gets another folder."""
    model = model_identity(model_id)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-")[:80] or "model"
    identity = json.dumps([model, settings.identity()], sort_keys=True)
    return Path("runs") / f"{slug}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"
