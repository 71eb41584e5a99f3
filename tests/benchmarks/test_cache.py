"""The download cache against real HTTP servers on 127.0.0.1 (started here, in threads): a plain
file server, and one serving dataset repositories the way the Hugging Face Hub does
(``HF_ENDPOINT``): the revision and tree listings ``huggingface_hub`` asks for, and the files."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import io
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codereasoner import benchmarks
from codereasoner.benchmarks import cache
from codereasoner.benchmarks.cache import DataUnavailable, Source, hub_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CRUX_BYTES = (FIXTURES / "cruxeval" / "cruxeval.jsonl").read_bytes()
LCB_ROWS = [
    json.loads(line)
    for line in (FIXTURES / "livecodebench" / "execution-v2.jsonl").read_text().splitlines()
]
ROWS = [dict(LCB_ROWS[i % 4], id=f"sample_{i}") for i in range(240)]


COMMIT = "0123456789abcdef0123456789abcdef01234567"
SHARD = "data/test-00000-of-00001.parquet"
_COMMIT = re.compile(r"[0-9a-f]{40}")
_ROUTE = re.compile(
    r"/(?:api/)?datasets/(?P<repo>[^/]+/[^/]+)/(?P<kind>resolve|tree|revision)/(?P<revision>[^/]+)"
    r"(?:/(?P<path>.+))?"
)


def parquet_bytes(rows: list[dict]) -> bytes:
    """Rows as upstream's parquet holds them: ``contest_date`` a timestamp column."""

    def as_datetime(value: object) -> dt.datetime:
        if isinstance(value, int):
            return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC).replace(tzinfo=None)
        return dt.datetime.fromisoformat(str(value))

    table = pa.Table.from_pylist(
        [dict(row, contest_date=as_datetime(row["contest_date"])) for row in rows]
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


class Server:
    """Plain files by path, and Hub dataset repositories, ``hub[(repo, path)]``, the same at any
    commit or at ``main`` (which resolves to :data:`COMMIT`); other revisions are 404, as on the
    Hub. Served as the Hub serves them: ``/api/datasets/{repo}/revision/{rev}`` (the commit and
    the ``siblings``), ``/api/datasets/{repo}/tree/{rev}[/{folder}]`` (the files, recursively)
    and ``/datasets/{repo}/resolve/{rev}/{path}`` (a file, with its commit and ETag)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.files = {"/data/cruxeval.jsonl": CRUX_BYTES}
        self.hub: dict[tuple[str, str], bytes] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, target: str) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for a request's target."""
        path = urllib.parse.urlsplit(target).path
        match = _ROUTE.fullmatch(urllib.parse.unquote(path))
        if match is None:
            body = self.files.get(path)
            return (404, {}, b"") if body is None else (200, {}, body)
        repo, revision = match["repo"], match["revision"]
        files = {name: body for (owner, name), body in self.hub.items() if owner == repo}
        if not files:
            return 404, {"X-Error-Code": "RepoNotFound"}, b""
        if revision != "main" and not _COMMIT.fullmatch(revision):
            return 404, {"X-Error-Code": "RevisionNotFound"}, b""
        commit = COMMIT if revision == "main" else revision
        if match["kind"] == "revision":
            siblings = [{"rfilename": name} for name in files]
            return 200, {}, json.dumps({"id": repo, "sha": commit, "siblings": siblings}).encode()
        if match["kind"] == "tree":
            folder = f"{match['path']}/" if match["path"] else ""
            listing = [tree_entry(name, body) for name, body in files.items()]
            wanted = [entry for entry in listing if entry["path"].startswith(folder)]
            return 200, {}, json.dumps(wanted).encode()
        body = files.get(match["path"] or "")
        if body is None:
            return 404, {"X-Error-Code": "EntryNotFound"}, b""
        etag = f'"{hashlib.sha256(body).hexdigest()}"'
        return 200, {"X-Repo-Commit": commit, "ETag": etag}, body


def tree_entry(name: str, body: bytes) -> dict:
    """A file as the Hub's tree listing describes it (parquet files are stored with LFS)."""
    digest = hashlib.sha256(body).hexdigest()
    lfs = {"oid": digest, "size": len(body), "pointerSize": 134}
    return {"type": "file", "path": name, "size": len(body), "oid": digest[:40], "lfs": lfs}


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, with_body: bool) -> None:
            state.requests.append(f"{self.command} {self.path}")
            status, headers, body = state.answer(self.path)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._answer(with_body=False)

        def do_GET(self) -> None:
            self._answer(with_body=True)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = httpd.server_address[1]  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def file_requests(server: Server) -> list[str]:
    """The requests for files (huggingface_hub also calls the API routes)."""
    return [request for request in server.requests if "/resolve/" in request]


