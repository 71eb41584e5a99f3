"""The model interface every backend implements, and model spec strings.

A backend turns requests (a prompt, the sample indices wanted, sampling settings) into
completions, reporting each request's completions through a callback as soon as they are done,
so that callers can store them incrementally.

A :class:`ModelSpec` is a parsed spec string (``openai:NAME@URL``, ``hf:PATH``, ...); the spec
shapes, their parsing and the backends they name are declared in
:mod:`codereasoner.models.registry`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from codereasoner.tasks import Item


class BackendError(RuntimeError):
    """A failure that retrying will not fix (bad key, unknown model, unreachable server).

    The message is one line that names what failed and what to check.
    """


class BackendUnavailable(BackendError):
    """A failure a later attempt may get past: the model stopped answering (a server gone away
    or overloaded past every retry). Work already reported stays; re-running resumes."""


class SpecError(ValueError):
    """A model spec string that does not parse."""


DEFAULT_MAX_TOKENS = 1024
OPTIONAL_SAMPLING = ("top_k", "repetition_penalty")  # absent from a key when unset


@dataclass(frozen=True)
class Sampling:
    """Sampling settings; part of the completion cache key."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int | None = None  # None: the caller's default (a benchmark's, else 1024)
    stop: tuple[str, ...] = ()
    seed: int | None = None
    top_k: int | None = None  # None or 0: every token
    repetition_penalty: float | None = None  # None or 1: none (transformers' rule otherwise)

    @property
    def token_limit(self) -> int:
        """The most tokens a completion may have (``max_tokens``, else 1024)."""
        return DEFAULT_MAX_TOKENS if self.max_tokens is None else self.max_tokens

    def key(self) -> str:
        """Canonical JSON of the settings (the cache key's sampling part). Options left unset
        are not in it, so runs from before an option existed keep their keys."""
        data = asdict(self)
        data["stop"] = list(self.stop)
        for name in OPTIONAL_SAMPLING:
            if data[name] is None:
                del data[name]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Request:
    """Generate one completion per entry of ``samples`` (sample indices, e.g. ``(0, 1, 2)``).

    ``chat`` sends the prompt as one user message (with ``system`` before it when given);
    otherwise it is a raw completion prompt. ``item``, ``task`` (the benchmark) and ``style``
    (the prompt style) are read only by the oracle.
    """

    prompt: str
    samples: tuple[int, ...] = (0,)
    sampling: Sampling = field(default_factory=Sampling)
    chat: bool = False
    system: str | None = None
    item: Item | None = None
    task: str = ""
    style: str = ""

    def prompt_hash(self) -> str:
        return prompt_hash(self.prompt, self.chat, self.system)


def prompt_hash(prompt: str, chat: bool = False, system: str | None = None) -> str:
    """sha256 over what the model sees (the prompt, chat or raw, the system message)."""
    payload = json.dumps([prompt, chat, system], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Completion:
    """One sample's text. ``finish_reason``: ``stop``, ``length`` or what the backend said.
    ``reasoning``: a reasoning model's thinking when the server reports it apart from the text
    (:mod:`codereasoner.models.thinking`); never part of the text, never graded, not stored."""

    sample: int
    text: str
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    reasoning: str | None = None


OnResult = Callable[[int, list[Completion]], None]
"""Called with the request's index in the batch and its completions (one per sample, in order)."""


@dataclass(frozen=True)
class GenerationProgress:
    """Where a local backend is inside its current batch (a batch runs to its longest row, so
    a run's request count can stand still for minutes while work goes on)."""

    batch: int  # 1-based
    batches: int
    tokens: int  # generated so far by each unfinished row of the batch
    max_tokens: int
    rows_done: int
    rows: int

    def describe(self) -> str:
        return (
            f"batch {self.batch}/{self.batches}: {self.tokens}/{self.max_tokens} tokens, "
            f"{self.rows_done}/{self.rows} rows done"
        )


OnProgress = Callable[[GenerationProgress], None]


@runtime_checkable
class ReportsProgress(Protocol):
    """A backend that can say where it is inside a batch (the hf backend)."""

    def watch(self, watcher: OnProgress | None) -> None: ...


class Backend(Protocol):
    """What the runner needs from a model."""

    @property
    def model_id(self) -> str:
        """A stable name for the model and where it is served (e.g. ``openai:NAME@URL``); a
        run's identity is this without the server URL (:func:`model_identity`)."""
        ...

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        """Generate every request's samples, calling ``on_result`` once per request.

        Transient failures are retried inside; raises :class:`BackendError` for failures that
        retrying will not fix. Results already reported stay reported.
        """
        ...

    def preflight(self) -> None:
        """Check the model is usable before any work (server reachable, key accepted, model
        known, weights loadable); raises :class:`BackendError` with one clear line."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: the backend's registry name and the spec's parts (both empty for a spec
    that is the name alone). ``str`` gives the canonical spec string."""

    kind: str
    name: str = ""
    url: str = ""

    def __str__(self) -> str:
        text = f"{self.kind}:{self.name}" if self.name else self.kind
        return f"{text}@{self.url}" if self.url else text


def model_identity(model_id: str) -> str:
    """What a run is of: the model id without the server it is reached at. An ``@URL`` suffix
    with an http(s) URL (``openai:NAME@URL``) names where the model is served, not which
    model, so ``openai:qwen@http://node17:8000/v1`` and ``openai:qwen@http://node18:8000/v1``
    are both ``openai:qwen``: a run moved to another host or port resumes. Other ids
    (``hf:PATH``, ``vllm:PATH``, ``oracle``) are their own identity. The run store keys its
    run and its completion cache by this."""
    name, at, url = model_id.rpartition("@")
    if at and name and url.startswith(("http://", "https://")):
        return name
    return model_id


def folder_fingerprint(folder: Path) -> str:
    """A short hash of a folder's top-level files (names, sizes, modification times); "" when
    ``folder`` is no folder. Cheap whatever the weights weigh, and changed by any rewrite."""
    if not folder.is_dir():
        return ""
    digest = hashlib.sha256()
    try:
        for entry in sorted(os.scandir(folder), key=lambda found: found.name):
            if entry.is_file():
                found = entry.stat()
                digest.update(f"{entry.name}\0{found.st_size}\0{found.st_mtime_ns}\n".encode())
    except OSError:
        return ""
    return "files-" + digest.hexdigest()[:12]


def backend_identity(backend: Backend) -> str:
    """What a run is of and what its completions are cached under: the model's identity
    (:func:`model_identity`) and, when the backend has one, its content fingerprint (a local
    folder's files, an OpenAI backend's extra body fields) after a ``#``."""
    identity = model_identity(backend.model_id)
    fingerprint = getattr(backend, "content_fingerprint", None)
    found = fingerprint() if callable(fingerprint) else ""
    return f"{identity}#{found}" if found else identity


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the first stop sequence (excluded), and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def check_completions(request: Request, completions: Sequence[Completion]) -> None:
    """A backend's answer must hold exactly the requested samples, in order."""
    got = tuple(completion.sample for completion in completions)
    if got != request.samples:
        raise BackendError(f"backend returned samples {got}, expected {request.samples}")
