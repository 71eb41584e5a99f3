"""The model backends, one declaration each, and everything that reads them.

A backend is one :class:`BackendType`: its spec prefix, the form of the spec's rest, how that
rest is parsed, the options it takes and where its class lives (imported only when a backend is
constructed, so that torch, transformers or vllm load only for the backend that needs them).
:func:`parse_spec`, :func:`load_backend`, their error messages and :func:`spec_help` all read
:data:`BACKENDS`; a new backend is one more entry in :data:`BUILTIN` (or one
:func:`register` call from outside the package).
"""

from __future__ import annotations

import importlib
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from codereasoner.models.base import Backend, BackendError, ModelSpec, SpecError
from codereasoner.registry import Registry, RegistryError
from codereasoner.values import top_level_indexes

__all__ = [
    "BACKENDS",
    "BUILTIN",
    "BackendType",
    "load_backend",
    "name_at_url",
    "parse_options",
    "parse_spec",
    "register",
    "spec_help",
    "spec_shapes",
    "unregister",
    "whole_rest",
]

Parse = Callable[[str], tuple[str, str]]
"""A spec's rest (after ``kind:``) -> the spec's ``(name, url)``; ``ValueError`` if malformed."""


def whole_rest(rest: str) -> tuple[str, str]:
    """The whole rest is the name (``hf:PATH``); it must not be empty."""
    if not rest:
        raise ValueError("empty")
    return rest, ""


def name_at_url(rest: str) -> tuple[str, str]:
    """``NAME@URL`` with an http(s) URL (split at the last ``@``; a trailing ``/`` dropped)."""
    name, at, url = rest.rpartition("@")
    if not at or not name or not url.startswith(("http://", "https://")):
        raise ValueError("expected NAME@URL with an http(s) URL")
    return name, url.rstrip("/")


@dataclass(frozen=True)
class BackendType:
    """One kind of backend.

    - ``name``: the spec's prefix (``openai`` in ``openai:NAME@URL``);
    - ``target``: ``module:Class``, imported when a backend is constructed; the class is called
      with the spec's parts (the name, then the URL when there is one) as positional arguments
      and the given options as keyword arguments;
    - ``summary``: a few words for help text;
    - ``form``: what follows ``name:`` in a spec, for help and errors (``NAME@URL``); empty
      when the spec is the name alone (``oracle``), which then takes no parts;
    - ``parse``: the rest -> ``(name, url)``, raising ``ValueError`` when malformed (default
      :func:`whole_rest`); only for backends with a ``form``. The spec it gives must print
      (``str(ModelSpec)``: ``name:NAME`` or ``name:NAME@URL``) as a string it parses back to;
    - ``hint``: said after ``expected <shape>`` when the rest is malformed;
    - ``options``: the keyword options the class takes through :func:`load_backend`.
    """

    name: str
    target: str
    summary: str
    form: str = ""
    parse: Parse | None = None
    hint: str = ""
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or any(char in self.name for char in ":@ \t\n"):
            raise ValueError(f"backend name {self.name!r}: expected a word without ':' or '@'")
        module, colon, attribute = self.target.partition(":")
        if not module or not colon or not attribute:
            raise ValueError(f"backend {self.name}: target {self.target!r}: expected module:Class")
        if not self.form and self.parse is not None:
            raise ValueError(f"backend {self.name}: a parse function needs a form (e.g. PATH)")
        if isinstance(self.options, str) or not all(isinstance(o, str) for o in self.options):
            raise ValueError(f"backend {self.name}: options must be a tuple of names")

    @property
    def shape(self) -> str:
        """The spec's shape for help and errors: ``openai:NAME@URL``, ``oracle``."""
        return f"{self.name}:{self.form}" if self.form else self.name

    @property
    def bare(self) -> bool:
        """Whether the spec is the name alone."""
        return not self.form

    def parse_rest(self, text: str, rest: str) -> ModelSpec:
        """The spec ``text`` whose part after ``name:`` is ``rest``; SpecError if malformed."""
        try:
            name, url = (self.parse or whole_rest)(rest)
        except ValueError:
            detail = f" {self.hint}" if self.hint else ""
            raise SpecError(f"model spec {text!r}: expected {self.shape}{detail}") from None
        return ModelSpec(self.name, name, url)

    def load(self) -> Callable[..., Any]:
        """The backend class, importing its module now; BackendError when that module (or one
        it imports) is not installed or lacks the class."""
        module, _, attribute = self.target.partition(":")
        try:
            loaded = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            raise BackendError(
                f"{self.name} backends cannot be loaded: {exc.name or module} is not installed"
            ) from None
        found: Callable[..., Any] | None = getattr(loaded, attribute, None)
        if found is None:
            raise BackendError(f"{self.name} backends: {module} has no {attribute}")
        return found


