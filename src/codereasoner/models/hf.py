"""Hugging Face transformers on a local folder or hub name: ``hf:PATH``.

torch and transformers are imported only when the model is loaded. Generation is batched: rows
with the same ``max_tokens`` share a batch, sorted by prompt length, and run through
:func:`codereasoner.models.hf_decode.decode` (a finished row leaves the batch at once; a prompt
prefix the rows share is computed once and kept for the next batches).

- temperature 0: greedy; one row per request, its text copied to every sample index;
- temperature > 0: one row per sample, sampled with its own ``torch.Generator`` seeded from
  (``Sampling.seed``, the sample index, the prompt), so a sample's text does not depend on the
  random draws of the other rows (only, through floating-point noise, on padding);
- stop sequences end a row's generation as soon as its text holds one, and the text is cut at
  the first one; ``finish_reason`` is ``stop`` (EOS or a stop sequence) or ``length``. Besides
  the tokenizer's EOS, a chat template's end-of-turn token (``<|im_end|>``, ``<end_of_turn>``,
  ``<|eot_id|>``) ends a row;
- a request is reported as soon as its rows are finished, not when its batch ends, and a
  watcher (:meth:`HFBackend.watch`) hears where the current batch is (tokens generated, rows
  finished) at most every half second;
- chat requests use the tokenizer's chat template (generation prompt added) when it has one,
  else the system message and the prompt joined by a blank line;
- ``PATH`` may also be ``gguf:FILE`` or a packaged model's name (``smollm2-135m``,
  ``gemma3-270m``): converted once into a cached folder (:mod:`codereasoner.models.packaged`).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codereasoner.extras import missing
from codereasoner.files import read_text_bounded
from codereasoner.models.base import (
    BackendError,
    Completion,
    GenerationProgress,
    OnProgress,
    OnResult,
    Request,
    cut_at_stop,
    folder_fingerprint,
)
from codereasoner.models.hf_decode import DecodeRow, PrefixCache, decode
from codereasoner.models.model_names import check_model_name
from codereasoner.models.packaged import local_model, packaged_names

INSTALL = "pip install 'codereasoner[train]'"
# Chat templates end a turn with one of these; generation stops there as at EOS.
END_OF_TURN = ("<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>")
PROGRESS_EVERY_S = 0.5


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
    top_k: int = 0
    repetition_penalty: float = 1.0
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
    cuda, float32 on cpu; or a torch dtype name), ``threads`` (torch's CPU threads; 0: torch's
    default, one per core), ``trust_remote_code`` (False)."""

    def __init__(
        self,
        path: str,
        *,
        batch_size: int = 16,
        device: str = "auto",
        dtype: str = "auto",
        threads: int = 0,
        trust_remote_code: bool = False,
        chat_template: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise BackendError(f"batch_size {batch_size}: expected a positive number")
        if threads < 0:
            raise BackendError(f"threads {threads}: expected 0 (torch's default) or more")
        absent = missing("torch", "transformers")
        if absent is not None:
            raise BackendError(
                f"hf backends need torch and transformers ({absent} is missing): {INSTALL}"
            )
        try:  # before torch is imported: a typo costs milliseconds, not a hub retry loop
            check_model_name(path)
        except BackendError as exc:
            raise BackendError(f"hf:{path}: {exc}") from None
        self.threads = threads
        self.path = path
        self.batch_size = batch_size
        self.device_name = device
        self.dtype_name = dtype
        self.trust_remote_code = trust_remote_code
        self.chat_template = chat_template  # a file, or one of the tokenizer's template names
        self._template_text = _template_file(chat_template)
        self._model: Any = None
        self._tokenizer: Any = None
        self._torch: Any = None
        self._transformers: Any = None
        self._watcher: OnProgress | None = None
        self._prefixes = PrefixCache()
        self.progress_every_s = PROGRESS_EVERY_S  # the watcher hears at most this often
        self._eos: set[int] = set()

    @property
    def model_id(self) -> str:
        return f"hf:{self.path}"

    def content_fingerprint(self) -> str:
        """For a local folder, its files' names, sizes and modification times: a model
        retrained into the same folder is another model, whose completions are not the old
        ones ("" for a hub name, a packaged model or a GGUF file: their names fix them)."""
        found = folder_fingerprint(Path(self.path).expanduser())
        if self.chat_template is None:
            return found
        template = self._template_text or f"name:{self.chat_template}"
        digest = hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]
        return f"{found}+template:{digest}" if found else f"template:{digest}"

    def preflight(self) -> None:
        """Load the tokenizer and weights now (one-line :class:`BackendError` if that fails)."""
        self._load()

    def close(self) -> None:
        self._model = self._tokenizer = None
        self._prefixes.clear()

    def watch(self, watcher: OnProgress | None) -> None:
        """Hear where the current batch is while :meth:`generate` runs (None: stop)."""
        self._watcher = watcher

    def _load(self) -> None:
        if self._model is not None:
            return
        torch, transformers = _import_torch()
        if self.threads:
            torch.set_num_threads(self.threads)
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
            folder = local_model(self.path)
        except BackendError as exc:
            raise BackendError(f"hf:{self.path}: {exc}") from None
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                folder, trust_remote_code=self.trust_remote_code
            )
            # transformers < 4.56 calls the argument ``torch_dtype``
            major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
            dtype_argument = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
            model = transformers.AutoModelForCausalLM.from_pretrained(
                folder,
                trust_remote_code=self.trust_remote_code,
                **{dtype_argument: dtype},
            )
            model.to(device).eval()
        except BackendError:
            raise
        except Exception as exc:  # a folder is untrusted input: any failure to read it is one line
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            raise BackendError(
                f"hf:{self.path}: cannot load the model ({reason}); expected a local folder "
                "with config.json, weights and tokenizer files, gguf:FILE, a packaged model "
                f"({packaged_names()}), or a hub name (set HF_HUB_OFFLINE=0 to download)"
            ) from None
        if self.chat_template is not None:
            tokenizer.chat_template = self._chosen_template(tokenizer)
        check_chat_template(tokenizer, f"hf:{self.path}")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._torch, self._transformers = torch, transformers
        self._tokenizer, self._model = tokenizer, model
        self.device = device
        self._eos = self._end_ids()

    def _chosen_template(self, tokenizer: Any) -> str:
        """``chat_template``'s text: the file's, or the tokenizer's template of that name."""
        if self._template_text is not None:
            return self._template_text
        named = getattr(tokenizer, "chat_template", None)
        if isinstance(named, dict) and isinstance(named.get(self.chat_template), str):
            return str(named[self.chat_template])
        names = ", ".join(named) if isinstance(named, dict) else "none"
        raise BackendError(
            f"hf:{self.path}: chat_template {self.chat_template!r}: no such file, and not one of "
            f"the tokenizer's template names ({names})"
        )

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
                    index,
                    samples,
                    ids,
                    sampling.temperature,
                    sampling.top_p,
                    sampling.stop,
                    seed,
                    sampling.top_k or 0,
                    sampling.repetition_penalty or 1.0,
                )
                rows.append(row)
        return rows

    # -- generation ------------------------------------------------------------------------

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        """Generate in batches; each request is reported once all its samples are done, which
        may be before its batch ends."""
        if not requests:
            return
        self._load()
        rows = self._rows(requests)
        by_length: dict[int, list[_Row]] = defaultdict(list)
        for row in rows:
            by_length[requests[row.request].sampling.token_limit].append(row)
        missing = {index: len(request.samples) for index, request in enumerate(requests)}
        done: dict[int, list[Completion]] = defaultdict(list)

        def deliver(row: _Row, completions: list[Completion]) -> None:
            done[row.request] += completions
            missing[row.request] -= len(completions)
            if missing[row.request] == 0:
                ordered = sorted(done.pop(row.request), key=lambda c: c.sample)
                on_result(row.request, ordered)

        batches = []
        for max_tokens, group in by_length.items():
            group.sort(key=lambda row: len(row.ids))
            for start in range(0, len(group), self.batch_size):
                batches.append((max_tokens, group[start : start + self.batch_size]))
        for number, (max_tokens, batch) in enumerate(batches, 1):
            self._run(batch, max_tokens, deliver, (number, len(batches)))

    def _end_ids(self) -> set[int]:
        """The ids that end a row: EOS (configured and the tokenizer's) and the chat template's
        end-of-turn token."""
        tokenizer = self._tokenizer
        configured = self._model.generation_config.eos_token_id
        ids = set(configured if isinstance(configured, list) else [configured])
        ids.add(tokenizer.eos_token_id)
        for token in END_OF_TURN:
            if token in tokenizer.all_special_tokens or token in tokenizer.get_added_vocab():
                ids.add(tokenizer.convert_tokens_to_ids(token))
        ids.discard(None)
        ids.discard(tokenizer.unk_token_id)
        return {int(i) for i in ids}

    def _run(
        self,
        batch: list[_Row],
        max_tokens: int,
        deliver: Callable[[_Row, list[Completion]], None],
        position: tuple[int, int],
    ) -> None:
        torch, tokenizer = self._torch, self._tokenizer
        pad = tokenizer.pad_token_id
        ends = self._eos | {pad}
        started = time.perf_counter()

        def finish(index: int, generated: list[int], stopped_at: int | None) -> None:
            row = batch[index]
            row.stopped_at = stopped_at
            latency = time.perf_counter() - started
            deliver(row, self._completions(row, generated, ends, max_tokens, latency))

        rows = [
            DecodeRow(r.ids, r.temperature, r.top_p, r.seed, r.stop, r.top_k, r.repetition_penalty)
            for r in batch
        ]
        with torch.inference_mode():
            decode(
                torch,
                self._transformers,
                self._model,
                rows,
                pad=pad,
                eos=self._eos,
                max_tokens=max_tokens,
                decode_tail=lambda ids: tokenizer.decode(ids, skip_special_tokens=True),
                finish=finish,
                progress=self._progress(position, max_tokens),
                prefixes=self._prefixes,
            )

    def _progress(
        self, position: tuple[int, int], max_tokens: int
    ) -> Callable[[int, int, int], None]:
        """A callback (tokens, rows done, rows) that tells the watcher, at most every
        ``PROGRESS_EVERY_S``."""
        last = [0.0]

        def tell(tokens: int, finished: int, rows: int) -> None:
            watcher = self._watcher
            now = time.monotonic()
            if watcher is None or (now - last[0] < self.progress_every_s and finished < rows):
                return
            last[0] = now
            watcher(GenerationProgress(*position, tokens, max_tokens, finished, rows))

        return tell

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


