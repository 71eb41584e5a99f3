"""GRPO reward functions by name: what a recipe's ``rewards: [...]`` lists.

A new reward is one entry in :data:`REWARDS`: a name and a factory that receives the run's
:class:`~codereasoner.training.recipe.TrainArguments` and TRL's ``GRPOConfig`` and returns a
TRL reward function. A name with a dot is an import path instead (``my_rewards.brevity``, the
module found from the working directory too, as in TRL's scripts). Weights: TRL's
``reward_weights``.

TRL masks a completion (advantage 0, out of its group's mean and std) only where every reward
returns None. So in a run with ``code_reasoning``, :func:`build_rewards` makes every other term
return None where the code reward does (a sandbox failure): :class:`MaskedLikeCode`.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from codereasoner.execution import Limits
from codereasoner.registry import Registry
from codereasoner.training.arguments import RecipeError, TrainArguments
from codereasoner.training.rewards import (
    CodeReasoningReward,
    ProcessReward,
    RewardConfig,
    format_reward,
    length_penalty,
)

__all__ = [
    "CODE_REWARD",
    "REWARDS",
    "AsyncMaskedLikeCode",
    "MaskedLikeCode",
    "RewardContext",
    "build_rewards",
    "check_rewards",
    "masked_like",
    "resolve_reward",
]

CODE_REWARD = "code_reasoning"


@dataclass(frozen=True)
class RewardContext:
    """What a reward factory may read: our arguments, TRL's GRPO config and the run's code
    reward (None when the recipe does not list it)."""

    train: TrainArguments
    config: Any  # trl.GRPOConfig
    code: CodeReasoningReward | None = None


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


class NamedReward:
    """A reward function with fixed keyword arguments, under the recipe's name for it: TRL logs
    ``rewards/<__name__>`` and unwraps a ``functools.partial`` to the wrapped function's name
    (``length_penalty``), which the recipe never wrote. Picklable, as TRL's workers need."""

    def __init__(self, name: str, function: Callable[..., list[float]], **fixed: Any) -> None:
        self.__name__ = name
        self.function = function
        self.fixed = fixed

    def __call__(self, *args: Any, **kwargs: Any) -> list[float]:
        return self.function(*args, **{**kwargs, **self.fixed})


def _format(context: RewardContext) -> Callable[..., list[float]]:
    return NamedReward("format", format_reward, weight=context.train.format_weight)


def _length(context: RewardContext) -> Callable[..., list[float]]:
    limit = context.config.max_completion_length
    buffer = min(context.train.length_buffer, limit)
    return NamedReward("length", length_penalty, max_length=limit, buffer=buffer)


def _process(context: RewardContext) -> ProcessReward:
    if context.code is None:
        raise RecipeError(
            f"the `process` reward needs `{CODE_REWARD}` among the rewards: it credits true "
            "probed values only in completions whose answer is right"
        )
    return ProcessReward(context.code, context.train.process_weight)


# GRPO reward functions by name: a new reward is one entry here (weights: TRL's reward_weights).
RewardFactory = Callable[[RewardContext], Callable[..., Any]]
REWARDS: Registry[RewardFactory] = Registry("reward")
REWARDS.register(_code_reasoning, name=CODE_REWARD)  # the binary execution-verified reward
REWARDS.register(_format, name="format")  # tags present and well formed
REWARDS.register(_length, name="length")  # DAPO's soft over-long penalty
REWARDS.register(_process, name="process")  # true probed values earn, false ones cost


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


def build_rewards(names: Sequence[str], context: RewardContext, where: str) -> list[Any]:
    """The run's reward functions, in the recipe's order; with ``code_reasoning`` among them,
    every other term is masked where it is (:class:`MaskedLikeCode`)."""
    if CODE_REWARD not in names:
        return [resolve_reward(name, context, where) for name in names]
    code = resolve_reward(CODE_REWARD, context, where)
    context = replace(context, code=code)
    return [
        code if name == CODE_REWARD else masked_like(resolve_reward(name, context, where), code)
        for name in names
    ]


def masked_like(term: Callable[..., Any], code: CodeReasoningReward) -> Callable[..., Any]:
    """``term``, returning None wherever ``code`` does (a code reward masks itself)."""
    from trl.trainer.utils import is_async_callable

    if isinstance(term, CodeReasoningReward):
        return term
    return (
        AsyncMaskedLikeCode(term, code) if is_async_callable(term) else MaskedLikeCode(term, code)
    )


class _Masked:
    """A reward term and the code reward of its run: the term's value, or None where the code
    reward's is (the same batch's verdicts, graded once whichever runs first)."""

    def __init__(self, term: Callable[..., Any], code: CodeReasoningReward) -> None:
        self.term = term
        self.code = code

    @property
    def __name__(self) -> str:  # TRL's own name for the term: rewards/<name>/mean
        from trl.trainer.utils import get_callable_name

        return str(get_callable_name(self.term))

    def _masked(self, values: Sequence[float | None], **kwargs: Any) -> list[float | None]:
        verdicts = self.code.scored(**kwargs).rewards
        if len(values) != len(verdicts):
            return list(values)  # TRL reports the term's wrong length
        pairs = zip(verdicts, values, strict=True)
        return [None if verdict is None else value for verdict, value in pairs]


class MaskedLikeCode(_Masked):
    def __call__(self, **kwargs: Any) -> list[float | None]:
        return self._masked(self.term(**kwargs), **kwargs)


class AsyncMaskedLikeCode(_Masked):
    async def __call__(self, **kwargs: Any) -> list[float | None]:
        term: Callable[..., Awaitable[Sequence[float | None]]] = self.term
        return self._masked(await term(**kwargs), **kwargs)


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
