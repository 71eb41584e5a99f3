"""The runner: resume skips finished work, settings are checked, failures are recorded.

Backends are real: the oracle, and the OpenAI-compatible backend against the replay server on
127.0.0.1 (its counters tell which completions were requested).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codereasoner import benchmarks
from codereasoner.evaluation.runner import RunError, Runner, RunSettings, select_items
from codereasoner.evaluation.store import RunStore
from codereasoner.execution import Pool
from codereasoner.models import BackendError, load_backend
from codereasoner.models.oracle import OracleBackend
from codereasoner.models.replay_server import ReplayServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CRUX = ("cruxeval-o", "cruxeval-i")


def _runner(run: Path, backend: object, pool: Pool, **options: object) -> Runner:
    options.setdefault("data_dir", FIXTURES)
    settings = RunSettings(options.pop("benchmarks", CRUX), **options)  # type: ignore[arg-type]
    return Runner(run, backend, settings, pool_factory=lambda: pool)  # type: ignore[arg-type]


def _rows(run: Path) -> dict[str, int]:
    with RunStore(run) as store:
        return store.counts()


def test_a_rerun_asks_for_nothing_and_grades_nothing(tmp_path: Path, pool: Pool) -> None:
    first = OracleBackend()
    with _runner(tmp_path, first, pool) as runner:
        summary = runner.run()
    prompts = sum(len(plan.items) for plan in runner.plans)
    assert first.requests == prompts and sum(summary.graded.values()) == prompts
    rows = _rows(tmp_path)
    again = OracleBackend()
    with _runner(tmp_path, again, pool) as runner:
        resumed = runner.run()
    assert again.requests == 0 and sum(resumed.graded.values()) == 0
    assert resumed.cached == summary.generated
    assert resumed.reports == summary.reports
    assert _rows(tmp_path) == rows
    with RunStore(tmp_path) as store:
        row = store.run()
    assert row is not None and row.status == "done"


def test_a_larger_n_reuses_the_samples_it_has(tmp_path: Path, pool: Pool) -> None:
    with _runner(tmp_path, OracleBackend(), pool, n=1) as runner:
        runner.run()
    prompts = sum(len(plan.items) for plan in runner.plans)
    backend = OracleBackend()
    with _runner(tmp_path, backend, pool, n=3) as runner:
        summary = runner.run()
    assert backend.requests == prompts and backend.completions == 2 * prompts  # samples 1, 2
    assert summary.reports["cruxeval-o"]["samples"] == 3 * summary.reports["cruxeval-o"]["items"]
    assert _rows(tmp_path)["completions"] == 3 * prompts
    with _runner(tmp_path, OracleBackend(), pool, n=1) as runner:  # back to n=1: kept, said
        smaller = runner.run()
    assert smaller.reports["cruxeval-o"] == summary.reports["cruxeval-o"]
    assert any("kept the stored report over 3 samples" in w for w in smaller.warnings)


def test_other_settings_in_the_same_run_dir_are_refused(tmp_path: Path, pool: Pool) -> None:
    with _runner(tmp_path, OracleBackend(), pool) as runner:
        runner.run()
    rows = _rows(tmp_path)
    with pytest.raises(RunError, match=r"--style \"direct\", this run asks --style \"cot\""):
        _runner(tmp_path, OracleBackend(), pool, style="cot").run()
    with pytest.raises(RunError, match=r"--temperature 0\.0, this run asks --temperature 0\.2"):
        from codereasoner.models import Sampling

        _runner(tmp_path, OracleBackend(), pool, sampling=Sampling(temperature=0.2)).run()
    assert _rows(tmp_path) == rows


def test_more_benchmarks_extend_a_run(tmp_path: Path, pool: Pool) -> None:
    with _runner(tmp_path, OracleBackend(), pool, benchmarks=("cruxeval-o",)) as runner:
        runner.run()
    backend = OracleBackend()
    with _runner(tmp_path, backend, pool) as runner:
        summary = runner.run()
    assert set(summary.reports) == set(CRUX)
    assert backend.requests == len(runner.plans[1].items)  # cruxeval-i only
    with RunStore(tmp_path) as store:
        row = store.run()
    assert row is not None and row.config["benchmarks"] == list(CRUX)


def test_limit_keeps_whole_groups_deterministically() -> None:
    bench = benchmarks.get("reval")
    items = bench.load(FIXTURES / "reval")
    chosen = select_items(bench, items, 5)
    assert chosen == select_items(bench, items, 5) and 5 <= len(chosen) < len(items)
    pairs = {(i.metadata["task_id"], i.metadata["input_idx"]) for i in chosen}
    assert len(chosen) == sum(
        (i.metadata["task_id"], i.metadata["input_idx"]) in pairs for i in items
    )


def test_a_server_failure_marks_the_run_failed_and_resume_finishes_it(
    tmp_path: Path, pool: Pool
) -> None:
    probe = _runner(tmp_path / "probe", OracleBackend(), pool, benchmarks=("cruxeval-o",))
    prompts = list(probe.plans[0].prompts.values())
    bad = prompts[len(prompts) // 2]

    def fail_one(key: str, attempt: int) -> int | None:
        return 403 if key == bad else None

    with ReplayServer(failures=fail_one) as server:
        backend = load_backend(f"openai:replay@{server.url}", concurrency=1)
        runner = _runner(tmp_path / "run", backend, pool, benchmarks=("cruxeval-o",))
        with pytest.raises(BackendError, match="403"), runner:
            runner.run()
        with RunStore(tmp_path / "run") as store:
            row = store.run()
            stored = store.counts()["completions"]
        assert row is not None and row.status == "failed" and "403" in row.message
        assert 0 < stored < len(prompts)
        first_url = server.url
    with ReplayServer() as server:  # another port: the run is of the model, not of the URL
        assert server.url != first_url
        backend = load_backend(f"openai:replay@{server.url}", concurrency=1)
        with _runner(tmp_path / "run", backend, pool, benchmarks=("cruxeval-o",)) as runner:
            summary = runner.run()
        assert server.stats()["requests"] == len(prompts) - stored  # nothing asked twice
    assert summary.reports["cruxeval-o"]["items"] == len(prompts)
    assert summary.model == "openai:replay"
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as connection:
        assert connection.execute("SELECT status, model FROM run").fetchone() == (
            "done",
            "openai:replay",
        )
        assert connection.execute("SELECT COUNT(*) FROM completions").fetchone()[0] == len(prompts)
