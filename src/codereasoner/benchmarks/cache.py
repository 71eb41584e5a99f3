"""Benchmark data files: a user directory, else a cache filled from upstream with checksums.

The cache lives in ``$CODEREASONER_CACHE`` (default ``~/.cache/codereasoner``), one folder per
dataset, with ``manifest.json`` recording each file's URL, size, sha256 and download time. A file
with a pinned sha256 must match it; otherwise the hash seen at the first download is recorded and
every later read is checked against it. Downloads use :mod:`urllib` only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

CACHE_ENV = "CODEREASONER_CACHE"
MANIFEST = "manifest.json"
TIMEOUT_S = 60.0
ROWS_PAGE = 100  # the Hugging Face dataset viewer serves at most 100 rows per request
_CHUNK = 1 << 16
LOCAL_HINT = "pass --data-dir to use local files"
LOCAL = "local"  # Source.kind of data with no upstream: only --data-dir supplies it


class DataUnavailable(Exception):
    """A data file is missing, unreadable, or fails its checksum; the message is one line."""


@dataclass(frozen=True)
class Source:
    """One data file and where upstream serves it.

    ``kind``: ``file`` (fetched byte for byte), ``hf-rows`` (the Hugging Face dataset viewer's
    ``/rows`` API, paged, written as JSON Lines in row order) or ``local`` (no upstream: the
    user's own files, never fetched; ``url`` then says what ``--data-dir`` must be).
    """

    filename: str
    url: str
    sha256: str | None = None
    kind: str = "file"


@dataclass(frozen=True)
class FileStatus:
    source: Source
    path: Path
    present: bool
    sha256: str | None  # recorded in the manifest (cache) or None
    verified: bool  # present and matching the pinned or recorded hash


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "codereasoner"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text())
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
) -> dict[str, Path]:
    """Paths of the dataset's files: from ``data_dir`` as given, else the verified cache."""
    if data_dir is not None:
        paths = {}
        for source in sources:
            path = paths[source.filename] = Path(data_dir) / source.filename
            if not path.is_file():
                expected = f"the {dataset} data directory must hold {source.filename}"
                if source.kind == LOCAL:
                    expected = f"--data-dir must be {source.url}"
                raise DataUnavailable(f"{path}: not found ({expected})")
        return paths
    paths = {}
    for entry in status(dataset, sources, cache):
        if entry.source.kind == LOCAL:
            raise no_download(entry.source)
        if not entry.verified:
            if not download:
                raise DataUnavailable(
                    f"{entry.path}: not in the cache; run "
                    f"'codereasoner bench fetch' or pass --data-dir"
                )
            fetch(dataset, entry.source, cache)
        paths[entry.source.filename] = entry.path
    return paths


def fetch(
    dataset: str, source: Source, cache: Path | None = None, *, folder: Path | None = None
) -> Path:
    """Download one file into the cache (or ``folder``), check it, and record it in the
    folder's manifest."""
    if source.kind == LOCAL:
        raise no_download(source)
    folder = folder if folder is not None else (cache or cache_root()) / dataset
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.filename
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{source.filename}.")
    try:
        with os.fdopen(handle, "wb") as out:
            if source.kind == "hf-rows":
                _write_rows(source.url, out)
            else:
                _copy_url(source.url, out)
        digest = sha256_file(Path(temporary))
        if source.sha256 and digest != source.sha256:
            raise DataUnavailable(
                f"{source.url}: sha256 {digest} does not match the pinned "
                f"{source.sha256}; refusing the download"
            )
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    manifest = read_manifest(folder)
    manifest[source.filename] = {
        "url": source.url,
        "kind": source.kind,
        "sha256": digest,
        "size": target.stat().st_size,
        "pinned": source.sha256 is not None,
        "downloaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return target


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
        raise DataUnavailable(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataUnavailable(f"{url}: download failed ({reason}); {LOCAL_HINT}") from None


def _copy_url(url: str, out: BinaryIO) -> None:
    with _open_url(url) as response:
        while chunk := response.read(_CHUNK):
            out.write(chunk)


def _write_rows(url: str, out: BinaryIO) -> None:
    offset, total = 0, None
    while total is None or offset < total:
        separator = "&" if "?" in url else "?"
        page_url = f"{url}{separator}offset={offset}&length={ROWS_PAGE}"
        with _open_url(page_url) as response:
            try:
                page = json.loads(response.read())
                total = int(page["num_rows_total"])
                rows = page["rows"]
            except (ValueError, KeyError, TypeError) as exc:
                raise DataUnavailable(
                    f"{page_url}: not a dataset-viewer rows page ({exc})"
                ) from None
        if not rows and offset < total:
            raise DataUnavailable(f"{page_url}: empty page before row {total}")
        for position, entry in enumerate(rows, start=offset):
            if entry.get("row_idx") != position:
                raise DataUnavailable(
                    f"{page_url}: expected row {position}, got {entry.get('row_idx')}"
                )
            if entry.get("truncated_cells"):
                raise DataUnavailable(
                    f"{page_url}: row {position} has truncated cells {entry['truncated_cells']}"
                )
            out.write(json.dumps(entry["row"], ensure_ascii=False).encode() + b"\n")
        offset += len(rows)
