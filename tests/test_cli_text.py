"""What every command prints, run as a user would (the console script's entry point, the real sandbox): text
that is never read as markup, errors in the user's words, plain help, ``--json`` and
``--version``, traces that say how they ended, and progress lines off a terminal."""

from __future__ import annotations

import importlib.util
import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.cli.doctor import PROBES
from tests.commands import Ran
from tests.test_cli import cli

# Names typed by a user that Rich would read as markup: a closing tag, a style, a bad tag.
MARKUP_NAMES = ("run[/b].py", "p[red]x[/red].py", "[bold]x.py")
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROGRAM = "def f(x):\n    print('hi [red]x[/red] [/b]')\n    return x + 1\n"


def one_error_line(done: Ran, *expected: str) -> str:
    """The single error line of a refused command (exit 2, no traceback)."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for text in expected:
        assert text in lines[0]
    return lines[0]


def write_program(folder: Path, name: str, source: str = PROGRAM) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


def commands() -> list[tuple[list[str], object]]:
    """Every command and sub-command (its click object), with the words that name it."""
    import typer.main

    def walk(command: object, words: list[str]) -> list[tuple[list[str], object]]:
        found = [(words, command)]
        for name, sub in getattr(command, "commands", {}).items():
            found += walk(sub, [*words, name])
        return found

    return walk(typer.main.get_command(app), [])


def bracketed(command: object) -> list[str]:
    """The ``[...]`` and ``{...}`` parts of a command's help texts (what Rich markup would eat)."""
    texts = [getattr(command, "help", None) or ""]
    texts += [getattr(param, "help", None) or "" for param in getattr(command, "params", [])]
    return [part for text in texts for part in re.findall(r"[\[{][^\]}]*[\]}]", text)]


# -- item 1: markup-safe output ------------------------------------------------------------------


