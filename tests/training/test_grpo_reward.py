"""The TRL reward inside a real ``GRPOTrainer`` step on the tiny local model (training.md §3, §5).

A random tiny model never writes an ``<Answer>``, so the model is first taught, in a second or
two of plain next-token training, to answer each of two prompts (forward, backward) with a right
answer, a wrong one or a reasoning too long for ``max_completion_length``. Sampling then gives a
mix of right, wrong and truncated completions. A second reward with weight 0 records what the
trainer passed; the rewards the trainer logged must equal an independent rescoring of those
completions by the core scorer.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
import trl  # noqa: F401  (the train extra: make test installs it)

from codereasoner.execution import Pool
from codereasoner.training.rewards import CodeReasoningReward, Sample, score_batch

pytestmark = pytest.mark.train

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MAX_COMPLETION = 24
LONG = "<Reasoning>" + "step " * 8 + "</Reasoning>"
ROWS = [
    {
        "prompt": [{"role": "user", "content": "forward"}],
        "direction": "forward",
        "targets": ["<Answer>173</Answer>", "<Answer>174</Answer>", LONG + "<Answer>173</Answer>"],
    },
    {
        "prompt": [{"role": "user", "content": "backward"}],
        "direction": "backward",
        "targets": [
            "<Answer>f(172)</Answer>",
            "<Answer>f(1)</Answer>",
            LONG + "<Answer>f(172)</Answer>",
        ],
    },
]
CASE = {
    "code": "def f(x):\n    return x + 1",
    "entry_point": "f",
    "call": "f(172)",
    "target": "173",
}


class Recorder:
    """A reward of weight 0 that keeps every keyword argument TRL passed."""

    __name__ = "recorder"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> list[float]:
        self.calls.append(kwargs)
        return [0.0] * len(kwargs["completions"])


def teach(model_dir: Path, out: Path, rows: list[dict[str, Any]] = ROWS, steps: int = 80) -> Path:
    """Next-token training on the rows' targets, until sampling gives each of them."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    sequences = []
    for row in rows:
        prompt = tokenizer.apply_chat_template(
            row["prompt"], tokenize=False, add_generation_prompt=True
        )
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        for target in row["targets"]:
            target_ids = tokenizer(target + "<|im_end|>", add_special_tokens=False)["input_ids"]
            ids = torch.tensor([prompt_ids + target_ids])
            labels = ids.clone()
            labels[0, : len(prompt_ids)] = -100
            sequences.append((ids, labels))
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for _ in range(steps):
        loss = sum(model(input_ids=ids, labels=labels).loss for ids, labels in sequences)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def taught_model(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return teach(tiny_model, tmp_path_factory.mktemp("taught"))


def dataset() -> Any:
    from datasets import Dataset

    rows = [
        {"prompt": row["prompt"], "direction": row["direction"], "case_id": f"case-{i}", **CASE}
        for i, row in enumerate(ROWS)
    ]
    return Dataset.from_list(rows)


def test_grpo_logs_the_rewards_of_an_independent_rescoring(
    taught_model: Path, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(taught_model)
    eos = [tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
    args = GRPOConfig(
        output_dir=str(tmp_path),
        num_generations=8,
        per_device_train_batch_size=16,
        max_completion_length=MAX_COMPLETION,
        max_steps=1,
        learning_rate=1e-4,
        beta=0.0,
        reward_weights=[1.0, 0.0],
        mask_truncated_completions=True,
        use_vllm=False,
        bf16=False,
        gradient_checkpointing=False,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        seed=0,
        dataloader_num_workers=0,
    )
    recorder = Recorder()
    with CodeReasoningReward(eos_token_ids=eos, workers=2) as reward:
        trainer = GRPOTrainer(
            model=str(taught_model),
            reward_funcs=[reward, recorder],
            args=args,
            train_dataset=dataset(),
            processing_class=tokenizer,
        )
        trainer.train()
    assert reward._pool is None  # closed with the context

    (call,) = recorder.calls
    texts = [completion[-1]["content"] for completion in call["completions"]]
    ids = call["completion_ids"]
    samples = [
        Sample(d, c, e, k, t, i, text, truncated=not row or row[-1] not in eos)
        for d, c, e, k, t, i, text, row in zip(
            call["direction"],
            call["code"],
            call["entry_point"],
            call["call"],
            call["target"],
            call["case_id"],
            texts,
            ids,
            strict=True,
        )
    ]
    with Pool(1) as pool:
        rescored = score_batch(samples, pool)
    expected = [reward for reward in rescored.rewards if reward is not None]
    assert len(expected) == 16

    logged = trainer._logs["rewards"]["code_reasoning"]  # TRL's completions table
    assert list(logged) == expected
    assert list(trainer._logs["extra"]["outcome"]) == rescored.reasons()
    history = next(
        entry for entry in trainer.state.log_history if "rewards/code_reasoning/mean" in entry
    )
    assert math.isclose(history["rewards/code_reasoning/mean"], sum(expected) / 16, abs_tol=1e-6)
    truncation = rescored.metrics["truncation_rate"]
    assert history["code_reasoning/truncation_rate"] == truncation
    assert history["completions/clipped_ratio"] == pytest.approx(truncation)  # TRL's own count
    # the taught model gives a real mix: some right, some wrong or cut
    assert 2.0 in expected and 0.0 in expected, rescored.reasons()
