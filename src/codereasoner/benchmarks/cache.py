"""Benchmark data files: a user directory, else a cache filled from upstream with checksums.

The cache lives in ``$CODEREASONER_CACHE`` (default ``~/.cache/codereasoner``), one folder per
dataset, with ``manifest.json`` recording each file's URL, size, sha256 and download time. A file
with a pinned sha256 must match it; otherwise the hash seen at the first download is recorded and
every later read is checked against it. Plain files are downloaded with :mod:`urllib`; a split
of a Hugging Face dataset repository (``hf-hub``: every parquet file matching a pattern at a
pinned revision, in sorted order) with ``huggingface_hub``, through its own cache
(``HF_HUB_CACHE``, ``HF_ENDPOINT`` and offline mode ``HF_HUB_OFFLINE=1`` apply), and written into
this cache as JSON Lines. ``bench fetch --from DIR`` imports files downloaded by hand
(:func:`import_files`), under the same checksums.
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import json
import logging
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from codereasoner.files import CACHE_ENV as CACHE_ENV  # where the cache is: read by users
from codereasoner.files import cache_root, parse_json, replacing, sha256_file
from codereasoner.settings import env_flag

MANIFEST = "manifest.json"
TIMEOUT_S = 60.0
_CHUNK = 1 << 16
LOCAL = "local"  # Source.kind of data with no upstream: only --data-dir supplies it
HF_HUB = "hf-hub"  # Source.kind of a split's parquet files in a Hugging Face dataset repository
# The files of the split: those matching ``pattern`` (fnmatch, from the repository's root) in the
# repository's tree at ``revision``, the folder's page on the Hub.
HUB_URL = "https://huggingface.co/datasets/{repo}/tree/{revision}/{pattern}"
_HUB_PARTS = re.compile(
    r"/datasets/(?P<repo>[^/]+/[^/]+)/tree/(?P<revision>[^/]+)/(?P<pattern>.+)$"
)
# A shard's place in its split, as `datasets` names them: data/test-00001-of-00002[-<hash>].parquet
_SHARD = re.compile(r"-(?P<index>\d+)-of-(?P<total>\d+)(?:-[^/]*)?\.parquet$")


class DataUnavailable(Exception):
    """A data file is missing, unreadable, or fails its checksum; the message is one line.

    ``problem`` says what went wrong. ``local``: the data could not be downloaded, so the way
    out is files the user has; the message then ends with :func:`local_hint` for ``benchmark``
    (set by :func:`fetch`; a command whose ``--data-dir`` means something else words its own
    hint from ``problem``)."""

    def __init__(self, problem: str, *, local: bool = False, benchmark: str | None = None):
        super().__init__(problem)
        self.problem = problem
        self.local = local
        self.benchmark = benchmark

    def __str__(self) -> str:
        if not self.local:
            return self.problem
        return f"{self.problem}; {local_hint(self.benchmark or '<benchmark>')}"


def local_hint(benchmark: str) -> str:
    """How to use files at hand when ``benchmark``'s data cannot be downloaded."""
    return (
        "pass --data-dir to use local files, or import them into the cache with "
        f"'codereasoner bench fetch {benchmark} --from DIR'"
    )


def import_hint(benchmark: str) -> str:
    """:func:`local_hint` for ``bench fetch``, whose ``--data-dir`` is where it downloads to."""
    return f"import files you downloaded with 'codereasoner bench fetch {benchmark} --from DIR'"


def any_benchmark_of(dataset: str) -> str:
    """The word for the benchmark in hints when a caller did not say which one it loads (the
    registry, above this module, would know; every benchmark of a dataset fetches its files)."""
    return f"<a {dataset} benchmark: see 'codereasoner bench list'>"


@dataclass(frozen=True)
class Source:
    """One data file and where upstream serves it.

    ``kind``: ``file`` (fetched byte for byte), ``hf-hub`` (a split of a Hugging Face dataset
    repository, ``url`` as :data:`HUB_URL`: its parquet files at a pinned revision, in sorted
    order, written as one JSON Lines file in row order; ``upstream_sha256`` pins the split's one
    parquet file, which must then be the only match) or ``local`` (no upstream:
    the user's own files, never fetched; ``url`` then says what ``--data-dir`` must be).
    ``sha256`` pins the file as stored in the cache.
    """

    filename: str
    url: str
    sha256: str | None = None
    kind: str = "file"
    upstream_sha256: str | None = None


