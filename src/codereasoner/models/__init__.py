"""Model backends behind one interface (see :mod:`codereasoner.models.base`).

:func:`load_backend` turns a spec string into a backend; heavy libraries (torch,
transformers, vllm) are imported only by the backend that needs them.
"""

from __future__ import annotations

from typing import Any

from codereasoner.models.base import (
    Backend,
    BackendError,
    Completion,
    ModelSpec,
    Request,
    Sampling,
    SpecError,
    parse_spec,
    prompt_hash,
)

OPTIONS = {
    "openai": {
        "concurrency",
        "timeout_s",
        "connect_timeout_s",
        "max_retries",
        "backoff_s",
        "backoff_max_s",
        "api_key_env",
        "extra_body",
    },
    "hf": {"batch_size", "device", "dtype", "trust_remote_code"},
    "vllm": {
        "batch_size",
        "dtype",
        "tensor_parallel_size",
        "gpu_memory_utilization",
        "max_model_len",
        "trust_remote_code",
        "engine_options",
    },
    "oracle": set(),
}


def load_backend(spec: str | ModelSpec, **options: Any) -> Backend:
    """The backend for a spec string (``openai:NAME@URL``, ``vllm:PATH``, ``hf:PATH``,
    ``oracle``).

    Options that do not apply to the spec's kind are ignored when ``None`` and rejected
    otherwise, so a CLI can pass all its flags through. Raises :class:`SpecError` for a bad
    spec or option, :class:`BackendError` when the backend's library is missing.
    """
    model = parse_spec(spec) if isinstance(spec, str) else spec
    given = {key: value for key, value in options.items() if value is not None}
    unknown = sorted(set(given) - OPTIONS[model.kind])
    if unknown:
        allowed = ", ".join(sorted(OPTIONS[model.kind])) or "none"
        raise SpecError(
            f"model {model}: option(s) {', '.join(unknown)} do not apply to {model.kind} "
            f"backends (they take: {allowed})"
        )
    if model.kind == "openai":
        from codereasoner.models.openai import OpenAIBackend

        return OpenAIBackend(model.name, model.url, **given)
    if model.kind == "hf":
        from codereasoner.models.hf import HFBackend

        return HFBackend(model.name, **given)
    if model.kind == "vllm":
        from codereasoner.models.vllm import VLLMBackend

        return VLLMBackend(model.name, **given)
    from codereasoner.models.oracle import OracleBackend

    return OracleBackend()


__all__ = [
    "Backend",
    "BackendError",
    "Completion",
    "ModelSpec",
    "Request",
    "Sampling",
    "SpecError",
    "load_backend",
    "parse_spec",
    "prompt_hash",
]
