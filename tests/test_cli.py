"""The command line, run as a user would: its own entry point (a real subprocess where the
interpreter is the point), real files, the real sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import invoke as cli


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.py"
    path.write_text("def f(text, n):\n    print('called')\n    return [text * n, len(text)]\n")
    return path


def test_run_prints_value_status_and_resources(program: Path) -> None:
    done = cli("run", str(program), "--call", "f('ab', 2)")
    assert done.returncode == 0, done.stderr
    assert "['abab', 2]" in done.stdout
    assert "ok" in done.stdout and "called" in done.stdout and "max RSS" in done.stdout


def test_run_json_output(program: Path) -> None:
    done = cli("run", str(program), "--call", "f('x', 3)", "--json")
    payload = json.loads(done.stdout)
    assert payload["result"]["status"] == "ok"
    assert payload["result"]["value"] == "['xxx', 1]"
    assert payload["call"] == "f('x', 3)"
    assert payload["deterministic"] is True


def test_run_reports_failures_with_exit_code_1(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text("def f():\n    while True:\n        pass\n")
    done = cli("run", str(path), "--call", "f()", "--timeout", "0.3", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["result"]["status"] == "timeout"


def test_run_detects_hash_seed_nondeterminism(tmp_path: Path) -> None:
    path = tmp_path / "sets.py"
    path.write_text("def f(words):\n    return list(set(words))\n")
    words = [f"word{i}" for i in range(15)]
    done = cli("run", str(path), "--call", f"f({words!r})", "--seeds", "0,1,2")
    assert done.returncode == 1
    assert "differs between hash seeds" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.py", "--call", "f()"], "missing.py: cannot read the program"),
        (["run", "PROGRAM", "--call", "f(x)"], "argument 1 is not a literal"),
        (["run", "PROGRAM", "--call", "print"], "expected a call"),
        (["run", "PROGRAM", "--call", "f(1)", "--seeds", "a,b"], "--seeds: expected"),
        (
            ["run", "PROGRAM", "--call", "f(1)", "--timeout", "-1"],
            "--timeout -1: expected a positive number",
        ),
        (
            ["run", "PROGRAM", "--call", "f(1)", "--isolation", "docker"],
            "--isolation 'docker': expected one of",
        ),
    ],
)
def test_bad_input_gives_one_clear_line_and_exit_2(
    program: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    args = [str(program) if arg == "PROGRAM" else arg for arg in args]
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error:") and message in lines[0]


def test_demo_runs_offline_and_writes_records(tmp_path: Path) -> None:
    out = tmp_path / "demo.jsonl"
    done = cli("demo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    verdicts = {record["item"]: record["verdict"] for record in records}
    assert verdicts["filter vowels"] == "correct"
    assert verdicts["wrong answer"] == "wrong"
    assert verdicts["tuple vs list"] == "wrong"
    assert verdicts["always-equal answer"].startswith("wrong (unparsable")
    assert verdicts["answer that calls f"].startswith("wrong (unparsable")
    statuses = {record["item"]: record["result"]["status"] for record in records}
    assert statuses["infinite loop"] == "timeout"
    assert statuses["memory bomb"] == "memory"
    assert statuses["reads /etc/shadow"] == "error"


@pytest.mark.parametrize("isolation", ["bubblewrap", "fallback"])
def test_doctor_checks_containment_with_live_probes(isolation: str) -> None:
    done = cli("doctor", "--isolation", isolation)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("contained") == 6
    assert "NOT contained" not in done.stdout
    assert ("fallback" in done.stdout) == (isolation == "fallback")


def test_trace_shows_steps_values_and_branches(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(
        "def f(xs):\n    out = []\n    for x in xs:\n        if x > 1:\n            out.append(x)\n    return out\n"
    )
    done = cli("trace", str(path), "--call", "f([1, 5])")
    assert done.returncode == 0, done.stderr
    assert "out = [5]" in done.stdout and "True" in done.stdout and "returns [5]" in done.stdout
    text = cli("trace", str(path), "--call", "f([1, 5])", "--text").stdout
    assert text.splitlines()[0] == "call f(xs=[1, 5])"
    assert text.splitlines()[-1] == "return [5]"
    payload = json.loads(cli("trace", str(path), "--call", "f([1, 5])", "--json").stdout)
    assert [step["line"] for step in payload["steps"]] == [2, 3, 4, 3, 4, 5, 3, 6]
    assert payload["partial"] is False


def test_trace_of_a_runaway_loop_is_partial_and_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "spin.py"
    path.write_text("def f():\n    n = 0\n    while True:\n        n += 1\n")
    done = cli("trace", str(path), "--call", "f()", "--max-steps", "30", "--json")
    assert done.returncode == 1
    payload = json.loads(done.stdout)
    assert payload["partial_reason"] == "max_steps" and len(payload["steps"]) == 30


@pytest.mark.parametrize("command", ["distill", "score"])
def test_error_lines_show_paths_as_typed(command: str, tmp_path: Path) -> None:
    """A path that looks like markup ('[/x]') is printed as is, in one line, no traceback."""
    folder = tmp_path / "[/x]" / "[bold]"
    folder.mkdir(parents=True)
    (folder / "cases.jsonl").write_text('{"id": 1}\n')
    fixtures = Path(__file__).resolve().parent / "fixtures" / "cruxeval"
    argv = {
        "distill": [
            "distill",
            "--teacher",
            "oracle",
            "--cases",
            str(folder),
            "--out",
            str(tmp_path / "out"),
        ],
        "score": [
            "score",
            "--bench",
            "cruxeval-o",
            "-g",
            str(folder / "missing.json"),
            "--data-dir",
            str(fixtures),
        ],
    }[command]
    done = cli(*argv)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert str(folder) in line, line


def test_version_answers_without_importing_the_commands() -> None:
    """``codereasoner --version`` reads the package metadata only (it took over a second when
    it imported every command and their libraries)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codereasoner", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("codereasoner "), done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "codereasoner.cli.application" not in imported and "typer" not in imported
    assert not any(name.startswith("codereasoner.benchmarks") for name in imported)
