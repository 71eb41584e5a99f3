"""``codereasoner synth``: bad input, same seed same bytes, and SIGKILL mid-run then resume."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.synth import generators
from codereasoner.synth.generators import GeneratorKind, GeneratorOption, GeneratorSettings
from codereasoner.synth.pipeline import SynthConfig, make_source
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

OUTPUTS = ("cases.jsonl", "dropped.jsonl", "audit.jsonl", "summary.json")
N, CHUNK = 48, 8


def _data_dir(tmp_path: Path) -> Path | None:
    """The shared benchmark data, or None (then the run says --no-decontam)."""
    return SHARED_DATA if (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").exists() else None


def _command(out: Path, data_dir: Path | None, n: int = N, *extra: str) -> list[str]:
    decontam = ["--data-dir", str(data_dir)] if data_dir is not None else ["--no-decontam"]
    return [
        sys.executable,
        "-m",
        "codereasoner",
        "synth",
        "--generator",
        "offline",
        "--n",
        str(n),
        "--seed",
        "7",
        "--out",
        str(out),
        *decontam,
        "--workers",
        "1",
        "--chunk-size",
        str(CHUNK),
        *extra,
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--generator", "teacher"], "--generator 'teacher': expected offline or llm"),
        (["--generator", "llm"], "--generator llm needs --model"),
        (["--n", "0"], "--n 0: expected a positive number"),
        (["--mutants", "-1"], "--mutants -1: expected 0 or more"),
        (["--data-dir", "/nonexistent/dir"], "--data-dir /nonexistent/dir: not a directory"),
        (["--generator", "llm", "--model", "gpt4"], "model spec 'gpt4'"),
        (["--decontam-rule", "loose"], "--decontam-rule 'loose': expected literal or specific"),
        (
            ["--no-decontam", "--decontam-rule", "specific"],
            "--no-decontam and --decontam-rule contradict each other",
        ),
        (["--no-decontam", "--data-dir", "/"], "--no-decontam and --data-dir contradict"),
        (["--model", "oracle"], "--model applies to --generator llm only"),
        (["--generator", "offline", "--model", "oracle"], "--model applies to --generator llm"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    result = CliRunner().invoke(app, ["synth", "--out", str(tmp_path / "o"), *arguments])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_kill_and_resume_gives_the_bytes_of_an_uninterrupted_run(tmp_path: Path) -> None:
    data_dir = _data_dir(tmp_path)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    done = subprocess.run(_command(whole, data_dir), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "cases written" in done.stdout and "methods covered" in done.stdout

    process = subprocess.Popen(
        _command(killed, data_dir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    state = killed / "state.json"
    deadline = time.monotonic() + 120
    progress = 0
    while time.monotonic() < deadline and process.poll() is None:
        if state.exists():
            progress = json.loads(state.read_text())["done"]
            if progress >= CHUNK * 2:
                break
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):  # reported by the assert below
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert CHUNK <= json.loads(state.read_text())["done"] < N, "the kill did not land mid-run"
    assert not (killed / "summary.json").exists()

    resumed = subprocess.run(
        _command(killed, data_dir), capture_output=True, text=True, timeout=240
    )
    assert resumed.returncode == 0, resumed.stderr
    for name in OUTPUTS:
        assert (killed / name).read_bytes() == (whole / name).read_bytes(), name
    cases = [json.loads(line) for line in (whole / "cases.jsonl").read_text().splitlines()]
    assert len({case["id"] for case in cases}) == len(cases) > N // 2

    other = subprocess.run(
        _command(killed, data_dir, n=N + 1), capture_output=True, text=True, timeout=120
    )
    assert other.returncode == 2
    assert "holds a run with other settings (--n: 48 there, 49 now)" in other.stderr
    assert (killed / "cases.jsonl").read_bytes() == (whole / "cases.jsonl").read_bytes()


def test_sigterm_says_how_to_resume_and_the_resume_gives_the_same_bytes(tmp_path: Path) -> None:
    data_dir = _data_dir(tmp_path)
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    done = subprocess.run(_command(whole, data_dir), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    process = subprocess.Popen(
        _command(stopped, data_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    state = stopped / "state.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if state.exists() and json.loads(state.read_text())["done"] >= CHUNK:
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert lines == [f"error: interrupted by SIGTERM (re-run the same command with --out {stopped} "
                     "to resume)"], stderr  # fmt: skip
    assert "Traceback" not in stderr
    resumed = subprocess.run(
        _command(stopped, data_dir), capture_output=True, text=True, timeout=240
    )
    assert resumed.returncode == 0, resumed.stderr
    for name in OUTPUTS:
        assert (stopped / name).read_bytes() == (whole / name).read_bytes(), name


def test_without_benchmark_data_synth_refuses_and_says_how_to_fix_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    runner = CliRunner()
    for arguments, env, where in (
        (["--data-dir", str(empty)], {}, f"in {empty} "),
        ([], {"CODEREASONER_CACHE": str(tmp_path / "cache")}, f"the cache {tmp_path / 'cache'}"),
    ):
        out = tmp_path / "out"
        result = runner.invoke(app, ["synth", "--out", str(out), "--n", "5", *arguments], env=env)
        assert result.exit_code == 2, result.output
        line = " ".join(result.output.split())
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert "no benchmark data to decontaminate against" in line and where in line
        assert "cruxeval-o, lcb-execution, reval, core-output, core-probe" in line
        for fix in ("--data-dir DIR", "'codereasoner bench fetch NAME'", "--no-decontam"):
            assert fix in line
        assert not out.exists()


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]


def test_no_decontam_is_said_on_the_terminal_in_the_summary_and_in_every_record(
    tmp_path: Path,
) -> None:
    out = tmp_path / "skip"
    done = subprocess.run(_command(out, None, 6), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "decontamination: SKIPPED (--no-decontam)" in done.stderr
    assert "decontamination: SKIPPED (--no-decontam)" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["decontam"] == {"skipped": "--no-decontam", "checked": []}
    records = _records(out)
    assert records
    for record in records:
        assert record["decontam"] == {"checked": [], "skipped": "--no-decontam"}
        assert "decontam" not in record["filters"]["passed"]


@pytest.mark.skipif(
    not (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").exists(), reason="no shared CRUXEval data"
)
def test_one_benchmark_folder_names_what_was_not_checked_and_resume_keeps_settings(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cruxeval").symlink_to(SHARED_DATA / "cruxeval")  # only CRUXEval
    out = tmp_path / "one"
    command = _command(out, data, 6, "--decontam-rule", "specific")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    missing = "lcb-execution, reval, core-output, core-probe"
    stderr = " ".join(done.stderr.split())
    assert "specific 10-gram rule" in stderr and "against cruxeval-o (800 programs)" in stderr
    assert f"NOT checked (data missing): {missing}" in stderr
    assert f"specific rule; checked cruxeval-o; NOT checked (data missing): {missing}" in " ".join(
        done.stdout.split()
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["decontam"]["checked"] == ["cruxeval-o"]
    assert summary["decontam"]["missing"] == missing.split(", ")
    for record in _records(out):
        assert record["decontam"]["checked"] == ["cruxeval-o"]
        assert record["decontam"]["missing"] == missing.split(", ")
        assert record["decontam"]["rule"] == "specific"
        assert "decontam" in record["filters"]["passed"]
    # The same directory with other decontamination settings is refused, not mixed, each
    # difference named by the flag that makes it (never state.json's names, decontam_...).
    for other, difference in (
        (_command(out, None, 6), "(--no-decontam: not given there, given now)"),
        (
            _command(out, SHARED_DATA, 6, "--decontam-rule", "specific"),
            "(the benchmark data (--data-dir or the cache): benchmarks checked cruxeval-o there,",
        ),
        (_command(out, data, 6), "(--decontam-rule: 'specific' there, 'literal' now)"),
    ):
        again = subprocess.run(other, capture_output=True, text=True, timeout=120)
        assert again.returncode == 2 and "holds a run with other settings" in again.stderr
        assert f"error: --out {out}: holds a run with other settings {difference}" in " ".join(
            again.stderr.split()
        )
        assert "decontam_" not in again.stderr and "Traceback" not in again.stderr
    # Every setting the resume check compares has words for the error (a flag, or what sets it).
    from codereasoner.cli.synth import DATA_SETTINGS, FIXED_SETTINGS, SETTING_FLAGS

    settings = json.loads((out / "state.json").read_text())["settings"]
    named = SETTING_FLAGS.keys() | DATA_SETTINGS.keys() | FIXED_SETTINGS.keys()
    assert set(settings) <= named, set(settings) - named
    assert (out / "summary.json").read_text() == json.dumps(summary, indent=2) + "\n"


DEFAULT_BENCHMARKS = ["cruxeval-o", "lcb-execution", "reval", "core-output", "core-probe"]


@pytest.mark.skipif(
    not (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").exists(), reason="no shared CRUXEval data"
)
@pytest.mark.parametrize("form", ["data root", "one benchmark's folder"])
def test_data_dir_is_the_data_root_or_one_benchmark_s_folder(tmp_path: Path, form: str) -> None:
    folder = SHARED_DATA if form == "data root" else SHARED_DATA / "cruxeval"
    out = tmp_path / "out"
    done = subprocess.run(_command(out, folder, 6), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())["decontam"]
    checked, missing = summary["checked"], summary["missing"]
    assert "cruxeval-o" in checked and sorted(checked + missing) == sorted(DEFAULT_BENCHMARKS)
    for record in _records(out):
        assert record["decontam"]["checked"] == checked
    lines = done.stderr.splitlines()
    assert lines[0].startswith("decontamination: literal 10-gram rule")
    if form == "data root":
        # the data root holds more than CRUXEval; each benchmark not found says why
        assert len(checked) > 1
        for name in missing:
            assert any(line.startswith(f"  {name}: ") for line in lines), (name, lines)
        assert "not found in" not in done.stderr
    else:
        # only the benchmarks whose files are in the folder; one line names the others
        assert checked == ["cruxeval-o"] and missing == DEFAULT_BENCHMARKS[1:]
        assert lines[1] == (
            f"  not found in {folder}: lcb-execution, reval, core-output, core-probe (it holds "
            "one benchmark's files; give the data root to check the others)"
        )
        assert "must hold" not in done.stderr  # no line per benchmark


def toy_source(settings: GeneratorSettings) -> object:
    """A generator declared by a test: the offline generator's cases under another name."""
    from codereasoner.synth.generators.offline import OfflineGenerator

    class Toy:
        name = "toy"

        def __init__(self) -> None:
            self.generator = OfflineGenerator(settings.seed)
            self.label = settings.options.get("label", "plain")

        def produce(self, indices: range) -> list:
            return [
                replace(self.generator.generate(index), generator=f"toy:{self.label}")
                for index in indices
            ]

        def committed_lines(self) -> list[str]:
            return []

    return Toy()


