"""One GRPO algorithm in both recipes: the TRL recipes (parsed as ``train grpo --dry-run`` parses
them, without their GPUs) and ``recipes/verl-grpo.sh`` (its overrides composed by verl 0.9.1's own
Hydra config, in ``.venv-verl``) set the same batch, updates, loss, clipping, KL, schedule and
sampling; and the TRL recipe's schedule, scaled down to one CPU process and the tiny model,
really makes several optimizer updates per generation batch, so the importance ratio leaves 1.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.training.recipe import Recipe, Stage, load_recipe
from codereasoner.training.trainers import REWARDS, build_trainer
from tests.training.conftest import CPU, RECIPES
from tests.training.test_grpo_reward import Recorder
from tests.training.test_verl_reward import ROOT, verl_python

pytestmark = pytest.mark.train

VERL_RECIPE = ROOT / "recipes" / "verl-grpo.sh"
PAPER_GRPO = RECIPES / "grpo-qwen2.5-coder-7b.yaml"


def _lineage(path: Path) -> list[Path]:
    """The recipe and the recipes its ``base`` chain inherits from."""
    chain = [path.resolve()]
    while base := yaml.safe_load(chain[-1].read_text(encoding="utf-8")).get("base"):
        chain.append((chain[-1].parent / base).resolve())
    return chain


# The paper's GRPO: the 7B recipe and every recipe built on it (other models, ablations); other
# GPU recipes (a quick hardware check) are free to choose their own algorithm.
PAPER_RECIPES = sorted(
    path for path in RECIPES.glob("*.yaml") if PAPER_GRPO.resolve() in _lineage(path)
)
# How TRL's loss types aggregate, in verl's words.
LOSS_AGGREGATION = {"grpo": "seq-mean-token-mean", "dapo": "token-mean", "bnpo": "token-mean"}
DYNAMIC_SAMPLING = ("algorithm.filter_groups.enable=True", "algorithm.filter_groups.metric=reward")

# Runs in .venv-verl: composes verl's ppo_trainer config with the overrides (argv[1], JSON),
# validates it as main_ppo does, and prints the values of the keys (argv[2], JSON).
COMPOSE = r"""
import json, os, sys
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
import verl
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import omega_conf_to_dataclass, validate_config

overrides, keys = json.loads(sys.argv[1]), json.loads(sys.argv[2])
directory = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
with initialize_config_dir(config_dir=directory, version_base=None):
    config = compose(config_name="ppo_trainer", overrides=overrides)
validate_config(config, use_reference_policy=need_reference_policy(config),
                use_critic=need_critic(config))
algorithm = omega_conf_to_dataclass(config.algorithm, AlgoConfig)
values = {key: OmegaConf.select(config, key) for key in keys}
values = {key: OmegaConf.to_object(v) if OmegaConf.is_config(v) else v for key, v in values.items()}
values["filter_groups"] = [algorithm.filter_groups.enable, algorithm.filter_groups.metric]
print(json.dumps(values))
"""
VERL_KEYS = [
    "algorithm.adv_estimator",
    "algorithm.norm_adv_by_std_in_grpo",
    "algorithm.use_kl_in_reward",
    "algorithm.rollout_correction.rollout_is",
    "data.train_batch_size",
    "data.max_response_length",
    "trainer.total_epochs",
    "trainer.save_freq",
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.temperature",
    "actor_rollout_ref.rollout.top_p",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.ppo_epochs",
    "actor_rollout_ref.actor.loss_agg_mode",
    "actor_rollout_ref.actor.clip_ratio_low",
    "actor_rollout_ref.actor.clip_ratio_high",
    "actor_rollout_ref.actor.clip_ratio_c",
    "actor_rollout_ref.actor.use_kl_loss",
    "actor_rollout_ref.actor.kl_loss_coef",
    "actor_rollout_ref.actor.kl_loss_type",
    "actor_rollout_ref.actor.entropy_coeff",
    "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.optim.lr_scheduler_type",
    "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio",
    "actor_rollout_ref.actor.optim.lr_warmup_steps",
    "actor_rollout_ref.actor.optim.weight_decay",
    "actor_rollout_ref.actor.optim.betas",
    "actor_rollout_ref.actor.optim.clip_grad",
]


def _run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=240, env=env, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def _composed(python: Path, env: dict[str, str], *extra: str) -> dict[str, Any]:
    overrides = _run(["bash", str(VERL_RECIPE), "--print-overrides", *extra], env).splitlines()
    output = _run([str(python), "-c", COMPOSE, json.dumps(overrides), json.dumps(VERL_KEYS)], env)
    return dict(json.loads(output.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def verl_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The verl recipe's composed values, as it is and with DAPO's dynamic sampling asked for."""
    python = verl_python()
    folder = tmp_path_factory.mktemp("verl")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHON": str(python),
        "TRAIN": str(folder / "train.parquet"),
        "VAL": str(folder / "val.parquet"),
    }
    return {
        "recipe": _composed(python, env),
        "dynamic": _composed(python, env, *DYNAMIC_SAMPLING),
    }


