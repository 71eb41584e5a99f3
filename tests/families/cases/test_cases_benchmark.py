"""Synthesized cases as a benchmark: ``eval --bench cases --data-dir SYNTH`` on a real synthesis
folder, the oracle at 100%, a wrong-answer server at 0, and one error line for bad data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from codereasoner import benchmarks
from codereasoner.cli import app
from codereasoner.evaluation.runner import available
from codereasoner.families.cases.benchmark import CASES, NAME
from codereasoner.models.oracle import OracleBackend
from codereasoner.models.replay_server import ReplayServer
from codereasoner.training.distill import Distiller, DistillSettings
from tests.conftest import synth_cases


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_cases(tmp_path_factory.mktemp("heldout") / "synth", n=12, seed=5)


@pytest.fixture(autouse=True)
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEREASONER_CACHE", str(tmp_path / "cache"))


def case_count(folder: Path) -> int:
    return len((folder / "cases.jsonl").read_text(encoding="utf-8").splitlines())


def evaluate(*args: str | Path) -> dict[str, Any]:
    done = CliRunner().invoke(app, ["eval", *map(str, args), "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def one_error_line(args: list[str | Path], *words: str) -> None:
    done = CliRunner().invoke(app, list(map(str, args)), catch_exceptions=False)
    assert done.exit_code == 2, done.output
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert all(word in lines[0] for word in words), lines[0]


def test_the_oracle_scores_100_both_styles_folder_or_file(synth_dir: Path, tmp_path: Path) -> None:
    summary = evaluate(
        "--model", "oracle", "--bench", NAME, "--data-dir", synth_dir, "--out", tmp_path / "a"
    )
    report = summary["reports"][NAME]
    assert summary["headline"][NAME]["pass@1"] == 100.0
    assert summary["self_check"][NAME]["passed"] is True
    assert report["items"] == 2 * case_count(synth_dir)
    again = evaluate(
        "--model",
        "oracle",
        "--bench",
        NAME,
        "--data-dir",
        synth_dir / "cases.jsonl",
        "--style",
        "reasoning",
        "--limit",
        "6",
        "--out",
        tmp_path / "b",
    )
    assert again["headline"][NAME]["pass@1"] == 100.0
    assert again["reports"][NAME]["items"] == 6  # --limit keeps both directions of a case


def test_a_wrong_answer_server_scores_0(synth_dir: Path, tmp_path: Path) -> None:
    with ReplayServer() as server:  # echo replies: never a right <Answer>
        summary = evaluate(
            "--model",
            f"openai:replay@{server.url}",
            "--bench",
            NAME,
            "--data-dir",
            synth_dir,
            "--chat",
            "--out",
            tmp_path / "echo",
        )
    assert summary["headline"][NAME]["pass@1"] == 0.0
    assert summary["reports"][NAME]["items"] == 2 * case_count(synth_dir)


def test_bad_data_is_one_error_line(synth_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-run"
    base = ["eval", "--model", "oracle", "--bench", NAME, "--out", tmp_path / "out"]
    one_error_line(
        [*base, "--data-dir", missing], str(missing / "cases.jsonl"), "codereasoner synth"
    )
    one_error_line(base, "nothing to download", "--data-dir")
    spoilt = tmp_path / "spoilt"
    spoilt.mkdir()
    lines = (synth_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    (spoilt / "cases.jsonl").write_text(lines[0] + "\n{not json\n", encoding="utf-8")
    one_error_line([*base, "--data-dir", spoilt], f"{spoilt / 'cases.jsonl'}:2", "invalid JSON")
    assert not (tmp_path / "out").exists()


def test_nothing_is_fetched_and_no_data_dir_leaves_it_out(synth_dir: Path, tmp_path: Path) -> None:
    one_error_line(["bench", "fetch", NAME], "nothing to download", "--data-dir")
    target = tmp_path / "data"
    one_error_line(["bench", "fetch", NAME, "--data-dir", target], "nothing to download")
    assert not target.exists() and not (tmp_path / "cache").exists()
    assert NAME not in available(None)
    assert NAME in available(synth_dir)


def test_distill_stands_its_variant_in_for_the_run_only(synth_dir: Path, tmp_path: Path) -> None:
    settings = DistillSettings(cases=synth_dir, k=1, directions=("forward",), limit=2)
    order = list(benchmarks.REGISTRY)
    with Distiller(tmp_path / "distill", OracleBackend(), settings) as distiller:
        distiller.prepare()
        variant = benchmarks.get(NAME)
        assert variant is not CASES and variant.tasks == ("case_forward",)  # the run's directions
        assert variant.counts == {"items": case_count(synth_dir)}
        assert distiller.run().accepted == 2
    assert benchmarks.get(NAME) is CASES and list(benchmarks.REGISTRY) == order
