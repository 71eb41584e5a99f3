"""``recipes/verl-grpo.sh`` against verl 0.9.1 itself, on CPU, in ``.venv-verl``.

The recipe prints its Hydra overrides (``--print-overrides``); verl's own ``ppo_trainer`` config
is composed with them (Hydra refuses a key verl does not have) and checked with verl's
``validate_config``, as ``main_ppo`` does before it starts Ray. A parquet written by our exporter
is then loaded through verl's dataset (``create_rl_dataset``) and tokenized the way its rollout
does (the Continuous Token builder); the reward named by the config is loaded with verl's
``get_custom_reward_fn`` and run through verl's reward loop worker on a rollout-shaped batch.
GPU training itself (vLLM rollout, FSDP update) is not run here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from codereasoner.training.export import VERL_DATA_SOURCE, export
from tests.training.test_verl_reward import MODULE, recipe_overrides, run, verl_python

pytestmark = pytest.mark.train

CODE = "def f(x):\n    return x + 1"
# (direction, a right answer, a wrong answer); the call is f(172), the output 173.
ANSWERS = [
    ("forward", "<Reasoning>x + 1</Reasoning><Answer>173</Answer>", "<Answer>174</Answer>"),
    ("backward", "<Reasoning>173 - 1</Reasoning><Answer>f(172)</Answer>", "<Answer>f(1)</Answer>"),
]

# Runs in .venv-verl. argv: the folder to build the tiny model in (the recipe's MODEL), then as
# JSON the overrides of the 1-node and the 2-node runs, the config keys to report and the answers
# per row. Prints one JSON line.
SCRIPT = r"""
import json, os, pathlib, sys
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
import verl
from verl import DataProto
from verl.experimental.reward_loop import RewardLoopWorker
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.trainer.ppo.utils import create_rl_dataset, need_critic, need_reference_policy
from verl.utils.config import omega_conf_to_dataclass, validate_config
from verl.utils.dataset.rl_dataset import collate_fn
from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

from codereasoner.training.tiny import build_tiny_model

CONFIG_DIR = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
model_dir = pathlib.Path(sys.argv[1])
one_node, two_nodes, keys, answers = (json.loads(arg) for arg in sys.argv[2:6])


def composed(overrides):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        config = compose(config_name="ppo_trainer", overrides=overrides)
    validate_config(config, use_reference_policy=need_reference_policy(config),
                    use_critic=need_critic(config))
    return config


def refused(overrides):
    try:
        composed(overrides)
    except Exception as error:
        return type(error).__name__
    return None


def padded(rows, pad, left):
    width = max(len(row) for row in rows)
    ids = [[pad] * (width - len(r)) + r if left else r + [pad] * (width - len(r)) for r in rows]
    mask = [[0] * (width - len(r)) + [1] * len(r) if left else [1] * len(r) + [0] * (width - len(r))
            for r in rows]
    return torch.tensor(ids), torch.tensor(mask)


build_tiny_model(model_dir)  # with this environment's transformers (5.10.4)
config = composed(one_node)
config2 = composed(two_nodes)
model = omega_conf_to_dataclass(config.actor_rollout_ref.model)
tokenizer = model.tokenizer
dataset = create_rl_dataset(config.data.train_files, config.data, tokenizer, model.processor)
rows = [dataset[i] for i in range(len(dataset))]
builder = create_continuous_token_builder(
    tokenizer, hf_model_type=model.hf_config.model_type,
    chat_template_kwargs=config.data.apply_chat_template_kwargs, processor=model.processor)
prompt_ids = [builder.build_initial_tokens(list(row["raw_prompt"])) for row in rows]

custom = get_custom_reward_fn(config)
direct = [[custom(data_source=row["data_source"], solution_str=text,
                  ground_truth=row["reward_model"]["ground_truth"],
                  extra_info=row["extra_info"])["score"] for text in answers[i]]
          for i, row in enumerate(rows)]

# A rollout-shaped batch: each prompt twice (right, wrong answer), as verl repeats for n samples.
batch = DataProto.from_single_dict(collate_fn(rows)).repeat(repeat_times=2, interleave=True)
texts = [text for pair in answers for text in pair]
responses = [tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]
             for text in texts]
pad = tokenizer.pad_token_id
prompts, prompt_mask = padded([ids for ids in prompt_ids for _ in range(2)], pad, left=True)
response_ids, response_mask = padded(responses, pad, left=False)
batch = batch.union(DataProto.from_dict(tensors={
    "prompts": prompts, "responses": response_ids,
    "attention_mask": torch.cat([prompt_mask, response_mask], dim=1)}))
worker = RewardLoopWorker(config)
scored = worker.loop.run_until_complete(worker.compute_score_batch(batch))

