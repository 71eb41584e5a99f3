"""The hf backend's generation loop against transformers' own ``generate``: the same greedy
ids, a shared prompt prefix computed once and reused, finished rows leaving the batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codereasoner.models import BackendError, Completion, Request, Sampling, load_backend
from codereasoner.models.hf import HFBackend
from codereasoner.models.hf_decode import MIN_PREFIX

HEADER = (
    "You are given a Python function and an assertion containing an input to the function. "
    "Complete the assertion with a literal containing the output.\n\n"
    "def f(n):\n    return n\nassert f(17) == 17\n\n"
)
ITEMS = ["def f(x):\n    return x + 1\nassert f(3) ==", "def g(s):\n    return s[::-1]\n", "x"]


@pytest.fixture(scope="module")
def backend(tiny_model: Path) -> HFBackend:
    made = HFBackend(str(tiny_model), batch_size=8, device="cpu")
    made.preflight()
    return made


def _generate(backend: HFBackend, prompts: list[str], max_tokens: int) -> list[Completion]:
    found: dict[int, Completion] = {}
    requests = [Request(p, sampling=Sampling(max_tokens=max_tokens)) for p in prompts]
    backend.generate(requests, lambda index, done: found.__setitem__(index, done[0]))
    return [found[index] for index in range(len(prompts))]


def _reference(backend: HFBackend, prompt: str, max_tokens: int) -> list[int]:
    """transformers' own greedy generate, one prompt at a time (no padding)."""
    import torch

    tokenizer, model = backend._tokenizer, backend._model
    ids = torch.tensor([tokenizer(prompt)["input_ids"]])
    with torch.inference_mode():
        output = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_tokens,
            do_sample=False,
            eos_token_id=sorted(backend._eos),
            pad_token_id=tokenizer.pad_token_id,
        )
    generated = output[0, ids.shape[1] :].tolist()
    return generated


def test_greedy_ids_are_those_of_transformers_generate(backend: HFBackend) -> None:
    prompts = [HEADER + item for item in ITEMS] + ["def h():", "import os\n"]
    ours = _generate(backend, prompts, 20)
    tokenizer = backend._tokenizer
    for prompt, completion in zip(prompts, ours, strict=True):
        reference = _reference(backend, prompt, 20)
        ended = [i for i, token in enumerate(reference) if token in backend._eos]
        cut = reference[: ended[0]] if ended else reference
        assert completion.text == tokenizer.decode(cut, skip_special_tokens=True)
        assert completion.completion_tokens == (ended[0] + 1 if ended else 20)


def test_a_shared_prefix_is_computed_once_and_reused(backend: HFBackend, tiny_model: Path) -> None:
    backend._prefixes.clear()
    prompts = [HEADER + item for item in ITEMS]
    first = _generate(backend, prompts, 12)
    shared = backend._prefixes.ids
    assert len(shared) >= MIN_PREFIX
    tokenizer = backend._tokenizer
    assert tokenizer.decode(list(shared)).startswith(HEADER[:40])
    cache = backend._prefixes.cache
    # a later batch with the same header reuses the cached prefix (no new prefix pass)
    again = _generate(backend, [HEADER + "def k(a, b):\n    return a * b\n"], 12)
    assert backend._prefixes.cache is cache
    # and every answer equals the answer computed with no prefix at all
    alone = HFBackend(str(tiny_model), batch_size=1, device="cpu")
    one_by_one = _generate(alone, [*prompts, HEADER + "def k(a, b):\n    return a * b\n"], 12)
    assert not alone._prefixes.ids  # batches of one share no prefix
    assert [c.text for c in one_by_one] == [c.text for c in [*first, *again]]


def test_finished_rows_leave_the_batch(backend: HFBackend) -> None:
    sizes: list[int] = []

    def record(module: Any, args: Any, kwargs: Any) -> None:
        sizes.append(int(kwargs["input_ids"].shape[0]))

    full = _generate(backend, [HEADER + item for item in ITEMS], 16)
    stop = full[0].text[1:4]
    assert stop.strip()
    handle = backend._model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        found: dict[int, Completion] = {}
        requests = [
            Request(HEADER + ITEMS[0], sampling=Sampling(max_tokens=16, stop=(stop,))),
            *(Request(HEADER + item, sampling=Sampling(max_tokens=16)) for item in ITEMS[1:]),
        ]
        backend.generate(requests, lambda index, done: found.__setitem__(index, done[0]))
    finally:
        handle.remove()
    assert found[0].finish_reason == "stop" and found[0].completion_tokens is not None
    assert found[0].completion_tokens < 16
    assert sizes[0] == len(ITEMS)  # the first pass holds every row
    assert min(sizes) < len(ITEMS)  # later passes run without the finished row
    assert sizes == sorted(sizes, reverse=True)


def test_threads_sets_torchs_cpu_threads_and_refuses_a_negative_count(tiny_model: Path) -> None:
    import torch

    before = torch.get_num_threads()
    try:
        backend = HFBackend(str(tiny_model), threads=1)
        backend.preflight()
        assert torch.get_num_threads() == 1
        (completion,) = _generate(backend, ["x"], max_tokens=2)
        assert completion.completion_tokens == 2
    finally:
        torch.set_num_threads(before)
    with pytest.raises(BackendError, match=r"threads -1: expected 0"):
        load_backend(f"hf:{tiny_model}", threads=-1)
