"""A run store is a file anyone can craft: ``export-generations`` on a store whose run config
holds fields of other types is one error line naming the field, never a traceback; and the
``score`` command it prints repeats the run's sandbox limit, so that it reproduces the run."""

from __future__ import annotations

import json
import shlex
import sqlite3
from pathlib import Path

import pytest

from tests.commands import invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    done = invoke("eval", "--model", "oracle", "--bench", "cruxeval-o", "--data-dir", FIXTURES,
                  "--limit", "2", "--timeout", "7", "--out", folder)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ('"x"', "run.config is not a JSON object"),
        ("null", "run.config is not a JSON object"),
        ('{"n": "many"}', "field 'n': expected int"),
        ('{"n": true}', "field 'n': expected int"),
        ('{"sampling_keys": [1]}', "field 'sampling_keys': expected dict"),
        ('{"reported_n": {"cruxeval-o": "x"}}', "field 'reported_n': expected int values"),
        ('{"style": 5}', "field 'style': expected str or null"),
        ("{not json", "run.config is not a JSON object"),
    ],
)
def test_a_crafted_run_config_is_one_line(
    run: Path, tmp_path: Path, config: str, words: str
) -> None:
    with sqlite3.connect(run / "run.sqlite") as connection:
        connection.execute("UPDATE run SET config = ?", (config,))
    out = tmp_path / "g.jsonl"
    done = invoke("export-generations", run, "--out", out)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], done.stderr
    assert not out.exists()


def test_the_printed_score_command_reproduces_the_run(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.jsonl"
    done = invoke("export-generations", run, "--out", out)
    assert done.returncode == 0, done.stderr
    said = (done.stdout + done.stderr).splitlines()
    command = next(line for line in said if "codereasoner score" in line)
    words = shlex.split(command.split("score it with: ", 1)[1])
    assert words[words.index("--timeout") + 1] == "7"
    scored = invoke(*words[1:], "--json")
    assert scored.returncode == 0, scored.stderr
    results = json.loads((run / "results.json").read_text())
    assert json.loads(scored.stdout)["pass@1"] == results["headline"]["cruxeval-o"]["pass@1"]