@dataclass(frozen=True)
class HubSplit:
    """Where an ``hf-hub`` source lives: dataset repository, revision, and the pattern its
    parquet files match (``data/test-*.parquet``: one shard or several, with or without the
    hash suffix older ``datasets`` versions add)."""

    repo: str
    revision: str
    pattern: str

    def where(self) -> str:
        return f"{self.repo} (Hugging Face dataset) at revision {self.revision}"


def hub_source(
    filename: str, repo: str, revision: str, pattern: str, upstream_sha256: str | None = None
) -> Source:
    url = HUB_URL.format(repo=repo, revision=revision, pattern=urllib.parse.quote(pattern, "/*"))
    return Source(filename, url, kind=HF_HUB, upstream_sha256=upstream_sha256)


def hub_split(source: Source) -> HubSplit:
    match = _HUB_PARTS.search(urllib.parse.urlsplit(source.url).path)
    if match is None:
        raise DataUnavailable(f"{source.url}: not a Hugging Face dataset split URL")
    return HubSplit(match["repo"], match["revision"], urllib.parse.unquote(match["pattern"]))


@dataclass(frozen=True)
class FileStatus:
    source: Source
    path: Path
    present: bool
    sha256: str | None  # recorded in the manifest (cache) or None
    verified: bool  # present and matching the pinned or recorded hash


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        data = parse_json(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise DataUnavailable(
            f"{path}: unreadable manifest ({exc}); delete it to start over"
        ) from None
    return data if isinstance(data, dict) else {}


def status(dataset: str, sources: Sequence[Source], cache: Path | None = None) -> list[FileStatus]:
    """What the cache holds for ``dataset``, checked against pinned and recorded hashes."""
    folder = (cache or cache_root()) / dataset
    manifest = read_manifest(folder) if folder.is_dir() else {}
    found = []
    for source in sources:
        path = folder / source.filename
        recorded = manifest.get(source.filename, {}).get("sha256")
        present = path.is_file()
        verified = False
        if present and recorded:
            expected = source.sha256 or recorded
            verified = recorded == expected and sha256_file(path) == expected
        found.append(FileStatus(source, path, present, recorded, verified))
    return found


def locate(
    dataset: str,
    sources: Sequence[Source],
    data_dir: Path | None = None,
    *,
    download: bool = True,
    cache: Path | None = None,
    benchmark: str | None = None,
) -> dict[str, Path]:
    """Paths of the dataset's files: from ``data_dir`` as given, else the verified cache.
    ``benchmark``: the one being loaded, named in the hints (default: one reading the file)."""
    if data_dir is not None:
        paths = {source.filename: Path(data_dir) / source.filename for source in sources}
        missing = [source for source in sources if not paths[source.filename].is_file()]
        if missing:
            raise DataUnavailable(_not_here(dataset, Path(data_dir), missing))
        return paths
    paths = {}
    for entry in status(dataset, sources, cache):
        if entry.source.kind == LOCAL:
            raise no_download(entry.source)
        if not entry.verified:
            if not download:
                name = benchmark or any_benchmark_of(dataset)
                raise DataUnavailable(
                    f"{entry.path}: not in the cache; run 'codereasoner bench fetch {name}' "
                    "(--from DIR imports files you downloaded) or pass --data-dir"
                )
            fetch(dataset, entry.source, cache, benchmark=benchmark)
        paths[entry.source.filename] = entry.path
    return paths


MAX_SEARCHED_FOLDERS = 200  # a --data-dir too high is searched this far for the data


def _not_here(dataset: str, data_dir: Path, missing: Sequence[Source]) -> str:
    """Every file ``data_dir`` lacks, and where below it the data is, when a folder or two
    down holds it (a --data-dir one level too high)."""
    names = ", ".join(str(data_dir / source.filename) for source in missing)
    first = missing[0]
    if first.kind == LOCAL:
        return f"{data_dir / first.filename}: not found (--data-dir must be {first.url})"
    said = (
        f"{names}: not found (the {dataset} data directory must hold "
        f"{'them' if len(missing) > 1 else 'it'}, or be the data root holding {dataset}/)"
    )
    below = _data_below(data_dir, dataset, [source.filename for source in missing])
    if below is not None:
        said += f"; they are in {below}: did you mean --data-dir {below.parent}?"
    return said


def _data_below(data_dir: Path, dataset: str, filenames: Sequence[str]) -> Path | None:
    """The folder ``dataset/`` one or two levels below ``data_dir`` holding every file."""
    searched = 0
    try:
        children = sorted(path for path in data_dir.iterdir() if path.is_dir())
    except OSError:
        return None
    for child in children:
        for folder in (child / dataset, child):
            searched += 1
            if searched > MAX_SEARCHED_FOLDERS:
                return None
            if folder.name == dataset and all((folder / name).is_file() for name in filenames):
                return folder
    return None


def fetch(
    dataset: str,
    source: Source,
    cache: Path | None = None,
    *,
    folder: Path | None = None,
    benchmark: str | None = None,
) -> Path:
    """Download one file into the cache (or ``folder``), check it, and record it in the
    folder's manifest. ``benchmark``: as for :func:`locate`."""
    if source.kind == LOCAL:
        raise no_download(source)
    folder = folder if folder is not None else (cache or cache_root()) / dataset
    folder.mkdir(parents=True, exist_ok=True)

    notes: dict[str, object] = {}

    def download(out: BinaryIO) -> None:
        if source.kind == HF_HUB:
            notes.update(_write_hub_rows(source, out))
        else:
            _copy_url(source.url, out)

    def refuse(digest: str) -> DataUnavailable:
        return DataUnavailable(
            f"{source.url}: sha256 {digest} does not match the pinned "
            f"{source.sha256}; refusing the download"
        )

    try:
        return _install(folder, source, download, source.sha256, refuse, notes)
    except DataUnavailable as exc:
        if exc.local and exc.benchmark is None:
            exc.benchmark = benchmark or any_benchmark_of(dataset)
        raise


Writer = Callable[[BinaryIO], None]


def _install(
    folder: Path,
    source: Source,
    write: Writer,
    expected: str | None,
    refuse: Callable[[str], DataUnavailable],
    notes: Mapping[str, object],
) -> Path:
    """Write the file under a temporary name, check its sha256 against ``expected`` (``refuse``
    makes the error), rename it into place and record it with ``notes`` (read once written):
    the folder never holds a partial or unverified file under the source's name."""
    target = folder / source.filename
    with replacing(target) as temporary:
        with temporary.open("wb") as out:
            write(out)
        digest = sha256_file(temporary)
        if expected and digest != expected:
            raise refuse(digest)
    _record(folder, source, target, digest, **notes)
    return target


def _record(folder: Path, source: Source, target: Path, digest: str, **extra: object) -> None:
    """Note ``target``'s hash, size and origin in the folder's manifest."""
    manifest = read_manifest(folder)
    manifest[source.filename] = {
        "url": source.url,
        "kind": source.kind,
        "sha256": digest,
        "size": target.stat().st_size,
        "pinned": source.sha256 is not None,
        "downloaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **extra,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


class _Given(NamedTuple):
    """What ``--from`` holds for a source: its file under the cache name, or upstream's parquet
    files (a clone's shards, in order)."""

    files: tuple[Path, ...]
    upstream: bool


def import_files(
    dataset: str, sources: Sequence[Source], origin: Path, cache: Path | None = None
) -> list[Path]:
    """Copy a dataset's files from ``origin`` (a folder the user filled by hand) into the cache.

    ``origin`` holds each file under its cache name (``bench show`` lists them) or, for an
    ``hf-hub`` source, upstream's parquet files in a clone of its repository
    (``<repo name>/<pattern>``, every shard, read in sorted order). Each must match its pinned
    sha256 (or the hash the cache recorded earlier); all are found and checked before anything
    is written, and each is written under a temporary name, checked and renamed, so a mismatch
    leaves the cache as it was."""
    folder = (cache or cache_root()) / dataset
    recorded = read_manifest(folder) if folder.is_dir() else {}
    wanted = [source for source in sources if source.kind != LOCAL]
    if not wanted:
        raise no_download(sources[0])
    found = [(source, _origin_files(origin, source)) for source in wanted]
    for source, given in found:
        if given.upstream:
            _check_upstream(source, given.files)
        else:
            _checked_hash(source, given.files[0], _expected(source, recorded))
    folder.mkdir(parents=True, exist_ok=True)
    return [
        _import_one(folder, source, given, _expected(source, recorded)) for source, given in found
    ]


def _expected(source: Source, recorded: dict[str, Any]) -> str | None:
    return source.sha256 or recorded.get(source.filename, {}).get("sha256")


def _origin_files(origin: Path, source: Source) -> _Given:
    path = origin / source.filename
    if path.is_file() or source.kind != HF_HUB:
        if not path.is_file():
            raise DataUnavailable(f"{path}: not found (--from must hold {source.filename})")
        return _Given((path,), upstream=False)
    split = hub_split(source)
    name = split.repo.split("/")[1]
    for base in (origin / name, origin):
        files = _split_files(split, base) if base.is_dir() else []
        if files:
            if not _whole_set(files):
                hint = f"copy all of them from {split.where()}"
                raise _not_whole(f"{base} (a clone of {split.repo})", split, files, hint)
            return _Given(tuple(base / file for file in files), upstream=True)
    raise DataUnavailable(
        f"{path}: not found (--from must hold {source.filename}, or {split.pattern} of a clone "
        f"of {split.repo} in {name}/)"
    )


def _checked_hash(source: Source, path: Path, expected: str | None) -> str:
    try:
        digest = sha256_file(path)
    except OSError as exc:
        raise DataUnavailable(f"{path}: cannot read ({exc.strerror or exc})") from None
    if expected and digest != expected:
        raise DataUnavailable(f"{path}: sha256 {digest}, expected {expected}; not imported")
    return digest


def _import_one(folder: Path, source: Source, given: _Given, expected: str | None) -> Path:
    def copy(out: BinaryIO) -> None:
        if given.upstream:
            for shard in given.files:
                write_parquet_rows(shard, out)
            return
        with given.files[0].open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                out.write(chunk)

    def refuse(digest: str) -> DataUnavailable:
        what = given.files[0] if len(given.files) == 1 else given.files[0].parent
        return DataUnavailable(f"{what}: sha256 {digest}, expected {expected}; not imported")

    notes: dict[str, object] = {"imported_from": str(given.files[0])}
    if given.upstream and len(given.files) > 1:
        notes["imported_from"] = [str(file) for file in given.files]
    return _install(folder, source, copy, expected, refuse, notes)


def no_download(source: Source) -> DataUnavailable:
    return DataUnavailable(
        f"nothing to download: the data is local ({source.url}), given with --data-dir"
    )


@contextlib.contextmanager
def _open_url(url: str) -> Iterator[BinaryIO]:
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise DataUnavailable(f"{url}: only http(s) URLs are fetched")
    request = urllib.request.Request(url, headers={"User-Agent": "codereasoner"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            yield response
    except urllib.error.HTTPError as exc:
        raise DataUnavailable(f"{url}: HTTP {exc.code} {exc.reason}", local=True) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataUnavailable(f"{url}: download failed ({reason})", local=True) from None


def _copy_url(url: str, out: BinaryIO) -> None:
    with _open_url(url) as response:
        while chunk := response.read(_CHUNK):
            out.write(chunk)


def _write_hub_rows(source: Source, out: BinaryIO) -> dict[str, object]:
    """Write the split's rows, shard after shard; returns what the manifest notes: the commit
    the revision resolved to and the files read."""
    split = hub_split(source)
    snapshot = _hub_snapshot(split)
    files = _split_files(split, snapshot)
    if not files:
        where = "in the Hugging Face cache (HF_HUB_OFFLINE is set)" if _offline() else "there"
        raise DataUnavailable(
            f"{split.where()}: no file matches {split.pattern} {where}", local=True
        )
    if not _whole_set(files):
        raise _not_whole(f"{split.where()}, in {snapshot}", split, files, None)
    paths = tuple(snapshot / file for file in files)
    _check_upstream(source, paths)
    for path in paths:
        write_parquet_rows(path, out)
    # huggingface_hub's cache keeps a revision's files under snapshots/<commit>/
    revision = snapshot.name if snapshot.parent.name == "snapshots" else ""
    return {"revision": revision, "files": files}


def _split_files(split: HubSplit, folder: Path) -> list[str]:
    """The files under ``folder`` matching the split's pattern, as sorted repository paths
    (only the pattern's fixed leading folders, ``data/``, are searched)."""
    fixed = []
    for part in split.pattern.split("/")[:-1]:
        if any(char in part for char in "*?["):
            break
        fixed.append(part)
    found = []
    for path in folder.joinpath(*fixed).rglob("*"):
        relative = path.relative_to(folder).as_posix()
        if relative.startswith(".") or not path.is_file():  # .git/, .cache/ of a clone
            continue
        if fnmatch.fnmatchcase(relative, split.pattern):
            found.append(relative)
    return sorted(found)


def _whole_set(files: Sequence[str]) -> bool:
    """Shards named ``-NNNNN-of-MMMMM`` must be one whole set: each index of one total, once
    (an interrupted download, a partial cache or clone is refused, not read as the split)."""
    places = [_SHARD.search(file) for file in files]
    if not all(places):
        return True
    totals = {int(place["total"]) for place in places if place}
    indices = sorted(int(place["index"]) for place in places if place)
    return len(totals) == 1 and indices == list(range(totals.pop()))


def _not_whole(
    what: str, split: HubSplit, files: Sequence[str], hint: str | None
) -> DataUnavailable:
    """``hint`` None: the local-files hint (see :class:`DataUnavailable`)."""
    problem = (
        f"{what}: the files matching {split.pattern} are not one whole set of shards "
        f"({', '.join(files)})"
    )
    if hint is None:
        return DataUnavailable(problem, local=True)
    return DataUnavailable(f"{problem}; {hint}")


def _offline() -> bool:
    return env_flag("HF_HUB_OFFLINE")


class _NoMatchWarning(logging.Filter):
    """Drops huggingface_hub's "No files matched" warning: the error line says it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No files matched")


@contextlib.contextmanager
def _quiet_no_match() -> Iterator[None]:
    logger = logging.getLogger("huggingface_hub._snapshot_download")
    quiet = _NoMatchWarning()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _terminal_only_bar() -> type[Any]:
    """huggingface_hub's progress bar, drawn only on a terminal, as its download bars are:
    ``snapshot_download``'s "Fetching N files" bar would otherwise precede an error line."""
    from huggingface_hub.utils import tqdm

    class TerminalOnly(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("disable", None)  # tqdm: None = disabled unless on a terminal
            super().__init__(*args, **kwargs)

    return TerminalOnly


def _hub_snapshot(split: HubSplit) -> Path:
    """The revision's folder in the Hugging Face cache, holding the split's files (downloaded
    into it first unless offline)."""
    from huggingface_hub import errors, snapshot_download

    offline = _offline()
    where = split.where()
    try:
        with _quiet_no_match():
            local = snapshot_download(
                split.repo,
                repo_type="dataset",
                revision=split.revision,
                allow_patterns=[split.pattern],
                endpoint=os.environ.get("HF_ENDPOINT") or None,
                cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                local_files_only=offline,
                tqdm_class=_terminal_only_bar(),
            )
    except errors.LocalEntryNotFoundError as exc:
        if offline:
            partly = isinstance(exc, getattr(errors, "IncompleteSnapshotError", ()))
            held = "only partly in" if partly else "not in"
            raise DataUnavailable(
                f"{where}: {split.pattern} {held} the Hugging Face cache and HF_HUB_OFFLINE is "
                "set (unset it to download)",
                local=True,
            ) from None
        cause = exc.__cause__  # why the hub gave no answer: connection, timeout, 5xx
        reason = _first_line(cause) if cause is not None else "hub unreachable"
        raise DataUnavailable(f"{where}: download failed ({reason})", local=True) from None
    except errors.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "error"
        what = "HTTP"
        if isinstance(exc, errors.RevisionNotFoundError):
            what = "revision not found, HTTP"
        elif isinstance(exc, errors.RepositoryNotFoundError):
            what = "repository not found (or gated), HTTP"
        raise DataUnavailable(f"{where}: {what} {status}", local=True) from None
    except (OSError, ValueError) as exc:
        raise DataUnavailable(
            f"{where}: download failed ({_first_line(exc)})", local=True
        ) from None
    return Path(str(local))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _check_upstream(source: Source, paths: Sequence[Path]) -> None:
    """With a pin, the split must be one parquet file with that sha256."""
    if source.upstream_sha256 is None:
        return
    if len(paths) != 1:
        split = hub_split(source)
        raise DataUnavailable(
            f"{split.where()}: {len(paths)} files match {split.pattern}, but the pinned sha256 "
            f"{source.upstream_sha256} is of one file; refusing them"
        )
    digest = sha256_file(paths[0])
    if digest != source.upstream_sha256:
        raise DataUnavailable(
            f"{paths[0]}: sha256 {digest}, expected {source.upstream_sha256} "
            f"(pinned for {source.url}); refusing it"
        )


def write_parquet_rows(path: Path, out: BinaryIO) -> None:
    """A parquet file's rows as JSON Lines, in order (dates as ISO text)."""
    try:
        parquet = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise DataUnavailable(
            f"{path}: reading parquet needs pyarrow (pip install pyarrow)"
        ) from None
    try:
        table = parquet.read_table(path)
    except (OSError, ValueError) as exc:
        raise DataUnavailable(f"{path}: not a readable parquet file ({exc})") from None
    for batch in table.to_batches():
        for row in batch.to_pylist():
            try:
                line = json.dumps(row, ensure_ascii=False, default=_json_value)
            except TypeError as exc:
                raise DataUnavailable(f"{path}: {exc}") from None
            out.write(line.encode() + b"\n")


def _json_value(value: object) -> str:
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"a column holds {type(value).__name__} values, which JSON cannot hold")
