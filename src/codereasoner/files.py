"""Crash-safe file writes, shared by every layer: a file is replaced whole or not at all.

:func:`replacing` hands out a temporary path beside the target (same folder, so the final rename
is atomic; the target's suffix kept, so writers that infer a format from it still work); when the
block ends without an exception the file is fsynced, renamed over the target and the folder
fsynced; otherwise the temporary file is removed. A reader, a crash or a kill at any moment sees
the old file or the new one, never a half-written one.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "CACHE_ENV",
    "InputTooLarge",
    "OutputRefused",
    "cache_root",
    "check_output_file",
    "foreign_entry",
    "fsync_path",
    "open_no_follow",
    "parse_json",
    "read_text_bounded",
    "replacing",
    "sha256_file",
    "umask",
    "write_atomic",
]

CACHE_ENV = "CODEREASONER_CACHE"
_BLOCK = 1 << 20


def umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def fsync_path(path: Path) -> None:
    """fsync a file or a folder (a folder: so that a rename into it is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to; see the module docstring."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        os.chmod(temporary, 0o666 & ~umask())  # as a plainly created file (mkstemp: 0600)
        fsync_path(temporary)
        os.replace(temporary, path)
        fsync_path(path.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def foreign_entry(folder: Path, own: Collection[str]) -> str | None:
    """The first entry of ``folder`` (by name) that is neither one of ``own`` nor a temporary
    file :func:`replacing` left for one of them: what a new run there would share with whatever
    wrote it (None: no such entry, or no folder)."""
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return None

    def ours(name: str) -> bool:
        return name in own or any(name.startswith(f".{mine}.") for mine in own)

    return next((name for name in names if not ours(name)), None)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) so that a crash leaves either the old or the new
    file."""
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def cache_root() -> Path:
    """Where downloaded data and converted models are kept: ``$CODEREASONER_CACHE``, default
    ``~/.cache/codereasoner``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "codereasoner"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` whose every failure on bad input is a ValueError: nesting deeper than the
    interpreter's recursion limit raises RecursionError there, which an ``except ValueError``
    around a read of untrusted JSON (a data file, a server's reply, a stored record) misses."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


_NO_FOLLOW_FLAGS = {
    "a": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "r+b": os.O_RDWR,
    "rb": os.O_RDONLY,
}


def open_no_follow(path: Path, mode: str = "ab", encoding: str | None = None) -> IO[Any]:
    """Open a file of an output folder without following a symbolic link at ``path``: a link
    planted there (dangling or not) is refused with an OSError naming it, never written
    through. ``mode``: ``a``, ``ab``, ``r+b`` or ``rb``."""
    flags = _NO_FOLLOW_FLAGS[mode] | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(
                errno.ELOOP, f"{path}: a symbolic link; refusing to write through it"
            ) from None
        raise
    return os.fdopen(descriptor, mode, encoding=encoding)


class OutputRefused(ValueError):
    """An output path no command may write (the text is one line, naming the flag)."""


SQLITE_MAGIC = b"SQLite format 3\x00"
# what a run folder keeps: never an output file's name beside a run store
RUN_STORE = "run.sqlite"
RUN_KEPT = frozenset({RUN_STORE, f"{RUN_STORE}-wal", f"{RUN_STORE}-shm", f"{RUN_STORE}-journal",
                      "results.json", ".lock"})  # fmt: skip


def check_output_file(
    out: Path, flag: str, *, protected: Collection[Path] = (), force: bool = True
) -> None:
    """Refuse (:class:`OutputRefused`) an output file that a command must never write, before
    any work: a folder; a path under something that is not a folder; a place this user cannot
    write; an existing file that is a database (another run's store, however it is named), a
    run folder's own file, or lies in one of the ``protected`` folders or is one of the
    ``protected`` files (the data just read); an existing file without ``force``. Symlinks and
    ``..`` are resolved, hard links seen."""
    out = Path(out)
    if out.is_dir():
        raise OutputRefused(f"{flag} {out}: is a folder; expected a file name")
    existing = next((parent for parent in out.parents if parent.exists()), Path("."))
    if not existing.is_dir():
        raise OutputRefused(f"{flag} {out}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputRefused(f"{flag} {out}: cannot write in {existing} (permission denied)")
    if not (out.exists() or out.is_symlink()):
        return
    target = out.resolve()
    for path in protected:
        guarded = Path(path).resolve()
        if target == guarded or guarded in target.parents or _same_file(target, guarded):
            raise OutputRefused(
                f"{flag} {out}: would replace {path}, which this command reads; choose another file"
            )
    if target.name in RUN_KEPT and (target.parent / RUN_STORE).exists():
        raise OutputRefused(
            f"{flag} {out}: is a run folder's own {target.name}; choose another file"
        )
    if _is_database(target):
        raise OutputRefused(f"{flag} {out}: is a database (a run's store?); choose another file")
    if not force:
        raise OutputRefused(f"{flag} {out}: already exists; pass --force to replace it")


def _same_file(one: Path, other: Path) -> bool:
    try:
        return one.exists() and other.is_file() and os.path.samefile(one, other)
    except OSError:
        return False


def _is_database(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


MAX_INPUT_BYTES = 512 << 20  # a generations file, a log: read whole, so bounded


class InputTooLarge(OSError):
    """An input that is no readable text file of bounded size (the text names the file)."""


def read_text_bounded(path: Path, limit: int = MAX_INPUT_BYTES) -> str:
    """A file's UTF-8 text, read at most ``limit`` bytes far: a device (``/dev/zero`` behind a
    symlink) or a folder is refused, a pipe (``-g <(...)``) is read up to the bound.
    :class:`InputTooLarge` (an OSError) past it; UnicodeDecodeError for text that is not
    UTF-8; FileNotFoundError and the other OSErrors as opening raises them."""
    with open(path, "rb") as handle:
        kind = os.fstat(handle.fileno()).st_mode
        if not (stat.S_ISREG(kind) or stat.S_ISFIFO(kind)):
            raise InputTooLarge(errno.EINVAL, "not a file (a device or a folder)", str(path))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(errno.EFBIG, f"larger than {limit >> 20} MiB", str(path))
    return data.decode("utf-8")
