"""Any OpenAI-compatible server (vLLM, SGLang, Ollama, hosted APIs) over HTTP with aiohttp.

One event loop and one ``ClientSession`` per :meth:`OpenAIBackend.generate` call; at most
``concurrency`` HTTP requests in flight. How a request's samples become HTTP calls:

- temperature 0: one call with ``n=1``; greedy decoding gives every sample the same text, so it
  is copied to each sample index;
- a seed set: one call per sample with ``seed + sample index`` (sample *i* is reproducible
  whatever other samples are asked for with it, e.g. when a run resumes);
- otherwise: one call with ``n=len(samples)``, and further calls for the samples still missing
  when a server returns fewer choices (some ignore ``n``).

Retries: 408, 429, 5xx, connection errors and timeouts are retried up to ``max_retries`` times
with exponential backoff and full jitter, or after ``Retry-After`` when the server sends it;
when they are spent, :class:`BackendUnavailable` (a re-run may get past it). 401/403 (key),
404 (model or URL) and other 4xx raise :class:`BackendError` at once (a re-run cannot). When
every attempt has been failing for ``warn_after_s`` (10 s), a warning naming the URL and the
last error goes to the ``codereasoner.models.openai`` logger (``codereasoner eval`` prints it on
stderr), and again every ``warn_every_s`` (30 s) while the failures go on (never on a
request's last attempt: giving up is said by the error). A request in flight for ``warn_slow_s``
(300 s) is named in a warning, and a reply whose body has not all come ``body_timeout_s`` (60 s)
after its headers is a failed attempt: a server dripping its reply holds a request minutes, not
hours.

Token counts come from ``usage``: the completion tokens of a call with several choices are
shared out among them in proportion to their text lengths, thinking included (exact when
``n=1``).

A reasoning model's thinking that the server reports apart from the answer (a chat message's
``reasoning_content``, or ``reasoning`` in newer vLLM) goes to ``Completion.reasoning``, never
into the text.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import random
import re
import time
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from codereasoner.files import parse_json
from codereasoner.models.base import (
    OPTIONAL_SAMPLING,
    BackendError,
    BackendUnavailable,
    Completion,
    OnResult,
    Request,
    Sampling,
    cut_at_stop,
)

RETRYABLE = frozenset({408, 409, 425, 429})
log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class _Choice:
    text: str
    finish_reason: str
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning: str | None = None


REASONING_FIELDS = ("reasoning_content", "reasoning")  # vLLM's reasoning parsers, old and new
MAX_BODY_BYTES = 64 << 20  # a reply's body, read at most this far (n long choices fit)
MAX_TOKEN_COUNT = 10**9  # a usage count beyond this is not a count
# the body fields a request sets from the run's settings: extra_body may not replace them
REQUEST_FIELDS = frozenset(
    {"model", "messages", "prompt", "max_tokens", "temperature", "top_p", "n", "stop", "seed",
     "stream", "top_k", "repetition_penalty"}
)  # fmt: skip
_SURROGATES = re.compile("[\ud800-\udfff]")


class ReplyTooLarge(ValueError):
    pass


class ReplyTooSlow(ValueError):
    pass


async def read_bounded(
    response: aiohttp.ClientResponse, limit: int | None = None, within_s: float | None = None
) -> bytes:
    """The body, refused past ``limit`` bytes (default :data:`MAX_BODY_BYTES`), by its
    Content-Length or while it streams, and refused when it has not all come ``within_s``
    seconds after the headers (a server that drips its reply)."""
    limit = MAX_BODY_BYTES if limit is None else limit
    declared = response.content_length
    if declared is not None and declared > limit:
        raise ReplyTooLarge(f"the reply declares {declared} bytes, more than {limit}")
    chunks: list[bytes] = []
    size = 0

    async def read() -> None:
        nonlocal size
        async for chunk in response.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > limit:
                raise ReplyTooLarge(f"the reply is longer than {limit} bytes")
            _IN_FLIGHT.take(len(chunk))
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), within_s)
    except TimeoutError:
        raise ReplyTooSlow(
            f"the reply's body took longer than {within_s:g} s after its headers "
            f"({size} bytes came)"
        ) from None
    finally:
        _IN_FLIGHT.give(sum(map(len, chunks)))
    return b"".join(chunks)


class _ReplyBytes:
    """The bytes all replies being read hold at once, bounded: hostile servers answering many
    requests with long replies cannot drive the process past one reply's cap."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> None:
        if self.held + size > self.limit:
            raise ReplyTooLarge(
                f"the replies being read hold more than {self.limit:,} bytes together"
            )
        self.held += size

    def give(self, size: int) -> None:
        self.held = max(0, self.held - size)


