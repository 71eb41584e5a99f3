"""The transformers backend on a tiny random Qwen2 model built locally (no downloads)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codereasoner.models import BackendError, Completion, Request, Sampling, load_backend
from codereasoner.models.hf import HFBackend

PROMPTS = [
    "def f(x):\n    return x + 1",
    "import os",
    "class Stack:\n    def __init__(self):\n        self.items = []",
    "assert f(3) ==",
]


def run(model: HFBackend, requests: list[Request]) -> list[list[Completion]]:
    results: dict[int, list[Completion]] = {}

    def on_result(index: int, completions: list[Completion]) -> None:
        assert index not in results
        results[index] = completions

    model.generate(requests, on_result)
    assert sorted(results) == list(range(len(requests)))
    return [results[index] for index in range(len(requests))]


@pytest.fixture(scope="module")
def model(tiny_model: Path) -> HFBackend:
    made = load_backend(f"hf:{tiny_model}", batch_size=4, device="cpu")
    assert isinstance(made, HFBackend)
    made.preflight()
    return made


def texts(results: list[list[Completion]]) -> list[list[str]]:
    return [[c.text for c in completions] for completions in results]


def test_greedy_batched_equals_unbatched_and_is_deterministic(
    model: HFBackend, tiny_model: Path
) -> None:
    greedy = Sampling(max_tokens=12)
    requests = [Request(p, samples=(0, 1), sampling=greedy) for p in PROMPTS]
    batched = run(model, requests)
    one_by_one = HFBackend(str(tiny_model), batch_size=1, device="cpu")
    assert texts(run(one_by_one, requests)) == texts(batched)
    assert texts(run(model, requests)) == texts(batched)
    tokenizer = model._tokenizer
    for prompt, completions in zip(PROMPTS, batched, strict=True):
        assert [c.sample for c in completions] == [0, 1]
        assert completions[0].text == completions[1].text  # greedy: one text for all samples
        assert completions[0].prompt_tokens == len(tokenizer(prompt)["input_ids"])
        if completions[0].finish_reason == "length":
            assert completions[0].completion_tokens == 12
        else:
            assert completions[0].completion_tokens <= 12
    assert any(c[0].finish_reason == "length" for c in batched)


def test_stop_sequences_cut_the_text_and_end_generation(model: HFBackend) -> None:
    full = run(model, [Request(p, sampling=Sampling(max_tokens=16)) for p in PROMPTS])
    # a stop taken from the middle of each unstopped greedy text
    stops = [c[0].text[len(c[0].text) // 2 :][:3] for c in full]
    stopped = run(
        model,
        [
            Request(p, sampling=Sampling(max_tokens=16, stop=(s,)))
            for p, s in zip(PROMPTS, stops, strict=True)
        ],
    )
    for unstopped, stop, completions in zip(full, stops, stopped, strict=True):
        completion = completions[0]
        assert stop and stop in unstopped[0].text
        assert completion.text == unstopped[0].text[: unstopped[0].text.find(stop)]
        assert completion.finish_reason == "stop"
        assert completion.completion_tokens is not None
        assert completion.completion_tokens < 16  # generation ended early


def test_sampling_is_seeded_per_sample(model: HFBackend) -> None:
    hot = Sampling(temperature=1.0, max_tokens=10, seed=7)
    requests = [Request(p, samples=(0, 1, 2), sampling=hot) for p in PROMPTS[:2]]
    first = run(model, requests)
    assert texts(run(model, requests)) == texts(first)
    for completions in first:
        assert len({c.text for c in completions}) == 3  # three different samples
    alone = run(model, [Request(PROMPTS[0], samples=(2,), sampling=hot)])
    assert alone[0][0].text == first[0][2].text
    other_seed = run(
        model,
        [
            Request(
                PROMPTS[0], samples=(0,), sampling=Sampling(temperature=1.0, max_tokens=10, seed=8)
            )
        ],
    )
    assert other_seed[0][0].text != first[0][0].text
    # top_p close to 0 keeps only the most likely token: sampling becomes greedy
    narrow = Sampling(temperature=1.0, top_p=1e-9, max_tokens=10, seed=7)
    greedy = run(model, [Request(PROMPTS[0], sampling=Sampling(max_tokens=10))])
    assert run(model, [Request(PROMPTS[0], sampling=narrow)])[0][0].text == greedy[0][0].text


def test_chat_uses_the_template(model: HFBackend) -> None:
    tokenizer = model._tokenizer
    request = Request("hi", chat=True, system="sys", sampling=Sampling(max_tokens=4))
    completion = run(model, [request])[0][0]
    templated = tokenizer.apply_chat_template(
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert templated.endswith("<|im_start|>assistant\n")
    assert completion.prompt_tokens == len(
        tokenizer(templated, add_special_tokens=False)["input_ids"]
    )


def test_missing_model_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"^hf:.*nowhere: no such model folder") as caught:
        load_backend(f"hf:{tmp_path / 'nowhere'}")  # said before torch loads anything
    assert "\n" not in str(caught.value) and "train tiny-model" in str(caught.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendError, match=r"empty: a folder without config.json"):
        load_backend(f"hf:{tmp_path / 'empty'}")
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(BackendError, match="dtype"):
        HFBackend(str(tmp_path / "empty"), dtype="float12").preflight()


def test_missing_torch_names_the_install_command(tmp_path: Path) -> None:
    # A fresh interpreter in which importing torch fails, as on a core-only install.
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "from codereasoner.models import BackendError, load_backend\n"
        "try:\n"
        "    load_backend('hf:some/model').preflight()\n"
        "except BackendError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == (
        "hf backends need torch and transformers (torch is missing): "
        "pip install 'codereasoner[train]'"
    )
