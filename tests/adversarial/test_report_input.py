"""`report` reads run stores someone else may have written: it never changes a byte of them,
refuses a store whose tables are views (an endless query), and shows untrusted text (model
names, statuses, paths) with control and bidirectional characters escaped."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest

from tests.commands import Ran, invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _cli(*args: str, cwd: Path) -> Ran:
    return invoke(*args, cwd=cwd, env={"HF_HUB_OFFLINE": "1", "COLUMNS": "200"})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    done = _cli(
        "eval", "--model", "oracle", "--bench", "cruxeval-o", "--limit", "3",
        "--data-dir", str(FIXTURES), "--out", str(folder / "run"), cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder / "run" / "run.sqlite"


def _copy(store: Path, folder: Path) -> Path:
    target = folder / "run"
    target.mkdir()
    with sqlite3.connect(store) as source, sqlite3.connect(target / "run.sqlite") as copy:
        source.backup(copy)
    return target / "run.sqlite"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_report_leaves_the_store_as_it_was(store: Path, tmp_path: Path) -> None:
    copy = _copy(store, tmp_path)
    with sqlite3.connect(copy) as db:
        db.execute("PRAGMA journal_mode=DELETE")
    before = _digest(copy)
    done = _cli("report", str(copy.parent), "--out", str(tmp_path / "r.html"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _digest(copy) == before
    assert not (copy.parent / "run.sqlite-wal").exists()


def test_a_store_whose_run_table_is_an_endless_view_is_refused(store: Path, tmp_path: Path) -> None:
    copy = _copy(store, tmp_path)
    with sqlite3.connect(copy) as db:
        db.execute("ALTER TABLE run RENAME TO old_run")
        db.execute(
            "CREATE VIEW run AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
            "SELECT x AS id, '' AS model, 0 AS created, 0 AS updated, '{}' AS config, "
            "'done' AS status, '' AS message FROM c"
        )
    done = _cli("report", str(copy.parent), "--out", str(tmp_path / "r.html"), cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "run is a view" in lines[0]


@pytest.mark.parametrize("hostile", ["\x1b[2J\x1b[31mred", "abc\u202edcba", "a\rb\x07c"])
def test_untrusted_text_is_shown_escaped(store: Path, tmp_path: Path, hostile: str) -> None:
    copy = _copy(store, tmp_path)
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE run SET model = ?, status = ?", (hostile, hostile))
    shown = tmp_path / f"x{hostile}y"
    shutil.move(copy.parent, shown)
    with warnings.catch_warnings(record=True) as caught:  # a glyph the font lacks, say
        warnings.simplefilter("always")
        done = _cli("report", str(shown), "--out", str(tmp_path / "r.html"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not caught, [str(warning.message) for warning in caught]
    for character in ("\x1b", "\u202e", "\r", "\x07"):
        assert character not in done.stdout


def test_a_crafted_store_of_unreadable_ids_or_times_is_one_line(tmp_path: Path) -> None:
    """Item ids with digits int() does not read (``sample_1²``) sort as text; a ``created``
    that is no number is one error line naming the store."""
    from codereasoner.evaluation.report.data import natural_key

    assert natural_key("sample_1²") == ((1, "sample_"), (0, 1), (1, "²"))
    assert sorted(["sample_10", "sample_2", "sample_1²"], key=natural_key) == [
        "sample_1²", "sample_2", "sample_10",
    ]  # fmt: skip
    run = tmp_path / "run"
    done = invoke("eval", "--model", "oracle", "--bench", "cruxeval-o", "--data-dir", FIXTURES,
                  "--limit", "1", "--out", run)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(run / "run.sqlite") as connection:
        connection.execute("UPDATE run SET created = 'yesterday'")
    report = invoke("report", run, "--out", tmp_path / "r.html")
    assert report.returncode == 2, report.stdout
    lines = [line for line in report.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "unexpected content (ValueError" in lines[0], report.stderr
