"""Crash-safe, resumable output of a synthesis run.

A run appends its records chunk by chunk, in candidate order. After each chunk the data files are
flushed and fsynced, then ``state.json`` records how many candidates are done and each file's size,
written atomically (temporary file, fsync, rename). On resume the files are truncated to the sizes
of the last committed chunk, so a tail written by a killed run disappears and the chunk is redone:
the output is byte-identical to an uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from codereasoner.files import foreign_entry, open_no_follow, parse_json, write_atomic

DATA_FILES = ("cases.jsonl", "dropped.jsonl", "audit.jsonl", "generations.jsonl")
# created even when empty (generations.jsonl only exists for runs whose source logs replies)
ALWAYS = ("cases.jsonl", "dropped.jsonl", "audit.jsonl")
STATE_FILE = "state.json"
FORMAT = "codereasoner-synth/1"


class OutputError(ValueError):
    """The output directory cannot be used (other settings, foreign files, damaged state)."""


class FolderBusy(OutputError):
    """Another process is writing into the output folder; the message is one line."""


def settings_changes(
    stored: Mapping[str, Any], now: Mapping[str, Any], ignore: Iterable[str] = ()
) -> dict[str, tuple[Any, Any]]:
    """Each setting that differs (outside ``ignore``): its value stored and now (``None``: not
    set), in name order; empty when a run of ``stored`` may resume as ``now``."""
    skipped = set(ignore)
    return {
        key: (stored.get(key), now.get(key))
        for key in sorted(set(stored) | set(now))
        if stored.get(key) != now.get(key) and key not in skipped
    }


class SettingsChanged(OutputError):
    """The output directory holds a run with other settings; ``changed`` maps each setting that
    differs to its value there and its value now (``None``: not set)."""

    def __init__(self, folder: Path, changed: Mapping[str, tuple[Any, Any]]) -> None:
        self.folder = folder
        self.changed = dict(changed)
        detail = ", ".join(
            f"{key}: {there!r} there, {now!r} now" for key, (there, now) in changed.items()
        )
        super().__init__(
            f"{folder}: holds a run with other settings ({detail}); "
            "use another --out or the same settings to resume"
        )


LOCK_FILE = ".lock"


@contextlib.contextmanager
def exclusive(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock (created with the folder) while writing into it, so that two runs
    never write one output folder at once; FolderBusy at once when another process holds it.
    The kernel drops the lock when its holder dies, SIGKILL included."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        handle = open_no_follow(folder / LOCK_FILE, "a")  # held open for the lock's lifetime
    except OSError as exc:
        raise FolderBusy(exc.strerror or str(exc)) from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise FolderBusy(
            f"{folder}: another run is writing into this folder; wait for it to "
            "end or choose another output folder"
        ) from None
    try:
        yield
    finally:
        handle.close()  # closing the only descriptor releases the lock


def dump_line(record: Mapping[str, Any]) -> str:
    """One JSONL line: compact, ASCII-only, keys in the order given (deterministic)."""
    return json.dumps(record, ensure_ascii=True, separators=(", ", ": ")) + "\n"


class RunWriter:
    """Appends committed chunks to a run directory; see the module docstring.

    ``settings`` are everything that changes the output (generator, n, seed, limits, ...); a
    directory holding a run with other settings is refused with :class:`OutputError`.
    """

    def __init__(self, out_dir: Path, settings: Mapping[str, Any]) -> None:
        self.dir = out_dir
        self.settings = json.loads(json.dumps(dict(settings)))  # as it reads back from JSON
        self.done = 0
        self.complete = False
        self.sizes = dict.fromkeys(DATA_FILES, 0)
        self.extra: dict[str, Any] = {}
        self._open()

    @property
    def state_path(self) -> Path:
        return self.dir / STATE_FILE

    def _open(self) -> None:
        if self.dir.exists() and not self.dir.is_dir():
            raise OutputError(f"{self.dir}: exists and is not a directory")
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.state_path.exists():
            self._resume()
        else:
            foreign = foreign_entry(self.dir, {LOCK_FILE})  # a new run's folder holds nothing yet
            if foreign is not None:
                raise OutputError(
                    f"{self.dir}: holds {foreign} but no {STATE_FILE}; not a synth run directory "
                    "(another command's, or files of your own: choose an empty --out)"
                )
            self._save_state()
        for name in DATA_FILES:
            path = self.dir / name
            if name in ALWAYS or os.path.lexists(path):
                try:
                    with open_no_follow(path, "ab") as handle:
                        handle.truncate(self.sizes[name])
                except OSError as exc:
                    raise OutputError(exc.strerror or str(exc)) from None

    def _resume(self) -> None:
        try:
            state = parse_json(self.state_path.read_text(encoding="utf-8"))
            stored, done, sizes = state["settings"], int(state["done"]), state["sizes"]
            complete = bool(state.get("complete", False))
            extra = dict(state.get("extra", {}))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OutputError(f"{self.state_path}: unreadable run state ({exc})") from None
        if stored != self.settings:
            raise SettingsChanged(self.dir, settings_changes(stored, self.settings))
        for name in DATA_FILES:
            size = int(sizes.get(name, 0))
            path = self.dir / name
            actual = path.stat().st_size if path.exists() else 0
            if actual < size:
                raise OutputError(
                    f"{path}: {actual} bytes, shorter than the {size} bytes "
                    "recorded as committed; the run directory is damaged"
                )
            self.sizes[name] = size
        self.done, self.complete, self.extra = done, complete, extra

    def _save_state(self) -> None:
        state = {
            "format": FORMAT,
            "settings": self.settings,
            "done": self.done,
            "complete": self.complete,
            "sizes": self.sizes,
            "extra": self.extra,
        }
        write_atomic(self.state_path, json.dumps(state, indent=2) + "\n")

    def commit(self, done: int, lines: Mapping[str, Iterable[str]]) -> None:
        """Append one chunk's lines per data file, make them durable, then record ``done``."""
        for name in DATA_FILES:
            data = "".join(lines.get(name, ())).encode("ascii")
            path = self.dir / name
            if not data and not path.exists():
                continue
            with open_no_follow(path, "ab") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            self.sizes[name] += len(data)
        self.done = done
        self._save_state()

    def finish(self, **extra: Any) -> None:
        """Mark the run complete (the summary was written); ``extra`` goes into the state."""
        self.complete = True
        self.extra.update(extra)
        self._save_state()

    def path(self, name: str) -> Path:
        return self.dir / name
