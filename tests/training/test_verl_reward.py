"""The verl front-end, loaded by verl 0.9.1 itself in its own environment (``.venv-verl``).

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

ROOT = Path(__file__).resolve().parents[2]
VERL_PYTHON = ROOT / ".venv-verl" / "bin" / "python"
MODULE = ROOT / "src" / "codereasoner" / "training" / "verl_reward.py"

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
            "extra_info": {
                "code": INC,
                "entry_point": "f",
                "direction": direction,
                "target": "173",
                "call": "f(172)",
                "case_id": f"c{index}",
            },
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
