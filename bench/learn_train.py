"""Training for ``bench/learn.py``: TRL's ``SFTTrainer`` and ``GRPOTrainer`` (with the project's
``CodeReasoningReward``), on CPU settings, keeping the weights at chosen steps so that the
number of steps can be chosen on the validation split without training again."""

from __future__ import annotations

import random
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import PreTrainedTokenizerFast, PrinterCallback, Qwen2ForCausalLM, TrainerCallback
from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

from codereasoner.training.rewards import CodeReasoningReward
from learn_model import Item, answer, prompt, reward_row

CPU_SETTINGS: dict[str, Any] = {
    "bf16": False,
    "gradient_checkpointing": False,
    "use_cpu": True,
    "report_to": "none",
    "save_strategy": "no",
    "dataloader_num_workers": 0,
    "disable_tqdm": True,
    "full_determinism": True,  # deterministic kernels, seeded everywhere
}

Weights = dict[str, torch.Tensor]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def weights(model: Qwen2ForCausalLM) -> Weights:
    """A copy of the model's weights (a few MB for the models here)."""
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


@dataclass
class Trained:
    """What a training run leaves: its weights at the kept steps and its logged figure."""

    snapshots: dict[int, Weights] = field(default_factory=dict)
    logged: list[float] = field(default_factory=list)


class Progress(TrainerCallback):
    """One stderr line per logging step (the stage, the step, the logged figures); keeps the
    model's weights at the steps in ``keep``."""

    def __init__(
        self, stage: str, keys: Sequence[str], keep: Collection[int], trained: Trained
    ) -> None:
        self.stage = stage
        self.keys = keys
        self.keep = keep
        self.trained = trained

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict | None = None, **_: Any
    ) -> None:
        shown = [f"{key} {logs[key]:.3f}" for key in self.keys if logs and key in logs]
        if shown:
            log(f"    {self.stage} step {state.global_step}/{state.max_steps}: {', '.join(shown)}")

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **_: Any) -> None:
        if state.global_step in self.keep and model is not None:
            self.trained.snapshots[state.global_step] = weights(model)


def train_sft(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    items: Sequence[Item],
    answer_format: str,
    *,
    steps: int,
    batch: int,
    learning_rate: float,
    keep: Collection[int],
    seed: int,
    folder: Path,
    log_every: int,
) -> Trained:
    """Supervised fine-tuning on the teacher's completions (loss on the completion only);
    returns the weights at the steps in ``keep`` and the logged losses."""
    rows = [
        {"prompt": prompt(case, direction), "completion": answer(case, direction, answer_format)}
        for case, direction in items
    ]
    args = SFTConfig(
        output_dir=str(folder),
        max_steps=steps,
        per_device_train_batch_size=batch,
        learning_rate=learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=max(steps // 20, 1),
        weight_decay=0.0,
        max_length=512,
        completion_only_loss=True,
        logging_steps=log_every,
        seed=seed,
        **CPU_SETTINGS,
    )
    trained = Trained()
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[Progress(f"sft-{answer_format}", ("loss",), keep, trained)],
    )
    trainer.remove_callback(PrinterCallback)  # Progress prints the figures, to stderr
    trainer.train()
    trained.logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return trained


def train_grpo(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    items: Sequence[Item],
    reward: CodeReasoningReward,
    *,
    steps: int,
    prompts_per_step: int,
    generations: int,
    learning_rate: float,
    max_completion: int,
    keep: Collection[int],
    seed: int,
    folder: Path,
    log_every: int,
) -> Trained:
    """GRPO rewarded by the project's reward; returns the weights at the steps in ``keep`` and
    the mean reward of each logged step."""
    rows = [reward_row(case, direction) for case, direction in items]
    random.Random(seed).shuffle(rows)
    args = GRPOConfig(
        output_dir=str(folder),
        max_steps=steps,
        per_device_train_batch_size=prompts_per_step * generations,
        num_generations=generations,
        max_completion_length=max_completion,
        learning_rate=learning_rate,
        lr_scheduler_type="constant",
        beta=0.0,
        mask_truncated_completions=True,
        temperature=1.0,
        use_vllm=False,
        logging_steps=log_every,
        seed=seed,
        **CPU_SETTINGS,
    )
    trained = Trained()
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[Progress("grpo", ("reward", "frac_reward_zero_std"), keep, trained)],
    )
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    trained.logged = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    return trained
