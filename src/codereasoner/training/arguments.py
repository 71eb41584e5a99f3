"""The leaf of the training settings: :class:`TrainArguments` (what ``codereasoner train`` adds
to TRL's configs) and :class:`RecipeError`, imported by the recipe parser and the rewards alike
(neither imports the other for them)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RecipeError", "TrainArguments"]


class RecipeError(ValueError):
    """A recipe that cannot be used, in one line naming the file (or override) and the key."""


@dataclass
class TrainArguments:
    """The settings of a ``codereasoner train`` run that TRL does not have.

    Weights of the rewards are TRL's ``reward_weights``; LoRA is TRL's ``use_peft``/``lora_*``;
    checkpoints are TRL's ``save_strategy``/``save_steps``.
    """

    stage: str | None = field(
        default=None,
        metadata={"help": "sft or grpo: the command this recipe is for (checked when given)."},
    )
    dataset: str | None = field(
        default=None,
        metadata={
            "help": "Training data: `codereasoner export --format trl-sft` (sft) or "
            "`--format trl-grpo` (grpo) JSONL."
        },
    )
    eval_dataset: str | None = field(
        default=None, metadata={"help": "Held-out data in the same format (optional)."}
    )
    max_samples: int | None = field(
        default=None, metadata={"help": "Use only the first N rows of each dataset."}
    )
    rewards: list[str] = field(
        default_factory=lambda: ["code_reasoning"],
        metadata={
            "help": "GRPO reward functions by name (codereasoner.training.trainers.REWARDS); "
            "weights: TRL's reward_weights."
        },
    )
    reward_correct: float = field(
        default=2.0, metadata={"help": "The reward of a right answer (CodeReasoner: 2.0)."}
    )
    reward_max_chars: int = field(
        default=16_000, metadata={"help": "Longer completions score 0 without grading."}
    )
    length_buffer: int = field(
        default=256,
        metadata={
            "help": "The `length` reward: tokens before max_completion_length it ramps over."
        },
    )
    format_weight: float = field(
        default=0.1, metadata={"help": "The `format` reward's value for a well-formed completion."}
    )
    process_weight: float = field(
        default=1.0,
        metadata={
            "help": "The `process` reward's bound: a chain loses this when every probed "
            "variable is stated falsely, and earns it, with a right answer, when every one is "
            "stated truly (each variable's share of it)."
        },
    )
    sandbox_workers: int | None = field(
        default=None, metadata={"help": "Sandbox workers that grade answers (default: cores)."}
    )
    sandbox_timeout: float = field(
        default=1.0, metadata={"help": "CPU seconds per sandboxed backward answer."}
    )
    sandbox_memory_mb: int = field(
        default=512, metadata={"help": "Memory limit of a sandboxed backward answer."}
    )
    isolation: str = field(
        default="auto", metadata={"help": "Sandbox isolation: auto, bubblewrap or fallback."}
    )
    executor: str | None = field(
        default=None,
        metadata={
            "help": "Where answers run: local, ray or ray:ADDRESS (default: "
            "$CODEREASONER_EXECUTOR, else local)."
        },
    )
    curves: bool = field(
        default=True,
        metadata={"help": "Write train_curves.jsonl and train_curves.png into output_dir."},
    )
