"""``codereasoner synth``: bad input, same seed same bytes, and SIGKILL mid-run then resume."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from tests.conftest import SHARED_DATA

OUTPUTS = ("cases.jsonl", "dropped.jsonl", "audit.jsonl", "summary.json")
N, CHUNK = 48, 8


def _data_dir(tmp_path: Path) -> Path:
    if SHARED_DATA.is_dir():
        return SHARED_DATA
    empty = tmp_path / "no-benchmarks"
    empty.mkdir(exist_ok=True)
    return empty


def _command(out: Path, data_dir: Path, n: int = N) -> list[str]:
    return [
        sys.executable,
        "-m",
        "codereasoner",
        "synth",
        "--generator",
        "offline",
        "--n",
        str(n),
        "--seed",
        "7",
        "--out",
        str(out),
        "--data-dir",
        str(data_dir),
        "--workers",
        "1",
        "--chunk-size",
        str(CHUNK),
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--generator", "teacher"], "--generator 'teacher': expected offline or llm"),
        (["--generator", "llm"], "--generator llm needs --model"),
        (["--n", "0"], "--n 0: expected a positive number"),
        (["--mutants", "-1"], "--mutants -1: expected 0 or more"),
        (["--data-dir", "/nonexistent/dir"], "--data-dir /nonexistent/dir: not a directory"),
        (["--generator", "llm", "--model", "gpt4"], "model spec 'gpt4'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    result = CliRunner().invoke(app, ["synth", "--out", str(tmp_path / "o"), *arguments])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_kill_and_resume_gives_the_bytes_of_an_uninterrupted_run(tmp_path: Path) -> None:
    data_dir = _data_dir(tmp_path)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    done = subprocess.run(_command(whole, data_dir), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "cases written" in done.stdout and "methods covered" in done.stdout

    process = subprocess.Popen(
        _command(killed, data_dir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    state = killed / "state.json"
    deadline = time.monotonic() + 120
    progress = 0
    while time.monotonic() < deadline and process.poll() is None:
        if state.exists():
            progress = json.loads(state.read_text())["done"]
            if progress >= CHUNK * 2:
                break
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):  # reported by the assert below
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert CHUNK <= json.loads(state.read_text())["done"] < N, "the kill did not land mid-run"
    assert not (killed / "summary.json").exists()

    resumed = subprocess.run(
        _command(killed, data_dir), capture_output=True, text=True, timeout=240
    )
    assert resumed.returncode == 0, resumed.stderr
    for name in OUTPUTS:
        assert (killed / name).read_bytes() == (whole / name).read_bytes(), name
    cases = [json.loads(line) for line in (whole / "cases.jsonl").read_text().splitlines()]
    assert len({case["id"] for case in cases}) == len(cases) > N // 2

    other = subprocess.run(
        _command(killed, data_dir, n=N + 1), capture_output=True, text=True, timeout=120
    )
    assert other.returncode == 2
    assert "holds a run with other settings (n: 48 there, 49 now)" in other.stderr
    assert (killed / "cases.jsonl").read_bytes() == (whole / "cases.jsonl").read_bytes()
