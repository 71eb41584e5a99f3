"""The README's CPU training path, run as written: synth, a replay teacher, distill, export,
train sft, train grpo, eval of the raw and the trained model, the Table 3 report."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARK = "**On CPU, in a few minutes**"


def readme_block(marker: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(marker) :]
    return after.split("```bash\n", 1)[1].split("```", 1)[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.train
@pytest.mark.slow
def test_the_readme_cpu_training_path_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    script = readme_block(MARK).replace("8001", str(free_port()))  # a port free on this machine
    assert "train sft" in script and "train grpo" in script and "--layout table3" in script
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    smoke = tmp_path / "runs" / "smoke"
    for made in ("sft/train_done.json", "grpo/train_done.json", "grpo/train_curves.png"):
        assert (smoke / made).is_file(), made
    assert (smoke / "table3.html").stat().st_size > 0
    assert "rejected samples" in done.stdout  # the replay teacher's wrong answers were rejected
    assert "│ raw " in done.stdout and "│ full " in done.stdout
    # GRPO updates the policy: some group's rewards differ, so its advantages, loss and
    # gradient are not zero
    from codereasoner.training.curves import read_curves

    steps = [
        entry for entry in read_curves(smoke / "grpo" / "train_curves.jsonl") if "loss" in entry
    ]
    assert len(steps) == 6
    assert any(entry["reward_std"] > 0 for entry in steps), steps
    assert any(entry["loss"] != 0 and entry["grad_norm"] > 0 for entry in steps), steps


def test_the_readme_evaluates_with_the_token_limit_it_trained() -> None:
    """The smoke evaluation gives the models the completion length GRPO trained them for: a
    shorter limit cuts every answer (raw and trained alike) and measures nothing."""
    import re

    script = readme_block(MARK)
    limits = {int(found) for found in re.findall(r"--max-tokens (\d+)", script)}
    recipe = (ROOT / "recipes" / "cpu-tiny-grpo.yaml").read_text(encoding="utf-8")
    trained = re.search(r"^max_completion_length:\s*(\d+)", recipe, re.MULTILINE)
    assert trained is not None and limits == {int(trained.group(1))}
    evals = [line for line in script.replace("\\\n", " ").splitlines() if " eval " in line]
    assert evals and all("--chat" in line and "--style reasoning" in line for line in evals)
