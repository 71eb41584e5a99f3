"""``codereasoner eval`` as a user runs it: a real subprocess, a real replay server, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.evaluation.runner import Runner, RunSettings
from codereasoner.execution import Pool
from codereasoner.models import load_backend
from codereasoner.models.replay_server import ReplayProcess

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BENCH = "cruxeval-o,cruxeval-i,lcb-execution,reval,core"
TABLES = ("run", "prompts", "completions", "items", "scores", "results")


def command(out: Path, model: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "codereasoner",
        "eval",
        "--model",
        model,
        "--out",
        str(out),
        "--bench",
        BENCH,
        "--data-dir",
        str(FIXTURES),
        "--workers",
        "2",
        "--json",
        *args,
    ]


def cli(
    out: Path, model: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(out, model, *args), capture_output=True, text=True, timeout=300, env=env
    )


def counts(out: Path) -> dict[str, int]:
    """Rows per table, read while a run may be writing (WAL: readers never block)."""
    path = out / "run.sqlite"
    if not path.exists():
        return dict.fromkeys(TABLES, 0)
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as connection:
            return {
                t: connection.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES
            }
    except sqlite3.OperationalError:  # the schema is not there yet
        return dict.fromkeys(TABLES, 0)


def snapshot(out: Path) -> dict[str, Any]:
    with sqlite3.connect(out / "run.sqlite") as connection:
        return {
            t: sorted(connection.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
            for t in TABLES
            if t not in ("run", "results")
        }


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what legitimately differs between runs (timing, the store's path)."""
    return {key: value for key, value in report.items() if key not in ("wall_s", "generations")}


def kill_when(out: Path, cmd: list[str], ready: Callable[[dict[str, int]], bool]) -> bool:
    """Start ``cmd``, SIGKILL it as soon as ``ready(counts)``; False if it finished first."""
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if ready(counts(out)):
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            return True
        time.sleep(0.005)
    process.wait(timeout=120)
    return False


def reference_run(
    out: Path, model: str, pool: Pool, concurrency: int | None = None
) -> dict[str, Any]:
    """The uninterrupted run, in this process (the same runner the command drives)."""
    settings = RunSettings(tuple(BENCH.split(",")), data_dir=FIXTURES)
    backend = load_backend(model, concurrency=concurrency)
    with Runner(out, backend, settings, pool_factory=lambda: pool) as runner:
        summary = runner.run()
    return {name: comparable(report) for name, report in summary.reports.items()}


