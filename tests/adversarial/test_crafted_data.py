"""Crafted data files: whatever a --data-dir file holds, reading it ends in one error line that
names the file and line, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codereasoner.files import parse_json

GOOD = {"code": "def f(x):\n    return x", "input": "1", "output": "1", "id": "sample_0"}
CRAFTED = {
    "deep list": "[" * 200_000 + "]" * 200_000,
    "deep object": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "deep field": json.dumps({**GOOD, "id": "sample_1"})[:-1]
    + ', "x": '
    + "[" * 100_000
    + "]" * 100_000
    + "}",
}


@pytest.mark.parametrize("name", CRAFTED)
def test_a_crafted_benchmark_line_is_one_error_line(name: str, tmp_path: Path) -> None:
    folder = tmp_path / "cruxeval"
    folder.mkdir()
    (folder / "cruxeval.jsonl").write_text(json.dumps(GOOD) + "\n" + CRAFTED[name] + "\n")
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "codereasoner", "eval", "--model", "oracle", "--bench",
         "cruxeval-o", "--data-dir", str(tmp_path), "--out", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "cruxeval.jsonl:2" in lines[0]


def test_parse_json_turns_deep_nesting_into_a_value_error() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_json("[" * 200_000 + "]" * 200_000)
    assert parse_json('{"a": [1, 2]}') == {"a": [1, 2]}
