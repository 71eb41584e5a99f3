"""Settings are named as the Python API spells them below the command line, and as flags on it:
one typed error carries the setting, the value and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from codereasoner.cli.common import flag_message, flag_of
from codereasoner.evaluation import synthesize
from codereasoner.evaluation.run_settings import RunError, RunSettings, check_settings
from codereasoner.execution import Limits, Pool, TraceOptions
from codereasoner.execution.executor import parse_executor
from codereasoner.families.core.api import build_core
from codereasoner.families.core.build import BuildSettings
from codereasoner.models.base import Sampling
from codereasoner.settings import SettingError, check_at_least
from codereasoner.synth.pipeline import SynthConfig
from tests.commands import invoke


def test_the_error_carries_setting_value_and_expectation() -> None:
    with pytest.raises(SettingError) as raised:
        check_at_least(16, memory_mb=8)
    error = raised.value
    assert (error.setting, error.value, error.expected) == ("memory_mb", 8, "at least 16")
    assert str(error) == "memory_mb 8: expected at least 16"
    assert isinstance(error, ValueError)  # callers written for ValueError keep working
    assert str(SettingError("engine", "fast", "auto")) == "engine 'fast': expected auto"
    check_at_least(1, workers=None)  # not given: nothing to check


@pytest.mark.parametrize(
    ("make", "setting"),
    [
        (lambda: Limits(timeout_s=0.0), "timeout_s"),
        (lambda: Limits(memory_mb=1), "memory_mb"),
        (lambda: TraceOptions(max_steps=0), "max_steps"),
        (lambda: Pool(1, isolation="none"), "isolation"),
        (lambda: SynthConfig(out=Path("x"), n=0), "n"),
        (lambda: BuildSettings(source="core", probes=0), "probes"),
        (lambda: parse_executor("slurm"), "executor"),
    ],
)
def test_lower_layers_name_the_setting_never_a_flag(make: object, setting: str) -> None:
    with pytest.raises(SettingError) as raised:
        make()  # type: ignore[operator]
    assert raised.value.setting == setting and "--" not in str(raised.value)


@pytest.mark.parametrize(
    ("settings", "setting"),
    [
        (RunSettings(("cruxeval-o",), n=0), "n"),
        (RunSettings(("cruxeval-o",), workers=0), "workers"),
        (RunSettings(("cruxeval-o",), sampling=Sampling(top_p=2.0)), "top_p"),
        (RunSettings(("cruxeval-o",), isolation="none"), "isolation"),
        (RunSettings(("cruxeval-o",), executor="slurm"), "executor"),
    ],
)
def test_a_run_is_refused_by_setting(settings: RunSettings, setting: str) -> None:
    with pytest.raises(RunError) as raised:
        check_settings(settings)
    cause = raised.value.__cause__
    assert isinstance(cause, SettingError) and cause.setting == setting
    assert str(raised.value) == str(cause) and "--" not in str(cause)
    assert flag_message(raised.value).startswith(flag_of(setting) + " ")


def test_only_the_command_line_names_flags() -> None:
    assert (
        flag_of("timeout_s") == "--timeout" and flag_of("max_output_chars") == "--max-output-chars"
    )
    assert flag_message(SettingError("timeout_s", 0.0, "a positive number")) == (
        "--timeout 0: expected a positive number"
    )
    assert flag_message(ValueError("plain text")) == "plain text"


def test_the_apis_and_the_commands_refuse_alike(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match=r"^mutants -1: expected 0 or more$"):
        synthesize(tmp_path / "s", mutants=-1, decontaminate=False)
    with pytest.raises(SettingError, match=r"^decontam_rule 'x': expected literal or specific$"):
        synthesize(tmp_path / "s", decontam_rule="x")
    with pytest.raises(SettingError, match=r"^variants 0: expected a positive number$"):
        build_core(tmp_path / "c", BuildSettings(source="core", variants=0))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "cases.jsonl").write_text("")
    with pytest.raises(SettingError, match=r"^source 'synth:.*': expected a usable program \(none"):
        build_core(tmp_path / "c", BuildSettings(source=f"synth:{empty}"))
    for args, line in (
        (("synth", "--out", tmp_path / "s", "--mutants", "-1"), "--mutants -1: expected 0 or more"),
        (("synth", "--out", tmp_path / "s", "--decontam-rule", "x"), "--decontam-rule 'x'"),
        (("core", "build", "--from", "core", "--out", tmp_path / "c", "--variants", "0"),
         "--variants 0: expected a positive number"),
        (("core", "build", "--from", f"synth:{empty}", "--out", tmp_path / "c"),
         f"--from 'synth:{empty}': expected a usable program (none read)"),
        (("run", tmp_path / "p.py", "-c", "f()", "--timeout", "0"), "--timeout 0: expected"),
    ):  # fmt: skip
        (tmp_path / "p.py").write_text("def f():\n    return 1\n")
        done = invoke(*args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"error: {line}"), done.stderr
    assert not (tmp_path / "s").exists() and not (tmp_path / "c").exists()
