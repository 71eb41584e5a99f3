"""Offline vLLM (``vllm.LLM``) on a GPU machine: ``vllm:PATH`` (a folder, a hub name, ``gguf:FILE``
or a packaged model's name such as ``smollm2-135m``: :mod:`codereasoner.models.packaged`).

vllm is imported only when the model is loaded. Requests go to ``LLM.generate`` in chunks of
``batch_size`` requests (vLLM schedules them itself), so results are reported, and can be
stored, chunk by chunk. Samples map to calls as in the OpenAI backend: temperature 0 is one
``n=1`` call whose text every sample gets; a seed gives one call per sample with
``seed + sample index``; otherwise one call with ``n=len(samples)``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codereasoner.models.base import (
    OPTIONAL_SAMPLING,
    BackendError,
    Completion,
    OnResult,
    Request,
    Sampling,
    cut_at_stop,
)
from codereasoner.models.packaged import local_model

INSTALL = "pip install 'codereasoner[vllm]' (on a machine with a CUDA GPU)"


@dataclass(frozen=True)
class Call:
    """One prompt sent to the engine: the samples it serves and its ``SamplingParams`` fields.

    With ``copies`` the single completion is given to every sample (greedy decoding)."""

    samples: tuple[int, ...]
    params: dict[str, Any]
    copies: bool = False


def sampling_params(sampling: Sampling, n: int = 1, seed: int | None = None) -> dict[str, Any]:
    """The ``vllm.SamplingParams`` keyword arguments for these settings."""
    params: dict[str, Any] = {
        "n": n,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.token_limit,
    }
    if sampling.stop:
        params["stop"] = list(sampling.stop)
    if seed is not None:
        params["seed"] = seed
    for name in OPTIONAL_SAMPLING:
        if getattr(sampling, name) is not None:
            params[name] = getattr(sampling, name)
    return params


def plan_calls(request: Request) -> list[Call]:
    """The engine calls that produce a request's samples."""
    sampling = request.sampling
    if sampling.temperature == 0:
        return [Call(request.samples, sampling_params(sampling, 1, sampling.seed), copies=True)]
    if sampling.seed is not None:
        return [
            Call((sample,), sampling_params(sampling, 1, sampling.seed + sample))
            for sample in request.samples
        ]
    return [Call(request.samples, sampling_params(sampling, len(request.samples)))]


def _import_vllm() -> Any:
    try:
        import vllm  # optional: the vllm extra, GPU only (mypy: ignore_missing_imports)
    except ImportError:
        raise BackendError(f"vllm backends need vllm, which is not installed: {INSTALL}") from None
    return vllm


class VLLMBackend:
    """A model served in-process by ``vllm.LLM``. Options: ``batch_size`` (requests per
    ``LLM.generate`` call, 1024), ``dtype`` (``auto``), ``tensor_parallel_size`` (1),
    ``gpu_memory_utilization`` (0.9), ``max_model_len`` (the model's), ``trust_remote_code``
    (False), ``engine_options`` (more ``vllm.LLM`` keyword arguments)."""

    def __init__(
        self,
        path: str,
        *,
        batch_size: int = 1024,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        trust_remote_code: bool = False,
        engine_options: dict[str, Any] | None = None,
    ) -> None:
        if batch_size < 1:
            raise BackendError(f"batch_size {batch_size}: expected a positive number")
        self.path = path
        self.batch_size = batch_size
        self.engine_options: dict[str, Any] = {
            "model": path,
            "dtype": dtype,
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "trust_remote_code": trust_remote_code,
        }
        if max_model_len is not None:
            self.engine_options["max_model_len"] = max_model_len
        self.engine_options.update(engine_options or {})
        self._vllm: Any = None
        self._llm: Any = None

    @property
    def model_id(self) -> str:
        return f"vllm:{self.path}"

    def preflight(self) -> None:
        """Import vllm and load the engine (one-line :class:`BackendError` if that fails)."""
        self._load()

    def close(self) -> None:
        self._llm = None

    def _load(self) -> None:
        if self._llm is not None:
            return
        vllm = _import_vllm()
        try:
            model = local_model(self.path)  # gguf:FILE and packaged models: a converted folder
        except BackendError as exc:
            raise BackendError(f"vllm:{self.path}: {exc}") from None
        try:
            self._llm = vllm.LLM(**{**self.engine_options, "model": model})
        except (OSError, ValueError, RuntimeError) as exc:
            reason = " ".join(str(exc).split())[:300]
            raise BackendError(f"vllm:{self.path}: cannot start the engine ({reason})") from None
        self._vllm = vllm

    def _prompt(self, request: Request) -> str:
        if not request.chat:
            return request.prompt
        tokenizer = self._llm.get_tokenizer()
        messages = [{"role": "user", "content": request.prompt}]
        if request.system is not None:
            messages.insert(0, {"role": "system", "content": request.system})
        if getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        return f"{request.system}\n\n{request.prompt}" if request.system else request.prompt

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        """Generate chunk by chunk; each request is reported when its chunk is done."""
        if not requests:
            return
        self._load()
        for start in range(0, len(requests), self.batch_size):
            self._generate_chunk(
                requests, range(start, min(start + self.batch_size, len(requests))), on_result
            )

    def _generate_chunk(
        self, requests: Sequence[Request], indices: range, on_result: OnResult
    ) -> None:
        prompts: list[str] = []
        params: list[Any] = []
        owners: list[tuple[int, Call]] = []
        for index in indices:
            request = requests[index]
            prompt = self._prompt(request)
            for call in plan_calls(request):
                prompts.append(prompt)
                params.append(self._vllm.SamplingParams(**call.params))
                owners.append((index, call))
        started = time.perf_counter()
        outputs = self._llm.generate(prompts, params, use_tqdm=False)
        latency = time.perf_counter() - started
        done: dict[int, list[Completion]] = {index: [] for index in indices}
        for (index, call), output in zip(owners, outputs, strict=True):
            stop = requests[index].sampling.stop
            prompt_tokens = len(output.prompt_token_ids or ())
            results = output.outputs * len(call.samples) if call.copies else output.outputs
            for sample, result in zip(call.samples, results, strict=True):
                text, stopped = cut_at_stop(result.text, stop)
                reason = "stop" if stopped else (result.finish_reason or "stop")
                done[index].append(
                    Completion(sample, text, reason, prompt_tokens, len(result.token_ids), latency)
                )
        for index in indices:
            on_result(index, sorted(done[index], key=lambda completion: completion.sample))