def _trl(path: Path) -> Recipe:
    return load_recipe(Stage.GRPO, path, hardware=False)  # what `train grpo --dry-run` checks


@pytest.mark.parametrize("path", PAPER_RECIPES, ids=lambda path: path.stem)
def test_both_recipes_resolve_to_the_same_algorithm(
    path: Path, verl_config: dict[str, dict[str, Any]]
) -> None:
    trl = _trl(path).config
    verl = verl_config["recipe"]
    processes = verl["trainer.nnodes"] * verl["trainer.n_gpus_per_node"]
    group = trl.num_generations
    # a batch: prompts x responses per prompt, in verl's words and TRL's (completions)
    assert group == verl["actor_rollout_ref.rollout.n"] == 5
    batch = trl.per_device_train_batch_size * processes * trl.steps_per_generation
    assert batch == verl["data.train_batch_size"] * group == 128 * 5
    update = trl.per_device_train_batch_size * processes * trl.gradient_accumulation_steps
    assert update == verl["actor_rollout_ref.actor.ppo_mini_batch_size"] * group
    updates = trl.steps_per_generation * trl.num_iterations // trl.gradient_accumulation_steps
    mini_batches = (
        verl["data.train_batch_size"] // verl["actor_rollout_ref.actor.ppo_mini_batch_size"]
    )
    assert updates == mini_batches * verl["actor_rollout_ref.actor.ppo_epochs"] == 4
    # the loss: Eq. 5, clipping, KL (a loss term, k3), no entropy bonus
    assert LOSS_AGGREGATION[trl.loss_type] == verl["actor_rollout_ref.actor.loss_agg_mode"]
    assert trl.loss_type == "grpo"
    assert trl.epsilon == verl["actor_rollout_ref.actor.clip_ratio_low"] == 0.2
    assert (trl.epsilon_high or trl.epsilon) == verl["actor_rollout_ref.actor.clip_ratio_high"]
    # a negative advantage's ratio capped: verl's dual clip is TRL's delta (for a positive
    # advantage the clipped term is already the smaller one, so delta changes nothing there)
    assert trl.delta == verl["actor_rollout_ref.actor.clip_ratio_c"] == 3.0
    assert trl.beta == verl["actor_rollout_ref.actor.kl_loss_coef"] == 0.001
    assert verl["actor_rollout_ref.actor.use_kl_loss"] and not verl["algorithm.use_kl_in_reward"]
    assert verl["actor_rollout_ref.actor.kl_loss_type"] == "low_var_kl"
    assert trl.entropy_coef == verl["actor_rollout_ref.actor.entropy_coeff"] == 0
    # advantages: GRPO's group normalisation
    assert verl["algorithm.adv_estimator"] == "grpo"
    assert trl.scale_rewards == "group" and verl["algorithm.norm_adv_by_std_in_grpo"]
    # no correction of the rollout engine's log-probabilities in either
    assert not trl.vllm_importance_sampling_correction
    assert verl["algorithm.rollout_correction.rollout_is"] is None
    # the optimizer: constant lr 1e-6 without warm-up, AdamW's decay, gradient clipping
    assert trl.learning_rate == verl["actor_rollout_ref.actor.optim.lr"] == 1e-6
    assert trl.lr_scheduler_type == verl["actor_rollout_ref.actor.optim.lr_scheduler_type"]
    assert trl.lr_scheduler_type == "constant" and trl.warmup_steps == 0
    assert verl["actor_rollout_ref.actor.optim.lr_warmup_steps_ratio"] == 0
    assert verl["actor_rollout_ref.actor.optim.lr_warmup_steps"] <= 0
    assert trl.weight_decay == verl["actor_rollout_ref.actor.optim.weight_decay"]
    assert trl.max_grad_norm == verl["actor_rollout_ref.actor.optim.clip_grad"]
    assert [trl.adam_beta1, trl.adam_beta2] == verl["actor_rollout_ref.actor.optim.betas"]
    # sampling, response length, epochs
    assert trl.temperature == verl["actor_rollout_ref.rollout.temperature"] == 1.0
    assert trl.top_p == verl["actor_rollout_ref.rollout.top_p"] == 1.0
    assert trl.max_completion_length == verl["data.max_response_length"] == 4096
    assert trl.num_train_epochs == verl["trainer.total_epochs"] == 2
    # checkpoints as often: a TRL step is one update, a verl step one batch
    assert trl.save_steps == verl["trainer.save_freq"] * updates


