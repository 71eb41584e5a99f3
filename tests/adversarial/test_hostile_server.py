"""A hostile or broken OpenAI-compatible server: every bad reply is one BackendError (one error
line on the command line) and nothing bad reaches the run store: bodies are read within a bound,
nesting is a parse failure, every field is type-checked, counts are checked for range, and lone
surrogates are replaced before anything is stored."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from codereasoner.models import BackendError, Completion, Request, Sampling, load_backend
from codereasoner.models import openai as openai_module

GOOD_CHOICE = {"index": 0, "text": "ok", "finish_reason": "stop"}


def _reply(**fields: Any) -> bytes:
    body = {"id": "x", "choices": [GOOD_CHOICE], "usage": {"prompt_tokens": 1}}
    return json.dumps({**body, **fields}).encode()


REPLIES: dict[str, bytes] = {
    "nested": b"[" * 200_000 + b"]" * 200_000,
    "a list": b"[1, 2]",
    "choices a string": _reply(choices="many"),
    "a choice a list": _reply(choices=[[1]]),
    "text a list": _reply(choices=[{**GOOD_CHOICE, "text": ["a", "b"]}]),
    "finish_reason a dict": _reply(choices=[{**GOOD_CHOICE, "finish_reason": {"a": 1}}]),
}
# Replies the backend takes, with what it keeps of them.
TOLERATED: dict[str, tuple[bytes, dict[str, Any]]] = {
    "completion_tokens a long string": (
        _reply(usage={"completion_tokens": "9" * 100_000, "prompt_tokens": 1}),
        {"completion_tokens": None},
    ),
    "prompt_tokens 2**80": (
        _reply(usage={"prompt_tokens": 2**80, "completion_tokens": 2}),
        {"prompt_tokens": None, "completion_tokens": 2},
    ),
    "usage a list": (_reply(usage=[1]), {"completion_tokens": None}),
    "a lone surrogate": (
        b'{"choices": [{"index": 0, "text": "a\\ud800b", "finish_reason": "stop"}]}',
        {"text": "a\ufffdb"},
    ),
}


class Hostile:
    """An HTTP server on 127.0.0.1 whose completions answer the body it is told to."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.stream: int | None = None  # stream this many bytes without a length instead
        self.drip_s: float | None = None  # send the body one byte at a time, this far apart
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.wait(30)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/completions", self._answer)
        runner = web.AppRunner(app)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.ready.set()
        self.loop.run_forever()

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        if self.stream is None and self.drip_s is None:
            return web.Response(body=self.body, content_type="application/json")
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        if self.drip_s is not None:
            for byte in self.body:
                await response.write(bytes([byte]))
                await asyncio.sleep(self.drip_s)
            return response
        assert self.stream is not None
        chunk = b" " * (1 << 16)
        for _ in range(self.stream // len(chunk) + 1):
            await response.write(chunk)
        return response

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture(scope="module")
def hostile() -> Iterator[Hostile]:
    server = Hostile()
    yield server
    server.loop.call_soon_threadsafe(server.loop.stop)


def _generate(server: Hostile, **options: Any) -> list[Completion]:
    options = {"max_retries": 0, "backoff_s": 0.01, **options}
    backend = load_backend(f"openai:m@{server.url}", **options)
    found: list[Completion] = []
    request = Request("x", sampling=Sampling(max_tokens=4))
    backend.generate([request], lambda index, done: found.extend(done))
    return found


@pytest.mark.parametrize("name", REPLIES)
def test_a_broken_reply_is_one_error(hostile: Hostile, name: str) -> None:
    hostile.body, hostile.stream = REPLIES[name], None
    with pytest.raises(BackendError) as caught:
        _generate(hostile)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", TOLERATED)
def test_odd_fields_are_checked_and_the_completion_stores(
    hostile: Hostile, name: str, tmp_path: Any
) -> None:
    body, kept = TOLERATED[name]
    hostile.body, hostile.stream = body, None
    (completion,) = _generate(hostile)
    for field, value in kept.items():
        assert getattr(completion, field) == value, field
    with sqlite3.connect(tmp_path / "store.sqlite") as db:  # what the run store does with it
        db.execute("CREATE TABLE c (text TEXT, reason TEXT, tokens INTEGER)")
        db.execute(
            "INSERT INTO c VALUES (?, ?, ?)",
            (completion.text, completion.finish_reason, completion.completion_tokens),
        )


def test_a_body_past_the_bound_is_refused_while_it_streams(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_module, "MAX_BODY_BYTES", 1 << 20)
    hostile.stream = 4 << 20
    with pytest.raises(BackendError, match="longer than 1048576 bytes"):
        _generate(hostile)
    hostile.stream = None


def test_the_replies_being_read_hold_a_bounded_number_of_bytes_together(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many requests in flight, each answered with a long reply: together they may hold no
    more than one reply's cap, and every byte is given back when a reading ends."""
    budget = openai_module._ReplyBytes(256 << 10)
    monkeypatch.setattr(openai_module, "_IN_FLIGHT", budget)
    hostile.stream = 1 << 20  # within one reply's cap, past what all may hold at once
    try:
        with pytest.raises(BackendError, match="hold more than 262,144 bytes together"):
            _generate(hostile)
    finally:
        hostile.stream = None
    assert budget.held == 0  # released, refused or not
    hostile.body = _reply()
    (completion,) = _generate(hostile)
    assert completion.text == "ok" and budget.held == 0


def test_a_dripping_server_is_given_up_and_named(
    hostile: Hostile, caplog: pytest.LogCaptureFixture
) -> None:
    """One byte every 0.2 s: the body is refused once its time is up, and a warning names the
    request still in flight before that (a default-sized reply would hold a request for hours)."""
    hostile.body, hostile.stream, hostile.drip_s = _reply(), None, 0.2
    try:
        slow = pytest.raises(BackendError, match="took longer than 1 s after its headers")
        with caplog.at_level("WARNING", logger="codereasoner.models.openai"), slow:
            _generate(hostile, body_timeout_s=1.0, warn_slow_s=0.5)
    finally:
        hostile.drip_s = None
    assert any("in flight for" in record.getMessage() for record in caplog.records)


def test_a_prompt_reply_is_not_hurried(hostile: Hostile) -> None:
    hostile.body, hostile.stream, hostile.drip_s = _reply(), None, None
    (completion,) = _generate(hostile, body_timeout_s=30.0, warn_slow_s=30.0)
    assert completion.text == "ok"