_IN_FLIGHT = _ReplyBytes(MAX_BODY_BYTES)


def _text(value: object, field: str) -> str:
    """A string field of a reply (None or absent: empty), with lone surrogates (which JSON can
    spell and no store can encode) replaced."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{field} is a {type(value).__name__}, not a string")
    return _SURROGATES.sub("\ufffd", value)


def _count(value: object) -> int | None:
    """A usage token count, or None when it is not a plausible count."""
    if type(value) is int and 0 <= value <= MAX_TOKEN_COUNT:
        return value
    return None


def _reasoning(message: dict[str, Any]) -> str | None:
    """The thinking a server reported apart from the chat message's content, if any."""
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            return _text(value, name)
    return None


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_message(raw: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body itself."""
    try:
        body = parse_json(raw)
    except ValueError:
        return _one_line(raw.decode("utf-8", "replace")) or "(empty body)"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return _one_line(str(error["message"]))
    if isinstance(error, str):
        return _one_line(error)
    if isinstance(body, dict) and body.get("detail"):
        return _one_line(str(body["detail"]))
    return _one_line(raw.decode("utf-8", "replace"))


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def share_tokens(total: int | None, texts: Sequence[str]) -> list[int | None]:
    """Split a call's completion-token total among its choices in proportion to text length."""
    if total is None:
        return [None] * len(texts)
    if len(texts) == 1:
        return [total]
    weights = [len(text) for text in texts]
    whole = sum(weights)
    if whole == 0:
        shares = [total // len(texts)] * len(texts)
        shares[0] += total - sum(shares)
        return list(shares)
    shares = [total * weight // whole for weight in weights]
    shares[weights.index(max(weights))] += total - sum(shares)
    return list(shares)


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also when the caller already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        return executor.submit(asyncio.run, coroutine).result()


def _first_error(group: BaseExceptionGroup) -> BaseException:
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            return _first_error(error)
        if not isinstance(error, asyncio.CancelledError):
            return error
    return group.exceptions[0]


class OpenAIBackend:
    """An OpenAI-compatible server: ``openai:NAME@URL``.

    Options: ``concurrency`` (HTTP requests in flight, default 512), ``timeout_s`` (per HTTP
    request, default 600), ``connect_timeout_s`` (10), ``max_retries`` (8), ``backoff_s``
    (first backoff ceiling, 1.0, doubling up to ``backoff_max_s``, 60), ``api_key_env`` (the
    environment variable holding the key, ``OPENAI_API_KEY``; unset means no key is sent),
    ``extra_body`` (fields added to every request body, e.g. ``{"min_p": 0.05}``),
    ``warn_after_s`` and ``warn_every_s`` (when to warn about failures that go on, see the
    module), ``body_timeout_s`` (60: a reply's body must have come this long after its
    headers; servers that do not stream send the whole body at once), ``warn_slow_s`` (300: a
    warning names a request in flight this long).
    """

    def __init__(
        self,
        name: str,
        url: str,
        *,
        concurrency: int = 512,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
        max_retries: int = 8,
        backoff_s: float = 1.0,
        backoff_max_s: float = 60.0,
        api_key_env: str = "OPENAI_API_KEY",
        extra_body: dict[str, Any] | None = None,
        warn_after_s: float = 10.0,
        warn_every_s: float = 30.0,
        body_timeout_s: float = 60.0,
        warn_slow_s: float = 300.0,
    ) -> None:
        if concurrency < 1:
            raise BackendError(f"concurrency {concurrency}: expected a positive number")
        self.name = name
        self.url = url.rstrip("/")
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_retries = max(0, max_retries)
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.api_key_env = api_key_env
        self.extra_body = dict(extra_body or {})
        overriding = sorted(set(self.extra_body) & REQUEST_FIELDS)
        if overriding:
            raise BackendError(
                f"extra_body sets {', '.join(overriding)}, which every request sets itself from "
                "the run's settings (the cache keys them); use the matching option instead"
            )
        self._headers = {"Content-Type": "application/json"}
        key = os.environ.get(api_key_env, "")
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._random = random.Random()
        self.warn_after_s = warn_after_s
        self.warn_every_s = warn_every_s
        self.body_timeout_s = body_timeout_s
        self.warn_slow_s = warn_slow_s
        self._failing_since: float | None = None  # monotonic time of the first failure in a row
        self._warned_at: float | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIBackend({self.model_id!r}, concurrency={self.concurrency})"

    def content_fingerprint(self) -> str:
        """What besides the model and the sampling settings changes a completion: the fields
        ``extra_body`` adds to every request ("" when none)."""
        if not self.extra_body:
            return ""
        text = json.dumps(self.extra_body, sort_keys=True, ensure_ascii=True, default=str)
        return "body-" + hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def model_id(self) -> str:
        """``openai:NAME@URL``; a run's identity is ``openai:NAME`` (the URL may change)."""
        return f"openai:{self.name}@{self.url}"

    def close(self) -> None:
        """Nothing to release: sessions live only inside :meth:`generate`."""

    # -- preflight -------------------------------------------------------------------------

    def preflight(self) -> None:
        """Check the server answers, accepts the key and serves the model; one-line
        :class:`BackendError` otherwise."""
        _run(self._preflight())

    async def _preflight(self) -> None:
        timeout = aiohttp.ClientTimeout(total=min(30.0, self.timeout_s))
        async with aiohttp.ClientSession(timeout=timeout, headers=self._headers) as session:
            status, raw = await self._probe(session, "GET", "/models", None)
            if status == 200:
                served = self._served_models(raw)
                if served is None or self.name in served:
                    return
                listed = ", ".join(sorted(served)[:10]) or "none"
                raise BackendError(
                    f"{self.url} does not serve model {self.name!r} (it serves: {listed}); "
                    f"use openai:<one of them>@{self.url}"
                )
            if status not in (404, 405):
                self._raise_for(status, raw, "/models")
            # No model listing here: try a one-token completion instead.
            body = {"model": self.name, "prompt": "1", "max_tokens": 1, "temperature": 0}
            status, raw = await self._probe(session, "POST", "/completions", body)
            if status != 200:
                self._raise_for(status, raw, "/completions")

    async def _probe(
        self, session: aiohttp.ClientSession, method: str, path: str, body: dict | None
    ) -> tuple[int, bytes]:
        try:
            async with session.request(method, self.url + path, json=body) as response:
                return response.status, await read_bounded(response)
        except ReplyTooLarge as exc:
            raise BackendError(f"{self.url}{path}: {exc}") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise BackendError(
                f"cannot reach {self.url} ({_describe(exc)}): is the server running, and is "
                "the URL right (OpenAI-compatible servers usually end in /v1)?"
            ) from None

    @staticmethod
    def _served_models(raw: bytes) -> set[str] | None:
        try:
            data = parse_json(raw).get("data")
            return {_text(entry["id"], "id") for entry in data}
        except (ValueError, AttributeError, KeyError, TypeError):
            return None

    def _raise_for(self, status: int, raw: bytes, path: str) -> None:
        message = _error_message(raw)
        if status in (401, 403):
            key_state = "is set" if "Authorization" in self._headers else "is unset"
            raise BackendError(
                f"{self.url} rejected the API key (HTTP {status}: {message}); check "
                f"${self.api_key_env} (it {key_state})"
            )
        if status == 404:
            raise BackendError(
                f"{self.url}{path}: HTTP 404 ({message}); check the model name "
                f"{self.name!r} and that the URL is the API base (usually ending in /v1)"
            )
        raise BackendError(f"{self.url}{path}: HTTP {status} ({message})")

    # -- generation ------------------------------------------------------------------------

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        """Generate every request's samples, reporting each request once its samples are in."""
        if requests:
            _run(self._generate(requests, on_result))

    async def _generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        limit = self.concurrency
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=limit, ttl_dns_cache=300)
        timeout = aiohttp.ClientTimeout(total=self.timeout_s, sock_connect=self.connect_timeout_s)
        semaphore = asyncio.Semaphore(limit)
        pending = iter(enumerate(requests))
        async with aiohttp.ClientSession(
            connector=connector, timeout=timeout, headers=self._headers
        ) as session:

            async def worker() -> None:
                for index, request in pending:
                    on_result(index, await self._complete(session, semaphore, request))

            try:
                async with asyncio.TaskGroup() as group:
                    for _ in range(min(limit, len(requests))):
                        group.create_task(worker())
            except BaseExceptionGroup as group:
                raise _first_error(group) from None

    async def _complete(
        self, session: aiohttp.ClientSession, semaphore: asyncio.Semaphore, request: Request
    ) -> list[Completion]:
        sampling = request.sampling
        started = time.perf_counter()
        if sampling.temperature == 0:
            choices = await self._call(session, semaphore, request, 1, sampling.seed)
            texts = [choices[0]] * len(request.samples)
        elif sampling.seed is not None:
            calls = [
                self._call(session, semaphore, request, 1, sampling.seed + sample)
                for sample in request.samples
            ]
            texts = [choices[0] for choices in await asyncio.gather(*calls)]
        else:
            texts = []
            while len(texts) < len(request.samples):
                wanted = len(request.samples) - len(texts)
                texts += (await self._call(session, semaphore, request, wanted, None))[:wanted]
        latency = time.perf_counter() - started
        return [
            Completion(
                sample=sample,
                text=choice.text,
                finish_reason=choice.finish_reason,
                prompt_tokens=choice.prompt_tokens,
                completion_tokens=choice.completion_tokens,
                latency_s=latency,
                reasoning=choice.reasoning,
            )
            for sample, choice in zip(request.samples, texts, strict=True)
        ]

    def _body(self, request: Request, n: int, seed: int | None) -> tuple[str, bytes]:
        sampling: Sampling = request.sampling
        body: dict[str, Any] = {"model": self.name}
        if request.chat:
            messages = [{"role": "user", "content": request.prompt}]
            if request.system is not None:
                messages.insert(0, {"role": "system", "content": request.system})
            body["messages"] = messages
        else:
            body["prompt"] = request.prompt
        body["max_tokens"] = sampling.token_limit
        body["temperature"] = sampling.temperature
        body["top_p"] = sampling.top_p
        body["n"] = n
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if seed is not None:
            body["seed"] = seed
        for name in OPTIONAL_SAMPLING:  # vLLM's and TGI's extensions, sent only when set
            if getattr(sampling, name) is not None:
                body[name] = getattr(sampling, name)
        body.update(self.extra_body)
        path = "/chat/completions" if request.chat else "/completions"
        return path, json.dumps(body, ensure_ascii=False).encode("utf-8")

    async def _call(
        self,
        session: aiohttp.ClientSession,
        semaphore: asyncio.Semaphore,
        request: Request,
        n: int,
        seed: int | None,
    ) -> list[_Choice]:
        path, body = self._body(request, n, seed)
        reply = await self._post(session, semaphore, path, body)
        try:
            return self._choices(reply, request)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BackendError(
                f"{self.url}{path}: unexpected response shape ({type(exc).__name__}: {exc})"
            ) from None

    def _choices(self, reply: dict[str, Any], request: Request) -> list[_Choice]:
        if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list):
            raise ValueError("no list of choices")
        if not all(isinstance(choice, dict) for choice in reply["choices"]):
            raise ValueError("a choice is not an object")
        raw_choices = sorted(reply["choices"], key=lambda choice: _count(choice.get("index")) or 0)
        if not raw_choices:
            raise ValueError("no choices")
        usage = reply.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        stop = request.sampling.stop
        texts, reasons, thoughts = [], [], []
        for choice in raw_choices:
            thought = None
            if request.chat:
                message = choice.get("message") or {}
                if not isinstance(message, dict):
                    raise ValueError("message is not an object")
                text = _text(message.get("content"), "content")
                thought = _reasoning(message)
            else:
                text = _text(choice.get("text"), "text")
            reason = _text(choice.get("finish_reason"), "finish_reason")[:64] or "stop"
            if stop:
                # Servers differ on whether they strip the stop text; cut it here too.
                text, stopped = cut_at_stop(text, stop)
                reason = "stop" if stopped else reason
            texts.append(text)
            reasons.append(reason)
            thoughts.append(thought)
        generated = [(thought or "") + text for text, thought in zip(texts, thoughts, strict=True)]
        shares = share_tokens(_count(usage.get("completion_tokens")), generated)
        prompt_tokens = _count(usage.get("prompt_tokens"))
        return [
            _Choice(text, reason, prompt_tokens, share, thought)
            for text, reason, share, thought in zip(texts, reasons, shares, thoughts, strict=True)
        ]

    async def _post(
        self, session: aiohttp.ClientSession, semaphore: asyncio.Semaphore, path: str, body: bytes
    ) -> dict[str, Any]:
        url = self.url + path
        last = ""
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            try:
                async with semaphore, self._watched(url), session.post(url, data=body) as response:
                    status = response.status
                    raw = await read_bounded(response, within_s=self.body_timeout_s)
                    if status == 200:
                        reply: dict[str, Any] = parse_json(raw)
                        self._note_success()
                        return reply
                    wait = _retry_after(response.headers.get("Retry-After"))
            except (aiohttp.ClientError, TimeoutError) as exc:
                last = _describe(exc)
            except (ReplyTooLarge, ReplyTooSlow) as exc:
                last = str(exc)
            except ValueError:
                last = "the response is not JSON"
            else:
                if status not in RETRYABLE and status < 500:
                    self._raise_for(status, raw, path)
                last = f"HTTP {status} ({_error_message(raw)})"
            if attempt == self.max_retries:
                break  # no "still retrying" warning right before giving up
            raw = b""  # a failed reply is not held through the wait
            self._note_failure(url, last)
            await asyncio.sleep(self._backoff(attempt, wait))
        raise BackendUnavailable(
            f"{url}: gave up after {self.max_retries + 1} attempts; last: {last}"
        )

    @contextlib.asynccontextmanager
    async def _watched(self, url: str) -> AsyncIterator[None]:
        """Warn once when this request has been in flight ``warn_slow_s`` seconds."""
        started = time.monotonic()

        def warn() -> None:
            log.warning(
                "%s: a request has been in flight for %.0f s (it times out after %g s); is the "
                "server overloaded or sending its reply slowly?",
                url,
                time.monotonic() - started,
                self.timeout_s,
            )

        handle = asyncio.get_running_loop().call_later(self.warn_slow_s, warn)
        try:
            yield
        finally:
            handle.cancel()

    def _note_failure(self, url: str, last: str) -> None:
        """Warn when the attempts have all been failing for a while (a server gone away)."""
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        failing = now - self._failing_since
        due = self._warned_at is None or now - self._warned_at >= self.warn_every_s
        if failing >= self.warn_after_s and due:
            self._warned_at = now
            log.warning(
                "%s: every request has failed for %.0f s, still retrying (last: %s); is the "
                "server still up?",
                url,
                failing,
                last,
            )

    def _note_success(self) -> None:
        if self._warned_at is not None:
            log.info("%s: the server answers again", self.url)
        self._failing_since = self._warned_at = None

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max_s) + self._random.uniform(0, 0.1)
        ceiling = min(self.backoff_max_s, self.backoff_s * 2**attempt)
        return self._random.uniform(ceiling / 2, ceiling)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"connection failed: {exc.os_error.strerror or exc.os_error}"
    text = str(exc)
    return _one_line(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