PATH_HINT = "(a local folder or hub name)"

BUILTIN: tuple[BackendType, ...] = (
    BackendType(
        "openai",
        "codereasoner.models.openai:OpenAIBackend",
        "any OpenAI-compatible server",
        form="NAME@URL",
        parse=name_at_url,
        hint="with an http(s) URL, e.g. openai:Qwen2.5-7B@http://127.0.0.1:8000/v1",
        options=(
            "concurrency",
            "timeout_s",
            "connect_timeout_s",
            "max_retries",
            "backoff_s",
            "backoff_max_s",
            "api_key_env",
            "extra_body",
            "body_timeout_s",
            "warn_after_s",
            "warn_every_s",
            "warn_slow_s",
        ),
    ),
    BackendType(
        "vllm",
        "codereasoner.models.vllm:VLLMBackend",
        "offline vLLM on a GPU",
        form="PATH",
        hint=PATH_HINT,
        options=(
            "batch_size",
            "dtype",
            "tensor_parallel_size",
            "gpu_memory_utilization",
            "max_model_len",
            "trust_remote_code",
            "engine_options",
        ),
    ),
    BackendType(
        "hf",
        "codereasoner.models.hf:HFBackend",
        "transformers on CPU or GPU",
        form="PATH",
        hint=PATH_HINT,
        options=("batch_size", "device", "dtype", "threads", "trust_remote_code", "chat_template"),
    ),
    BackendType(
        "oracle",
        "codereasoner.models.oracle:OracleBackend",
        "a self-check from the ground truth",
    ),
    BackendType(
        "trace",
        "codereasoner.models.trace_teacher:TraceTeacher",
        "a teacher writing chains from our exact trace",
    ),
    BackendType(
        "trace-corrupted",
        "codereasoner.models.trace_teacher:CorruptedTraceTeacher",
        "the trace teacher's control: wrong values, right answers",
    ),
)
"""The backends that ship with the package, in the order help text lists them."""

_backends: Registry[BackendType] = Registry("backend")
BACKENDS: Mapping[str, BackendType] = _backends
"""Every registered backend by name (read-only; change it with :func:`register`)."""


def register(backend: BackendType, *, replace: bool = False) -> BackendType:
    """Add a backend (``replace`` one of the same name); returns it. ValueError for a name
    already registered without ``replace``."""
    if backend.name in _backends and not replace:
        raise RegistryError(f"backend {backend.name!r} is already registered")
    return _backends.register(backend, replace=True)


def unregister(name: str) -> BackendType:
    """Remove a backend and return it; RegistryError (a KeyError) if there is none of that name."""
    return _backends.unregister(name)


for _backend in BUILTIN:
    register(_backend)
del _backend


def spec_shapes() -> tuple[str, ...]:
    """Every registered spec shape: ``("openai:NAME@URL", "vllm:PATH", "hf:PATH", "oracle", ...)``."""
    return tuple(backend.shape for backend in _backends.values())


def spec_help(*, summaries: bool = False) -> str:
    """The spec shapes as one phrase, ``openai:NAME@URL, vllm:PATH, hf:PATH, oracle, trace or trace-corrupted``; with
    ``summaries`` each shape is followed by its summary in parentheses."""
    parts = [
        f"{backend.shape} ({backend.summary})" if summaries else backend.shape
        for backend in _backends.values()
    ]
    if len(parts) < 2:
        return "".join(parts)
    return f"{', '.join(parts[:-1])} or {parts[-1]}"