def final_reports(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    return {name: comparable(report) for name, report in summary["reports"].items()}


def test_kill_and_resume_against_a_server(tmp_path: Path, pool: Pool) -> None:
    with ReplayProcess(latency_s=0.05) as server:
        model = f"openai:replay@{server.url}"
        options = ("--concurrency", "4")
        reference = reference_run(tmp_path / "reference", model, pool, 4)
        total = counts(tmp_path / "reference")
        server.reset()
        out = tmp_path / "killed"
        cmd = command(out, model, *options)
        phases = [
            lambda c: c["completions"] >= 10,  # during generation
            lambda c: c["completions"] == total["completions"],  # generation done: grading
            lambda c: c["results"] >= 1,  # after a benchmark's report
        ]
        for number, ready in enumerate(phases):
            before = counts(out)["completions"]
            server.reset()
            killed = kill_when(out, cmd, ready)
            assert killed or number > 0  # the kill during generation always lands
            asked = server.stats()["requests"]
            # only missing completions are asked for (those in flight at the kill are lost)
            assert asked <= total["completions"] - before
            assert counts(out)["completions"] <= total["completions"]
        before = counts(out)["completions"]
        server.reset()
        resumed = final_reports(cli(out, model, *options))
        assert server.stats()["requests"] == total["completions"] - before
    assert resumed == reference
    assert counts(out) == total
    got, expected = snapshot(out), snapshot(tmp_path / "reference")
    for table in ("prompts", "items", "scores"):
        assert got[table] == expected[table], table
    # completions: same keys and texts (their latency and creation time differ)
    assert [row[:6] for row in got["completions"]] == [row[:6] for row in expected["completions"]]


def test_kill_and_resume_the_oracle(tmp_path: Path, pool: Pool) -> None:
    reference = reference_run(tmp_path / "reference", "oracle", pool)
    total = counts(tmp_path / "reference")
    out = tmp_path / "killed"
    cmd = command(out, "oracle")
    for ready in (
        lambda c: c["items"] >= 1,
        lambda c: c["scores"] >= 1,
        lambda c: c["results"] >= 2,
    ):
        kill_when(out, cmd, ready)
    done = cli(out, "oracle")
    assert final_reports(done) == reference
    assert json.loads(done.stdout)["self_check"]["reval"]["passed"]
    assert counts(out) == total
    expected = snapshot(tmp_path / "reference")
    got = snapshot(out)
    # completions carry their creation time and latency; everything else is equal
    assert [row[:6] for row in got["completions"]] == [row[:6] for row in expected["completions"]]
    assert {k: v for k, v in got.items() if k != "completions"} == {
        k: v for k, v in expected.items() if k != "completions"
    }


def invoke(out: Path, model: str, *args: str) -> Any:
    """The command in this process (click's runner), for the quick paths."""
    return CliRunner().invoke(app, command(out, model, *args)[3:], catch_exceptions=False)


def test_the_oracle_is_labelled_a_self_check(tmp_path: Path) -> None:
    done = invoke(tmp_path, "oracle", "--bench", "cruxeval-o,core", "--limit", "3")
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["note"].startswith("SELF-CHECK") and summary["model"] == "oracle"
    assert all(check["passed"] for check in summary["self_check"].values())
    again = json.loads(
        invoke(tmp_path, "oracle", "--bench", "cruxeval-o,core", "--limit", "3").stdout
    )
    assert set(again["generated"].values()) == {0} and set(again["graded"].values()) == {0}
    assert again["headline"] == summary["headline"]


def test_the_summary_table_names_the_self_check(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app,
        [
            "eval",
            "--model",
            "oracle",
            "--out",
            str(tmp_path),
            "--bench",
            "cruxeval-o",
            "--data-dir",
            str(FIXTURES),
        ],
    )
    assert done.exit_code == 0, done.output
    assert "SELF-CHECK" in done.stdout and "not a model score" in done.stdout
    assert "pass@1 100" in done.stdout and "FAIL" not in done.stdout


def _one_error_line(done: Any, *words: str) -> None:
    code = getattr(done, "returncode", getattr(done, "exit_code", None))
    assert code == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_a_bad_spec_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    _one_error_line(invoke(tmp_path / "run", "gpt-4"), "model spec", "openai:NAME@URL")
    _one_error_line(invoke(tmp_path / "run", "openai:m@ftp://x"), "http(s) URL")
    assert not (tmp_path / "run").exists()


def test_unreachable_server_and_wrong_key_leave_the_store_intact(
    tmp_path: Path, pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": "right"}
    monkeypatch.setenv("OPENAI_API_KEY", "right")
    with ReplayProcess(api_key="right") as server:
        model = f"openai:replay@{server.url}"
        reference_run(out, model, pool)
        before = snapshot(out), counts(out)
        wrong = cli(out, model, env={**env, "OPENAI_API_KEY": "wrong"})
        _one_error_line(wrong, "401")
        assert (snapshot(out), counts(out)) == before
        assert server.stats()["requests"] == counts(out)["completions"]  # no completion asked
    # the server is gone now: same URL, nothing listening
    _one_error_line(cli(out, model, env=env), "127.0.0.1")
    assert (snapshot(out), counts(out)) == before
    with sqlite3.connect(out / "run.sqlite") as connection:
        assert connection.execute("SELECT status FROM run").fetchone()[0] == "done"


@pytest.mark.parametrize(("args", "words"), [
    (("--style", "fancy"), ("--style",)), (("--n", "0"), ("--n",)),
    (("--bench", "nope"), ("--bench", "cruxeval-o")), (("--grading", "lax"), ("--grading",)),
])  # fmt: skip
def test_bad_options_are_one_line(
    tmp_path: Path, args: tuple[str, ...], words: tuple[str, ...]
) -> None:
    _one_error_line(invoke(tmp_path / "run", "oracle", *args), *words)
    assert not (tmp_path / "run").exists()