def test_a_registered_generator_is_chosen_checked_and_built_from_its_declaration(
    tmp_path: Path,
) -> None:
    toy = GeneratorKind(
        "toy",
        "tests.test_cli_synth:toy_source",
        "a test generator",
        options=(GeneratorOption("label", "A label."),),
    )
    generators.register(toy)
    runner = CliRunner()
    try:
        out = tmp_path / "toy"
        base = ["synth", "--out", str(out), "--generator", "toy", "--no-decontam"]
        # an option of another generator is refused for it, in one line
        result = runner.invoke(app, [*base, "--model", "oracle"])
        assert result.exit_code == 2
        assert result.output.strip() == "error: --model applies to --generator llm only"
        # chosen by name and built from the declaration (its module imported now)
        result = runner.invoke(app, [*base, "--n", "4", "--workers", "1"])
        assert result.exit_code == 0, result.output
        settings = json.loads((out / "state.json").read_text())["settings"]
        assert settings["generator"] == "toy"
        records = _records(out)
        assert records and {record["generator"] for record in records} == {"toy:plain"}
        # options reach it as the pipeline passes them
        config = SynthConfig(
            out=tmp_path / "run", n=1, generator="toy", generator_options={"label": "x"}
        )
        assert [c.generator for c in make_source(config).produce(range(2))] == ["toy:x"] * 2
    finally:
        generators.unregister("toy")
