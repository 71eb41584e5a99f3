"""Data in and out, as a user runs it (real subprocesses, real SQLite stores, real servers on
127.0.0.1): ``bench fetch --from``, LiveCodeBench through a local Hugging Face Hub
(``HF_ENDPOINT``), ``bench list --json``, ``export-generations`` and the replay server replaying
the completions it exported."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.families.livecodebench.benchmark import (
    EXECUTION_REVISION,
    SPLIT_PATTERN,
    TEST_GENERATION_REVISION,
)
from codereasoner.models.replay_server import ReplayProcess
from tests.benchmarks.test_cache import (
    LCB_ROWS,
    SHARD,
    Server,
    downloads,
    file_requests,
    jsonl_ids,
    parquet_bytes,
    server,
)
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

__all__ = ["server"]  # the local Hub fixture, used here too

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CRUX_PIN = "8368b81047dc5014e4caf5a2f97604eff7644e0ecd7415e3ceeb184bbc2e0c96"
shared_crux = pytest.mark.skipif(
    not (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").is_file(), reason="shared data not present"
)


def cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codereasoner", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.fixture
def cache_env(tmp_path: Path) -> dict[str, str]:
    return {"CODEREASONER_CACHE": str(tmp_path / "cache")}


# -- bench fetch --from -------------------------------------------------------------------------


@shared_crux
def test_fetch_from_imports_the_shared_files_into_the_cache(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    done = cli("bench", "fetch", "cruxeval-o", "--from", SHARED_DATA, env=cache_env)
    assert done.returncode == 0, done.stderr
    assert "cruxeval-o: 800 items" in done.stdout and "(imported, sha256 checked)" in done.stdout
    cached = tmp_path / "cache" / "cruxeval" / "cruxeval.jsonl"
    assert cached.read_bytes() == (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").read_bytes()
    manifest = json.loads((cached.parent / "manifest.json").read_text())["cruxeval.jsonl"]
    assert manifest["sha256"] == CRUX_PIN and manifest["imported_from"].endswith("cruxeval.jsonl")
    listed = json.loads(cli("bench", "list", "--json", env=cache_env).stdout)
    crux = next(entry for entry in listed if entry["name"] == "cruxeval-i")  # same dataset
    assert crux["available"] is True and crux["where"] == str(cached.parent)


@shared_crux
def test_fetch_from_refuses_a_tampered_file_and_leaves_the_cache_alone(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    given = tmp_path / "down[red]loads"  # markup in a path is printed as typed
    given.mkdir()
    tampered = given / "cruxeval.jsonl"
    tampered.write_bytes((SHARED_DATA / "cruxeval" / "cruxeval.jsonl").read_bytes() + b"\n")
    line = one_error_line(cli("bench", "fetch", "cruxeval-o", "--from", given, env=cache_env))
    assert str(tampered) in line and f"expected {CRUX_PIN}" in line and "not imported" in line
    folder = tmp_path / "cache" / "cruxeval"
    assert not folder.exists() or list(folder.iterdir()) == []


def test_fetch_from_bad_input_is_one_line(tmp_path: Path, cache_env: dict[str, str]) -> None:
    missing = one_error_line(cli("bench", "fetch", "cruxeval-o", "--from", tmp_path / "no"))
    assert "--from" in missing and "no such folder" in missing
    afile = tmp_path / "cruxeval.jsonl"
    afile.write_text("{}\n")
    line = one_error_line(cli("bench", "fetch", "cruxeval-o", "--from", afile, env=cache_env))
    assert (
        line
        == f"error: --from {afile}: not a folder; expected the folder holding the files to import"
    )
    afile.unlink()
    empty = one_error_line(cli("bench", "fetch", "cruxeval-o", "--from", tmp_path, env=cache_env))
    assert "cruxeval.jsonl: not found (--from must hold cruxeval.jsonl)" in empty
    both = cli("bench", "fetch", "cruxeval-o", "--from", tmp_path, "--data-dir", tmp_path)
    assert "not both" in one_error_line(both)
    assert not (tmp_path / "cache").exists()


def test_bench_list_json_says_what_is_available(cache_env: dict[str, str]) -> None:
    done = cli("bench", "list", "--json", env=cache_env)
    assert done.returncode == 0, done.stderr
    listed = {entry["name"]: entry for entry in json.loads(done.stdout)}
    crux = listed["cruxeval-o"]
    assert crux["tasks"] == ["output_prediction"] and crux["items"] == 800
    assert crux["available"] is False and crux["cache"] == "not cached"
    assert crux["where"] == str(Path(cache_env["CODEREASONER_CACHE"]) / "cruxeval")
    assert listed["cases"]["cache"] == "local" and listed["cases"]["items"] is None
    assert set(listed) >= {"lcb-execution", "lcb-test-output", "reval", "core"}


# -- LiveCodeBench through the Hub --------------------------------------------------------------


@pytest.fixture
def hub_env(server: Server, tmp_path: Path, cache_env: dict[str, str]) -> dict[str, str]:
    server.hub[("livecodebench/execution-v2", SHARD)] = parquet_bytes(LCB_ROWS)
    env = {"HF_ENDPOINT": server.url, "HF_HUB_CACHE": str(tmp_path / "hf"), **cache_env}
    env["HF_HUB_OFFLINE"] = "0"
    return env


def test_fetch_livecodebench_through_the_hub_then_offline(
    server: Server, hub_env: dict[str, str], tmp_path: Path
) -> None:
    done = cli("bench", "fetch", "lcb-execution", env=hub_env)
    assert done.returncode == 0, done.stderr
    assert "lcb-execution: 4 items" in done.stdout
    assert downloads(server) == [SHARD]
    assert file_requests(server)[-1] == (
        f"GET /datasets/livecodebench/execution-v2/resolve/{EXECUTION_REVISION}/{SHARD}"
    )
    asked = len(server.requests)
    offline = {**hub_env, "HF_HUB_OFFLINE": "1", "CODEREASONER_CACHE": str(tmp_path / "c2")}
    again = cli("bench", "fetch", "lcb-execution", env=offline)
    assert again.returncode == 0 and "4 items" in again.stdout, again.stderr
    assert len(server.requests) == asked
    cold = {**offline, "HF_HUB_CACHE": str(tmp_path / "hf-empty")}
    line = one_error_line(cli("bench", "fetch", "lcb-execution", env=cold))
    assert "HF_HUB_OFFLINE is set" in line and "--from DIR" in line


def test_fetch_livecodebench_with_no_split_file_is_one_line(
    server: Server, hub_env: dict[str, str], tmp_path: Path
) -> None:
    del server.hub[("livecodebench/execution-v2", SHARD)]
    server.hub[("livecodebench/execution-v2", "README.md")] = b"# execution-v2\n"
    where = (
        f"livecodebench/execution-v2 (Hugging Face dataset) at revision {EXECUTION_REVISION}: "
        f"no file matches {SPLIT_PATTERN} there"
    )
    line = one_error_line(cli("bench", "fetch", "lcb-execution", env=hub_env))
    # bench fetch's --data-dir is where it downloads to: the way to local files is --from
    assert line == (
        f"error: {where}; import files you downloaded with "
        "'codereasoner bench fetch lcb-execution --from DIR'"
    )
    into = tmp_path / "data"
    line = one_error_line(cli("bench", "fetch", "lcb-execution", "--data-dir", into, env=hub_env))
    assert line == (
        f"error: {where}; copy the files you downloaded into {into / 'livecodebench'} by hand "
        "instead"
    )
    assert not into.exists()
    # the commands that load data take --data-dir as the files to use
    out = tmp_path / "run"
    line = one_error_line(
        cli("eval", "--model", "oracle", "--bench", "lcb-execution", "--out", out, env=hub_env)
    )
    assert line == (
        f"error: lcb-execution: {where}; pass --data-dir to use local files, or import them "
        "into the cache with 'codereasoner bench fetch lcb-execution --from DIR'"
    )
    assert not out.exists()
    assert downloads(server) == []
    assert not (tmp_path / "cache" / "livecodebench" / "execution-v2.jsonl").exists()


def test_livecodebench_pinned_revision_and_checksum(
    server: Server, hub_env: dict[str, str], tmp_path: Path
) -> None:
    """Test output prediction is pinned to a commit and its parquet file's sha256: a file that
    is not upstream's is refused, and nothing lands in the cache."""
    wanted = ("livecodebench/test_generation", SHARD)
    server.hub[wanted] = parquet_bytes([dict(LCB_ROWS[0])])
    line = one_error_line(cli("bench", "fetch", "lcb-test-output", env=hub_env))
    assert "expected 4826aa00" in line and "refusing it" in line
    assert file_requests(server)[-1] == (
        f"GET /datasets/{wanted[0]}/resolve/{TEST_GENERATION_REVISION}/{SHARD}"
    )
    assert not (tmp_path / "cache" / "livecodebench" / "test_generation.jsonl").exists()


