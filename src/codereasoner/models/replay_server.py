"""A scripted OpenAI-compatible server on 127.0.0.1, for tests, benchmarks and dry runs.

It serves ``/v1/completions``, ``/v1/chat/completions`` and ``/v1/models`` with scripted
behaviour: a reply function, a fixed (or per-prompt) latency, failure injection (the first
attempts of each prompt answered 429/5xx, with ``Retry-After``), a required API key, ``n``
choices, stop sequences, ``max_tokens`` (``finish_reason`` ``length``) and ``usage`` token counts
(one token per word or punctuation mark). Counters (requests, completions, failures, the most
requests in flight at once) are readable from the parent.

With recorded completions (:class:`Recorded`, ``--completions FILE``: JSON Lines of
``{"prompt" | "prompt_hash", "sample", "completion"}``, e.g. what ``codereasoner
export-generations`` writes), each choice is answered with the text recorded for its prompt and
sample; a choice with no record gets HTTP 400 naming the prompt hash (or, with ``missing="echo"``,
the echo reply).

In-process, on a background thread::

    with ReplayServer(latency_s=0.2, failures=(429, 503)) as server:
        backend = load_backend(f"openai:replay@{server.url}")
        ...
        server.stats()["requests"]

In its own process (so that its CPU is not counted as the caller's)::

    python -m codereasoner.models.replay_server --port 8001 --latency 0.2

or :class:`ReplayProcess`, which starts that command and reads its counters over HTTP
(``GET /replay/stats``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import inspect
import json
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from codereasoner.files import parse_json
from codereasoner.models.base import cut_at_stop, prompt_hash
from codereasoner.models.replay_process import ReplayProcess

__all__ = [
    "Query",
    "Recorded",
    "ReplayApp",
    "ReplayProcess",
    "ReplayServer",
    "count_tokens",
    "cut_at_tokens",
    "echo_reply",
    "main",
    "query_hash",
]

TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Query:
    """What a reply function sees: the prompt (raw prompt, or the last user message of a chat),
    the chat messages (``None`` for a raw completion), the request's JSON body and the choice
    index (0 .. n-1)."""

    prompt: str
    messages: list[dict[str, Any]] | None
    params: dict[str, Any]
    choice: int

    @property
    def chat(self) -> bool:
        return self.messages is not None


Reply = Callable[[Query], str]
Failures = Sequence[int] | Callable[[str, int], int | None]


def count_tokens(text: str) -> int:
    """The replay server's token count: words and punctuation marks."""
    return len(TOKEN.findall(text))


def echo_reply(query: Query) -> str:
    """The default reply: deterministic in the prompt, the choice index and the seed."""
    digest = hashlib.sha256(
        f"{query.prompt}\x00{query.choice}\x00{query.params.get('seed')}".encode()
    ).hexdigest()[:8]
    tail = " ".join(query.prompt.split()[-8:])
    return f"echo {digest} choice {query.choice}: {tail}"


MISSING = ("error", "echo")  # what a choice with no recorded completion gets


def query_hash(query: Query) -> str:
    """The prompt hash the run store records for what this request asked (the prompt, chat or
    raw, and a chat's system message), as :func:`codereasoner.models.base.prompt_hash`."""
    system = None
    for message in query.messages or ():
        if message.get("role") == "system":
            system = message.get("content")
    return prompt_hash(query.prompt, query.chat, system)


