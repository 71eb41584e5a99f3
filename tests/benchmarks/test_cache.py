"""The download cache against a real HTTP server on 127.0.0.1 (started here, in a thread)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from codereasoner import benchmarks
from codereasoner.benchmarks import cache
from codereasoner.benchmarks.cache import DataUnavailable, Source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CRUX_BYTES = (FIXTURES / "cruxeval" / "cruxeval.jsonl").read_bytes()
LCB_ROWS = [
    json.loads(line)
    for line in (FIXTURES / "livecodebench" / "execution-v2.jsonl").read_text().splitlines()
]
ROWS = [dict(LCB_ROWS[i % 4], id=f"sample_{i}") for i in range(240)]  # three pages of <= 100


class Server:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self.files = {"/data/cruxeval.jsonl": CRUX_BYTES}
        self.truncate = False
        self.rows = ROWS

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            parts = urllib.parse.urlsplit(self.path)
            if parts.path == "/rows":
                query = urllib.parse.parse_qs(parts.query)
                offset, length = int(query["offset"][0]), int(query["length"][0])
                rows = [
                    {
                        "row_idx": offset + i,
                        "row": row,
                        "truncated_cells": ["code"] if state.truncate else [],
                    }
                    for i, row in enumerate(state.rows[offset : offset + min(length, 100)])
                ]
                body = json.dumps(
                    {
                        "features": [],
                        "rows": rows,
                        "num_rows_total": len(state.rows),
                        "num_rows_per_page": 100,
                        "partial": False,
                    }
                ).encode()
            elif parts.path in state.files:
                body = state.files[parts.path]
            else:
                self.send_error(404, "Not Found")
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

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


def test_dataset_viewer_rows_are_paged_into_jsonl(server: Server, tmp_path: Path) -> None:
    source = Source(
        "execution-v2.jsonl",
        f"{server.url}/rows?dataset=livecodebench%2Fexecution-v2",
        kind="hf-rows",
    )
    path = cache.fetch("livecodebench", source, tmp_path)
    assert [json.loads(line) for line in path.read_text().splitlines()] == ROWS
    pages = [r for r in server.requests if r.startswith("/rows")]
    assert [urllib.parse.parse_qs(urllib.parse.urlsplit(r).query)["offset"][0] for r in pages] == [
        "0",
        "100",
        "200",
    ]
    recorded = json.loads((tmp_path / "livecodebench" / cache.MANIFEST).read_text())[
        "execution-v2.jsonl"
    ]
    assert recorded["sha256"] == cache.sha256_file(path) and recorded["pinned"] is False
    status = cache.status("livecodebench", [source], tmp_path)[0]
    assert status.present and status.verified
    path.write_text("tampered\n")  # the recorded hash catches later changes
    assert not cache.status("livecodebench", [source], tmp_path)[0].verified


def test_truncated_rows_are_refused(server: Server, tmp_path: Path) -> None:
    server.truncate = True
    source = Source("e.jsonl", f"{server.url}/rows?dataset=x", kind="hf-rows")
    with pytest.raises(DataUnavailable, match=r"row 0 has truncated cells \['code'\]"):
        cache.fetch("livecodebench", source, tmp_path)


def test_benchmark_load_downloads_into_the_cache_from_the_environment(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    assert cache.cache_root() == tmp_path / "cache"
    items = mirror(benchmarks.get("lcb-execution"), server).load()
    assert [item.id for item in items] == [f"sample_{i}" for i in range(len(ROWS))]
    assert (tmp_path / "cache" / "livecodebench" / "execution-v2.jsonl").is_file()
    with pytest.raises(DataUnavailable, match="not in the cache"):
        benchmarks.get("cruxeval-o").load(download=False)


def test_duplicate_rows_from_upstream_are_refused(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    server.rows = LCB_ROWS + LCB_ROWS[:1]
    with pytest.raises(DataUnavailable, match=r"execution-v2.jsonl:5: duplicate id 'sample_10'"):
        mirror(benchmarks.get("lcb-execution"), server).load()


def mirror(bench: benchmarks.Benchmark, server: Server) -> benchmarks.Benchmark:
    """The same benchmark with its rows served by the local server."""
    source = Source(bench.sources[0].filename, f"{server.url}/rows?dataset=x", kind="hf-rows")
    return dataclasses.replace(bench, sources=(source,))
