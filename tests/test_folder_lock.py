"""Two runs never write one output folder at once: eval, distill and synth each refuse, in one
line, a folder another process is writing into (the lock a real second process holds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import run_codereasoner as cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HOLDER = """
import sys, time
from pathlib import Path
from codereasoner.synth.writer import exclusive
with exclusive(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def held(folder: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("command", ["eval", "distill", "synth"])
def test_a_folder_in_use_is_refused_in_one_line(command: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cases = tmp_path / "cases"
    if command == "distill":
        made = cli(
            "synth",
            "--generator",
            "offline",
            "--n",
            "5",
            "--seed",
            "0",
            "--out",
            cases,
            "--no-decontam",
        )
        assert made.returncode == 0, made.stderr
    argv = {
        "eval": [
            "eval",
            "--model",
            "oracle",
            "--bench",
            "cruxeval-o",
            "--data-dir",
            FIXTURES,
            "--out",
            out,
        ],
        "distill": ["distill", "--teacher", "oracle", "--cases", cases, "--out", out, "--k", "1"],
        "synth": [
            "synth",
            "--generator",
            "offline",
            "--n",
            "5",
            "--seed",
            "0",
            "--out",
            out,
            "--no-decontam",
        ],
    }[command]
    holder = held(out)
    try:
        busy = cli(*argv)
        assert busy.returncode == 2, (busy.stdout, busy.stderr)
        errors = [line for line in busy.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "another run is writing into this folder" in errors[0]
        assert "Traceback" not in busy.stderr
        # refused at once, not after waiting: the holder never lets go until it is killed
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()
    again = cli(*argv)  # the kernel dropped the killed holder's lock
    assert again.returncode == 0, again.stderr
