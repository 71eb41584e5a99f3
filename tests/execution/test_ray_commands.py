"""The commands with ``--executor ray`` on a real local Ray cluster write what they write with the
local pool: synth, distill, eval, core build and the reward scorer, plus a command started in
another process that joins the cluster by its address (as on a multi-node cluster)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.training.rewards import CodeReasoningReward, score_batch
from tests.conftest import SHARED_DATA
from tests.training.test_rewards import BACKWARD, FORWARD, row

pytestmark = [pytest.mark.full_data, pytest.mark.ray]

ray = pytest.importorskip("ray", reason="the Ray executor needs ray (pip install '.[ray]')")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SYNTH = ("cases.jsonl", "dropped.jsonl", "audit.jsonl", "summary.json")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster for this module; yields its address (commands in this process
    find it already connected; another process joins it by the address)."""
    ray.init(
        num_cpus=2, include_dashboard=False, object_store_memory=128 << 20, log_to_driver=False
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def invoke(*arguments: str) -> None:
    done = CliRunner().invoke(app, list(arguments), catch_exceptions=False)
    assert done.exit_code == 0, done.output


def same_files(one: Path, other: Path, names: tuple[str, ...]) -> None:
    for name in names:
        assert (one / name).read_bytes() == (other / name).read_bytes(), name


@pytest.fixture(scope="module")
def cases(cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthesis run locally and through Ray: the same bytes; the cases feed distill."""
    root = tmp_path_factory.mktemp("synth")
    common = ("synth", "--generator", "offline", "--n", "24", "--seed", "5", "--no-decontam")
    invoke(*common, "--out", str(root / "local"), "--executor", "local")
    invoke(*common, "--out", str(root / "ray"), "--executor", "ray")
    same_files(root / "local", root / "ray", SYNTH)
    return root / "local"


def test_synth_through_ray_writes_the_local_bytes(cases: Path) -> None:
    assert (cases / "cases.jsonl").read_text().count("\n") >= 10


def test_distill_through_ray_writes_the_local_bytes(cases: Path, tmp_path: Path) -> None:
    common = ("distill", "--teacher", "oracle", "--cases", str(cases), "--k", "1")
    invoke(*common, "--out", str(tmp_path / "local"))
    invoke(*common, "--out", str(tmp_path / "ray"), "--executor", "ray")
    same_files(tmp_path / "local", tmp_path / "ray", ("distilled.jsonl",))


def test_eval_through_ray_gives_the_local_results(cluster: str, tmp_path: Path) -> None:
    common = ("eval", "--model", "oracle", "--bench", "cruxeval-o,cruxeval-i")
    common += ("--limit", "6", "--data-dir", str(FIXTURES))
    invoke(*common, "--out", str(tmp_path / "local"))
    invoke(*common, "--out", str(tmp_path / "ray"), "--executor", "ray")
    results = [
        json.loads((tmp_path / run / "results.json").read_text()) for run in ("local", "ray")
    ]
    for found in results:
        del found["run_dir"]
        for report in found["reports"].values():  # where the run is, and how long it took
            report.pop("generations", None)
            report.pop("wall_s", None)
    assert results[0] == results[1]
    assert results[0]["graded"] == {"cruxeval-o": 6, "cruxeval-i": 6}


@pytest.mark.skipif(
    not (SHARED_DATA / "core").is_dir(), reason="shared benchmark data not available"
)
def test_core_build_through_ray_writes_the_local_bytes(cluster: str, tmp_path: Path) -> None:
    common = ("core", "build", "--from", "core", "--data-dir", str(SHARED_DATA), "--limit", "2")
    invoke(*common, "--out", str(tmp_path / "local"))
    invoke(*common, "--out", str(tmp_path / "ray"), "--executor", "ray")
    same_files(tmp_path / "local", tmp_path / "ray", ("core_io.json", "core_qa.json"))


def test_the_reward_scorer_through_ray_gives_the_local_rewards(cluster: str) -> None:
    samples = [row(direction, text) for direction, cases in (("forward", FORWARD),
               ("backward", BACKWARD)) for text, _ in cases.values()]  # fmt: skip
    expected = [reward for cases in (FORWARD, BACKWARD) for _, reward in cases.values()]
    local = CodeReasoningReward(workers=1, executor="local")
    remote = CodeReasoningReward(workers=2, executor="ray")
    try:
        rewards = [score_batch(samples, scorer.pool()).rewards for scorer in (local, remote)]
        assert rewards[0] == rewards[1] == expected
        assert type(remote.pool()).__name__ == "RayPool"
    finally:
        local.close()
        remote.close()


def test_a_command_in_another_process_joins_the_cluster_by_address(
    cluster: str, cases: Path, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "codereasoner", "synth", "--generator", "offline"]
    command += ["--n", "24", "--seed", "5", "--no-decontam", "--out", str(tmp_path / "joined")]
    command += ["--executor", f"ray:{cluster}"]
    environment = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=environment)
    assert done.returncode == 0, done.stderr[-2000:]
    same_files(cases, tmp_path / "joined", SYNTH)


POOLS_OF_ONE_RAY = """
import ray
from codereasoner.execution import Program, parse_call
from codereasoner.execution.ray_pool import RayPool
first = RayPool(1)  # starts a local Ray: no cluster, no RAY_ADDRESS
second = RayPool(1)  # joins it
first.close()  # the Ray the process started stays up while a pool uses it
program = Program("def f(x):\\n    return x + 1")
assert second.run(program, parse_call("f(1)")).parsed_value() == 2
assert ray.is_initialized()
second.close()
assert not ray.is_initialized()
second.close()  # twice: nothing left to do
print("ok")
"""


def test_the_ray_a_process_started_outlives_all_but_its_last_pool() -> None:
    environment = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    done = subprocess.run(
        [sys.executable, "-c", POOLS_OF_ONE_RAY],
        capture_output=True,
        text=True,
        timeout=240,
        env=environment,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
