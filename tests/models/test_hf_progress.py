"""The hf backend inside a batch: rows that end early are reported before the batch ends, a
watcher hears tokens and finished rows, and a chat template's end-of-turn token ends a row."""

from __future__ import annotations

from pathlib import Path

import pytest

from codereasoner.models import Completion, Request, Sampling, load_backend
from codereasoner.models.base import GenerationProgress
from codereasoner.models.hf import HFBackend

PROMPTS = ["def f(x):\n    return x + 1", "import os", "class Stack:", "assert f(3) =="]


@pytest.fixture(scope="module")
def model(tiny_model: Path) -> HFBackend:
    made = load_backend(f"hf:{tiny_model}", batch_size=4, device="cpu")
    assert isinstance(made, HFBackend)
    made.preflight()
    return made


def _greedy(model: HFBackend, max_tokens: int) -> list[Completion]:
    found: dict[int, Completion] = {}
    model.generate(
        [Request(p, sampling=Sampling(max_tokens=max_tokens)) for p in PROMPTS],
        lambda index, completions: found.__setitem__(index, completions[0]),
    )
    return [found[index] for index in range(len(PROMPTS))]


def test_rows_that_stop_early_are_reported_before_the_batch_ends(model: HFBackend) -> None:
    full = _greedy(model, 24)
    # a stop taken early in two of the texts: those rows end after a few tokens
    stops = [text.text[2:5] if i < 2 else "\x00never" for i, text in enumerate(full)]
    assert all(stop.strip() for stop in stops[:2])
    heard: list[GenerationProgress] = []
    seen_at_report: dict[int, GenerationProgress | None] = {}
    model.watch(heard.append)
    model.progress_every_s = 0.0  # every step
    try:
        model.generate(
            [
                Request(p, sampling=Sampling(max_tokens=24, stop=(s,)))
                for p, s in zip(PROMPTS, stops, strict=True)
            ],
            lambda index, _: seen_at_report.__setitem__(index, heard[-1] if heard else None),
        )
    finally:
        model.watch(None)
        model.progress_every_s = 0.5
    assert sorted(seen_at_report) == [0, 1, 2, 3]
    early = [seen_at_report[0], seen_at_report[1]]
    # reported while the batch was still generating, a few steps in
    assert all(p is not None and p.tokens < 12 and p.rows_done < 4 for p in early)
    assert heard[-1].rows_done == heard[-1].rows == 4
    assert heard[-1].batch == heard[-1].batches == 1
    assert "tokens" in heard[-1].describe()
    assert all(0 <= p.tokens <= 24 and p.max_tokens == 24 for p in heard)


def test_early_reports_hold_what_the_end_of_the_batch_would(
    model: HFBackend, tiny_model: Path
) -> None:
    """The same requests one at a time (nothing reported early) give the same completions."""
    full = _greedy(model, 16)
    stops = [text.text[3:6] or "\x00" for text in full]
    requests = [
        Request(p, sampling=Sampling(max_tokens=16, stop=(s,)))
        for p, s in zip(PROMPTS, stops, strict=True)
    ]
    batched: dict[int, Completion] = {}
    model.generate(requests, lambda i, c: batched.__setitem__(i, c[0]))
    alone = HFBackend(str(tiny_model), batch_size=1, device="cpu")
    single: dict[int, Completion] = {}
    alone.generate(requests, lambda i, c: single.__setitem__(i, c[0]))
    for index in range(len(PROMPTS)):
        assert batched[index].text == single[index].text
        assert batched[index].finish_reason == single[index].finish_reason
        assert batched[index].completion_tokens == single[index].completion_tokens


def test_end_of_turn_tokens_end_a_row(tiny_model: Path) -> None:
    """A model whose EOS is not its chat template's end of turn (Gemma: ``<eos>`` and
    ``<end_of_turn>``) still stops at the end of its turn."""
    backend = HFBackend(str(tiny_model), device="cpu")
    backend.preflight()
    tokenizer = backend._tokenizer
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    tokenizer.eos_token = "<|endoftext|>"
    backend._model.generation_config.eos_token_id = tokenizer.eos_token_id
    assert end_of_turn != tokenizer.eos_token_id
    assert backend._end_ids() == {tokenizer.eos_token_id, end_of_turn}
