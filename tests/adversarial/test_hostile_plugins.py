"""Hostile or broken plugins, installed as pip installs them: one that exits at import, and a
benchmark whose items a built-in loader would refuse. Each is one error line naming what is
wrong, with a non-zero exit, never a silent success or a wrong score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commands import one_error_line
from tests.test_plugins import ENTRY_POINTS, ROWS, cli, install


@pytest.mark.parametrize("code", ["0", "None", "3"])
def test_a_plugin_that_exits_at_import_stops_every_command_with_one_line(
    tmp_path: Path, code: str
) -> None:
    site = tmp_path / "site"
    install(site)
    module = site / "toyplugin.py"
    module.write_text(f"import sys\nsys.exit({code})\n" + module.read_text())
    for command in (["bench", "list"], ["eval", "--model", "oracle", "--bench", "cruxeval-o"]):
        done = cli(site, *command)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        line = one_error_line(done.stderr)
        assert "toyplugin" in line and "exits at import" in line, line


def data(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "toy.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def test_a_plugin_benchmark_with_duplicate_ids_is_refused_not_scored(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, ENTRY_POINTS)
    folder = data(tmp_path, [*ROWS, {**ROWS[1], "id": ROWS[0]["id"]}])
    out = tmp_path / "run"
    done = cli(site, "eval", "--model", "oracle", "--bench", "toy-own", "--data-dir", folder,
               "--out", out)  # fmt: skip
    assert done.returncode == 2, done.stdout
    line = one_error_line(done.stderr)
    assert "toy-own" in line and "duplicate id 'toy_0'" in line, line


def test_a_plugin_item_of_a_task_the_benchmark_does_not_declare_is_refused(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    install(site, ENTRY_POINTS)
    module = site / "toyplugin.py"
    module.write_text(
        module.read_text().replace('"toy-own", "toy_output", program', '"toy-own", "nope", program')
    )
    done = cli(site, "eval", "--model", "oracle", "--bench", "toy-own", "--data-dir",
               data(tmp_path, ROWS), "--out", tmp_path / "run")  # fmt: skip
    assert done.returncode == 2, done.stdout
    line = one_error_line(done.stderr)
    assert "task 'nope' is not one of its task kinds" in line, line
