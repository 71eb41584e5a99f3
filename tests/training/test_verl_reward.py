"""The verl front-end, loaded and called by verl 0.9.1 itself in its own environment
(``.venv-verl``): our reward function, and our reward manager, which scores a response cut at the
response limit 0.0.

verl pins transformers <5.11, so it cannot share the main environment: ``make test`` builds
``.venv-verl`` first (the ``.venv-verl/.ready`` target). Without it this test fails rather than
skip, so that CI cannot pass without checking verl; set ``CODEREASONER_SKIP_VERL=1`` to opt out
on purpose (e.g. running pytest by hand without make).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.train

ROOT = Path(__file__).resolve().parents[2]
VERL_PYTHON = ROOT / ".venv-verl" / "bin" / "python"
MODULE = ROOT / "src" / "codereasoner" / "training" / "verl_reward.py"
RECIPE = ROOT / "recipes" / "verl-grpo.sh"

# Runs in .venv-verl: verl's own loader (get_custom_reward_fn on a real OmegaConf config), then
# the single-solution form as the naive manager calls it, and the batch form through verl's
# BatchRewardManager on a DataProto (a byte-level "tokenizer" decodes the response ids).
SCRIPT = r"""
import json, sys
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.workers.reward_manager.batch import BatchRewardManager

path, rows = sys.argv[1], json.loads(sys.argv[2])

def load(name):
    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": path, "name": name, "reward_kwargs": {"correct": 2.0}}}})
    return get_custom_reward_fn(config)

single = load("compute_score")
singles = [single(data_source="codereasoner", solution_str=r["solution"],
                  ground_truth=r["target"], extra_info=r["extra_info"]) for r in rows]

class Bytes:
    def decode(self, ids, skip_special_tokens=True):
        return bytes(int(i) for i in ids if int(i) > 0).decode()

texts = [r["solution"].encode() for r in rows]
width = max(len(t) for t in texts)
responses = torch.tensor([list(t) + [0] * (width - len(t)) for t in texts])
prompts = torch.ones(len(rows), 2, dtype=torch.long)
mask = torch.cat([torch.ones_like(prompts), (responses > 0).long()], dim=1)
data = DataProto.from_dict(
    tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
    non_tensors={"data_source": ["codereasoner"] * len(rows),
                 "reward_model": [{"ground_truth": r["target"]} for r in rows],
                 "extra_info": [dict(r["extra_info"]) for r in rows]},
)
manager = BatchRewardManager(Bytes(), 0, load("compute_score_batch"))
out = manager(data, return_dict=True)
batch = out["reward_tensor"].sum(dim=1).tolist()
print(json.dumps({"single": singles, "batch": batch,
                  "sandbox_error": list(map(float, out["reward_extra_info"]["sandbox_error"]))}))
"""

INC = "def f(x):\n    return x + 1"
SOLUTIONS = [
    ("backward", "<Reasoning>r</Reasoning><Answer>f(172)</Answer>", 2.0),
    ("backward", "<Answer>f(1)</Answer>", 0.0),
    ("backward", "<Answer>f(__import__('os'))</Answer>", 0.0),
    ("forward", "<Answer>173</Answer>", 2.0),
    ("forward", "<Answer>172 + 1</Answer>", 0.0),
    ("forward", "no answer", 0.0),
]


def run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=240, env=env, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def recipe_overrides(env: dict[str, str], *extra: str) -> list[str]:
    """The Hydra overrides ``recipes/verl-grpo.sh`` would launch verl with."""
    return run(["bash", str(RECIPE), "--print-overrides", *extra], env).splitlines()


def case_info(direction: str, case_id: str) -> dict[str, str]:
    """The ``extra_info`` of a verl row of the case f(172) == 173."""
    return {
        "code": INC,
        "entry_point": "f",
        "direction": direction,
        "target": "173",
        "call": "f(172)",
        "case_id": case_id,
    }


def verl_python() -> Path:
    if VERL_PYTHON.exists():
        return VERL_PYTHON
    if os.environ.get("CODEREASONER_SKIP_VERL") == "1":
        pytest.skip("CODEREASONER_SKIP_VERL=1: the verl reward is not checked")
    pytest.fail(
        f"{VERL_PYTHON} is missing: run `make .venv-verl/.ready` (or `make test`), "
        "or set CODEREASONER_SKIP_VERL=1 to skip the verl check"
    )


def test_verl_loads_and_calls_our_reward() -> None:
    python = verl_python()
    rows = [
        {
            "solution": text,
            "target": "173",
            "extra_info": case_info(direction, f"c{index}"),
        }
        for index, (direction, text, _) in enumerate(SOLUTIONS)
    ]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [str(python), "-c", SCRIPT, str(MODULE), json.dumps(rows)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = [reward for _, _, reward in SOLUTIONS]
    assert [score["score"] for score in result["single"]] == expected
    assert result["batch"] == expected
    assert result["sandbox_error"] == [0.0] * len(SOLUTIONS)


# Runs in .venv-verl. argv: the folder to build the tiny model in (the recipe's MODEL), then as
# JSON the recipe's overrides and the rows (answer, response length, whether it ends with EOS). verl
# composes its config, loads the reward manager and reward function the recipe names, and
# scores a rollout-shaped batch through its reward loop worker. Prints one JSON line.
TRUNCATION_SCRIPT = r"""
import json, os, pathlib, sys
import torch
from hydra import compose, initialize_config_dir
import verl
from verl import DataProto
from verl.experimental.reward_loop import RewardLoopWorker
from transformers import AutoTokenizer