print(json.dumps({
    "values": {key: OmegaConf.select(config, key) for key in keys},
    "values_2_nodes": {key: OmegaConf.select(config2, key) for key in keys},
    "refused_typo": refused(one_node + ["actor_rollout_ref.rollout.nn=5"]),
    "rows": [{"data_source": row["data_source"], "reward_model": row["reward_model"],
              "extra_info": row["extra_info"], "raw_prompt": list(row["raw_prompt"])}
             for row in rows],
    "prompt_ids": prompt_ids,
    "prompt_text": [tokenizer.decode(ids) for ids in prompt_ids],
    "reward_fn": [custom.args[0].__module__, custom.args[0].__name__],
    "direct": direct,
    "reward_loop": [item["reward_score"] for item in scored],
    "sandbox_error": [item["reward_extra_info"]["sandbox_error"] for item in scored],
}))
"""

KEYS = [
    "algorithm.adv_estimator",
    "algorithm.use_kl_in_reward",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.name",
    "actor_rollout_ref.actor.strategy",
    "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.use_kl_loss",
    "actor_rollout_ref.actor.kl_loss_coef",
    "actor_rollout_ref.model.path",
    "data.train_files",
    "data.val_files",
    "data.train_batch_size",
    "data.max_prompt_length",
    "data.max_response_length",
    "data.filter_overlong_prompts",
    "data.reward_fn_key",
    "trainer.total_epochs",
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
    "trainer.val_before_train",
    "reward.reward_manager.source",
    "reward.reward_manager.module.path",
    "reward.reward_manager.name",
    "reward.custom_reward_function.path",
    "reward.custom_reward_function.name",
]


def _distilled(folder: Path) -> Path:
    """A distillation folder with one unverified record per direction (RL exports take all)."""
    folder.mkdir()
    records = [
        {
            "id": f"c0/{direction}",
            "case_id": "c0",
            "direction": direction,
            "code": CODE,
            "entry_point": "f",
            "call": "f(172)",
            "output": "173",
            "prompt": f"Predict the {direction} of this program:\n{CODE}\n",
            "verified": False,
        }
        for direction, _, _ in ANSWERS
    ]
    text = "".join(json.dumps(record) + "\n" for record in records)
    (folder / "distilled.jsonl").write_text(text, encoding="utf-8")
    return folder


def _verl(python: Path, env: dict[str, str], model: Path, *arguments: Any) -> dict[str, Any]:
    encoded = [json.dumps(argument) for argument in arguments]
    command = [str(python), "-c", SCRIPT, str(model), *encoded]
    return dict(json.loads(run(command, env).strip().splitlines()[-1]))


def test_recipe_composes_loads_our_data_and_scores_with_our_reward(tmp_path: Path) -> None:
    python = verl_python()
    env = {
        **os.environ,
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(tmp_path / "hf-datasets"),
    }
    parquet = tmp_path / "train.parquet"
    export(_distilled(tmp_path / "distill"), "verl", parquet)
    model = tmp_path / "tiny"  # built by SCRIPT, before verl reads it
    files = {"TRAIN": str(parquet), "VAL": str(parquet)}
    recipe_env = {**env, "PYTHON": str(python), "MODEL": str(model), **files}
    one_node = recipe_overrides(recipe_env)
    # extra arguments: a new key, and one the recipe sets (the last value wins)
    extra = ("trainer.val_before_train=False", "data.train_batch_size=64")
    two_nodes = recipe_overrides({**recipe_env, "NNODES": "2", "DRY_RUN": "1"}, *extra)
    answers = [[right, wrong] for _, right, wrong in ANSWERS]

    result = _verl(python, env, model, one_node, two_nodes, KEYS, answers)

    assert result["values"] == {
        "algorithm.adv_estimator": "grpo",
        "algorithm.use_kl_in_reward": False,
        "actor_rollout_ref.rollout.n": 5,
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.actor.strategy": "fsdp",
        "actor_rollout_ref.actor.optim.lr": 1e-6,
        "actor_rollout_ref.actor.use_kl_loss": True,
        "actor_rollout_ref.actor.kl_loss_coef": 0.001,
        "actor_rollout_ref.model.path": str(model),
        "data.train_files": str(parquet),
        "data.val_files": str(parquet),
        "data.train_batch_size": 128,
        "data.max_prompt_length": 2048,
        "data.max_response_length": 4096,
        "data.filter_overlong_prompts": True,
        "data.reward_fn_key": "data_source",
        "trainer.total_epochs": 2,
        "trainer.nnodes": 1,
        "trainer.n_gpus_per_node": 8,
        "trainer.val_before_train": True,
        "reward.reward_manager.source": "importlib",
        "reward.reward_manager.module.path": "pkg://codereasoner.training.verl_manager",
        "reward.reward_manager.name": "CodeReasonerRewardManager",
        "reward.custom_reward_function.path": str(MODULE),
        "reward.custom_reward_function.name": "compute_score",
    }
    changed = {"trainer.nnodes": 2, "trainer.val_before_train": False, "data.train_batch_size": 64}
    assert result["values_2_nodes"] == {**result["values"], **changed}
    assert result["refused_typo"] == "ConfigCompositionException"

    assert [row["extra_info"]["direction"] for row in result["rows"]] == ["forward", "backward"]
    for row, ids, text in zip(
        result["rows"], result["prompt_ids"], result["prompt_text"], strict=True
    ):
        assert row["data_source"] == VERL_DATA_SOURCE
        assert row["reward_model"] == {"style": "rule", "ground_truth": "173"}
        assert row["extra_info"]["code"] == CODE
        assert row["extra_info"]["call"] == "f(172)"
        assert 0 < len(ids) <= result["values"]["data.max_prompt_length"]
        assert row["raw_prompt"][0]["content"] in text
        assert text.endswith("<|im_start|>assistant\n")

    assert result["reward_fn"] == ["codereasoner.training.rewards", "compute_score"]
    assert result["direct"] == [[2.0, 0.0], [2.0, 0.0]]
    assert result["reward_loop"] == [2.0, 0.0, 2.0, 0.0]
    assert result["sandbox_error"] == [0.0] * 4
