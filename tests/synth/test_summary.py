"""``summary.json`` and ``summary.png`` of a real synth run: every count recomputed from the files
the run wrote, and the figure rendered."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from codereasoner.synth.summary import BY_DESIGN_DROPS, TRIVIAL_OUTPUTS, compute, plot


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "out"
    done = subprocess.run(
        [sys.executable, "-m", "codereasoner", "synth", "--out", str(out), "--n", "40",
         "--seed", "3", "--no-decontam", "--workers", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def test_originals_and_mutants_per_type_are_those_of_cases_jsonl(run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    expected: dict[str, Counter[str]] = {}
    for case in _lines(run / "cases.jsonl"):
        kind = "mutants" if case["mutation"] else "originals"
        expected.setdefault(case["method"].split(".")[0], Counter())[kind] += 1
    assert summary["by_type"] == {
        name: {"originals": counts["originals"], "mutants": counts["mutants"]}
        for name, counts in sorted(expected.items())
    }
    assert sum(row["mutants"] for row in summary["by_type"].values()) > 0


def test_the_output_distribution_and_trivial_share_are_those_of_cases_jsonl(run: Path) -> None:
    outputs = json.loads((run / "summary.json").read_text())["outputs"]
    values = Counter(case["output"] for case in _lines(run / "cases.jsonl"))
    total = sum(values.values())
    assert outputs["total"] == total and outputs["distinct"] == len(values)
    top = outputs["top"]
    assert [entry["count"] for entry in top] == [count for _, count in values.most_common(len(top))]
    for entry in top:
        assert entry["count"] == values[entry["value"]]
        assert entry["share"] == pytest.approx(entry["count"] / total, abs=1e-4)
    trivial = sum(values[value] for value in TRIVIAL_OUTPUTS)
    assert outputs["trivial"]["count"] == trivial
    assert outputs["trivial"]["share"] == pytest.approx(trivial / total, abs=1e-4)


def test_by_design_drops_are_counted_apart(run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    reasons = Counter(f"{d['stage']}/{d['reason']}" for d in _lines(run / "dropped.jsonl"))
    assert summary["by_design_drops"] == {reason: reasons[reason] for reason in BY_DESIGN_DROPS}
    assert summary["drop_reasons"] == dict(reasons)


def test_the_figure_renders_at_a_readable_size(run: Path) -> None:
    import matplotlib.image

    pixels = matplotlib.image.imread(run / "summary.png")
    height, width = pixels.shape[:2]
    assert width >= 1200 and height >= 1000


def test_an_empty_run_still_has_a_summary_and_a_figure(tmp_path: Path) -> None:
    data = compute(tmp_path, {"n": 0})
    assert data["outputs"] == {
        "total": 0,
        "distinct": 0,
        "top": [],
        "trivial": {"values": list(TRIVIAL_OUTPUTS), "count": 0, "share": 0.0, "by_value": {}},
    }
    assert plot(data, tmp_path / "summary.png")
    assert (tmp_path / "summary.png").stat().st_size > 0
