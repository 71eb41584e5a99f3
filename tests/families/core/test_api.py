"""``build_core()``: the Python API of ``core build`` writes what the command writes, and
refuses bad settings with one line, before writing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from codereasoner.evaluation import BuildError, synthesize
from codereasoner.families.core.api import BuildSettings, build_core
from codereasoner.settings import SettingError
from tests.commands import run_codereasoner


def test_the_api_writes_what_the_command_writes(tmp_path: Path) -> None:
    cases = tmp_path / "synth"
    synthesize(cases, n=24, seed=3, decontaminate=False)
    core = tmp_path / "core"
    built = build_core(core, BuildSettings(source=f"synth:{cases}", limit=2))
    assert built.problems >= 1
    done = run_codereasoner("core", "build", "--from", f"synth:{cases}", "--limit", "2",
                            "--out", tmp_path / "core-cli")  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("problems.jsonl", "core_io.json", "core_qa.json"):
        assert (core / name).read_bytes() == (tmp_path / "core-cli" / name).read_bytes(), name


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda out: build_core(out, BuildSettings(source="core", variants=0)), "variants 0"),
        (lambda out: build_core(out, BuildSettings(source="nowhere:x")), "nowhere"),
        (lambda out: build_core(out, BuildSettings(source="core"), workers=0), "workers 0"),
    ],
)
def test_bad_settings_are_one_line(tmp_path: Path, call: object, said: str) -> None:
    with pytest.raises((BuildError, SettingError)) as caught:
        call(tmp_path / "out")  # type: ignore[operator]
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()