@pytest.mark.parametrize("name", MARKUP_NAMES)
def test_run_shows_a_file_name_and_the_program_s_output_as_typed(tmp_path: Path, name: str) -> None:
    write_program(tmp_path, name)
    done = cli("run", name, "-c", "f(1)", cwd=tmp_path, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert f"{name}: f(1)" in done.stdout
    assert "hi [red]x[/red] [/b]" in done.stdout


def test_run_shows_emoji_codes_in_a_file_name_as_typed(tmp_path: Path) -> None:
    write_program(tmp_path, "x:smile:.py")
    done = cli("run", "x:smile:.py", "-c", "f(1)", cwd=tmp_path, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "x:smile:.py: f(1)" in done.stdout  # the title: no emoji
    missing = cli("run", "y:smile:.py", "-c", "f(1)", cwd=tmp_path)
    one_error_line(missing, "error: y:smile:.py: cannot read the program")
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in done.stdout + missing.stderr


def test_errors_naming_a_file_show_its_name_as_typed(tmp_path: Path) -> None:
    missing = tmp_path / "gone[/b]" / "x[red].py"
    done = cli("run", str(missing), "-c", "f()")
    one_error_line(done, f"{missing}: cannot read the program")


@pytest.mark.parametrize("name", MARKUP_NAMES)
def test_trace_shows_the_program_s_stdout_as_typed(tmp_path: Path, name: str) -> None:
    path = write_program(tmp_path, name)
    done = cli("trace", str(path), "-c", "f(1)", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "stdout:\nhi [red]x[/red] [/b]" in done.stdout
    assert "f(1) returns 2" in done.stdout


def test_synth_shows_an_out_folder_with_brackets_as_typed(tmp_path: Path) -> None:
    out = "set[/b]/[red]out"
    done = cli(
        "synth", "--out", out, "--n", "3", "--no-decontam", "--workers", "1",
        cwd=tmp_path, env={"COLUMNS": "300"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"synth: {out}" in done.stdout
    assert f"wrote {out}/cases.jsonl" in done.stdout
    assert (tmp_path / out / "cases.jsonl").exists()


def test_demo_shows_its_out_file_as_typed(tmp_path: Path) -> None:
    done = cli("demo", "--out", "d[red]x[/b].jsonl", cwd=tmp_path, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "records written to d[red]x[/b].jsonl" in done.stdout
    assert len((tmp_path / "d[red]x[/b].jsonl").read_text().splitlines()) > 0


# typer's own metavars: a type name (<str>, <list[Path]>) or a parameter's name in braces
TYPE_METAVAR = re.compile(r"<(?:str|int|float|path|file|bool|list\[[^>]*\])>|\{[a-z_]+\}")


def test_help_of_every_command_is_plain_text_with_brackets_as_typed() -> None:
    found = commands()
    names = [words for words, _ in found]
    assert ["trace"] in names and ["bench", "list"] in names and ["train", "sft"] in names
    shown = 0
    for words, command in found:
        done = CliRunner().invoke(app, [*words, "--help"], terminal_width=100)
        assert done.exit_code == 0, (words, done.output)
        assert done.output.startswith("Usage: "), words
        assert "<bool>" not in done.output, words  # item 4: flags take no value
        # values and arguments as click writes them: --n INTEGER, FILE, RUNS..., [OVERRIDES]...
        assert TYPE_METAVAR.search(done.output) is None, (words, done.output)
        usage = done.output.splitlines()[0]
        for param in getattr(command, "params", []):
            if param.param_type_name == "argument":
                name = (param.name or "").upper()
                assert name in usage and f"  {name}" in done.output, (words, done.output)
        flat = " ".join(done.output.split())
        for part in bracketed(command):
            assert " ".join(part.split()) in flat, (words, part)
            shown += 1
    assert shown > 0  # some help has brackets to show


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["synth", "--out", "afile/sub", "--n", "2", "--no-decontam"], "--out afile/sub: afile is"),
        (["synth", "--out", "afile", "--n", "2", "--no-decontam"], "--out afile: is a file"),
        (["demo", "--out", "afile/x.jsonl"], "--out afile/x.jsonl: afile is a file, not a folder"),
        (["demo", "--out", "folder"], "--out folder: is a folder; expected a file name"),
        (["train", "tiny-model", "afile/sub"], "afile/sub: afile is a file, not a folder"),
        (
            ["export", "--from", "folder", "--format", "trl-sft", "--out", "afile/x.jsonl"],
            "--out afile/x.jsonl: afile is a file, not a folder",
        ),
    ],
)
def test_an_output_where_a_file_stands_is_one_line_and_nothing_is_written(
    tmp_path: Path, words: list[str], expected: str
) -> None:
    (tmp_path / "afile").write_text("mine\n")
    (tmp_path / "folder").mkdir()
    done = cli(*words, cwd=tmp_path)
    one_error_line(done, expected, "not a folder" if "afile" in expected else "is a folder")
    assert (tmp_path / "afile").read_text() == "mine\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["afile", "folder"]
    assert not any((tmp_path / "folder").iterdir())


# -- item 2: the vLLM hint -----------------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_a_vllm_model_without_vllm_names_the_extra_to_install(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = cli(
        "eval", "--model", "vllm:/no/such/model", "--bench", "cruxeval-o", "--out", str(out),
        "--data-dir", str(FIXTURES),
    )  # fmt: skip
    one_error_line(done, "--model vllm:/no/such/model", "pip install 'codereasoner[vllm]'")
    assert not out.exists()


# -- items 3 and 4: errors in the user's words -------------------------------------------------


@pytest.mark.parametrize(
    ("command", "arguments", "expected"),
    [
        ("run", ["--timeout", "0"], "--timeout 0: expected a positive number"),
        ("run", ["--timeout", "nan"], "--timeout nan: expected a positive number"),
        ("run", ["--memory-mb", "1"], "--memory-mb 1: expected at least 16"),
        ("run", ["--isolation", "foo"], "--isolation 'foo': expected one of auto, bubblewrap"),
        ("run", ["--seeds", "-1"], "--seeds -1: expected integers from 0 to 4294967295"),
        ("run", ["--seeds", "0,4294967296"], "--seeds 4294967296: expected integers from 0"),
        ("trace", ["--timeout", "0"], "--timeout 0: expected a positive number"),
        ("trace", ["--max-steps", "0"], "--max-steps 0: expected a positive number"),
        ("trace", ["--max-value-chars", "3"], "--max-value-chars 3: expected at least 16"),
        ("trace", ["--isolation", "foo"], "--isolation 'foo': expected one of"),
    ],
)
def test_bad_limits_are_one_line_naming_the_flag(
    tmp_path: Path, command: str, arguments: list[str], expected: str
) -> None:
    path = write_program(tmp_path, "prog.py")
    done = cli(command, str(path), "-c", "f(1)", *arguments)
    line = one_error_line(done, expected)
    for internal in ("timeout_s", "memory_mb", "max_steps", "max_value_chars", "Fatal Python"):
        assert internal not in line


def test_the_largest_hash_seed_runs(tmp_path: Path) -> None:
    path = write_program(tmp_path, "prog.py")
    done = cli("run", str(path), "-c", "f(1)", "--seeds", "4294967295", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["seeds"] == [4294967295]


# -- item 5: --json and --version --------------------------------------------------------------


def test_version_is_the_package_s() -> None:
    done = cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"codereasoner {version('codereasoner')}"


def test_doctor_json_parses_and_agrees_with_the_table() -> None:
    done = cli("doctor", "--json")
    payload = json.loads(done.stdout)
    assert done.returncode == (1 if payload["not_contained"] else 0)
    assert [probe["attempt"] for probe in payload["probes"]] == [name for name, _ in PROBES]
    assert payload["not_contained"] == sum(not probe["contained"] for probe in payload["probes"])
    shown = cli("doctor", env={"COLUMNS": "200"}).stdout
    assert f"isolation: {payload['isolation']}" in shown
    assert shown.count("contained") >= len(payload["probes"])


@pytest.fixture(scope="module")
def synthesized(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Ran]:
    """A small synth run with --json, off a terminal, a progress line at every advance."""
    out = tmp_path_factory.mktemp("synth") / "s"
    done = cli(
        "synth", "--out", str(out), "--n", "6", "--no-decontam", "--workers", "1", "--json",
        env={"CODEREASONER_PROGRESS_SECONDS": "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out, done


def test_synth_json_names_the_files_and_counts_what_was_written(
    synthesized: tuple[Path, Ran],
) -> None:
    out, done = synthesized
    payload = json.loads(done.stdout)
    cases = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    drops = (out / "dropped.jsonl").read_text().splitlines()
    assert payload["kept"]["total"] == len(cases)
    assert payload["kept"]["mutants"] == sum(bool(case["mutation"]) for case in cases)
    assert sum(payload["dropped_by_stage"].values()) == len(drops)
    assert payload["files"]["cases.jsonl"] == str(out / "cases.jsonl")
    assert Path(payload["files"]["summary.png"]).stat().st_size > 0
    assert payload["decontam"]["skipped"] == "--no-decontam"
    assert payload["outputs"]["total"] == len(cases)


# -- item 6: trace ------------------------------------------------------------------------------

LOOP = "def g(n):\n    print('looping [/b]')\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n"


def test_a_capped_trace_says_it_stopped_at_the_cap_with_no_return_value(tmp_path: Path) -> None:
    path = write_program(tmp_path, "loop.py", LOOP)
    done = cli("trace", str(path), "-c", "g(50)", "--max-steps", "10", env={"COLUMNS": "200"})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "g(50) did not finish: stopped at the --max-steps cap of 10 steps; no return value" in (
        done.stdout
    )
    # the cap in words, then the reason's name as --json gives it
    assert (
        "trace incomplete: stopped at the --max-steps cap of 10 steps "
        "(--json: partial_reason max_steps)" in done.stdout
    )
    assert "returns" not in done.stdout
    assert "looping [/b]" in done.stdout


def test_trace_json_holds_the_program_s_output(tmp_path: Path) -> None:
    path = write_program(tmp_path, "loop.py", LOOP)
    payload = json.loads(cli("trace", str(path), "-c", "g(3)", "--json").stdout)
    assert payload["stdout"] == "looping [/b]\n"
    assert payload["stdout_truncated"] is False and payload["stderr"] == ""
    assert payload["return"] == "3"
    capped = json.loads(cli("trace", str(path), "-c", "g(50)", "--max-steps", "5", "--json").stdout)
    assert capped["partial"] is True and capped["return"] is None
    assert capped["stdout"] == "looping [/b]\n"


# -- item 9: progress lines off a terminal -----------------------------------------------------


def test_synth_prints_progress_lines_when_not_on_a_terminal(
    synthesized: tuple[Path, Ran],
) -> None:
    _, done = synthesized
    lines = [line for line in done.stderr.splitlines() if line.startswith("synth candidates:")]
    assert lines[0].startswith("synth candidates: 0/6 (0%)") and lines[0].endswith("started")
    assert lines[-1].startswith("synth candidates: 6/6 (100%)") and lines[-1].endswith("done")


def test_distill_prints_progress_lines_when_not_on_a_terminal(
    synthesized: tuple[Path, Ran], tmp_path: Path
) -> None:
    cases, _ = synthesized
    done = cli(
        "distill", "--teacher", "oracle", "--cases", str(cases), "--out", str(tmp_path / "d"),
        "--limit", "2", "--k", "1", "--json",
        env={"CODEREASONER_PROGRESS_SECONDS": "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    items = json.loads(done.stdout)["items"]
    for phase in ("generate", "grade"):
        lines = [line for line in done.stderr.splitlines() if f" {phase}: " in line]
        assert lines[0].endswith("started") and lines[-1].endswith("done"), done.stderr
        assert f": {items}/{items} (100%)" in lines[-1]  # --k 1: one sample per item


def test_score_s_sandbox_pool_prints_progress_lines_when_not_on_a_terminal() -> None:
    done = cli(
        "score", "-g", str(FIXTURES / "cruxeval" / "output_generations.json"),
        "--bench", "cruxeval-o", "--data-dir", str(FIXTURES),
        env={"CODEREASONER_PROGRESS_SECONDS": "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    counts = [
        int(line.split()[2].replace(",", ""))
        for line in done.stderr.splitlines()
        if line.startswith("sandbox calls: ")
    ]
    assert counts[0] == 0 and counts[-1] > 0, done.stderr
    assert counts == sorted(counts)


@pytest.mark.parametrize(
    ("words", "flag"),
    [
        (["eval", "--model", "oracle", "--n", "x"], "--n"),
        (["eval", "--model", "oracle", "--no-such-flag"], "--no-such-flag"),
        (["score", "--generations", "g.json"], "--bench"),
        (["run"], "'file'"),
    ],
)
def test_usage_errors_are_one_line_naming_the_flag(words: list[str], flag: str) -> None:
    line = one_error_line(cli(*words), flag, "--help")
    assert not line.startswith("Usage")


def test_line_progress_keeps_short_work_quiet_and_reports_long_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import time

    from rich.console import Console

    from codereasoner.cli.progress import INTERVAL_ENV, LineProgress

    def lines(interval: str, pause: float) -> list[str]:
        monkeypatch.setenv(INTERVAL_ENV, interval)
        stream = io.StringIO()
        progress = LineProgress(console=Console(file=stream, force_terminal=False))
        with progress:
            task = progress.add_task("work [/b]", total=4)
            for _ in range(4):
                time.sleep(pause)
                progress.advance(task)
        return stream.getvalue().splitlines()

    assert lines("10", 0.0) == []  # shorter than the interval: nothing printed
    reported = lines("0.05", 0.06)
    assert reported and all(line.startswith("work [/b]: ") for line in reported)  # as typed
    assert reported[-1].startswith("work [/b]: 4/4 (100%)") and reported[-1].endswith("done")


def test_line_progress_reports_slow_work_between_advances(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import time

    from rich.console import Console

    from codereasoner.cli.progress import INTERVAL_ENV, LineProgress

    monkeypatch.setenv(INTERVAL_ENV, "0.1")
    stream = io.StringIO()
    progress = LineProgress(console=Console(file=stream, force_terminal=False))
    with progress:
        progress.add_task("nothing to do", total=0)  # never reported by the timer
        progress.add_task("slow batch", total=3)
        time.sleep(0.5)  # no advance at all: the timer still reports the current task
    lines = stream.getvalue().splitlines()
    assert lines and all(line.startswith("slow batch: 0/3 (0%)") for line in lines), lines