def downloads(server: Server) -> list[str]:
    """The files downloaded (GET), as repository paths."""
    return [
        request.split("/resolve/", 1)[1].split("/", 1)[1]
        for request in file_requests(server)
        if request.startswith("GET ")
    ]


def jsonl_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


@pytest.fixture
def hub_env(server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Hub's address and a fresh Hugging Face cache; returns that cache."""
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    set_offline(monkeypatch, False)
    return tmp_path / "hf"


def set_offline(monkeypatch: pytest.MonkeyPatch, offline: bool) -> None:
    """Offline mode as a fresh process started with(out) HF_HUB_OFFLINE=1 sees it: huggingface_hub
    reads the variable once, when first imported (the test session sets it for other tests)."""
    from huggingface_hub import constants

    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)


def test_download_pinned_file_records_manifest_and_reuses_cache(
    server: Server, tmp_path: Path
) -> None:
    digest = hashlib.sha256(CRUX_BYTES).hexdigest()
    source = Source("cruxeval.jsonl", f"{server.url}/data/cruxeval.jsonl", sha256=digest)
    paths = cache.locate("cruxeval", [source], cache=tmp_path)
    assert paths["cruxeval.jsonl"].read_bytes() == CRUX_BYTES
    manifest = json.loads((tmp_path / "cruxeval" / cache.MANIFEST).read_text())
    entry = manifest["cruxeval.jsonl"]
    assert (
        entry["sha256"] == digest and entry["size"] == len(CRUX_BYTES) and entry["pinned"] is True
    )
    assert entry["url"] == source.url
    assert cache.locate("cruxeval", [source], cache=tmp_path) == paths
    assert len(server.requests) == 1  # the verified cache is used, no second download
    paths["cruxeval.jsonl"].write_bytes(CRUX_BYTES + b"\n")  # a corrupted cache is fetched again
    cache.locate("cruxeval", [source], cache=tmp_path)
    assert len(server.requests) == 2 and paths["cruxeval.jsonl"].read_bytes() == CRUX_BYTES


def test_checksum_mismatch_is_refused(server: Server, tmp_path: Path) -> None:
    source = Source("cruxeval.jsonl", f"{server.url}/data/cruxeval.jsonl", sha256="0" * 64)
    with pytest.raises(DataUnavailable, match="does not match the pinned"):
        cache.locate("cruxeval", [source], cache=tmp_path)
    assert not (tmp_path / "cruxeval" / "cruxeval.jsonl").exists()
    assert [p.name for p in (tmp_path / "cruxeval").iterdir()] == []  # no temporary left behind


def test_http_errors_are_one_line(server: Server, tmp_path: Path) -> None:
    missing = Source("x.jsonl", f"{server.url}/nothing-here")
    with pytest.raises(DataUnavailable, match=r"/nothing-here: HTTP 404"):
        cache.fetch("d", missing, tmp_path)
    closed = Source("x.jsonl", "http://127.0.0.1:1/x")
    with pytest.raises(DataUnavailable, match=r"download failed .*pass --data-dir"):
        cache.fetch("d", closed, tmp_path)
    with pytest.raises(DataUnavailable, match="only http"):
        cache.fetch("d", Source("x", "file:///etc/passwd"), tmp_path)