class Recorded:
    """Completions recorded per prompt hash, in sample order; read with :meth:`load`."""

    def __init__(self, texts: dict[str, dict[int, str]]) -> None:
        self.texts = texts

    def __len__(self) -> int:
        return sum(len(samples) for samples in self.texts.values())

    def lookup(self, query: Query) -> str | None:
        return self.texts.get(query_hash(query), {}).get(query.choice)

    @classmethod
    def load(cls, path: str) -> Recorded:
        """Read JSON Lines records ``{"prompt": TEXT}`` (a raw prompt; hashed as one) or
        ``{"prompt_hash": HASH}``, with ``"completion"`` and an optional ``"sample"`` (default:
        the next one of that prompt). Raises ValueError with a one-line message."""
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"--completions {path}: cannot read ({exc})") from None
        texts: dict[str, dict[int, str]] = {}
        for number, line in enumerate(lines, start=1):
            if line.strip():
                key, sample, text = _record(f"{path}:{number}", line, texts)
                texts.setdefault(key, {})[sample] = text
        if not texts:
            raise ValueError(f"--completions {path}: no records; expected JSON Lines")
        return cls(texts)


def _record(where: str, line: str, seen: dict[str, dict[int, str]]) -> tuple[str, int, str]:
    try:
        record = parse_json(line)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where}: invalid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object")
    if isinstance(record.get("prompt_hash"), str):
        key = record["prompt_hash"]
    elif isinstance(record.get("prompt"), str):
        key = prompt_hash(record["prompt"])
    else:
        raise ValueError(f"{where}: give 'prompt_hash' or 'prompt' as a string")
    text = record.get("completion")
    if not isinstance(text, str):
        raise ValueError(f"{where}: field 'completion' must be a string")
    sample = record.get("sample", len(seen.get(key, {})))
    if not isinstance(sample, int) or isinstance(sample, bool) or sample < 0:
        raise ValueError(f"{where}: field 'sample' must be an integer >= 0, got {sample!r}")
    if sample in seen.get(key, {}):
        raise ValueError(f"{where}: duplicate sample {sample} of prompt {key[:12]}")
    return key, sample, text


MAX_CHOICES = 128  # OpenAI's own bound on n
MAX_STOPS = 16
MAX_REQUEST_TOKENS = 1_000_000


def _is_int(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _invalid_params(params: object, chat: bool) -> str | None:
    """What is wrong with a request body's fields, or None: every field the server reads is
    checked for type and bounds before any work (one request must not stop the server)."""
    if not isinstance(params, dict):
        return "request body: expected a JSON object"
    n = params.get("n")
    if n is not None and not _is_int(n, 1, MAX_CHOICES):
        return f"n: expected an integer from 1 to {MAX_CHOICES}"
    tokens = params.get("max_tokens")
    if tokens is not None and not _is_int(tokens, 0, MAX_REQUEST_TOKENS):
        return f"max_tokens: expected an integer from 0 to {MAX_REQUEST_TOKENS}"
    stop = params.get("stop")
    stops = [stop] if isinstance(stop, str) else stop
    if stops is not None and (
        not isinstance(stops, list)
        or len(stops) > MAX_STOPS
        or not all(isinstance(item, str) for item in stops)
    ):
        return f"stop: expected a string or a list of at most {MAX_STOPS} strings"
    if chat:
        messages = params.get("messages")
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("content", ""), str) for m in messages
        ):
            return "messages: expected a list of objects with string content"
    return None


def cut_at_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """``text`` limited to ``max_tokens`` replay tokens, and whether it was cut."""
    matches = list(TOKEN.finditer(text))
    if len(matches) <= max_tokens:
        return text, False
    return (text[: matches[max_tokens - 1].end()] if max_tokens > 0 else ""), True


