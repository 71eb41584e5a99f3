"""Output folders never write through symbolic links: a link planted where a command writes (a
data file, the lock, the run store; dangling or not) is refused with one error line, and the
file it points at is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from codereasoner.families.core.build import PROBLEMS_FILE, _Store
from codereasoner.files import open_no_follow
from tests.commands import Ran, invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VICTIM_TEXT = "precious\n"


def _cli(*args: str, cwd: Path) -> Ran:
    return invoke(*args, cwd=cwd, env={"HF_HUB_OFFLINE": "1"})


def _synth(out: Path) -> Ran:
    return _cli(
        "synth", "--generator", "offline", "--n", "5", "--seed", "0", "--no-decontam",
        "--workers", "1", "--out", str(out), cwd=out.parent,
    )  # fmt: skip


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text(VICTIM_TEXT)
    return path


def _refused(done: Ran) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and lines and "Traceback" not in done.stderr, done.stderr
    return lines[-1]


def test_synth_refuses_a_linked_data_file_on_resume(tmp_path: Path, victim: Path) -> None:
    out = tmp_path / "synth"
    assert _synth(out).returncode == 0
    # longer than what the run recorded: resuming would cut it back to that size
    victim.write_bytes((out / "cases.jsonl").read_bytes() + VICTIM_TEXT.encode())
    before = victim.read_bytes()
    (out / "cases.jsonl").unlink()
    (out / "cases.jsonl").symlink_to(victim)
    assert "symbolic link" in _refused(_synth(out))
    assert victim.read_bytes() == before


@pytest.mark.parametrize("name", ["cases.jsonl", ".lock"])
def test_a_dangling_link_in_a_new_folder_creates_nothing(tmp_path: Path, name: str) -> None:
    out = tmp_path / "synth"
    out.mkdir()
    target = tmp_path / f"created-through-{name}"
    (out / name).symlink_to(target)
    _refused(_synth(out))
    assert not target.exists()


def test_eval_refuses_a_linked_run_store(tmp_path: Path, victim: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.sqlite").symlink_to(victim)
    done = _cli(
        "eval", "--model", "oracle", "--bench", "cruxeval-o", "--limit", "2",
        "--data-dir", str(FIXTURES), "--out", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert "symbolic link" in _refused(done)
    assert victim.read_text() == VICTIM_TEXT


def test_core_builds_torn_tail_cut_does_not_follow_a_link(tmp_path: Path, victim: Path) -> None:
    out = tmp_path / "core"
    out.mkdir()
    store = _Store(out, {"limit": 1})
    victim.write_text(VICTIM_TEXT + "torn")  # a torn tail, as a killed build leaves
    store.path.symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"):
        store.done()
    assert victim.read_text() == VICTIM_TEXT + "torn"
    assert store.path.name == PROBLEMS_FILE


def test_open_no_follow_opens_plain_files(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    with open_no_follow(path, "a", encoding="utf-8") as handle:
        handle.write("one\n")
    with open_no_follow(path, "rb") as handle:
        assert handle.read() == b"one\n"