TEMPLATE_SECONDS = 10.0  # a chat template renders a long chat in well under this
TEMPLATE_BYTES = 1 << 20  # a chat template file is read this far
TEMPLATE_MAX_CHARS = 1 << 20  # what it may turn that chat into
_PROBE_CHAT = [
    {"role": "system", "content": "You are a helpful assistant. " * 20},
    {"role": "user", "content": "def f(x):\n    return x\n" * 200},
]


def read_chat_template(path: Path) -> str:
    """A chat template file's text (at most ``TEMPLATE_BYTES``); BackendError (one line,
    without the option's name: callers say where it came from) otherwise."""
    try:
        text = read_text_bounded(path, TEMPLATE_BYTES)
    except FileNotFoundError:
        raise BackendError(f"{path}: no such file; expected a Jinja chat template file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BackendError(f"{path}: cannot read it ({exc})") from None
    if not text.strip():
        raise BackendError(f"{path}: empty file; expected a Jinja chat template")
    return text


def _template_file(given: str | None) -> str | None:
    """The text of a chat template file (None: no option, or a template's name)."""
    if given is None or not Path(given).expanduser().is_file():
        return None
    try:
        return read_chat_template(Path(given).expanduser())
    except BackendError as exc:
        raise BackendError(f"chat_template {exc}") from None


def check_chat_template(tokenizer: Any, where: str) -> None:
    """A model folder's chat template is untrusted code (Jinja, rendered by transformers in its
    sandboxed environment, which bounds neither time nor size): it renders a long chat once,
    in a child process killed after ``TEMPLATE_SECONDS``, and must give a text of bounded size.
    BackendError (one line) otherwise; nothing to check without a template."""
    if not getattr(tokenizer, "chat_template", None):
        return
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_render_probe, args=(tokenizer, writer), daemon=True)
    child.start()
    writer.close()
    try:
        ready = reader.poll(TEMPLATE_SECONDS)
        outcome = reader.recv() if ready else None
    except (EOFError, OSError):
        outcome = ("error", "the rendering process died")
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        reader.close()
    if outcome is None:
        raise BackendError(
            f"{where}: its chat template takes over {TEMPLATE_SECONDS:.0f} s to render a chat "
            "(a loop that does not end?); refused"
        )
    status, detail = outcome
    if status != "ok":
        raise BackendError(f"{where}: its chat template does not render ({detail})")


def _render_probe(tokenizer: Any, writer: Any) -> None:
    try:
        text = tokenizer.apply_chat_template(
            _PROBE_CHAT, tokenize=False, add_generation_prompt=True
        )
        if not isinstance(text, str):
            outcome = ("error", f"it gives {type(text).__name__}, not text")
        elif len(text) > TEMPLATE_MAX_CHARS:
            outcome = ("error", f"it turns a chat into over {TEMPLATE_MAX_CHARS:,} characters")
        else:
            outcome = ("ok", "")
    except Exception as exc:  # the template's own error, whatever it is
        outcome = ("error", " ".join(f"{type(exc).__name__}: {exc}".split())[:200])
    writer.send(outcome)
    writer.close()
