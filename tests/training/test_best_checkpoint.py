"""Evaluation during training, and the best checkpoint as the final model, through ``codereasoner
train`` on CPU with the tiny model: GRPO chooses by ``eval_reward``, SFT by ``eval_loss``; a
killed run resumes with its evaluations; the 7B recipes' evaluation settings parse."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codereasoner.training.curves import CURVES_JSONL, read_curves
from codereasoner.training.grpo_rewards import REWARDS, RewardContext
from codereasoner.training.recipe import RecipeError, Stage, load_recipe
from codereasoner.training.trainers import DONE_FILE
from tests.commands import invoke
from tests.training.conftest import CPU, RECIPES, Exported
from tests.training.test_train import TINY_GRPO, TINY_SFT, _wait_for_checkpoint

pytestmark = pytest.mark.train

EVAL = ["eval_strategy=steps", "eval_steps=1", "save_steps=1", "load_best_model_at_end=true"]
# The taught model answers two prompts right, wrong or too long; at this learning rate its
# held-out reward changes from one evaluation to the next, in no direction a test can rely on.
GRPO = [
    *EVAL, "metric_for_best_model=eval_reward", "per_device_eval_batch_size=8",
    "max_completion_length=24", "length_buffer=12", "learning_rate=1e-3",
]  # fmt: skip


def weights(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def same_weights(one: Path, other: Path) -> bool:
    import torch

    first, second = weights(one), weights(other)
    return first.keys() == second.keys() and all(
        torch.equal(first[name], second[name]) for name in first
    )


def evaluations(out: Path, metric: str) -> list[tuple[int, float]]:
    return [(entry["step"], entry[metric]) for entry in read_curves(out / CURVES_JSONL)
            if metric in entry]  # fmt: skip


def check_best(out: Path, metric: str, stdout: str, higher: bool = True) -> int:
    """The best evaluation's checkpoint is the folder's final model, and the run says so."""
    scores = evaluations(out, metric)
    value = max(v for _, v in scores) if higher else min(v for _, v in scores)
    step = next(s for s, v in scores if v == value)  # the first of equals, as transformers
    best = json.loads((out / DONE_FILE).read_text(encoding="utf-8"))["best"]
    assert best == {"checkpoint": f"checkpoint-{step}", "step": step, "metric": metric,
                    "value": pytest.approx(value)}  # fmt: skip
    said = " ".join(stdout.split())
    assert re.search(rf"is the best checkpoint, checkpoint-{step} \({metric} ", said), stdout
    assert same_weights(out, out / f"checkpoint-{step}")
    return step


SCRIPTED_BEST = 2  # the step whose evaluation the scripted reward makes the best
SCRIPTED_WEIGHT = 10.0  # above what the run's other rewards can add up to (code 1, length 0)


def _scripted(context: RewardContext) -> Any:
    """A reward that pays SCRIPTED_WEIGHT's share at step SCRIPTED_BEST and nothing elsewhere:
    in training a group's completions all get the same value (no advantage, the policy learns
    from the other rewards), in evaluation the best step is known before the run."""

    def scripted_best_step(completions: list[Any], trainer_state: Any, **_: Any) -> list[float]:
        paid = 1.0 if trainer_state.global_step == SCRIPTED_BEST else 0.0
        return [paid] * len(completions)

    return scripted_best_step


@pytest.fixture
def scripted_reward() -> Iterator[str]:
    REWARDS.register(_scripted, name="scripted_best_step")
    try:
        yield "scripted_best_step"
    finally:
        REWARDS.unregister("scripted_best_step")


@pytest.mark.slow
def test_grpo_ends_with_the_checkpoint_of_its_best_eval_reward(
    taught: tuple[Path, Path], tmp_path: Path, scripted_reward: str
) -> None:
    model, data = taught
    out = tmp_path / "grpo"
    done = invoke(
        "train", "grpo", "--config", str(TINY_GRPO), f"model_name_or_path={model}",
        f"dataset={data}", f"eval_dataset={data}", f"output_dir={out}", *GRPO, "max_steps=4",
        f"rewards=[code_reasoning,length,{scripted_reward}]",
        f"reward_weights=[1.0,1.0,{SCRIPTED_WEIGHT}]",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert [step for step, _ in evaluations(out, "eval_reward")] == [1, 2, 3, 4]
    assert {"eval_rewards/code_reasoning/mean", "eval_code_reasoning/accuracy/forward"} <= {
        key for entry in read_curves(out / CURVES_JSONL) for key in entry
    }  # the held-out answers, scored by the run's rewards
    assert check_best(out, "eval_reward", done.stdout) == SCRIPTED_BEST
    assert not same_weights(out, out / "checkpoint-4")  # the best model, not the last one


@pytest.mark.slow
def test_sft_ends_with_the_checkpoint_of_its_best_eval_loss(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    held_out = tmp_path / "held-out.jsonl"
    rows = exported.sft.read_text(encoding="utf-8").splitlines()
    held_out.write_text("\n".join(rows[:8]) + "\n", encoding="utf-8")
    out = tmp_path / "sft"
    done = invoke(
        "train", "sft", "--config", str(TINY_SFT), f"model_name_or_path={tiny_model}",
        f"dataset={exported.sft}", f"eval_dataset={held_out}", f"output_dir={out}",
        "max_steps=4", "eval_strategy=steps", "eval_steps=2", "save_steps=2",
        "load_best_model_at_end=true", "metric_for_best_model=eval_loss",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert [step for step, _ in evaluations(out, "eval_loss")] == [2, 4]
    check_best(out, "eval_loss", done.stdout, higher=False)


@pytest.mark.slow
def test_a_killed_run_resumes_with_its_evaluations(
    taught: tuple[Path, Path], tmp_path: Path
) -> None:
    model, data = taught
    out = tmp_path / "grpo"
    command = [
        sys.executable, "-m", "codereasoner", "train", "grpo", "--config", str(TINY_GRPO),
        f"model_name_or_path={model}", f"dataset={data}", f"eval_dataset={data}",
        f"output_dir={out}", *GRPO, "max_steps=6",
    ]  # fmt: skip
    first = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _wait_for_checkpoint(out, first, time.monotonic() + 600)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    assert not (out / DONE_FILE).exists()
    again = invoke(*command[3:])  # the resume, in this process
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming from" in again.stdout
    # every evaluation once, those before the kill too: the best is the whole run's
    assert [step for step, _ in evaluations(out, "eval_reward")] == list(range(1, 7))
    check_best(out, "eval_reward", again.stdout)


def test_evaluation_settings_are_checked_before_anything_loads(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    base = [f"model_name_or_path={tiny_model}", f"dataset={exported.grpo}", *CPU]
    mistakes = {
        "eval_strategy steps needs eval_dataset": ["eval_strategy=steps"],
        "save_steps (2) must equal eval_steps (1)": [
            f"eval_dataset={exported.grpo}", *EVAL, "save_steps=2", "metric_for_best_model=eval_reward",
        ],
        "GRPO's loss does not rank checkpoints": [f"eval_dataset={exported.grpo}", *EVAL],
        "GRPO's eval_loss does not rank checkpoints": [
            f"eval_dataset={exported.grpo}", *EVAL, "metric_for_best_model=eval_loss",
        ],
        "must be divisible by the number of generations": [
            f"eval_dataset={exported.grpo}", *EVAL, "metric_for_best_model=eval_reward",
            "per_device_eval_batch_size=3",
        ],
    }  # fmt: skip
    for message, extra in mistakes.items():
        with pytest.raises(RecipeError) as caught:
            load_recipe(Stage.GRPO, TINY_GRPO, [*base, *extra])
        assert message in str(caught.value) and "\n" not in str(caught.value)
    done = invoke("train", "grpo", "--config", str(TINY_GRPO), *base,
               f"output_dir={tmp_path / 'out'}", "eval_strategy=steps")  # fmt: skip
    assert done.returncode == 2 and "needs eval_dataset" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


COMMENTED = re.compile(r"^# (\w+): (\S+)")


def _commented_evaluation(path: Path) -> list[str]:
    """The recipe's commented evaluation settings, as overrides."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# Evaluation on held-out"))
    found = []
    for line in lines[start + 2 :]:
        match = COMMENTED.match(line)
        if not match:
            break
        found.append(f"{match.group(1)}={match.group(2)}")
    return found


@pytest.mark.parametrize(
    ("name", "stage", "metric"),
    [("grpo-qwen2.5-coder-7b", Stage.GRPO, "eval_reward"),
     ("sft-qwen2.5-coder-7b", Stage.SFT, "eval_loss")],
)  # fmt: skip
def test_the_7b_recipes_show_evaluation_settings_that_parse(
    name: str, stage: Stage, metric: str, exported: Exported
) -> None:
    path = RECIPES / f"{name}.yaml"
    shown = _commented_evaluation(path)
    assert {entry.split("=")[0] for entry in shown} >= {
        "eval_dataset", "eval_strategy", "eval_steps", "load_best_model_at_end",
        "metric_for_best_model",
    }  # fmt: skip
    data = exported.grpo if stage is Stage.GRPO else exported.sft
    recipe = load_recipe(
        stage, path, [*shown, f"dataset={data}", f"eval_dataset={data}"], hardware=False
    )
    config = recipe.config
    assert config.load_best_model_at_end and config.metric_for_best_model == metric
    assert config.eval_steps == config.save_steps  # every evaluation has its checkpoint
