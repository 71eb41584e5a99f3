"""A completion the code reward cannot score (a sandbox failure: None) is masked by TRL even when
the recipe lists other reward terms: a real ``GRPOTrainer`` step on the tiny model, built from a
recipe by our trainer builder, with the registered ``process`` term and a reward by import path.

TRL masks a completion (advantage 0, out of its group's mean and std) only where every reward
returns None, so the other terms must return None where the code reward does. The code reward
here is the real one, with its verdicts on the group replaced by [None, 2, 0, 2] (as if the
sandbox had failed on the first completion); nothing of TRL or of the other terms is replaced.
"""

from __future__ import annotations

import asyncio
import json
import math
import pickle
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from codereasoner.execution import Pool
from codereasoner.training.grpo_rewards import REWARDS, RewardContext, build_rewards
from codereasoner.training.process import ProbedValue, probes_column
from codereasoner.training.recipe import Stage, load_recipe
from codereasoner.training.rewards import CodeReasoningReward, RewardBatch, Sample
from codereasoner.training.trainers import build_trainer
from tests.training.conftest import RECIPES

pytestmark = pytest.mark.train

VERDICTS = [None, 2.0, 0.0, 2.0]  # the code reward of the group's four completions
RANKED = [1.0, 0.5, 0.25, 0.0]  # the reward by import path, by position in the group
ROW = {
    "prompt": [{"role": "user", "content": "What does f(172) return?"}],
    "direction": "forward",
    "code": "def f(x):\n    total = x + 1\n    return total",
    "entry_point": "f",
    "call": "f(172)",
    "target": "173",
    "case_id": "c0",
    "probes": probes_column([ProbedValue("total", 2, "173", ("173",), ("173",))]),
}


class SandboxFailsOnFirst(CodeReasoningReward):
    """The code reward, grading for real on the shared pool, then given ``VERDICTS``."""

    def __init__(self, shared: Pool) -> None:
        super().__init__(workers=1)
        self.shared = shared
        self.gradings = 0

    def pool(self) -> Pool:
        return self.shared

    def _grade(self, samples: Sequence[Sample]) -> RewardBatch:
        self.gradings += 1
        return replace(super()._grade(samples), rewards=list(VERDICTS))


def advantages(totals: Sequence[float]) -> list[float]:
    """GRPO's group-normalised advantages (TRL: the unbiased std, plus 1e-4)."""
    mean, std = statistics.fmean(totals), statistics.stdev(totals)
    return [(total - mean) / (std + 1e-4) for total in totals]


@pytest.fixture
def reward() -> Iterator[Callable[[str, Any], None]]:
    """Replaces a registered reward for one test; the registry gets its own back after it."""
    saved: dict[str, Any] = {}

    def swap(name: str, factory: Any) -> None:
        saved.setdefault(name, REWARDS.get_entry(name))
        REWARDS.put(name, factory)

    yield swap
    for name, factory in saved.items():
        REWARDS.put(name, factory)


def test_a_sandbox_failure_is_masked_whatever_the_other_terms(
    tiny_model: Path,
    pool: Pool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reward: Callable[[str, Any], None],
) -> None:
    (tmp_path / "masking_ranked.py").write_text(  # a module name no other test imports
        f"def ranked(completions, **kwargs):\n    return {RANKED!r}[: len(completions)]\n"
    )
    monkeypatch.chdir(tmp_path)  # where a reward by import path is found
    data = tmp_path / "grpo.jsonl"
    data.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    code = SandboxFailsOnFirst(pool)
    reward("code_reasoning", lambda context: code)
    overrides = [
        f"model_name_or_path={tiny_model}", f"dataset={data}", f"output_dir={tmp_path / 'out'}",
        "rewards=[process,masking_ranked.ranked,code_reasoning]", "reward_weights=[1.0,1.0,1.0]",
        "num_generations=4", "per_device_train_batch_size=4", "max_completion_length=8",
        "max_steps=1", "save_strategy=no",
    ]  # fmt: skip
    trainer = build_trainer(load_recipe(Stage.GRPO, RECIPES / "cpu-tiny-grpo.yaml", overrides))
    trainer.train()

    logged = {name: list(values) for name, values in trainer._logs["rewards"].items()}
    assert list(logged) == ["process", "ranked", "code_reasoning"]  # TRL's names, kept
    totals = [sum(values[i] for values in logged.values()) for i in range(1, 4)]
    got = list(trainer._logs["advantages"])
    assert got == pytest.approx([0.0, *advantages(totals)], abs=1e-5)
    assert all(math.isnan(values[0]) for values in logged.values())  # every term: None
    assert logged["ranked"][1:] == RANKED[1:]
    assert totals == [2.0 + 0.5 + logged["process"][1], 0.25 + logged["process"][2], 2.0]
    assert code.gradings == 1  # the terms before it read its verdicts; TRL's call reused them
    history = next(entry for entry in trainer.state.log_history if "reward" in entry)
    assert {"rewards/process/mean", "rewards/ranked/mean"} <= set(history)


def test_every_term_abstains_where_the_code_reward_does_and_pickles(
    pool: Pool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reward: Callable[[str, Any], None],
) -> None:
    from trl.trainer.utils import get_callable_name, is_async_callable

    (tmp_path / "masking_terms.py").write_text(
        "def ranked(completions, **kwargs):\n    return [1.0] * len(completions)\n\n"
        "async def later(completions, **kwargs):\n    return [0.5] * len(completions)\n"
    )
    monkeypatch.chdir(tmp_path)
    names = ["format", "length", "masking_terms.ranked", "code_reasoning", "process"]
    overrides = [
        f"rewards=[{','.join([*names, 'masking_terms.later'])}]",
        "max_completion_length=8",
    ]
    recipe = load_recipe(Stage.GRPO, RECIPES / "cpu-tiny-grpo.yaml", overrides)
    context = RewardContext(recipe.train, recipe.config)
    real = build_rewards(recipe.train.rewards, context, "recipe")
    loaded = pickle.loads(pickle.dumps(real))  # TRL's async worker pickles its rewards
    expected = ["format", "length", "ranked", "code_reasoning", "process", "later"]
    for functions in (real, loaded):
        assert [get_callable_name(f) for f in functions] == expected
        assert [f.code is functions[3] for f in functions if f is not functions[3]] == [True] * 5
    assert [is_async_callable(f) for f in real] == [False] * 5 + [True]

    reward("code_reasoning", lambda context: SandboxFailsOnFirst(pool))
    functions = build_rewards(recipe.train.rewards, context, "recipe")
    columns = {key: [value] * 4 for key, value in ROW.items() if key != "prompt"}
    kwargs = {
        "prompts": [ROW["prompt"]] * 4,
        "completions": [[{"role": "assistant", "content": "<Answer>173</Answer>"}]] * 4,
        "completion_ids": [[1, 2]] * 4,
        **columns,
    }
    functions[3].eos_token_ids = frozenset({2})
    values = [asyncio.run(f(**kwargs)) if is_async_callable(f) else f(**kwargs) for f in functions]
    assert [column[0] for column in values] == [None] * 6
    assert [column[1:] for column in values][2:4] == [[1.0] * 3, VERDICTS[1:]]
    assert functions[3].gradings == 1
