"""Regression: the official CodeLlama-7B CRUXEval samples give the published scores and every
per-generation verdict of upstream's scored files (when the shared data is present)."""

from __future__ import annotations

import json

import pytest

from codereasoner import benchmarks, tasks
from codereasoner.evaluation import read_generations, score
from codereasoner.execution import Pool
from codereasoner.tasks import OFFICIAL_LIMITS, Extracted, Item
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

DATA = SHARED_DATA / "cruxeval"
SAMPLES = DATA / "samples"
# docs/benchmark-rules.md, "CRUXEval: pass@k and official scores": the stored floats of the official scored files.
PUBLISHED = {
    "input": (35.94999999999998, 44.991071428571416),
    "output": (34.212500000000006, 40.286706349206355),
}


def extract(item: Item, text: str) -> Extracted:
    return tasks.get(item.task).extract(item, text)


@pytest.mark.skipif(not SAMPLES.exists(), reason="shared CRUXEval samples not present")
@pytest.mark.parametrize("mode", ["output", "input"])
def test_official_scores_and_verdicts(pool: Pool, mode: str) -> None:
    bench = benchmarks.get("cruxeval-o" if mode == "output" else "cruxeval-i")
    items = bench.load(DATA)
    path = SAMPLES / f"sample_codellama-7b_temp0.2_{mode}_generations.json"
    fmt, answers = read_generations(path, items, extract)
    assert fmt == "official"
    scored = score(bench, items, answers, pool, limits=OFFICIAL_LIMITS)
    numbers = scored.pass_at([1, 5])
    assert numbers["pass@1"] == pytest.approx(PUBLISHED[mode][0], abs=1e-9)
    assert numbers["pass@5"] == pytest.approx(PUBLISHED[mode][1], abs=1e-9)
    four_places = {"input": (35.95, 44.9911), "output": (34.2125, 40.2867)}[mode]  # the issue's
    assert (round(numbers["pass@1"], 4), round(numbers["pass@5"], 4)) == four_places
    reference = json.loads(
        (SAMPLES / f"sample_scored_codellama-7b_temp0.2_{mode}.json").read_text()
    )
    verdicts = reference["raw_scored_generations"]
    differing = [
        (item_id, s.sample, s.answer, s.reason.value)
        for item_id, scores in scored.scores.items()
        for s, official in zip(scores, verdicts[item_id], strict=True)
        if s.correct != official
    ]
    assert differing == []
    assert not any(s.skipped for scores in scored.scores.values() for s in scores)
