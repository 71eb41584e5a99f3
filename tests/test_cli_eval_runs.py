"""``codereasoner eval`` runs a user can trust: a lock, SIGTERM, a stable default ``--out``, no
re-grading, options checked before anything exists, progress off a terminal, retry warnings,
the skipped-benchmark note, ``results.json`` and the Python ``evaluate()``."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.evaluation import RunError, RunSummary, evaluate
from codereasoner.models import BackendType, register, unregister
from codereasoner.models.openai import OpenAIBackend
from codereasoner.models.oracle import OracleBackend
from codereasoner.models.registry import name_at_url
from codereasoner.models.replay_server import ReplayProcess, ReplayServer
from tests.test_cli_eval import counts

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
DOCS = ROOT / "docs" / "evaluation.md"


def eval_args(out: Path | None, model: str, *args: str) -> list[str]:
    where = [] if out is None else ["--out", str(out)]
    return ["eval", "--model", model, *where, "--data-dir", str(FIXTURES), "--json", *args]


def invoke(out: Path | None, model: str, *args: str) -> Any:
    return CliRunner().invoke(app, eval_args(out, model, *args), catch_exceptions=False)


def command(out: Path, model: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "codereasoner", *eval_args(out, model, *args)]


# A dozen requests (REval's groups of three programs), one at a time.
ONE_AT_A_TIME = ("--bench", "reval", "--limit", "3", "--concurrency", "1")


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def completions(out: Path) -> int:
    """Completions stored so far (read while a run may be writing)."""
    return counts(out)["completions"]


def run_row(out: Path) -> tuple[str, str]:
    with sqlite3.connect(out / "run.sqlite") as connection:
        return connection.execute("SELECT status, message FROM run").fetchone()


def wait_for(condition: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


# -- 1. a lock on the run folder ---------------------------------------------------------------


def test_a_second_eval_into_a_busy_folder_is_refused_before_any_request(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # 0.5 s a request: the first run lasts about 6 s, longer than the second one's start on a
    # loaded machine
    with ReplayProcess(latency_s=0.5) as server:
        cmd = command(out, f"openai:replay@{server.url}", *ONE_AT_A_TIME)
        first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: completions(out) >= 1)
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "another run is writing" in lines[0], second.stderr
        assert "--out" in lines[0] and str(out) in lines[0]
        assert first.poll() is None  # the second one was refused while the first ran
        _, stderr = first.communicate(timeout=120)
        assert first.returncode == 0, stderr
        # every request the server saw is a stored completion: the second asked for nothing
        assert server.stats()["requests"] == completions(out)
    assert run_row(out)[0] == "done"


# -- 2. SIGTERM is handled as Ctrl-C -----------------------------------------------------------


def test_sigterm_marks_the_run_failed_and_the_same_command_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ReplayProcess(latency_s=0.1) as server:
        cmd = command(out, f"openai:replay@{server.url}", *ONE_AT_A_TIME)
        process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: completions(out) >= 2)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 143, stderr
        errors = error_lines(stderr)
        assert len(errors) == 1 and "SIGTERM" in errors[0] and "resume" in errors[0], stderr
        assert "Traceback" not in stderr
        status, message = run_row(out)
        assert status == "failed" and "SIGTERM" in message
        written = json.loads((out / "results.json").read_text())
        assert (written["status"], written["message"]) == (status, message)
        stored = completions(out)
        server.reset()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        total = completions(out)
        assert stored < total
        assert server.stats()["requests"] == total - stored  # exactly the missing ones
    assert run_row(out) == ("done", "")


# -- 3. a stable default --out -----------------------------------------------------------------


def run_folder(stderr: str) -> str:
    found = re.findall(r"^run folder: (\S+)$", stderr, re.MULTILINE)
    assert len(found) == 1, stderr
    return found[0]


def test_the_default_out_is_the_same_for_the_same_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = invoke(None, "oracle", "--bench", "cruxeval-o")
    assert first.exit_code == 0, first.stderr
    folder = run_folder(first.stderr)
    assert re.fullmatch(r"runs/oracle-[0-9a-f]{8}", folder)
    assert (tmp_path / folder / "run.sqlite").is_file()
    again = invoke(None, "oracle", "--bench", "cruxeval-o,cruxeval-i", "--n", "2")
    assert run_folder(again.stderr) == folder  # more benchmarks and samples: the same run
    stored = json.loads(first.stdout)["generated"]["cruxeval-o"]
    assert json.loads(again.stdout)["cached"]["cruxeval-o"] == stored
    other = invoke(None, "oracle", "--bench", "cruxeval-o", "--style", "cot")
    assert other.exit_code == 0 and run_folder(other.stderr) != folder  # another fixed setting


# -- 4. a larger --n grades only the new samples -----------------------------------------------


def verdict_rows(out: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(out / "run.sqlite") as connection:
        return connection.execute(
            "SELECT rowid, benchmark, item_id, sample, correct FROM scores ORDER BY rowid"
        ).fetchall()


def test_growing_n_grades_only_the_new_samples(tmp_path: Path) -> None:
    out = tmp_path / "run"
    one = invoke(out, "oracle", "--bench", "cruxeval-o,reval", "--limit", "3", "--n", "1")
    assert one.exit_code == 0, one.stderr
    before = verdict_rows(out)
    items = {bench: count for bench, count in json.loads(one.stdout)["graded"].items()}
    three = invoke(out, "oracle", "--bench", "cruxeval-o,reval", "--limit", "3", "--n", "3")
    assert three.exit_code == 0, three.stderr
    summary = json.loads(three.stdout)
    assert summary["graded"] == {bench: 2 * count for bench, count in items.items()}
    after = verdict_rows(out)
    assert after[: len(before)] == before  # the first samples' verdicts were not rewritten
    assert sorted({row[3] for row in after}) == [0, 1, 2] and len(after) == 3 * len(before)
    assert summary["reports"]["cruxeval-o"]["samples"] == 3 * items["cruxeval-o"]
    # a smaller --n afterwards keeps the larger report, and says so
    again = invoke(out, "oracle", "--bench", "cruxeval-o,reval", "--limit", "3", "--n", "1")
    assert again.exit_code == 0, again.stderr
    kept = json.loads(again.stdout)
    assert kept["reports"]["cruxeval-o"] == summary["reports"]["cruxeval-o"]
    assert any(w.startswith("cruxeval-o: kept the stored report over 3") for w in kept["warnings"])
    stored = json.loads((out / "results.json").read_text())
    assert stored["reports"]["cruxeval-o"]["samples"] == 3 * items["cruxeval-o"]


# -- 5. every option checked before anything is created --------------------------------------


BAD_OPTIONS = [
    (("--temperature", "-1"), "--temperature"),
    (("--top-p", "2"), "--top-p"),
    (("--top-p", "0"), "--top-p"),
    (("--max-tokens", "0"), "--max-tokens"),
    (("--timeout", "0"), "--timeout"),
    (("--isolation", "foo"), "--isolation"),
    (("--workers", "0"), "--workers"),
    (("--n", "0"), "--n"),
    (("--limit", "0"), "--limit"),
    (("--skip", "-1"), "--skip"),
    (("--seed", "-1"), "--seed"),
    (("--style", "fancy"), "--style"),
    (("--extraction", "guess"), "--extraction"),
    (("--grading", "lax"), "--grading"),
]
SERVER_OPTIONS = [
    (("--concurrency", "0"), "--concurrency"),
    (("--request-timeout", "0"), "--request-timeout"),
]


def refused(done: Any, flag: str) -> None:
    assert done.exit_code == 2, done.output
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert flag in lines[0], lines[0]
    assert "_s " not in lines[0] and "timeout_s" not in lines[0]  # user-facing names only


@pytest.mark.parametrize(("args", "flag"), BAD_OPTIONS + SERVER_OPTIONS)
def test_a_bad_option_is_one_line_and_creates_nothing(
    tmp_path: Path, args: tuple[str, ...], flag: str
) -> None:
    out = tmp_path / "run"
    # a server that is never asked: the options are refused before preflight
    refused(
        invoke(out, "openai:replay@http://127.0.0.1:9/v1", "--bench", "cruxeval-o", *args), flag
    )
    assert not out.exists()


def folder_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_a_bad_option_leaves_an_existing_run_untouched(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke(out, "oracle", "--bench", "cruxeval-o").exit_code == 0
    before = folder_state(out)
    for args, flag in BAD_OPTIONS:
        refused(invoke(out, "oracle", "--bench", "cruxeval-o", *args), flag)
    refused(invoke(out, "oracle", "--bench", "cruxeval-o", "--concurrency", "4"), "--concurrency")
    assert folder_state(out) == before


def test_an_out_that_is_a_file_or_a_corrupt_store_is_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    refused(invoke(a_file, "oracle", "--bench", "cruxeval-o"), "--out")
    assert a_file.read_text() == "mine\n"
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "run.sqlite").write_bytes(bytes(range(256)) * 16)
    before = folder_state(corrupt)
    done = invoke(corrupt, "oracle", "--bench", "cruxeval-o")
    refused(done, "--out")
    assert "run.sqlite" in done.stderr and "not a readable run store" in done.stderr
    assert folder_state(corrupt) == before


# -- 6. progress lines off a terminal ---------------------------------------------------------


def test_progress_lines_are_printed_off_a_terminal(tmp_path: Path) -> None:
    env = {**os.environ, "CODEREASONER_PROGRESS_SECONDS": "0"}
    done = subprocess.run(
        command(tmp_path / "run", "oracle", "--bench", "cruxeval-o"),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    items = json.loads(done.stdout)["reports"]["cruxeval-o"]["items"]
    assert f"cruxeval-o generate: 0/{items} (0%) 0s started" in lines
    # every advance prints a line (CODEREASONER_PROGRESS_SECONDS=0)
    assert sum(line.startswith("cruxeval-o generate: ") for line in lines) == items + 1
    assert any(line.startswith(f"cruxeval-o generate: 2/{items} (") for line in lines)
    assert any(
        re.match(rf"cruxeval-o grade: {items}/{items} \(100%\) \d+s done", line) for line in lines
    )
    assert json.loads(done.stdout)["model"] == "oracle"  # stdout stays clean JSON


# -- 7. a warning when the server has been failing for a while -------------------------------


class QuickRetry(OpenAIBackend):
    """The OpenAI backend with retry settings short enough for a test."""

    def __init__(self, name: str, url: str, **options: Any) -> None:
        quick = {"max_retries": 6, "backoff_s": 0.1, "backoff_max_s": 0.2, "warn_after_s": 0.3}
        super().__init__(name, url, **{**quick, "warn_every_s": 60.0, **options})


@pytest.fixture
def quick_retry() -> Iterator[str]:
    target = f"{__name__}:QuickRetry"
    options = ("concurrency", "timeout_s")
    kind = BackendType(
        "quickretry", target, "test", form="NAME@URL", parse=name_at_url, options=options
    )
    register(kind)
    try:
        yield "quickretry"
    finally:
        unregister("quickretry")


def test_a_server_that_dies_mid_run_is_warned_about(tmp_path: Path, quick_retry: str) -> None:
    out = tmp_path / "run"
    server = ReplayServer(latency_s=0.1).start()
    stopper = threading.Thread(
        target=lambda: (wait_for(lambda: completions(out) >= 2), server.stop()), daemon=True
    )
    stopper.start()
    try:
        done = invoke(out, f"{quick_retry}:replay@{server.url}", *ONE_AT_A_TIME)
    finally:
        stopper.join(timeout=30)
        server.stop()
    assert done.exit_code == 2, done.output
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, done.stderr  # warn_every_s is longer than the retries
    assert server.url in warnings[0] and "still retrying" in warnings[0]
    assert "connection failed" in warnings[0]
    assert len(error_lines(done.stderr)) == 1 and "gave up" in error_lines(done.stderr)[0]
    assert run_row(out)[0] == "failed"


def test_a_server_that_comes_back_is_noted(tmp_path: Path, quick_retry: str) -> None:
    statuses = {}

    def failures(key: str, attempt: int) -> int | None:
        statuses[key] = attempt
        return 503 if attempt <= 4 else None  # about 0.6 s of failures, then answers

    with ReplayServer(failures=failures) as server:
        done = invoke(
            tmp_path / "run", f"{quick_retry}:replay@{server.url}", "--bench", "cruxeval-o"
        )
    assert done.exit_code == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any(line.startswith("warning:") and "HTTP 503" in line for line in lines), lines
    assert f"note: {server.url}: the server answers again" in lines


# -- 8. the default benchmark list names what it skips ----------------------------------------


def test_the_default_list_names_the_benchmarks_it_skips(tmp_path: Path) -> None:
    args = ["eval", "--model", "oracle", "--out", str(tmp_path / "run")]
    args += ["--data-dir", str(FIXTURES / "cruxeval"), "--json"]
    done = CliRunner().invoke(app, args, catch_exceptions=False)
    assert done.exit_code == 0, done.stderr
    assert set(json.loads(done.stdout)["reports"]) == {"cruxeval-o", "cruxeval-i"}
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, done.stderr
    assert "reval" in notes[0] and "core" in notes[0] and "cruxeval" not in notes[0]
    assert "codereasoner bench fetch NAME" in notes[0] and "--data-dir" in notes[0]


# -- 9. results.json beside run.sqlite --------------------------------------------------------


def test_results_json_is_what_json_prints_after_each_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = invoke(out, "oracle", "--bench", "cruxeval-o", "--limit", "3")
    assert json.loads((out / "results.json").read_text()) == json.loads(first.stdout)
    resumed = invoke(out, "oracle", "--bench", "cruxeval-o,core", "--limit", "3")
    written = json.loads((out / "results.json").read_text())
    assert written == json.loads(resumed.stdout)
    assert (
        set(written["reports"]) == {"cruxeval-o", "core"}
        and written["generated"]["cruxeval-o"] == 0
    )
    assert not list(out.glob("*.tmp"))


# -- 10. the Python API -----------------------------------------------------------------------


def docs_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## From Python: `evaluate()`") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("\n```", start)]


def test_the_documented_evaluate_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = docs_example()
    assert "DATA = None" in code
    namespace: dict[str, Any] = {}
    exec(code.replace("DATA = None", f"DATA = {str(FIXTURES)!r}"), namespace)
    summary = namespace["summary"]
    assert isinstance(summary, RunSummary) and summary.model == "oracle"
    typed = summary.typed_reports()
    assert typed["cruxeval-o"].headline() == {"pass@1": 100.0}
    assert json.loads(Path(summary.run_dir, "results.json").read_text()) == summary.to_dict()
    assert "cruxeval-o {'pass@1': 100.0}" in capsys.readouterr().out


def test_evaluate_refuses_bad_settings_like_the_command(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(RunError, match=r"^top_p 2: expected a number in \(0, 1\]$"):
        evaluate("oracle", ["cruxeval-o"], out, top_p=2, data_dir=FIXTURES)
    with pytest.raises(RunError, match="--bench"):
        evaluate("oracle", ["nope"], out, data_dir=FIXTURES)
    assert not out.exists()
    done = evaluate("oracle", ["cruxeval-o"], out, limit=2, data_dir=FIXTURES)
    assert done.generated == {"cruxeval-o": 2}
    assert done.typed_reports()["cruxeval-o"].headline() == {"pass@1": 100.0}
    with pytest.raises(RunError, match="--temperature"):  # the run there keeps its settings
        evaluate("oracle", ["cruxeval-o"], out, temperature=0.5, data_dir=FIXTURES)


def test_the_scoring_example_in_the_evaluation_docstring_runs() -> None:
    import codereasoner.evaluation as evaluation

    doc = evaluation.__doc__ or ""
    example = doc[doc.index("Grading a generations file") :].split("::\n", 1)[1]
    code = "\n".join(line[4:] for line in example.splitlines())
    path = FIXTURES / "cruxeval" / "output_generations.json"
    namespace: dict[str, Any] = {"name": "cruxeval-o", "data_dir": FIXTURES, "path": path}
    exec(code, namespace)
    scored = namespace["scored"]
    values = scored.pass_at([1, 5])
    assert set(values) == {"pass@1", "pass@5"} and 0 < values["pass@1"] <= values["pass@5"] < 100
    assert len(scored.scores) == len(scored.items) == 6


def test_markup_in_the_run_folder_prints_as_typed(tmp_path: Path) -> None:
    out = tmp_path / "run[/b]x"
    args = ["eval", "--model", "oracle", "--out", str(out), "--data-dir", str(FIXTURES)]
    done = CliRunner().invoke(app, [*args, "--bench", "cruxeval-o", "--limit", "2"])
    assert done.exit_code == 0, done.output
    assert "".join(f"oracle: {out}".split()) in "".join(done.stdout.split())  # wrapped title
    a_file = tmp_path / "[bold]notes"
    a_file.write_text("")
    refused(invoke(a_file, "oracle", "--bench", "cruxeval-o"), f"--out {a_file}: is a file")


# -- 11. a server moved to another host or port keeps its run ---------------------------------


def fail_after(successes: int, status: int = 400) -> Any:
    """Replay-server failures: the first ``successes`` prompts are answered, later ones get
    ``status`` (with ``--concurrency 1``, a run stops after exactly that many requests)."""
    seen: list[str] = []

    def failures(key: str, attempt: int) -> int | None:
        if key not in seen:
            seen.append(key)
        return status if seen.index(key) >= successes else None

    return failures


def test_a_server_on_another_port_resumes_the_same_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ("--bench", "cruxeval-o", "--limit", "4", "--concurrency", "1")
    with ReplayServer(failures=fail_after(2)) as first:
        stopped = invoke(None, f"openai:replay@{first.url}", *args)
    assert stopped.exit_code == 2, stopped.output
    folder = run_folder(stopped.stderr)
    assert re.fullmatch(r"runs/openai-replay-[0-9a-f]{8}", folder)  # no host or port in it
    assert completions(Path(folder)) == 2
    with ReplayServer() as second:  # another free port: a requeued job on another node
        assert second.url != first.url
        resumed = invoke(None, f"openai:replay@{second.url}", *args)
        assert resumed.exit_code == 0, resumed.stderr
        assert run_folder(resumed.stderr) == folder
        summary = json.loads(resumed.stdout)
        assert summary["model"] == "openai:replay" and summary["cached"]["cruxeval-o"] == 2
        assert second.stats()["requests"] == summary["generated"]["cruxeval-o"] == 2
        # an explicit --out resumes too: a finished run asks for nothing
        again = invoke(Path(folder), f"openai:replay@{second.url}", *args)
        assert again.exit_code == 0, again.stderr
        assert json.loads(again.stdout)["generated"] == {"cruxeval-o": 0}
        assert second.stats()["requests"] == 2
    with ReplayServer(model="other") as third:  # another model is still another run
        refused(invoke(Path(folder), f"openai:other@{third.url}", *args), "holds a run of model")


def test_a_store_keyed_by_the_whole_url_still_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("--bench", "cruxeval-o", "--limit", "4")
    with ReplayServer() as first:
        assert invoke(out, f"openai:replay@{first.url}", *args).exit_code == 0
    old = "openai:replay@http://node17:8000/v1"  # as stores written before kept it
    with sqlite3.connect(out / "run.sqlite") as connection:
        connection.execute("UPDATE run SET model=?", (old,))
        connection.execute("UPDATE completions SET model=?", (old,))
    with ReplayServer() as second:
        done = invoke(out, f"openai:replay@{second.url}", *args)
        assert done.exit_code == 0, done.stderr
        assert json.loads(done.stdout)["generated"] == {"cruxeval-o": 0}
        assert second.stats()["requests"] == 0
    with sqlite3.connect(out / "run.sqlite") as connection:
        models = {row[0] for row in connection.execute("SELECT model FROM completions")}
        assert models == {"openai:replay"}
        assert connection.execute("SELECT model FROM run").fetchone()[0] == "openai:replay"


# -- 12. paths that cannot be a run folder or data: one line, nothing created ------------------


def test_out_and_data_dir_paths_that_cannot_work_are_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("mine\n")
    before = sorted(tmp_path.rglob("*"))
    refused(invoke(a_file / "sub", "oracle", "--bench", "cruxeval-o"), f"--out {a_file}/sub")
    refused(invoke(a_file / "a" / "b", "oracle", "--bench", "cruxeval-o"), "is a file")
    refused(invoke(Path("/proc/codereasoner-run"), "oracle", "--bench", "cruxeval-o"), "--out")
    out = tmp_path / "run"
    for bench in (("--bench", "cruxeval-o"), ()):  # named benchmarks, and the default list
        args = ["eval", "--model", "oracle", "--out", str(out), "--data-dir", str(a_file)]
        done = CliRunner().invoke(app, [*args, *bench], catch_exceptions=False)
        refused(done, f"--data-dir {a_file}: not a folder")
    args = ["eval", "--model", "oracle", "--out", str(out), "--bench", "cruxeval-o"]
    done = CliRunner().invoke(app, [*args, "--data-dir", str(tmp_path / "nowhere")])
    refused(done, str(tmp_path / "nowhere" / "cruxeval.jsonl"))  # the file it expects there
    assert sorted(tmp_path.rglob("*")) == before and a_file.read_text() == "mine\n"
    assert not Path("/proc/codereasoner-run").exists()


# -- 13. evaluate(): a comma list, and the caller's backend left open --------------------------


class Watched(OracleBackend):
    """The oracle, noting whether it was closed."""

    closed = False

    def close(self) -> None:
        self.closed = True
        super().close()


def test_evaluate_takes_a_comma_list_and_leaves_a_given_backend_open(tmp_path: Path) -> None:
    one = evaluate("oracle", "cruxeval-o", tmp_path / "one", limit=2, data_dir=FIXTURES)
    assert set(one.reports) == {"cruxeval-o"}
    backend = Watched()
    both = evaluate(backend, "cruxeval-o, cruxeval-i", tmp_path / "two", limit=2, data_dir=FIXTURES)
    assert set(both.reports) == {"cruxeval-o", "cruxeval-i"}
    assert not backend.closed  # the caller's to close
    listed = evaluate(backend, ("cruxeval-i",), tmp_path / "two", limit=2, data_dir=FIXTURES)
    assert listed.generated == {"cruxeval-i": 0} and not backend.closed
    a_file = tmp_path / "afile"
    a_file.write_text("")
    with pytest.raises(RunError, match=r"--data-dir .*: not a folder"):
        evaluate("oracle", "cruxeval-o", tmp_path / "x", data_dir=a_file)
    assert not (tmp_path / "x").exists()


# -- 14. the resume hint only where a re-run can help; no warning right before giving up -------


class GiveUpQuickly(OpenAIBackend):
    """Two attempts, 0.1-0.2 s apart, warning after 0.05 s of failures: only the last attempt
    has been failing long enough to warn."""

    def __init__(self, name: str, url: str, **options: Any) -> None:
        quick = {"max_retries": 1, "backoff_s": 0.2, "backoff_max_s": 0.2, "warn_after_s": 0.05}
        super().__init__(name, url, **{**quick, **options})


@pytest.fixture
def give_up_quickly() -> Iterator[str]:
    kind = BackendType(
        "giveup", f"{__name__}:GiveUpQuickly", "test", form="NAME@URL", parse=name_at_url,
        options=("concurrency",),
    )  # fmt: skip
    register(kind)
    try:
        yield "giveup"
    finally:
        unregister("giveup")


def test_a_permanent_failure_gets_no_resume_hint(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ReplayServer(failures=fail_after(1, 400)) as server:
        done = invoke(out, f"openai:replay@{server.url}", *ONE_AT_A_TIME)
    assert done.exit_code == 2, done.output
    errors = error_lines(done.stderr)
    assert len(errors) == 1 and "HTTP 400" in errors[0], done.stderr
    assert f"run marked failed in {out}" in errors[0]
    assert "re-run" not in errors[0] and "resume" not in errors[0]  # a re-run cannot fix a 400
    assert run_row(out)[0] == "failed"


def test_giving_up_is_not_preceded_by_still_retrying(tmp_path: Path, give_up_quickly: str) -> None:
    out = tmp_path / "run"
    with ReplayServer(failures=fail_after(1, 503)) as server:
        done = invoke(out, f"{give_up_quickly}:replay@{server.url}", *ONE_AT_A_TIME)
    assert done.exit_code == 2, done.output
    assert not [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    errors = error_lines(done.stderr)
    assert len(errors) == 1 and "gave up after 2 attempts" in errors[0], done.stderr
    assert "re-run the same command to resume" in errors[0]  # the server may come back


# -- 15. results.json never shows an older run as current --------------------------------------


def test_a_failed_run_rewrites_results_json(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ReplayServer() as server:
        first = invoke(out, f"openai:replay@{server.url}", "--bench", "cruxeval-o", "--limit", "3")
    assert first.exit_code == 0 and json.loads(first.stdout)["status"] == "done"
    args = ("--bench", "cruxeval-o,cruxeval-i", "--limit", "3", "--concurrency", "1")
    with ReplayServer(failures=fail_after(1, 400)) as server:
        failed = invoke(out, f"openai:replay@{server.url}", *args)
    assert failed.exit_code == 2, failed.output
    written = json.loads((out / "results.json").read_text())
    status, message = run_row(out)
    assert (written["status"], written["message"]) == (status, message) == ("failed", message)
    assert "HTTP 400" in message
    assert set(written["reports"]) == {"cruxeval-o"}  # finished before cruxeval-i failed
    assert written["generated"] == {"cruxeval-o": 0}  # this invocation's counts
    assert not list(out.glob("*.tmp")) and not list(out.glob(".results*"))


# -- 16. error lines as documented ---------------------------------------------------------------


def test_the_documented_resume_refusal_is_the_one_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quoted = re.search(r"\(`(--out runs/x: holds a run of [^`]+)`", DOCS.read_text("utf-8"))
    assert quoted is not None
    monkeypatch.chdir(tmp_path)
    args = ("--bench", "cruxeval-o", "--limit", "2")
    assert invoke(Path("runs/x"), "oracle", *args).exit_code == 0
    done = invoke(Path("runs/x"), "oracle", *args, "--temperature", "0.2")
    refused(done, "--temperature")
    assert quoted.group(1) in error_lines(done.stderr)[0]


def test_a_model_that_cannot_load_names_its_spec_once(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    spec = f"hf:{tmp_path / 'nonexist'}"
    done = invoke(tmp_path / "run", spec, "--bench", "cruxeval-o")
    refused(done, f"--model {spec}: ")
    assert error_lines(done.stderr)[0].count(spec) == 1, done.stderr
    assert not (tmp_path / "run").exists()


def test_several_greedy_samples_are_warned_about(tmp_path: Path) -> None:
    args = ("--bench", "cruxeval-o", "--limit", "2", "--n", "3")
    with ReplayServer() as server:
        greedy = invoke(tmp_path / "greedy", f"openai:replay@{server.url}", *args)
        sampled = invoke(
            tmp_path / "sampled", f"openai:replay@{server.url}", *args, "--temperature", "0.8"
        )
    assert greedy.exit_code == 0 and sampled.exit_code == 0
    (warning,) = [w for w in json.loads(greedy.stdout)["warnings"] if "--n 3" in w]
    assert "--temperature 0" in warning and "pass@k equals pass@1" in warning
    assert "--n 3 at --temperature 0" in greedy.stderr
    assert not any("--n 3" in w for w in json.loads(sampled.stdout)["warnings"])


def test_a_style_a_benchmark_lacks_is_said(tmp_path: Path) -> None:
    done = invoke(
        tmp_path / "run",
        "oracle",
        "--bench",
        "cruxeval-o,reval",
        "--limit",
        "2",
        "--style",
        "phind",
    )
    assert done.exit_code == 0, done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    (said,) = [w for w in warnings if "--style phind" in w]
    assert said.startswith(
        "reval: --style phind is not one of its prompt styles"
    ) and said.endswith("its prompts are direct")
    assert not any(w.startswith("cruxeval-o:") and "--style" in w for w in warnings)


def test_answers_that_do_not_parse_or_fit_are_warned_about(tmp_path: Path) -> None:
    """As ``score`` does: nearly every answer unparsable, or shaped like the sibling task's
    (calls where CRUXEval-O wants values), is said on the terminal and in results.json."""
    args = ("--bench", "cruxeval-o", "--limit", "5")
    with ReplayServer(reply=lambda query: "f([1, 2, 3])") as server:
        calls = invoke(tmp_path / "calls", f"openai:replay@{server.url}", *args)
    with ReplayServer(reply=lambda query: "[[[") as server:
        broken = invoke(tmp_path / "broken", f"openai:replay@{server.url}", *args)
    assert calls.exit_code == 0 and broken.exit_code == 0, (calls.output, broken.output)
    (shape,) = [w for w in json.loads(calls.stdout)["warnings"] if "look like" in w]
    assert shape.startswith("cruxeval-o: ") and "--bench cruxeval-i" in shape
    assert "look like cruxeval-i answers" in calls.stderr
    (parse,) = [w for w in json.loads(broken.stdout)["warnings"] if "failed to parse" in w]
    assert parse.startswith("cruxeval-o: 5 of 5 samples failed to parse")
    oracle = invoke(tmp_path / "oracle", "oracle", *args)
    assert not [w for w in json.loads(oracle.stdout)["warnings"] if "cruxeval-o: " in w]


def test_log_samples_writes_every_graded_sample(tmp_path: Path) -> None:
    """``--log-samples FILE``: one line per graded sample with its prompt, completion, extracted
    answer and verdict (as lm-eval's ``--log_samples``); a folder is refused before any work."""
    log = tmp_path / "samples.jsonl"
    args = ("--bench", "cruxeval-o,reval", "--limit", "2", "--n", "2", "--log-samples", str(log))
    done = invoke(tmp_path / "run", "oracle", *args)
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    reports = json.loads(done.stdout)["reports"]
    items = reports["cruxeval-o"]["items"] + sum(reports["reval"]["items"].values())
    assert len(lines) == 2 * items
    assert {line["benchmark"] for line in lines} == {"cruxeval-o", "reval"}
    assert all(line["correct"] and line["reason"] == "correct" for line in lines)
    first = lines[0]
    assert first["prompt"] and first["completion"] and first["answer"] is not None
    crux = [line for line in lines if line["benchmark"] == "cruxeval-o"]
    assert len({line["id"] for line in crux}) == reports["cruxeval-o"]["items"]
    assert {line["sample"] for line in lines} == {0, 1}
    assert f"samples logged: {log}" in done.stderr
    refused = invoke(tmp_path / "other", "oracle", "--bench", "cruxeval-o", "--log-samples",
                     str(tmp_path))  # fmt: skip
    assert refused.exit_code == 2 and "is a folder" in refused.stderr
    assert not (tmp_path / "other").exists()


def scored_ids(out: Path) -> set[str]:
    with sqlite3.connect(out / "run.sqlite") as connection:
        return {row[0] for row in connection.execute("SELECT item_id FROM scores")}


def test_skip_takes_the_next_items_of_the_fixed_order(tmp_path: Path) -> None:
    runs = {
        "test": ("--limit", "3"),
        "validation": ("--skip", "3", "--limit", "2"),
        "both": ("--limit", "5"),
    }
    for name, flags in runs.items():
        done = invoke(tmp_path / name, "oracle", "--bench", "cruxeval-o", *flags)
        assert done.exit_code == 0, done.output
    test, validation, both = (scored_ids(tmp_path / name) for name in runs)
    assert len(test) == 3 and len(validation) == 2 and not test & validation
    assert test | validation == both  # the same fixed order, cut at another place
    again = invoke(
        tmp_path / "validation", "oracle", "--bench", "cruxeval-o", "--skip", "1", "--limit", "2"
    )
    refused(again, "--skip")
    assert "--skip 3" in again.stderr and "--skip 1" in again.stderr
    kept = invoke(tmp_path / "test", "oracle", "--bench", "cruxeval-o", "--limit", "3")
    assert kept.exit_code == 0, kept.output  # a run without --skip resumes as before
