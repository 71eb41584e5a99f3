"""The CRUXEval loader and the registry; the shared data's own ground truth in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codereasoner import benchmarks
from codereasoner.benchmarks.cache import DataUnavailable, sha256_file
from codereasoner.execution import Pool
from codereasoner.families.cruxeval.benchmark import SOURCE
from codereasoner.tasks import OFFICIAL_LIMITS, run_plans, truth_jobs
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cruxeval"
SHARED = SHARED_DATA / "cruxeval"


def test_fixture_items() -> None:
    items = benchmarks.get("cruxeval-i").load(FIXTURES)
    assert [item.id for item in items] == [f"sample_{i}" for i in range(6)]
    lambda_row = items[3]
    assert lambda_row.task == "input_prediction" and lambda_row.entry == "f"
    assert lambda_row.call == "f([3, 1], lambda x: x + 1)"  # the anti-copy text, exactly
    assert lambda_row.truth_value() == [4, 2]
    assert [item.metadata["output_type"] for item in items] == [
        "list",
        "list",
        "list",
        "list",
        "int",
        "bool",
    ]


def test_registry() -> None:
    assert benchmarks.names()[:4] == [
        "cruxeval-o",
        "cruxeval-i",
        "lcb-execution",
        "lcb-test-output",
    ]
    assert {"reval", "core", "core-output", "core-probe"} <= set(benchmarks.names())
    crux = benchmarks.get("cruxeval-o")
    assert crux.counts == {"items": 800} and crux.license.startswith("MIT")
    assert "190faf16d175b5847b0af05d937872b1fb395942" in crux.upstream
    assert benchmarks.get("lcb-execution").counts["items"] == 479
    assert benchmarks.get("lcb-test-output").counts["items"] == 442
    with pytest.raises(KeyError, match="unknown benchmark 'nope'; expected one of cruxeval-o"):
        benchmarks.get("nope")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", r"cruxeval.jsonl:2: invalid JSON"),
        (
            '{"code": "def f(): pass", "input": "", "output": "1"}',
            r"cruxeval.jsonl:2: missing field 'id'",
        ),
        (
            '{"code": 1, "input": "", "output": "1", "id": "b"}',
            r":2: field 'code' must be str, got int",
        ),
        (
            '{"code": "x", "input": "", "output": "1 +", "id": "b"}',
            r":2: field 'output' is not a literal",
        ),
        (
            '{"code": "x", "input": "", "output": "1", "id": "a"}',
            r":2: duplicate id 'a' \(first on line 1\)",
        ),
        ("[1, 2]", r":2: expected a JSON object per line"),
    ],
)
def test_bad_rows_are_named(tmp_path: Path, line: str, message: str) -> None:
    good = '{"code": "def f():\\n    return 1", "input": "", "output": "1", "id": "a"}'
    (tmp_path / "cruxeval.jsonl").write_text(f"{good}\n{line}\n")
    with pytest.raises(DataUnavailable, match=message):
        benchmarks.get("cruxeval-o").load(tmp_path)


def test_missing_data_dir_file(tmp_path: Path) -> None:
    with pytest.raises(DataUnavailable, match=r"cruxeval.jsonl: not found"):
        benchmarks.get("cruxeval-o").load(tmp_path)


@pytest.mark.skipif(
    not (SHARED / "cruxeval.jsonl").exists(), reason="shared CRUXEval data not present"
)
def test_shared_data_matches_the_pinned_upstream_file(pool: Pool) -> None:
    path = SHARED / "cruxeval.jsonl"
    assert sha256_file(path) == SOURCE.sha256
    items = benchmarks.get("cruxeval-o").load(SHARED)
    assert len(items) == 800 and items[0].id == "sample_0" and items[-1].id == "sample_799"
    assert json.loads(path.read_text().splitlines()[0])["id"] == "sample_0"
    # Upstream's self-check: assert f(input) == output on every row, in the sandbox.
    results = run_plans(pool, truth_jobs(items), OFFICIAL_LIMITS)
    failures = [
        (scores[0].item_id, scores[0].detail) for scores in results if not scores[0].correct
    ]
    assert failures == []
