"""GRPO reward functions by name: what a recipe's ``rewards: [...]`` lists.

A new reward is one entry in :data:`REWARDS`: a name and a factory that receives the run's
:class:`~codereasoner.training.recipe.TrainArguments` and TRL's ``GRPOConfig`` and returns a
TRL reward function. A name with a dot is an import path instead (``my_rewards.brevity``, the
module found from the working directory too, as in TRL's scripts). Weights: TRL's
``reward_weights``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from codereasoner.execution import Limits
from codereasoner.training.recipe import RecipeError, TrainArguments
from codereasoner.training.rewards import (
    CodeReasoningReward,
    RewardConfig,
    format_reward,
    length_penalty,
    process_reward,
)

__all__ = ["REWARDS", "RewardContext", "check_rewards", "resolve_reward"]


@dataclass(frozen=True)
class RewardContext:
    """What a reward factory may read: our arguments and TRL's GRPO config."""

    train: TrainArguments
    config: Any  # trl.GRPOConfig


def _code_reasoning(context: RewardContext) -> CodeReasoningReward:
    train = context.train
    limits = Limits(
        timeout_s=train.sandbox_timeout,
        wall_timeout_s=2 * train.sandbox_timeout,
        memory_mb=train.sandbox_memory_mb,
    )
    config = RewardConfig(
        correct=train.reward_correct, max_chars=train.reward_max_chars, limits=limits
    )
    # eos ids are the trainer's own, set once it is built (see _set_eos_ids)
    return CodeReasoningReward(
        config,
        workers=train.sandbox_workers or _workers_per_process(),
        isolation=train.isolation,
        executor=train.executor,
    )


def _workers_per_process() -> int:
    """The cores, shared among the processes of this node (``accelerate launch`` starts one
    per GPU, each with its own reward)."""
    processes = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return max(1, (os.cpu_count() or 1) // max(processes, 1))


def _format(context: RewardContext) -> Callable[..., list[float]]:
    reward = partial(format_reward, weight=context.train.format_weight)
    reward.__name__ = "format"  # type: ignore[attr-defined]  # TRL logs rewards/<__name__>
    return reward


def _length(context: RewardContext) -> Callable[..., list[float]]:
    limit = context.config.max_completion_length
    reward = partial(
        length_penalty, max_length=limit, buffer=min(context.train.length_buffer, limit)
    )
    reward.__name__ = "length"  # type: ignore[attr-defined]
    return reward


def _process(context: RewardContext) -> Callable[..., list[float]]:
    reward = partial(process_reward, weight=context.train.process_weight)
    reward.__name__ = "process"  # type: ignore[attr-defined]
    return reward


# GRPO reward functions by name: a new reward is one entry here (weights: TRL's reward_weights).
REWARDS: dict[str, Callable[[RewardContext], Callable[..., Any]]] = {
    "code_reasoning": _code_reasoning,  # CodeReasoner's binary execution-verified reward
    "format": _format,  # tags present and well formed
    "length": _length,  # DAPO's soft over-long penalty
    "process": _process,  # false probed intermediate values cost credit (training/process.py)
}


def check_rewards(names: Sequence[str], weights: Sequence[float] | None, where: str) -> None:
    """RecipeError when a name is neither registered nor importable, or the weights do
    not match the rewards one to one."""
    if not names:
        raise RecipeError(f"{where}: `rewards` is empty; expected e.g. [code_reasoning]")
    if weights is not None and len(weights) != len(names):
        raise RecipeError(
            f"{where}: reward_weights has {len(weights)} values for {len(names)} rewards"
        )
    for name in names:
        if name not in REWARDS:
            _imported(name, where)


def resolve_reward(name: str, context: RewardContext, where: str) -> Any:
    """The reward function ``name`` stands for in this run."""
    if name in REWARDS:
        return REWARDS[name](context)
    return _imported(name, where)


def _imported(name: str, where: str) -> Callable[..., Any]:
    module_name, dot, attribute = name.rpartition(".")
    if not dot:
        raise RecipeError(
            f"{where}: unknown reward {name!r}; expected one of {', '.join(REWARDS)} "
            "or an import path such as my_rewards.brevity"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise RecipeError(f"{where}: reward {name!r} cannot be imported ({exc})") from None
    if not callable(function):
        raise RecipeError(f"{where}: reward {name!r} is not callable")
    return function