class ReplayApp:
    """The request handlers and counters (shared by the thread and process modes).

    Options:
    - ``reply``: ``Query -> text`` per choice (default :func:`echo_reply`, deterministic);
    - ``latency_s``: seconds before each answer, or ``prompt -> seconds``, or an async
      function of the prompt awaited before answering (e.g. to hold replies until enough
      requests are in flight);
    - ``failures``: HTTP statuses for each prompt's first attempts, e.g. ``(429, 503)`` (the
      third attempt succeeds), or ``(prompt key, attempt) -> status or None``; the key is the
      raw prompt, or the messages as canonical JSON for a chat;
    - ``retry_after_s``: sent as ``Retry-After`` with 429 and 503;
    - ``api_key``: required as ``Authorization: Bearer KEY`` (401 otherwise);
    - ``model``: the only model name served (404 for others);
    - ``max_choices``: serve at most this many choices, whatever ``n`` asks;
    - ``recorded``: answer from these recorded completions (:class:`Recorded`) instead of
      ``reply``; ``missing``: what a choice without a record gets, ``error`` (HTTP 400 naming
      the prompt hash) or ``echo`` (``reply``'s text);
    - ``reasoning``: ``Query -> text`` per chat choice, a reasoning model's thinking, sent apart
      from the content in the message's ``reasoning_field`` (``reasoning_content``, as vLLM's
      reasoning parsers; newer vLLM: ``reasoning``). As on a real server, ``max_tokens`` counts
      the thinking first: a long one leaves the content short or empty (``length``).
    """

    def __init__(
        self,
        *,
        reply: Reply = echo_reply,
        latency_s: float | Callable[[str], Any] = 0.0,
        failures: Failures = (),
        retry_after_s: float | None = None,
        api_key: str | None = None,
        model: str = "replay",
        max_choices: int | None = None,
        recorded: Recorded | None = None,
        missing: str = "error",
        reasoning: Reply | None = None,
        reasoning_field: str = "reasoning_content",
    ) -> None:
        if missing not in MISSING:
            raise ValueError(f"missing {missing!r}: expected one of {', '.join(MISSING)}")
        self.reply = reply
        self.reasoning = reasoning
        self.reasoning_field = reasoning_field
        self.recorded = recorded
        self.missing = missing
        self.max_choices = max_choices
        self.latency_s = latency_s
        self.failures = failures
        self.retry_after_s = retry_after_s
        self.api_key = api_key
        self.model = model
        self.attempts: dict[str, int] = {}
        self.requests = 0
        self.completions = 0
        self.failed = 0
        self.in_flight = 0
        self.max_in_flight = 0

    def stats(self) -> dict[str, int]:
        """Counters: completion-endpoint requests received, choices served, scripted or
        validation failures sent, requests in flight now and the most at once."""
        return {
            "requests": self.requests,
            "completions": self.completions,
            "failures": self.failed,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
        }

    def reset(self) -> None:
        """Zero the counters and forget the attempts seen per prompt."""
        self.attempts.clear()
        self.requests = self.completions = self.failed = self.max_in_flight = 0

    def build(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/replay/stats", self._stats)
        app.router.add_post("/replay/reset", self._reset)
        return app

    def _error(self, status: int, message: str, kind: str) -> web.Response:
        self.failed += 1
        body = {"error": {"message": message, "type": kind, "code": status}}
        headers = {}
        if status in (429, 503) and self.retry_after_s is not None:
            headers["Retry-After"] = f"{self.retry_after_s:g}"
        return web.json_response(body, status=status, headers=headers)

    def _unauthorized(self, request: web.Request) -> web.Response | None:
        if self.api_key is None:
            return None
        if request.headers.get("Authorization", "") == f"Bearer {self.api_key}":
            return None
        return self._error(401, "Incorrect API key provided.", "invalid_request_error")

    def _scripted_failure(self, key: str) -> int | None:
        attempt = self.attempts.get(key, 0)
        self.attempts[key] = attempt + 1
        if callable(self.failures):
            return self.failures(key, attempt)
        return self.failures[attempt] if attempt < len(self.failures) else None

    async def _models(self, request: web.Request) -> web.Response:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        entry = {"id": self.model, "object": "model", "created": 0, "owned_by": "replay"}
        return web.json_response({"object": "list", "data": [entry]})

    async def _stats(self, request: web.Request) -> web.Response:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        return web.json_response(self.stats())

    async def _reset(self, request: web.Request) -> web.Response:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        self.reset()
        return web.json_response(self.stats())

    async def _completions(self, request: web.Request) -> web.Response:
        return await self._serve(request, chat=False)

    async def _chat_completions(self, request: web.Request) -> web.Response:
        return await self._serve(request, chat=True)

    async def _serve(self, request: web.Request, chat: bool) -> web.Response:
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(request, chat)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request, chat: bool) -> web.Response:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        try:
            params = parse_json(await request.read())
        except ValueError:
            return self._error(400, "request body is not JSON", "invalid_request_error")
        if (invalid := _invalid_params(params, chat)) is not None:
            return self._error(400, invalid, "invalid_request_error")
        if params.get("model") != self.model:
            message = f"The model `{params.get('model')}` does not exist."
            return self._error(404, message, "NotFoundError")
        messages = params.get("messages") if chat else None
        if chat:
            if not isinstance(messages, list) or not messages:
                return self._error(400, "messages: expected a list", "invalid_request_error")
            users = [m.get("content", "") for m in messages if m.get("role") == "user"]
            prompt = users[-1] if users else ""
            key = json.dumps(messages, sort_keys=True)
        else:
            prompt = params.get("prompt")
            if not isinstance(prompt, str):
                return self._error(400, "prompt: expected a string", "invalid_request_error")
            key = prompt
        latency = self.latency_s(prompt) if callable(self.latency_s) else self.latency_s
        if inspect.isawaitable(latency):
            await latency
        elif latency > 0:
            await asyncio.sleep(latency)
        if (status := self._scripted_failure(key)) is not None:
            return self._error(status, f"scripted failure {status}", "server_error")
        if (unrecorded := self._unrecorded(Query(prompt, messages, params, 0))) is not None:
            return unrecorded
        return web.json_response(self._body(prompt, messages, params, chat))

    def _choices(self, params: dict[str, Any]) -> int:
        n = params.get("n") or 1  # checked by _invalid_params
        return n if self.max_choices is None else min(n, self.max_choices)

    def _unrecorded(self, query: Query) -> web.Response | None:
        """HTTP 400 when recorded completions are served and one of the choices has none."""
        if self.recorded is None or self.missing != "error":
            return None
        for choice in range(self._choices(query.params)):
            if self.recorded.lookup(replace(query, choice=choice)) is None:
                message = (
                    f"replay: no recorded completion for prompt sha256 {query_hash(query)} "
                    f"sample {choice}"
                )
                return self._error(400, message, "invalid_request_error")
        return None

    def _text(self, query: Query) -> str:
        recorded = None if self.recorded is None else self.recorded.lookup(query)
        return self.reply(query) if recorded is None else recorded

    def _body(self, prompt: str, messages: list | None, params: dict, chat: bool) -> dict[str, Any]:
        n = self._choices(params)  # max_choices: like servers that ignore or cap ``n``
        stop = params.get("stop") or ()
        stop = (stop,) if isinstance(stop, str) else tuple(stop)
        max_tokens = params.get("max_tokens")
        choices, completion_tokens = [], 0
        for index in range(n):
            query = Query(prompt, messages, params, index)
            text = self._text(query)
            thought = self.reasoning(query) if chat and self.reasoning is not None else None
            text, stopped = cut_at_stop(text, stop)
            cut = False
            budget = None if max_tokens is None else int(max_tokens)
            if thought is not None and budget is not None:
                thought, cut = cut_at_tokens(thought, budget)
                budget -= count_tokens(thought)
            if budget is not None:
                text, cut_text = cut_at_tokens(text, budget) if not cut else ("", True)
                cut = cut or cut_text
            completion_tokens += count_tokens(text) + count_tokens(thought or "")
            reason = "length" if cut and not stopped else "stop"
            if chat:
                message = {"role": "assistant", "content": text}
                if thought is not None:
                    message[self.reasoning_field] = thought
                choices.append({"index": index, "message": message, "finish_reason": reason})
            else:
                choices.append({"index": index, "text": text, "finish_reason": reason})
        self.completions += n
        seen = "".join(m.get("content", "") for m in messages) if messages else prompt
        prompt_tokens = count_tokens(seen)
        return {
            "id": f"replay-{self.requests}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _listening_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.setblocking(False)
    return sock


async def _start_site(app: web.Application, sock: socket.socket) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
    await runner.setup()
    # A deep accept backlog: hundreds of clients connect at once in the benchmarks.
    await web.SockSite(runner, sock, backlog=4096).start()
    return runner


async def _shutdown(runner: web.AppRunner) -> None:
    """Close the site, then cancel handlers still running (slow replies) and wait for them."""
    await runner.cleanup()
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


class ReplayServer(ReplayApp):
    """The replay server on a background thread with its own event loop; a context manager.

    Takes :class:`ReplayApp`'s options (``reply``, ``latency_s``, ``failures``,
    ``retry_after_s``, ``api_key``, ``model``, ``max_choices``) plus ``port`` (0: a free one).
    """

    def __init__(self, *, port: int = 0, host: str = "127.0.0.1", **options: Any) -> None:
        super().__init__(**options)
        self.host = host
        self._sock = _listening_socket(host, port)
        self.port: int = self._sock.getsockname()[1]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        """The OpenAI base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> ReplayServer:
        """Start serving; returns once the socket accepts requests."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="replay-server", daemon=True)
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(_start_site(self.build(), self._sock), loop)
        self._runner = future.result(timeout=30)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._loop is None or self._thread is None:
            return
        if self._runner is not None:
            cleanup = asyncio.run_coroutine_threadsafe(_shutdown(self._runner), self._loop)
            with contextlib.suppress(Exception):
                cleanup.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self._sock.close()
        self._loop = self._thread = self._runner = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Run the replay server in the foreground until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m codereasoner.models.replay_server",
        description="A scripted OpenAI-compatible server on 127.0.0.1: echo replies, or the "
        "completions recorded in --completions.",
    )
    parser.add_argument("--port", type=int, default=8001, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--model", default="replay", help="the only model name served")
    parser.add_argument(
        "--fail", default="", help="HTTP statuses for each prompt's first attempts, e.g. 429,503"
    )
    parser.add_argument("--retry-after", type=float, default=None, help="Retry-After seconds")
    parser.add_argument(
        "--api-key-env", default=None, help="require the key held in this environment variable"
    )
    parser.add_argument(
        "--completions",
        default=None,
        help='answer from this JSON Lines file of {"prompt" | "prompt_hash", "sample", '
        '"completion"} records (e.g. a codereasoner export-generations file)',
    )
    parser.add_argument(
        "--missing",
        choices=MISSING,
        default="error",
        help="with --completions: what a prompt with no record gets (HTTP 400, or the echo)",
    )
    args = parser.parse_args(argv)
    recorded = None
    if args.completions is not None:
        try:
            recorded = Recorded.load(args.completions)
        except ValueError as exc:
            parser.error(str(exc))
    try:
        failures = tuple(int(part) for part in args.fail.split(",") if part.strip())
    except ValueError:
        parser.error(f"--fail {args.fail!r}: expected comma-separated HTTP statuses")
    api_key = os.environ.get(args.api_key_env) if args.api_key_env else None
    if args.api_key_env and not api_key:
        parser.error(f"--api-key-env {args.api_key_env}: the variable is unset or empty")
    app = ReplayApp(
        latency_s=args.latency,
        failures=failures,
        retry_after_s=args.retry_after,
        api_key=api_key,
        model=args.model,
        recorded=recorded,
        missing=args.missing,
    )
    try:
        sock = _listening_socket("127.0.0.1", args.port)
    except OSError as exc:
        parser.error(f"--port {args.port}: cannot listen ({exc.strerror or exc})")

    async def serve() -> None:
        runner = await _start_site(app.build(), sock)
        print(f"replay server on http://127.0.0.1:{sock.getsockname()[1]}/v1", flush=True)
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stopped.set)
        await stopped.wait()
        await _shutdown(runner)

    asyncio.run(serve())


if __name__ == "__main__":
    main()
