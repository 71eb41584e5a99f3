"""The HF backend through the whole evaluation runner: prompts, generation on the tiny local
model, extraction, grading, the run store, and a resume that generates nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from codereasoner.evaluation.runner import Runner, RunSettings
from codereasoner.evaluation.store import RunStore
from codereasoner.execution import Pool
from codereasoner.models import Sampling, load_backend

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _run(run_dir: Path, model: Path, pool: Pool) -> tuple[dict, dict]:
    settings = RunSettings(
        ("cruxeval-o",),
        n=2,
        sampling=Sampling(temperature=0.8, max_tokens=12, seed=3),
        limit=3,
        data_dir=FIXTURES,
    )
    backend = load_backend(f"hf:{model}", batch_size=2)
    with Runner(run_dir, backend, settings, pool_factory=lambda: pool) as runner:
        summary = runner.run()
    with RunStore(run_dir) as store:
        counts = store.counts()
    return summary.to_dict(), counts


def test_hf_backend_runs_a_benchmark_end_to_end_and_resumes(
    tmp_path: Path, tiny_model: Path, pool: Pool
) -> None:
    first, rows = _run(tmp_path, tiny_model, pool)
    items = first["reports"]["cruxeval-o"]["items"]
    assert items >= 3
    assert first["generated"]["cruxeval-o"] == 2 * items  # two seeded samples per item
    assert rows["completions"] == 2 * items and rows["scores"] == 2 * items
    # A random tiny model answers wrongly; every sample is graded, none dropped.
    assert sum(first["reports"]["cruxeval-o"]["reasons"].values()) == 2 * items
    again, rows_again = _run(tmp_path, tiny_model, pool)
    assert again["generated"]["cruxeval-o"] == 0
    assert again["cached"]["cruxeval-o"] == 2 * items
    assert again["reports"]["cruxeval-o"]["pass@1"] == first["reports"]["cruxeval-o"]["pass@1"]
    assert rows_again == rows


def test_max_tokens_defaults_to_the_benchmarks_and_a_run_mostly_at_the_limit_warns(
    tmp_path: Path, tiny_model: Path, pool: Pool
) -> None:
    """Without --max-tokens a direct answer gets the benchmark's 192 tokens (a reasoning style
    1,024); a model that never writes an end (the random tiny one) is warned about, on the
    summary and in results.json."""
    from codereasoner import benchmarks

    bench = benchmarks.get("cruxeval-o")
    assert bench.max_tokens_for("direct") == 192 and bench.max_tokens_for("cot") == 1024
    settings = RunSettings(("cruxeval-o",), limit=2, data_dir=FIXTURES)
    assert settings.sampling.max_tokens is None
    backend = load_backend(f"hf:{tiny_model}", batch_size=4)
    with Runner(tmp_path, backend, settings, pool_factory=lambda: pool) as runner:
        summary = runner.run()
    with sqlite3.connect(tmp_path / "run.sqlite") as db:
        keys = {key for (key,) in db.execute("SELECT DISTINCT sampling FROM completions")}
    assert [json.loads(key)["max_tokens"] for key in keys] == [192]
    (limit,) = [w for w in summary.warnings if "token limit" in w]  # a random model's text
    assert "stopped at the 192-token limit" in limit and "raise --max-tokens" in limit
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["warnings"] == summary.warnings