from codereasoner.training.tiny import build_tiny_model

model_dir = pathlib.Path(sys.argv[1])
overrides, rows = (json.loads(arg) for arg in sys.argv[2:4])
build_tiny_model(model_dir)
with initialize_config_dir(os.path.join(os.path.dirname(verl.__file__), "trainer", "config"),
                           version_base=None):
    config = compose(config_name="ppo_trainer", overrides=overrides)
tokenizer = AutoTokenizer.from_pretrained(model_dir)


def ids(text):
    return tokenizer.encode(text, add_special_tokens=False)


def response(row):
    filler = ids(" step")[-1:]
    head, tail = ids("<Reasoning>"), ids("</Reasoning>" + row["answer"])
    end = [tokenizer.eos_token_id] if row["ends"] else []
    size = row["length"] - len(head) - len(tail) - len(end)
    return head + filler * size + tail + end


responses = [response(row) for row in rows]
assert [len(r) for r in responses] == [row["length"] for row in rows]
width, pad = max(map(len, responses)), tokenizer.pad_token_id
prompts = torch.tensor([ids("<|im_start|>user\nf(172)<|im_end|>")] * len(rows))
batch = DataProto.from_dict(
    tensors={
        "prompts": prompts,
        "responses": torch.tensor([r + [pad] * (width - len(r)) for r in responses]),
        "attention_mask": torch.cat([torch.ones_like(prompts), torch.tensor(
            [[1] * len(r) + [0] * (width - len(r)) for r in responses])], dim=1),
    },
    non_tensors={
        "data_source": ["codereasoner"] * len(rows),
        "reward_model": [{"ground_truth": row["target"]} for row in rows],
        "extra_info": [dict(row["extra_info"]) for row in rows],
    },
)
worker = RewardLoopWorker(config)
scored = worker.loop.run_until_complete(worker.compute_score_batch(batch))
print(json.dumps({
    "manager": type(worker.reward_manager).__name__,
    "limit": config.actor_rollout_ref.rollout.response_length,
    "scores": [item["reward_score"] for item in scored],
    "truncated": [item["reward_extra_info"]["truncated"] for item in scored],
    "correct": [item["reward_extra_info"]["correct"] for item in scored],
}))
"""

LIMIT = 48
# (direction, right answer, response length in tokens, ends with EOS, expected score)
RESPONSES = [
    ("forward", "<Answer>173</Answer>", LIMIT, False, 0.0),  # cut right after a right answer
    ("forward", "<Answer>173</Answer>", LIMIT, True, 2.0),  # its EOS is the last token allowed
    ("forward", "<Answer>173</Answer>", LIMIT - 8, True, 2.0),
    ("backward", "<Answer>f(172)</Answer>", LIMIT, False, 0.0),
    ("backward", "<Answer>f(172)</Answer>", LIMIT - 4, True, 2.0),
]


def test_verl_scores_a_response_cut_at_the_limit_zero(tmp_path: Path) -> None:
    python = verl_python()
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    model = tmp_path / "tiny"  # built by the script, before verl reads it
    recipe_env = {**env, "PYTHON": str(python), "MODEL": str(model)}
    overrides = recipe_overrides(recipe_env, f"data.max_response_length={LIMIT}")
    rows = [
        {
            "answer": answer,
            "length": length,
            "ends": ends,
            "target": "173",
            "extra_info": case_info(direction, "c0"),
        }
        for direction, answer, length, ends, _ in RESPONSES
    ]
    command = [str(python), "-c", TRUNCATION_SCRIPT, str(model)]
    output = run([*command, json.dumps(overrides), json.dumps(rows)], env)
    result = json.loads(output.strip().splitlines()[-1])

    assert result["scores"] == [score for *_, score in RESPONSES]
    assert result["manager"] == "CodeReasonerRewardManager"
    assert result["limit"] == LIMIT
    assert result["truncated"] == [
        float(length == LIMIT and not ends) for *_, length, ends, _ in RESPONSES
    ]
    assert result["correct"] == [float(score > 0) for *_, score in RESPONSES]
