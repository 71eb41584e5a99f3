"""Hugging Face transformers on a local folder or hub name: ``hf:PATH``.

torch and transformers are imported only when the model is loaded. Generation is batched with
left padding; rows with the same ``max_tokens`` share a batch, sorted by prompt length.

- temperature 0: greedy; one row per request, its text copied to every sample index;
- temperature > 0: one row per sample, sampled with its own ``torch.Generator`` seeded from
  (``Sampling.seed``, the sample index, the prompt), so a sample's text does not depend on the
  random draws of the other rows (only, through floating-point noise, on padding);
- stop sequences end a row's generation as soon as its text holds one, and the text is cut at
  the first one; ``finish_reason`` is ``stop`` (EOS or a stop sequence) or ``length``;
- chat requests use the tokenizer's chat template (generation prompt added) when it has one,
  else the system message and the prompt joined by a blank line.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codereasoner.models.base import BackendError, Completion, OnResult, Request, cut_at_stop

INSTALL = "pip install 'codereasoner[train]'"


@dataclass
class _Row:
    """One sequence to generate: a greedy request (all its samples) or one sampled sample."""

    request: int
    samples: tuple[int, ...]
    ids: list[int]
    temperature: float
    top_p: float
    stop: tuple[str, ...]
    seed: int
    stopped_at: int | None = field(default=None)


def sample_seed(seed: int | None, sample: int, prompt_hash: str) -> int:
    """The generator seed of one sample: stable across runs, batches and machines."""
    digest = hashlib.sha256(f"{seed}:{sample}:{prompt_hash}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def _import_torch() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise BackendError(
            f"hf backends need torch and transformers ({exc.name} is missing): {INSTALL}"
        ) from None
    return torch, transformers


class HFBackend:
    """A causal LM from transformers. Options: ``batch_size`` (rows per generate call, 16),
    ``device`` (``auto``: cuda when available, else cpu), ``dtype`` (``auto``: bfloat16 on
    cuda, float32 on cpu; or a torch dtype name), ``trust_remote_code`` (False)."""

    def __init__(
        self,
        path: str,
        *,
        batch_size: int = 16,
        device: str = "auto",
        dtype: str = "auto",
        trust_remote_code: bool = False,
    ) -> None:
        if batch_size < 1:
            raise BackendError(f"batch_size {batch_size}: expected a positive number")
        self.path = path
        self.batch_size = batch_size
        self.device_name = device
        self.dtype_name = dtype
        self.trust_remote_code = trust_remote_code
        self._model: Any = None
        self._tokenizer: Any = None
        self._torch: Any = None
        self._transformers: Any = None

    @property
    def model_id(self) -> str:
        return f"hf:{self.path}"

    def preflight(self) -> None:
        """Load the tokenizer and weights now (one-line :class:`BackendError` if that fails)."""
        self._load()

    def close(self) -> None:
        self._model = self._tokenizer = None

    def _load(self) -> None:
        if self._model is not None:
            return
        torch, transformers = _import_torch()
        device = self.device_name
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype_name = self.dtype_name
        if dtype_name == "auto":
            dtype_name = "bfloat16" if device.startswith("cuda") else "float32"
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype):
            raise BackendError(f"dtype {self.dtype_name!r}: expected auto or a torch dtype name")
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                self.path, trust_remote_code=self.trust_remote_code
            )
            # transformers < 4.56 calls the argument ``torch_dtype``
            major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
            dtype_argument = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
            model = transformers.AutoModelForCausalLM.from_pretrained(
                self.path,
                trust_remote_code=self.trust_remote_code,
                **{dtype_argument: dtype},
            )
            model.to(device).eval()
        except (OSError, ValueError, RuntimeError) as exc:
            reason = " ".join(str(exc).split())[:300]
            raise BackendError(
                f"hf:{self.path}: cannot load the model ({reason}); expected a local folder "
                "with config.json, weights and tokenizer files, or a hub name (set "
                "HF_HUB_OFFLINE=0 to download)"
            ) from None
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._torch, self._transformers = torch, transformers
        self._tokenizer, self._model = tokenizer, model
        self.device = device

    # -- encoding --------------------------------------------------------------------------

    def _encode(self, request: Request) -> list[int]:
        tokenizer = self._tokenizer
        if request.chat and getattr(tokenizer, "chat_template", None):
            messages = [{"role": "user", "content": request.prompt}]
            if request.system is not None:
                messages.insert(0, {"role": "system", "content": request.system})
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            return tokenizer(text, add_special_tokens=False)["input_ids"]
        text = request.prompt
        if request.chat and request.system:
            text = f"{request.system}\n\n{text}"
        return tokenizer(text)["input_ids"]

    def _rows(self, requests: Sequence[Request]) -> list[_Row]:
        rows = []
        for index, request in enumerate(requests):
            ids = self._encode(request)
            sampling = request.sampling
            digest = request.prompt_hash()
            if sampling.temperature == 0:
                groups: list[tuple[int, ...]] = [request.samples]
            else:
                groups = [(sample,) for sample in request.samples]
            for samples in groups:
                seed = sample_seed(sampling.seed, samples[0], digest)
                row = _Row(
                    index, samples, ids, sampling.temperature, sampling.top_p, sampling.stop, seed
                )
                rows.append(row)
        return rows

    # -- generation ------------------------------------------------------------------------

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        """Generate in batches; each request is reported once all its samples are done."""
        if not requests:
            return
        self._load()
        rows = self._rows(requests)
        by_length: dict[int, list[_Row]] = defaultdict(list)
        for row in rows:
            by_length[requests[row.request].sampling.max_tokens].append(row)
        missing = {index: len(request.samples) for index, request in enumerate(requests)}
        done: dict[int, list[Completion]] = defaultdict(list)
        for max_tokens, group in by_length.items():
            group.sort(key=lambda row: len(row.ids))
            for start in range(0, len(group), self.batch_size):
                batch = group[start : start + self.batch_size]
                for row, completions in zip(batch, self._run(batch, max_tokens), strict=True):
                    done[row.request] += completions
                    missing[row.request] -= len(completions)
                    if missing[row.request] == 0:
                        ordered = sorted(done.pop(row.request), key=lambda c: c.sample)
                        on_result(row.request, ordered)

    def _eos_ids(self) -> set[int]:
        configured = self._model.generation_config.eos_token_id
        ids = set(configured if isinstance(configured, list) else [configured])
        ids.add(self._tokenizer.eos_token_id)
        ids.discard(None)
        return ids

    def _run(self, batch: list[_Row], max_tokens: int) -> list[list[Completion]]:
        torch, transformers = self._torch, self._transformers
        tokenizer = self._tokenizer
        pad = tokenizer.pad_token_id
        width = max(len(row.ids) for row in batch)
        input_ids = torch.tensor([[pad] * (width - len(r.ids)) + r.ids for r in batch])
        mask = torch.tensor([[0] * (width - len(r.ids)) + [1] * len(r.ids) for r in batch])
        eos = self._eos_ids()
        config = transformers.GenerationConfig(
            max_new_tokens=max_tokens,
            do_sample=False,
            eos_token_id=sorted(eos),
            pad_token_id=pad,
        )
        processors = transformers.LogitsProcessorList()
        if any(row.temperature > 0 for row in batch):
            processors.append(_make_sampler(torch, transformers, batch))
        criteria = transformers.StoppingCriteriaList()
        if any(row.stop for row in batch):
            criteria.append(_make_stopper(torch, transformers, tokenizer, batch, width))
        started = time.perf_counter()
        with torch.inference_mode():
            output = self._model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=mask.to(self.device),
                generation_config=config,
                logits_processor=processors,
                stopping_criteria=criteria,
            )
        latency = time.perf_counter() - started
        ends = eos | {pad}  # finished rows are filled with padding
        results = []
        for row, generated in zip(batch, output[:, width:].tolist(), strict=True):
            results.append(self._completions(row, generated, ends, max_tokens, latency))
        return results

    def _completions(
        self, row: _Row, generated: list[int], eos: set[int], max_tokens: int, latency: float
    ) -> list[Completion]:
        reason = "length"
        if row.stopped_at is not None:
            generated, reason = generated[: row.stopped_at], "stop"
        end = next((i for i, token in enumerate(generated) if token in eos), None)
        if end is not None:
            generated, reason = generated[: end + 1], "stop"
        count = len(generated)
        if end is not None:
            generated = generated[:end]
        text = self._tokenizer.decode(generated, skip_special_tokens=True)
        text, stopped = cut_at_stop(text, row.stop)
        if stopped or count < max_tokens:  # a stop sequence, EOS, or a stopped row
            reason = "stop"
        return [
            Completion(sample, text, reason, len(row.ids), count, latency) for sample in row.samples
        ]


def _make_sampler(torch: Any, transformers: Any, batch: list[_Row]) -> Any:
    """A logits processor that samples each row with its own generator and leaves only the
    drawn token, so that greedy selection picks it (rows at temperature 0 pass through)."""
    generators = [torch.Generator().manual_seed(row.seed) for row in batch]

    hot = [index for index, row in enumerate(batch) if row.temperature > 0]
    temperatures = torch.tensor([[batch[index].temperature] for index in hot])

    class PerRowSampler(transformers.LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            # one device-to-host copy per step; the draws happen on the CPU generators
            logits = scores[hot].float().cpu() / temperatures
            all_probs = torch.softmax(logits, dim=-1)
            chosen = scores.clone()
            for probs, index in zip(all_probs, hot, strict=True):
                row = batch[index]
                if row.top_p < 1.0:
                    ordered, order = torch.sort(probs, descending=True)
                    outside = torch.cumsum(ordered, dim=-1) - ordered > row.top_p
                    probs[order[outside]] = 0.0
                token = torch.multinomial(probs, 1, generator=generators[index]).item()
                chosen[index].fill_(float("-inf"))
                chosen[index, token] = 0.0
            return chosen

    return PerRowSampler()


def _make_stopper(
    torch: Any, transformers: Any, tokenizer: Any, batch: list[_Row], width: int
) -> Any:
    """A stopping criterion that ends each row once its generated text holds a stop sequence,
    recording how many tokens it had then."""
    longest = max((len(stop) for row in batch for stop in row.stop), default=0)
    window = 4 * longest + 4  # a stop of L characters spans at most 4L byte-level tokens

    class StopSequences(transformers.StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            generated = input_ids.shape[1] - width
            flags = []
            for index, row in enumerate(batch):
                if row.stopped_at is None and row.stop:
                    tail = input_ids[index, width:][-window:].tolist()
                    text = tokenizer.decode(tail, skip_special_tokens=True)
                    if any(stop in text for stop in row.stop):
                        row.stopped_at = generated
                flags.append(row.stopped_at is not None)
            return torch.tensor(flags, dtype=torch.bool, device=input_ids.device)

    return StopSequences()
