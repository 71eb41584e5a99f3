"""Training fixtures: exported SFT and GRPO data from a small synthesized, oracle-distilled set."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.commands import invoke

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
# What turns a GPU recipe into one that builds on this CPU machine with the tiny model (§6).
CPU = ["bf16=false", "use_cpu=true", "dataloader_num_workers=0", "report_to=none", "dtype=float32"]


@dataclass(frozen=True)
class Exported:
    sft: Path
    grpo: Path


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    """synth -> distill (oracle teacher) -> export, through the real commands."""
    folder = tmp_path_factory.mktemp("exported")
    steps = [
        ("synth", "--generator", "offline", "--n", "60", "--seed", "0", "--out", "synth"),
        ("--no-decontam",),
        ("distill", "--teacher", "oracle", "--cases", "synth", "--out", "distill", "--k", "1"),
        ("--limit", "40", "--workers", "2"),
        ("export", "--from", "distill", "--format", "trl-sft", "--out", "sft.jsonl"),
        ("export", "--from", "distill", "--format", "trl-grpo", "--out", "grpo.jsonl"),
    ]
    commands = [steps[0] + steps[1], steps[2] + steps[3], steps[4], steps[5]]
    for command in commands:
        done = invoke(*command, cwd=folder)
        assert done.returncode == 0, done.stderr
    return Exported(folder / "sft.jsonl", folder / "grpo.jsonl")


@dataclass(frozen=True)
class ProbeDistill:
    """A distillation with the probe direction: its cases folder and its output folder."""

    synth: Path
    out: Path
    wrong: float
    port: int  # the teacher's: a resumed run names the same teacher


@pytest.fixture(scope="session")
def probe_distill(tmp_path_factory: pytest.TempPathFactory) -> ProbeDistill:
    """synth -> distill of all three directions by the replay teacher (some answers wrong)."""
    from typer.testing import CliRunner

    from codereasoner.cli import app
    from codereasoner.models.replay_server import ReplayServer
    from codereasoner.training.cases import read_cases
    from codereasoner.training.replay_teacher import ReplayTeacher, probes_of
    from tests.conftest import synth_cases

    folder = tmp_path_factory.mktemp("probe-distill")
    synth = synth_cases(folder / "synth", n=16, seed=5)
    cases = read_cases(synth / "cases.jsonl")
    wrong = 0.3
    teacher = ReplayTeacher(cases, wrong=wrong, probes=probes_of(cases, 2))
    out = folder / "distill"
    with ReplayServer(reply=teacher.reply, model="teacher") as server:
        args = ["--teacher", f"openai:teacher@{server.url}", "--cases", str(synth)]
        more = ["--directions", "forward,backward,probe", "--k", "3", "--workers", "2"]
        done = CliRunner().invoke(
            app, ["distill", *args, "--out", str(out), *more], catch_exceptions=False
        )
        port = server.port
    assert done.exit_code == 0, done.output
    return ProbeDistill(synth, out, wrong, port)


@pytest.fixture(scope="session")
def taught(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tiny model taught to answer two case prompts right, wrong or too long (see
    test_grpo_reward.py), and those prompts as trl-grpo rows."""
    from tests.training.test_grpo_reward import CASE, ROWS, teach

    folder = tmp_path_factory.mktemp("taught")
    model = teach(tiny_model, folder / "model")
    rows = [
        {"prompt": row["prompt"], "direction": row["direction"], "case_id": f"case-{i}", **CASE}
        for i, row in enumerate(ROWS)
    ]
    data = folder / "grpo.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return model, data