def test_dynamic_sampling_is_an_override_verl_accepts(
    verl_config: dict[str, dict[str, Any]],
) -> None:
    assert verl_config["recipe"]["filter_groups"] == [False, "reward"]  # off in the recipe
    assert verl_config["dynamic"]["filter_groups"] == [True, "reward"]
    header = VERL_RECIPE.read_text(encoding="utf-8").split("set -euo")[0]
    assert " ".join(DYNAMIC_SAMPLING) in header  # as documented


def test_a_gpu_recipe_dry_runs_on_a_cpu_machine(exported: Any) -> None:
    recipe = RECIPES / "grpo-qwen2.5-coder-7b.yaml"
    args = ["train", "grpo", "--config", str(recipe), "--dry-run", f"dataset={exported.grpo}"]
    done = CliRunner().invoke(app, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "  bf16: True" in done.stdout and "  use_vllm: True" in done.stdout
    assert (
        "GRPO batch: 80 completions per process (128 prompts x 5 on 8 processes), 4 optimizer "
        "updates per batch (32 prompts each on 8 processes)"
    ) in done.stdout
    assert "checked without the training hardware" in done.stdout
    # everything else is still checked: a misspelt key, data that is not GRPO data
    typo = CliRunner().invoke(app, [*args, "epsilonn=0.3"])
    assert typo.exit_code == 2 and "did you mean 'epsilon'?" in typo.output
    wrong = CliRunner().invoke(app, [*args, f"dataset={exported.sft}"])
    assert wrong.exit_code == 2 and "missing the reward's string columns" in wrong.output


def test_the_trl_recipe_updates_several_times_per_generation_batch(
    taught: tuple[Path, Path], tmp_path: Path
) -> None:
    """The 7B recipe's schedule on one CPU process: one generation batch, as many updates as the
    recipe makes per batch. Its first update starts from the policy that generated (ratio 1,
    nothing clipped); the later ones start from an updated policy, whose ratio leaves the clip
    range for some tokens (a learning rate far above the recipe's makes that visible at once)."""
    model, data = taught
    recipe_file = RECIPES / "grpo-qwen2.5-coder-7b.yaml"
    paper = _trl(recipe_file).config
    updates = paper.steps_per_generation // paper.gradient_accumulation_steps
    assert updates > 1
    prompts = updates  # one prompt's group per update; the two taught prompts, repeated
    rows = data.read_text(encoding="utf-8").splitlines() * (prompts // 2)
    (tmp_path / "grpo.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    recorder = Recorder()
    REWARDS.register(lambda context: recorder, name="recorder")
    try:
        recipe = load_recipe(
            Stage.GRPO,
            recipe_file,
            [
                f"model_name_or_path={model}", f"dataset={tmp_path / 'grpo.jsonl'}",
                f"output_dir={tmp_path / 'out'}", *CPU, "use_vllm=false",
                "rewards=[code_reasoning,recorder]", "reward_weights=[1.0,0.0]",
                f"per_device_train_batch_size={paper.num_generations}",
                "gradient_accumulation_steps=1", f"steps_per_generation={updates}",
                f"max_steps={updates}", "max_completion_length=24", "learning_rate=0.05",
                "save_strategy=no", "logging_steps=1", "seed=0",
            ],
        )  # fmt: skip
        trainer = build_trainer(recipe)
        trainer.train()
    finally:
        REWARDS.unregister("recorder")
    assert len(recorder.calls) == 1  # one generation batch for every update
    assert len(recorder.calls[0]["completions"]) == prompts * paper.num_generations
    clipped = [
        entry["clip_ratio/region_mean"]
        for entry in trainer.state.log_history
        if "clip_ratio/region_mean" in entry
    ]
    assert len(clipped) == updates
    assert clipped[0] == 0.0  # the policy that generated: ratio exactly 1
    assert max(clipped[1:]) > 0.0  # an updated policy: ratio away from 1, clipped