def parse_spec(text: str) -> ModelSpec:
    """A spec string of a registered shape (:func:`spec_shapes`); SpecError otherwise."""
    text = text.strip()
    kind, sep, rest = text.partition(":")
    backend = _backends.get(kind)
    if backend is None or backend.bare == bool(sep):
        raise SpecError(f"model spec {text!r}: expected {spec_help()}")
    return ModelSpec(kind) if backend.bare else backend.parse_rest(text, rest)


def load_backend(spec: str | ModelSpec, **options: Any) -> Backend:
    """The backend for a spec string (or a :class:`ModelSpec`, checked the same way).

    Options that do not apply to the spec's kind are ignored when ``None`` and rejected
    otherwise, so a CLI can pass all its flags through. Raises :class:`SpecError` for a bad
    spec or option, :class:`BackendError` when the backend's library is missing.
    """
    model = parse_spec(spec if isinstance(spec, str) else str(spec))
    backend = _backends[model.kind]
    given = {key: value for key, value in options.items() if value is not None}
    unknown = sorted(set(given) - set(backend.options))
    if unknown:
        allowed = ", ".join(sorted(backend.options)) or "none"
        raise SpecError(
            f"model {model}: option(s) {', '.join(unknown)} do not apply to {model.kind} "
            f"backends (they take: {allowed})"
        )
    parts = () if backend.bare else (model.name, model.url) if model.url else (model.name,)
    made_by = backend.load()
    _check_option_types(model, made_by, given)
    made: Backend = made_by(*parts, **given)
    return made


def parse_options(text: str) -> dict[str, Any]:
    """Backend options from ``key=value,key=value`` (as lm-eval's ``--model_args``): each value
    read as JSON when it is JSON (``8``, ``0.5``, ``true``, ``null``, ``{"a": 1}``), as
    Python's ``True``/``False``/``None``, else as a string (``dtype=bfloat16``). Commas inside
    brackets or quotes do not split. SpecError for a part without ``key=``."""
    options: dict[str, Any] = {}
    for part in _top_level_split(text):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise SpecError(
                f"model options {text!r}: {part.strip()!r} is not key=value; expected e.g. "
                "batch_size=8,dtype=bfloat16"
            )
        options[key] = _option_value(value.strip())
    return options


def _top_level_split(text: str) -> list[str]:
    cuts = [index for index in top_level_indexes(text) if text[index] == ","]
    parts = [text[a + 1 : b] for a, b in zip([-1, *cuts], [*cuts, len(text)], strict=True)]
    return [part for part in parts if part.strip()]


_PYTHON_WORDS = {"True": True, "False": False, "None": None}


def _option_value(text: str) -> Any:
    if text in _PYTHON_WORDS:
        return _PYTHON_WORDS[text]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _check_option_types(
    model: ModelSpec, made_by: Callable[..., Any], given: dict[str, Any]
) -> None:
    """SpecError naming an option whose value is not of the type the backend declares (an
    option typed ``int`` given ``'eight'``), before the backend is built."""
    try:
        hints = typing.get_type_hints(made_by.__init__)
    except (NameError, TypeError, AttributeError):
        return
    for key, value in given.items():
        expected = hints.get(key)
        if expected is None or _fits(value, expected):
            continue
        shown = getattr(expected, "__name__", None) or str(expected).replace("typing.", "")
        raise SpecError(f"model {model}: option {key}={value!r}: expected {shown}")


def _fits(value: Any, expected: Any) -> bool:
    if expected is Any:
        return True
    choices = typing.get_args(expected) if typing.get_origin(expected) in _UNIONS else (expected,)
    for choice in choices:
        origin = typing.get_origin(choice) or choice
        if choice is type(None) and value is None:
            return True
        if origin is float and isinstance(value, int | float) and not isinstance(value, bool):
            return True
        if origin is int and isinstance(value, bool):
            continue
        if isinstance(origin, type) and isinstance(value, origin):
            return True
    return False


_UNIONS = (typing.Union, types.UnionType)
