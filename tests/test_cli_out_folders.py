"""``--out`` is one command's folder: a command refuses a folder another command (or the user)
wrote, with one line, and changes nothing there."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.commands import run_codereasoner as cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    """The folder's files (an empty lock file, taken before the folder is read, aside)."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != ".lock")
    return {p.name: p.read_bytes() for p in files}


def test_commands_refuse_each_others_folders(tmp_path: Path) -> None:
    synth = tmp_path / "synth"
    done = cli("synth", "--n", "4", "--no-decontam", "--out", synth)
    assert done.returncode == 0, done.stderr
    before = snapshot(synth)
    core = cli("core", "build", "--from", f"synth:{synth}", "--out", synth)
    refused(core, "holds", "but no build.json", "choose an empty --out")
    evaluated = cli("eval", "--model", "oracle", "--bench", "cruxeval-o", "--limit", "2",
                    "--data-dir", FIXTURES, "--out", synth)  # fmt: skip
    refused(evaluated, "holds", "but no run store", "choose an empty --out")
    assert snapshot(synth) == before

    run = tmp_path / "run"
    done = cli("eval", "--model", "oracle", "--bench", "cruxeval-o", "--limit", "2",
               "--data-dir", FIXTURES, "--out", run)  # fmt: skip
    assert done.returncode == 0, done.stderr
    before = snapshot(run)
    refused(
        cli("synth", "--n", "4", "--no-decontam", "--out", run), "results.json", "no state.json"
    )
    assert snapshot(run) == before

    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    refused(cli("synth", "--n", "4", "--no-decontam", "--out", mine), "notes.txt")
    assert snapshot(mine) == {"notes.txt": b"mine"}
