"""The oracle self-check: 100% on every task kind through the whole runner chain.

Uses ``/work/shared/data`` when present (cruxeval in full), ``tests/fixtures`` otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codereasoner.evaluation.runner import Runner, RunSettings, RunSummary, available
from codereasoner.execution import Pool
from codereasoner.models import Request, Sampling, load_backend
from codereasoner.models.oracle import NO_TRUTH, OracleBackend, answer, oracle_completion
from codereasoner.tasks import Item
from codereasoner.tasks.oracle import NoOracleAnswer
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATA = SHARED_DATA if (SHARED_DATA / "cruxeval").is_dir() else FIXTURES


def _run(
    tmp: Path, pool: Pool, names: tuple[str, ...], data: Path, **options: object
) -> RunSummary:
    settings = RunSettings(names, data_dir=data, **options)  # type: ignore[arg-type]
    with Runner(tmp, OracleBackend(), settings, pool_factory=lambda: pool) as runner:
        return runner.run()


def _assert_perfect(summary: RunSummary) -> None:
    assert summary.self_check is not None
    for name, check in summary.self_check.items():
        assert check["graded_wrong"] == [], name
        assert check["passed"] and check["items"] > 0, name
        assert check["samples"] == check["items"]  # one verdict per item (n = 1)


def test_load_backend_gives_the_oracle() -> None:
    backend = load_backend("oracle")
    assert isinstance(backend, OracleBackend) and backend.model_id == "oracle"


def test_full_cruxeval_scores_100_percent(tmp_path: Path, pool: Pool) -> None:
    summary = _run(tmp_path, pool, ("cruxeval-o", "cruxeval-i"), DATA)
    _assert_perfect(summary)
    for name in ("cruxeval-o", "cruxeval-i"):
        report = summary.reports[name]
        assert report["pass@1"] == 100.0
        assert report["items"] == (800 if DATA == SHARED_DATA else report["items"])
        assert report["reasons"] == {"correct": report["samples"]}


@pytest.mark.parametrize(("style", "extraction"), [
    ("direct", "robust"), ("cot", "official"), ("cot", "official-openai"), ("cot", "robust"),
    ("phind", "official"),
])  # fmt: skip
def test_cruxeval_and_livecodebench_styles(
    tmp_path: Path, pool: Pool, style: str, extraction: str
) -> None:
    names = ("cruxeval-o", "cruxeval-i", "lcb-execution", "lcb-test-output")
    summary = _run(tmp_path, pool, names, FIXTURES, style=style, extraction=extraction)
    _assert_perfect(summary)
    assert all(summary.reports[name]["pass@1"] == 100.0 for name in names)
    assert summary.reports["cruxeval-o"]["style"] == style  # phind: CRUXEval-O only
    assert summary.reports["lcb-test-output"]["style"] == "direct"  # its only style


@pytest.mark.parametrize("style", ["direct", "cot", "coc"])
def test_core_every_kind_and_style(tmp_path: Path, pool: Pool, style: str) -> None:
    summary = _run(tmp_path, pool, ("core", "core-output", "core-probe"), FIXTURES, style=style)
    _assert_perfect(summary)
    project = summary.reports["core"]["variants"]["project"]["mean"]
    assert {key: project[key] for key in ("I", "Is", "W", "Ws", "RCS")} == dict.fromkeys(
        ("I", "Is", "W", "Ws", "RCS"), 100.0
    )


def test_core_probes_of_the_full_release(tmp_path: Path, pool: Pool) -> None:
    if "core-probe" not in available(SHARED_DATA):
        pytest.skip("CoRE probes need /work/shared/data/core")
    summary = _run(tmp_path, pool, ("core-probe",), SHARED_DATA)
    _assert_perfect(summary)
    assert summary.reports["core-probe"]["variants"]["project"]["mean"]["Ws"] == 100.0


@pytest.mark.parametrize("style", ["direct", "cot"])
def test_reval_every_kind(tmp_path: Path, pool: Pool, style: str) -> None:
    summary = _run(tmp_path, pool, ("reval",), FIXTURES, style=style)
    _assert_perfect(summary)
    report = summary.reports["reval"]
    assert (report["coverage"]["acc"], report["state"], report["path"], report["output"]) == (
        1.0,
        1.0,
        1.0,
        1.0,
    )
    assert report["consistency"] == 100.0


def _reval_subset(target: Path, task_ids: set[str]) -> Path:
    """The real REval data with the questions of some programs only, as a data directory."""
    target.mkdir()
    source = SHARED_DATA / "reval"
    (target / "DREval_data.jsonl").write_bytes((source / "DREval_data.jsonl").read_bytes())
    lines = (source / "DREval_tasks.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["task_id"] in task_ids]
    (target / "DREval_tasks.jsonl").write_text("\n".join(kept) + "\n")
    return target


def test_reval_misses_are_reported_not_dropped(tmp_path: Path, pool: Pool) -> None:
    """DREval/127 has states with no readable value (the oracle cannot state
    them); DREval/1 asks the same path question of two lines with the same text."""
    if "reval" not in available(SHARED_DATA):
        pytest.skip("needs /work/shared/data/reval")
    data = _reval_subset(tmp_path / "data", {"DREval/1", "DREval/127"})
    summary = _run(tmp_path / "run", pool, ("reval",), data)
    assert summary.self_check is not None
    check = summary.self_check["reval"]
    assert check["passed"] and check["graded_wrong"] == []
    assert check["no_truth"] and all(i.startswith("DREval/127/") for i in check["no_truth"])
    assert check["ambiguous_missed"] and set(check["ambiguous_missed"]) <= set(check["ambiguous"])
    assert any(i.startswith("DREval/1/") for i in check["ambiguous"])
    report = summary.reports["reval"]
    items = sum(report["items"].values())
    assert items == check["items"]  # nothing dropped from the report either
    assert report["state"] < 1.0 and report["path"] < 1.0 and report["output"] == 1.0


def test_an_unstateable_truth_becomes_a_labelled_completion() -> None:
    item = Item(
        "x/state",
        "reval",
        "state",
        program="x = 1",
        truth='[["bs4.Tag", null]]',
        truth_format="json",
    )
    with pytest.raises(NoOracleAnswer, match=r"bs4\.Tag"):
        oracle_completion(item, "direct")
    completion = answer(Request("prompt", item=item, task="reval", style="direct"))
    assert completion.finish_reason == NO_TRUTH and "self-check oracle" in completion.text


def test_the_oracle_obeys_stop_sequences() -> None:
    item = Item(
        "i",
        "cruxeval-o",
        "output_prediction",
        program="def f(x):\n    return x",
        call="f(1)",
        truth="1",
    )
    stopped = answer(
        Request("p", item=item, style="direct", sampling=Sampling(stop=("[/ANSWER]",)))
    )
    assert stopped.text == "assert f(1) == 1\n"
    whole = answer(Request("p", item=item, style="direct"))
    assert whole.text == "assert f(1) == 1\n[/ANSWER]"