def test_fetch_from_a_clone_of_the_hub_repository(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    """A clone's shards (hash-suffixed names here) are read in order; a clone missing one of
    them is one error line."""
    data = tmp_path / "downloads" / "execution-v2" / "data"
    data.mkdir(parents=True)
    (data / "test-00001-of-00002-9c0d.parquet").write_bytes(parquet_bytes(LCB_ROWS[2:]))
    (data / "test-00000-of-00002-4e1a.parquet").write_bytes(parquet_bytes(LCB_ROWS[:2]))
    (data / "train-00000-of-00001.parquet").write_bytes(b"not this split")
    done = cli("bench", "fetch", "lcb-execution", "--from", tmp_path / "downloads", env=cache_env)
    assert done.returncode == 0, done.stderr
    assert "lcb-execution: 4 items" in done.stdout
    cached = tmp_path / "cache" / "livecodebench" / "execution-v2.jsonl"
    assert jsonl_ids(cached) == [row["id"] for row in LCB_ROWS]
    manifest = json.loads((cached.parent / "manifest.json").read_text())["execution-v2.jsonl"]
    assert [Path(name).name for name in manifest["imported_from"]] == sorted(
        path.name for path in data.glob("test-*")
    )
    (data / "test-00000-of-00002-4e1a.parquet").unlink()
    cache_env = {"CODEREASONER_CACHE": str(tmp_path / "other-cache")}
    failed = cli("bench", "fetch", "lcb-execution", "--from", tmp_path / "downloads", env=cache_env)
    line = one_error_line(failed)
    assert "not one whole set of shards (data/test-00001-of-00002-9c0d.parquet)" in line


# -- export-generations and replay ----------------------------------------------------------------


def eval_run(model: str, bench: str, out: Path, *extra: str) -> dict:
    done = cli(
        "eval", "--model", model, "--bench", bench, "--data-dir", FIXTURES, "--out", out,
        "--json", *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def score_file(bench: str, generations: Path) -> dict:
    done = cli("score", "--bench", bench, "-g", generations, "--data-dir", FIXTURES, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def export(run: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``export-generations`` in this process (it reads no environment): fast, same streams."""
    args = ["export-generations", str(run), "--out", str(out), *extra]
    done = CliRunner().invoke(app, args)
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return subprocess.CompletedProcess(args, done.exit_code, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("oracle") / "run"
    eval_run("oracle", "cruxeval-o,cruxeval-i", out, "--n", "2")
    return out


@pytest.fixture
def replay(oracle_run: Path, tmp_path: Path) -> Iterator[tuple[ReplayProcess, list[dict]]]:
    """The oracle's cruxeval-o completions with sample 1 of three items made wrong, served."""
    exported = tmp_path / "oracle.jsonl"
    assert export(oracle_run, exported, "--bench", "cruxeval-o").returncode == 0
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    for record in records[1:6:2]:
        record["completion"] = "assert f(0) == 'not the output'\n"
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("".join(json.dumps(record) + "\n" for record in records))
    with ReplayProcess(completions=recorded) as server:
        yield server, records


def test_replayed_completions_are_what_the_run_stores_and_scores(
    replay: tuple[ReplayProcess, list[dict]], tmp_path: Path
) -> None:
    server, records = replay
    run = tmp_path / "replayed"
    # Sampled (not greedy, no seed): one request with n=2, choice i is sample i.
    model = f"openai:replay@{server.url}"
    summary = eval_run(model, "cruxeval-o", run, "--n", "2", "--temperature", "0.8")
    assert summary["headline"]["cruxeval-o"]["pass@1"] == 75.0  # 3 of 12 samples wrong
    again = tmp_path / "again.jsonl"
    done = export(run, again)
    assert done.returncode == 0, done.stderr
    assert "12" not in done.stdout  # the summary goes to stderr, stdout stays clean
    exported = [json.loads(line) for line in again.read_text().splitlines()]
    assert [(r["id"], r["sample"], r["completion"]) for r in exported] == [
        (r["id"], r["sample"], r["completion"]) for r in records
    ]
    scored = score_file("cruxeval-o", again)
    report = summary["reports"]["cruxeval-o"]
    for key in ("pass@1", "items", "samples"):
        assert scored[key] == report[key], key
    assert scored["format"] == "jsonl"


def test_official_export_scores_as_the_run(oracle_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "generations.json"
    done = export(oracle_run, out, "--bench", "cruxeval-i", "--format", "official")
    assert done.returncode == 0, done.stderr
    answers = json.loads(out.read_text())
    assert len(answers) == 6 and all(len(samples) == 2 for samples in answers.values())
    assert all(sample.startswith("f(") for samples in answers.values() for sample in samples)
    scored = score_file("cruxeval-i", out)
    assert scored["format"] == "official" and scored["pass@1"] == 100.0


def test_an_export_scored_against_another_benchmark_is_refused(
    oracle_run: Path, tmp_path: Path
) -> None:
    """A CRUXEval-O export scored as CRUXEval-I would pass (the -O prompt shows the input): its
    prompt hashes say whose prompts it answered, and score refuses, naming both benchmarks."""
    exported = tmp_path / "output.jsonl"
    assert export(oracle_run, exported, "--bench", "cruxeval-o").returncode == 0
    refused = cli("score", "--bench", "cruxeval-i", "-g", exported, "--data-dir", FIXTURES)
    line = one_error_line(refused)
    assert "cruxeval-o's prompt" in line and "not cruxeval-i's" in line
    assert "--bench cruxeval-o" in line and "--ignore-prompt-hash" in line
    assert score_file("cruxeval-o", exported)["prompt_hashes"] == {"checked": 12, "absent": 0}
    forced = cli(
        "score", "--bench", "cruxeval-i", "-g", exported, "--data-dir", FIXTURES, "--json",
        "--ignore-prompt-hash",
    )  # fmt: skip
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["prompt_hashes"] == {"ignored": True}
    assert "prompt hashes not checked" in forced.stderr


def test_a_prompt_hash_of_no_known_prompt_is_refused(oracle_run: Path, tmp_path: Path) -> None:
    exported = tmp_path / "output.jsonl"
    assert export(oracle_run, exported, "--bench", "cruxeval-o").returncode == 0
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    records[3]["prompt_hash"] = "0" * 64
    records[4].pop("prompt_hash")
    exported.write_text("".join(json.dumps(record) + "\n" for record in records))
    line = one_error_line(
        cli("score", "--bench", "cruxeval-o", "-g", exported, "--data-dir", FIXTURES)
    )
    assert repr(records[3]["id"]) in line and "matches none of cruxeval-o's prompts" in line
    records[3]["prompt_hash"] = 7
    exported.write_text("".join(json.dumps(record) + "\n" for record in records))
    line = one_error_line(
        cli("score", "--bench", "cruxeval-o", "-g", exported, "--data-dir", FIXTURES)
    )
    assert ":4: field 'prompt_hash' must be a text" in line


def test_export_errors_are_one_line_and_write_nothing(oracle_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out[bold].jsonl"
    line = one_error_line(export(tmp_path / "nowhere", out))
    assert "no run store here" in line
    line = one_error_line(export(oracle_run, out))
    assert "several benchmarks" in line and "cruxeval-o, cruxeval-i" in line
    line = one_error_line(export(oracle_run, out, "--bench", "lcb-execution"))
    assert "'lcb-execution': not in this run" in line
    line = one_error_line(export(oracle_run, out, "--bench", "cruxeval-o", "--format", "csv"))
    assert "--format 'csv'" in line
    assert not out.exists()
    out.write_text("keep me\n")
    line = one_error_line(export(oracle_run, out, "--bench", "cruxeval-o"))
    assert f"--out {out}: already exists" in line and out.read_text() == "keep me\n"
    forced = export(oracle_run, out, "--bench", "cruxeval-o", "--force")
    assert forced.returncode == 0 and str(out) in forced.stderr  # the name as typed
    assert len(out.read_text().splitlines()) == 12
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "run.sqlite").write_bytes(b"not a database" * 100)
    line = one_error_line(export(broken, tmp_path / "x.jsonl"))
    assert "not a readable run store" in line


def printed_score_command(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The words of the ``score`` command ``export-generations`` printed."""
    assert done.returncode == 0, done.stderr
    prefix = "score it with: "
    lines = [line for line in done.stderr.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, done.stderr
    return shlex.split(lines[0].removeprefix(prefix))


def run_printed(words: list[str]) -> dict:
    """The printed command run as printed (its program found on PATH, as a user's shell does),
    with --json added to read its numbers."""
    assert words[:2] == ["codereasoner", "score"], words
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [*words, "--json"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_score_hint_comes_from_the_run_config(tmp_path: Path) -> None:
    """Style as resolved per benchmark (phind where supported, else direct), the extraction,
    grading and data folder the run used; also for a benchmark not graded yet."""
    run = tmp_path / "run"
    summary = eval_run(
        "oracle", "cruxeval-o,cruxeval-i", run, "--style", "phind", "--extraction", "robust"
    )
    official = export(run, tmp_path / "answers.json", "--bench", "cruxeval-i", "-f", "official")
    words = printed_score_command(official)  # answers are extracted: no --style, --extraction
    assert words[6:] == ["--grading", "official", "--data-dir", str(FIXTURES)]
    with sqlite3.connect(run / "run.sqlite") as connection:  # as if stopped before grading
        connection.execute("DELETE FROM results")
        connection.execute("DELETE FROM scores")
    for name, style in (("cruxeval-o", "phind"), ("cruxeval-i", "direct")):
        out = tmp_path / f"{name}.jsonl"
        words = printed_score_command(export(run, out, "--bench", name))
        options = " ".join(words[6:])
        assert words[2:6] == ["--bench", name, "-g", str(out)]
        assert options == (
            f"--style {style} --extraction robust --grading official --data-dir {FIXTURES}"
        )
        scored = run_printed(words)
        report = summary["reports"][name]
        assert (scored["style"], scored["extraction"], scored["grading"]) == (
            style,
            "robust",
            "official",
        )
        for key in ("pass@1", "items", "samples"):
            assert scored[key] == report[key], key


def test_score_hint_of_a_limit_run_scores_its_subset(
    replay: tuple[ReplayProcess, list[dict]], tmp_path: Path
) -> None:
    """A --limit run holds part of the benchmark: the printed command has --subset and, run as
    printed, gives the run's headline numbers; a --limit above the benchmark's size does not."""
    server, _ = replay
    run = tmp_path / "limited"
    model = f"openai:replay@{server.url}"
    summary = eval_run(model, "cruxeval-o", run, "--n", "2", "--temperature", "0.8", "--limit", "4")
    report = summary["reports"]["cruxeval-o"]
    assert report["items"] == 4 and report["pass@1"] < 100.0  # a recorded wrong sample is in
    out = tmp_path / "limited.jsonl"
    words = printed_score_command(export(run, out))
    assert words[-1] == "--subset"
    scored = run_printed(words)
    assert scored["pass@1"] == summary["headline"]["cruxeval-o"]["pass@1"]
    for key in ("items", "samples"):
        assert scored[key] == report[key], key
    whole = tmp_path / "whole"
    eval_run("oracle", "cruxeval-o", whole, "--limit", "100", "--grading", "strict")
    words = printed_score_command(export(whole, tmp_path / "whole.jsonl"))
    assert words[6:] == [
        "--style", "direct", "--extraction", "official", "--grading", "strict",
        "--data-dir", str(FIXTURES),
    ]  # fmt: skip


def test_export_never_writes_over_the_run_it_reads(oracle_run: Path, tmp_path: Path) -> None:
    """Not the store, its SQLite side files, the lock or results.json, however the name is
    spelt, not even with --force; and a path through a regular file is one line."""
    run = tmp_path / "copy"
    shutil.copytree(oracle_run, run)
    kept = {path.name: path.read_bytes() for path in run.iterdir()}
    assert {"run.sqlite", "results.json"} <= set(kept)
    link = tmp_path / "link.jsonl"
    link.symlink_to(run / "run.sqlite")
    (tmp_path / "run-link").symlink_to(run)
    outs = [
        (run / "run.sqlite", "run.sqlite"),
        (run / "sub" / ".." / "run.sqlite", "run.sqlite"),
        (tmp_path / "run-link" / "run.sqlite-wal", "run.sqlite-wal"),
        (run / "run.sqlite-shm", "run.sqlite-shm"),
        (run / ".lock", ".lock"),
        (run / "results.json", "results.json"),
        (link, "run.sqlite"),
    ]
    for given in (run, run / "run.sqlite"):
        for out, name in outs:
            done = export(given, out, "--bench", "cruxeval-o", "--force")
            line = one_error_line(done)
            assert (
                line == f"error: --out {out}: that is the run's own {name}; give another file name"
            )
    assert {path.name: path.read_bytes() for path in run.iterdir()} == kept
    afile = tmp_path / "afile"
    afile.write_text("a file\n")
    for out in (afile / "x.jsonl", afile / "deeper" / "x.jsonl"):
        line = one_error_line(export(run, out, "--bench", "cruxeval-o"))
        assert line == f"error: --out {out}: {afile} is not a folder"
    assert afile.read_text() == "a file\n"
    beside = run / "cruxeval-o.jsonl"  # another file in the run folder is fine
    assert export(run, beside, "--bench", "cruxeval-o").returncode == 0
    assert len(beside.read_text().splitlines()) == 12


def test_export_of_an_interrupted_run_names_the_missing_sample(
    oracle_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / "copy"
    shutil.copytree(oracle_run, run)
    with sqlite3.connect(run / "run.sqlite") as connection:
        connection.execute("DELETE FROM completions WHERE sample = 1")
    line = one_error_line(export(run, tmp_path / "x.jsonl", "--bench", "cruxeval-o"))
    assert "sample 1 is missing from the run" in line and "resume the run" in line
    assert not (tmp_path / "x.jsonl").exists()


def test_replay_server_without_a_record_fails_the_run_in_one_line(
    replay: tuple[ReplayProcess, list[dict]], tmp_path: Path
) -> None:
    server, _ = replay
    done = cli(
        "eval", "--model", f"openai:replay@{server.url}", "--bench", "cruxeval-i",
        "--data-dir", FIXTURES, "--out", tmp_path / "run",
    )  # fmt: skip
    assert done.returncode != 0
    assert "no recorded completion for prompt sha256" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").exists(), reason="no data")
def test_bench_fetch_shows_its_wait_while_it_reads_the_items(tmp_path: Path) -> None:
    """Reading the items after a fetch can take minutes (REval's ground truth): it is shown."""
    done = subprocess.run(
        [sys.executable, "-m", "codereasoner", "bench", "fetch", "cruxeval-o", "--from",
         str(SHARED_DATA)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "CODEREASONER_CACHE": str(tmp_path / "cache"),
             "CODEREASONER_PROGRESS_SECONDS": "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "reading and checking cruxeval-o's items:" in done.stderr
    assert "cruxeval-o: 800 items" in done.stdout
