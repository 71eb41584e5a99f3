"""``synthesize()``: the Python API beside ``evaluate()`` writes what its command writes,
resumes, and refuses bad settings with one ``BuildError`` line (``build_core()``:
tests/families/core/test_api.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codereasoner.evaluation import BuildError, synthesize
from codereasoner.settings import SettingError
from tests.commands import run_codereasoner


def test_the_apis_write_what_the_commands_write(tmp_path: Path) -> None:
    cases = tmp_path / "synth"
    summary = synthesize(cases, n=24, seed=3, decontaminate=False)
    assert summary.data["kept"]["total"] > 0
    by_command = tmp_path / "synth-cli"
    done = run_codereasoner("synth", "--n", "24", "--seed", "3", "--no-decontam",
                            "--out", by_command)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (cases / "cases.jsonl").read_bytes() == (by_command / "cases.jsonl").read_bytes()
    again = synthesize(cases, n=24, seed=3, decontaminate=False)  # resumed: nothing new
    assert again.data["kept"] == summary.data["kept"]


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda out: synthesize(out, n=0), "n 0: expected a positive number"),
        (lambda out: synthesize(out, generator="nope"), "generator 'nope': expected"),
        (lambda out: synthesize(out, generator="llm"), "generator llm needs model"),
        (
            lambda out: synthesize(out, generator_options={"model": "oracle"}),
            "model applies to generator llm only",
        ),
        (lambda out: synthesize(out, decontam_rule="loose"), "decontam_rule 'loose'"),
    ],
)
def test_bad_settings_are_one_line(tmp_path: Path, call: object, said: str) -> None:
    with pytest.raises((BuildError, SettingError)) as caught:
        call(tmp_path / "out")  # type: ignore[operator]
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()