def test_hub_split_is_fetched_at_the_pinned_revision_as_jsonl(
    server: Server, hub_env: Path, tmp_path: Path
) -> None:
    """A shard named as older `datasets` versions name them (hash suffix) is found by listing
    the repository at the revision; the other files of the repository are not downloaded."""
    shard = "data/test-00000-of-00001-5f2a9c1b0e4d7a36.parquet"
    server.hub[("org/data", "README.md")] = b"# org/data\n"
    server.hub[("org/data", "data/train-00000-of-00001.parquet")] = parquet_bytes(LCB_ROWS[:1])
    server.hub[("org/data", shard)] = parquet_bytes(LCB_ROWS)
    source = hub_source("e.jsonl", "org/data", COMMIT, "data/test-*.parquet")
    path = cache.fetch("livecodebench", source, tmp_path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [row["id"] for row in rows] == [row["id"] for row in LCB_ROWS]
    assert rows[1]["contest_date"] == "2023-05-20T00:00:00"  # a timestamp column, as ISO text
    assert rows[0]["problem_id"] == LCB_ROWS[0]["problem_id"]
    assert downloads(server) == [shard]
    assert all(f"/{COMMIT}/" in request for request in file_requests(server))
    recorded = json.loads((tmp_path / "livecodebench" / cache.MANIFEST).read_text())["e.jsonl"]
    assert recorded["revision"] == COMMIT and recorded["kind"] == cache.HF_HUB
    assert recorded["files"] == [shard]
    assert recorded["sha256"] == cache.sha256_file(path)
    assert cache.status("livecodebench", [source], tmp_path)[0].verified
    assert (hub_env / "datasets--org--data").is_dir()  # huggingface_hub's own cache


def test_hub_split_shards_are_concatenated_in_order(
    server: Server, hub_env: Path, tmp_path: Path
) -> None:
    """Listed second-shard first, read first-shard first; ``main`` resolves to its commit."""
    server.hub[("org/data", "data/test-00001-of-00002.parquet")] = parquet_bytes(LCB_ROWS[2:])
    server.hub[("org/data", "data/test-00000-of-00002.parquet")] = parquet_bytes(LCB_ROWS[:2])
    source = hub_source("e.jsonl", "org/data", "main", "data/test-*.parquet")
    path = cache.fetch("livecodebench", source, tmp_path)
    assert jsonl_ids(path) == [row["id"] for row in LCB_ROWS]
    assert sorted(downloads(server)) == [
        "data/test-00000-of-00002.parquet",
        "data/test-00001-of-00002.parquet",
    ]
    recorded = json.loads((tmp_path / "livecodebench" / cache.MANIFEST).read_text())["e.jsonl"]
    assert recorded["revision"] == COMMIT
    assert recorded["files"] == sorted(downloads(server))


def test_hub_split_with_no_file_or_part_of_its_shards_is_one_line(
    server: Server, hub_env: Path, tmp_path: Path
) -> None:
    server.hub[("org/data", "data/train-00000-of-00001.parquet")] = parquet_bytes(LCB_ROWS)
    source = hub_source("e.jsonl", "org/data", COMMIT, "data/test-*.parquet")
    with pytest.raises(DataUnavailable) as raised:
        cache.fetch("livecodebench", source, tmp_path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(
        f"org/data (Hugging Face dataset) at revision {COMMIT}: "
        "no file matches data/test-*.parquet there; pass --data-dir"
    )
    assert downloads(server) == []
    server.hub[("org/data", "data/test-00001-of-00002.parquet")] = parquet_bytes(LCB_ROWS)
    later = hub_source("e.jsonl", "org/data", "1" * 40, "data/test-*.parquet")  # a new commit
    with pytest.raises(DataUnavailable, match=r"are not one whole set of shards \(data/test-0"):
        cache.fetch("livecodebench", later, tmp_path)
    assert [p.name for p in (tmp_path / "livecodebench").iterdir()] == []


def test_hub_revision_or_repository_not_found_is_one_line(
    server: Server, hub_env: Path, tmp_path: Path
) -> None:
    server.hub[("org/data", SHARD)] = parquet_bytes(LCB_ROWS)
    branch = hub_source("e.jsonl", "org/data", "no-such-branch", "data/test-*.parquet")
    with pytest.raises(DataUnavailable, match=r"no-such-branch: revision not found, HTTP 404; p"):
        cache.fetch("livecodebench", branch, tmp_path)
    other = hub_source("e.jsonl", "org/other", COMMIT, "data/test-*.parquet")
    with pytest.raises(DataUnavailable, match=r"^org/other .*: repository not found .*HTTP 40"):
        cache.fetch("livecodebench", other, tmp_path)


def test_hub_offline_mode_reads_the_hf_cache_and_says_when_the_files_are_missing(
    server: Server, hub_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.hub[("org/data", "data/test-00000-of-00002.parquet")] = parquet_bytes(LCB_ROWS[:2])
    server.hub[("org/data", "data/test-00001-of-00002.parquet")] = parquet_bytes(LCB_ROWS[2:])
    source = hub_source("e.jsonl", "org/data", COMMIT, "data/test-*.parquet")
    first = cache.fetch("livecodebench", source, tmp_path / "a").read_bytes()
    asked = len(server.requests)
    set_offline(monkeypatch, True)
    again = cache.fetch("livecodebench", source, tmp_path / "b").read_bytes()
    assert again == first and len(server.requests) == asked  # nothing asked of the Hub
    recorded = json.loads((tmp_path / "b" / "livecodebench" / cache.MANIFEST).read_text())
    assert recorded["e.jsonl"]["revision"] == COMMIT and len(recorded["e.jsonl"]["files"]) == 2
    # a shard gone from the Hugging Face cache: the split is refused, not read in part
    snapshot = hub_env / "datasets--org--data" / "snapshots" / COMMIT
    (snapshot / "data" / "test-00001-of-00002.parquet").unlink()
    with pytest.raises(DataUnavailable) as raised:
        cache.fetch("livecodebench", source, tmp_path / "c")
    assert re.search(r"only partly in the Hugging Face cache|not one whole set", str(raised.value))
    assert "\n" not in str(raised.value)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hf"))
    with pytest.raises(DataUnavailable, match="not in the Hugging Face cache and HF_HUB_OFFLINE"):
        cache.fetch("livecodebench", source, tmp_path / "d")
    assert len(server.requests) == asked
    for folder in ("c", "d"):
        assert [p.name for p in (tmp_path / folder / "livecodebench").iterdir()] == []


def test_hub_file_not_matching_its_pin_is_refused(
    server: Server, hub_env: Path, tmp_path: Path
) -> None:
    server.hub[("org/data", SHARD)] = parquet_bytes(LCB_ROWS)
    pinned = hub_source("e.jsonl", "org/data", COMMIT, "data/test-*.parquet", "0" * 64)
    with pytest.raises(DataUnavailable, match=r"sha256 [0-9a-f]{64}, expected 0{64}"):
        cache.fetch("livecodebench", pinned, tmp_path)
    assert list((tmp_path / "livecodebench").iterdir()) == []
    right = hub_source("e.jsonl", "org/data", COMMIT, "data/test-*.parquet")
    right = dataclasses.replace(
        right, upstream_sha256=hashlib.sha256(parquet_bytes(LCB_ROWS)).hexdigest()
    )
    assert jsonl_ids(cache.fetch("livecodebench", right, tmp_path)) == [r["id"] for r in LCB_ROWS]
    # the pin is of one file: a split that became two shards is refused
    server.hub[("org/data", "data/test-00000-of-00002.parquet")] = parquet_bytes(LCB_ROWS[:2])
    server.hub[("org/data", "data/test-00001-of-00002.parquet")] = parquet_bytes(LCB_ROWS[2:])
    del server.hub[("org/data", SHARD)]
    split = dataclasses.replace(right, url=right.url.replace(COMMIT, "f" * 40))
    with pytest.raises(DataUnavailable, match=r"2 files match data/test-\*.parquet, but the pin"):
        cache.fetch("livecodebench", split, tmp_path)


def test_benchmark_load_downloads_into_the_cache_from_the_environment(
    server: Server, hub_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    assert cache.cache_root() == tmp_path / "cache"
    items = mirror(benchmarks.get("lcb-execution"), server, ROWS).load()
    assert [item.id for item in items] == [f"sample_{i}" for i in range(len(ROWS))]
    assert (tmp_path / "cache" / "livecodebench" / "execution-v2.jsonl").is_file()
    with pytest.raises(DataUnavailable, match="not in the cache"):
        benchmarks.get("cruxeval-o").load(download=False)


def test_duplicate_rows_from_upstream_are_refused(
    server: Server, hub_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    bench = mirror(benchmarks.get("lcb-execution"), server, LCB_ROWS + LCB_ROWS[:1])
    with pytest.raises(DataUnavailable, match=r"execution-v2.jsonl:5: duplicate id 'sample_10'"):
        bench.load()


def mirror(bench: benchmarks.Benchmark, server: Server, rows: list[dict]) -> benchmarks.Benchmark:
    """The same benchmark with its split (one parquet file) served by the local Hub."""
    split = cache.hub_split(bench.sources[0])
    server.hub[(split.repo, SHARD)] = parquet_bytes(rows)
    source = dataclasses.replace(bench.sources[0], upstream_sha256=None)
    return dataclasses.replace(bench, sources=(source,))
