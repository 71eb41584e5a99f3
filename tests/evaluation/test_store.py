"""The run store's typed API: idempotent writes, cache queries, status, threads."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from codereasoner.evaluation.store import ItemRow, RunStore, store_path
from codereasoner.models.base import Completion
from codereasoner.tasks import Reason, Score


def _completions(*samples: int, text: str = "x") -> list[Completion]:
    return [Completion(sample, f"{text}{sample}") for sample in samples]


def test_completions_are_written_once_and_first_write_wins(tmp_path: Path) -> None:
    with RunStore(tmp_path, create=True) as store:
        store.record_completions("m", "h1", "s", _completions(0, 1))
        store.record_completions("m", "h1", "s", _completions(0, 1, 2, text="again"))
        store.record_completions("m", "h2", "s", _completions(0))
        store.record_completions("other", "h1", "s", _completions(0))
        assert store.counts()["completions"] == 5
        assert store.cached_samples("m", "s", 3) == {"h1": {0, 1, 2}, "h2": {0}}
        assert store.cached_samples("m", "s", 1) == {"h1": {0}, "h2": {0}}
        found = store.completions("m", "s", ["h1"], 3)
        assert {key: value.text for key, value in found.items()} == {
            ("h1", 0): "x0",
            ("h1", 1): "x1",
            ("h1", 2): "again2",
        }


def test_scores_items_and_results_round_trip(tmp_path: Path) -> None:
    scores = [
        Score("a", 0, "1", True, Reason.CORRECT),
        Score("a", 1, None, False, Reason.NO_ANSWER, "nothing"),
        Score("b", 0, "f(1)", False, Reason.COPIED, skipped=True),
    ]
    with RunStore(tmp_path, create=True) as store:
        store.record_items("bench", [ItemRow("a", "t", "h", "1", "int", "{}")] * 2)
        store.record_scores("bench", scores)
        store.record_scores("bench", scores[:1])  # a replay of a chunk changes nothing
        assert store.scored_samples("bench", 2) == {"a": {0, 1}, "b": {0}}
        assert store.scores("bench", 2) == {"a": scores[:2], "b": scores[2:]}
        assert store.scores("bench", 1) == {"a": scores[:1], "b": scores[2:]}
        store.record_result("bench", {"pass@1": 50.0})
        store.record_result("bench", {"pass@1": 75.0})
        assert store.results() == {"bench": {"pass@1": 75.0}}
        assert store.counts() | {"run": 0} == {
            "run": 0,
            "prompts": 0,
            "completions": 0,
            "items": 1,
            "scores": 3,
            "results": 1,
        }


def test_the_run_row_is_single_and_tracks_status(tmp_path: Path) -> None:
    with RunStore(tmp_path, create=True) as store:
        assert store.run() is None
        store.start_run("oracle", {"n": 1})
        store.set_status("failed", "server unreachable")
        row = store.run()
        assert row is not None and (row.status, row.message) == ("failed", "server unreachable")
        store.start_run("oracle", {"n": 2})
        row = store.run()
        assert row is not None and (row.status, row.message, row.config) == (
            "running",
            "",
            {"n": 2},
        )
        with pytest.raises(ValueError, match="run status"):
            store.set_status("finished")
        assert store.counts()["run"] == 1


def test_a_missing_store_is_not_created_by_reading(tmp_path: Path) -> None:
    assert not RunStore.exists(tmp_path)
    with pytest.raises(FileNotFoundError, match="no run store"):
        RunStore(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()
    assert store_path(tmp_path) == tmp_path / "run.sqlite"


def test_writes_from_many_threads_all_land(tmp_path: Path) -> None:
    with RunStore(tmp_path, create=True) as store:

        def write(start: int) -> None:
            for index in range(start, start + 50):
                store.record_completions("m", f"h{index}", "s", _completions(0))

        threads = [threading.Thread(target=write, args=(50 * k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    # a fresh connection sees every committed row
    with sqlite3.connect(tmp_path / "run.sqlite") as connection:
        assert connection.execute("SELECT COUNT(*) FROM completions").fetchone()[0] == 200
