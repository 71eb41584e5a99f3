"""REval metrics and scoring: constructed prediction sets whose scores are worked out by hand."""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from codereasoner import tasks
from codereasoner.evaluation.generations import GenerationsError
from codereasoner.execution import Pool
from codereasoner.families.reval import benchmark as reval
from codereasoner.families.reval.metrics import (
    CoverageCounts,
    consistency_weight,
    coverage_counts,
    incremental_consistency,
)
from codereasoner.families.reval.scoring import read_reval_generations, score_reval
from codereasoner.tasks import Extracted, Item
from tests.commands import Ran, invoke

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reval"
PAIRS = ["DREval/0/0", "DREval/0/1", "DREval/1/0", "DREval/2/0", "DREval/2/1"]


def test_coverage_counts_by_hand() -> None:
    # (expected executed, answered correctly): 3 TP, 1 FN, 2 TN, 2 FP
    counts = coverage_counts(
        [(True, True)] * 3 + [(True, False)] + [(False, True)] * 2 + [(False, False)] * 2
    )
    assert counts == CoverageCounts(tp=3, fp=2, tn=2, fn=1)
    assert counts.accuracy == 5 / 8 and counts.precision == 3 / 5 and counts.recall == 3 / 4
    assert counts.f1 == pytest.approx(2 * (3 / 5) * (3 / 4) / (3 / 5 + 3 / 4))
    always_no = coverage_counts([(True, False), (False, True), (False, True)])
    assert (always_no.precision, always_no.recall, always_no.f1) == (0.0, 0.0, 0.0)
    assert always_no.accuracy == 2 / 3 and CoverageCounts().accuracy == 0.0


def test_incremental_consistency_by_hand() -> None:
    rows = [
        (True, True, True, True),  # 1
        (True, True, True, False),  # 0.5
        (True, True, False, False),  # 0.25
        (True, False, False, False),  # 0.125
        (False, True, True, True),  # 0: not a prefix of correct answers
        (True, False, True, True),  # 0
        (True, True, False, True),  # 0
        (False, False, False, False),  # 0
    ]
    assert [consistency_weight(*row) for row in rows] == [1, 0.5, 0.25, 0.125, 0, 0, 0, 0]
    assert incremental_consistency(rows) == 100 * 1.875 / 8
    assert incremental_consistency([]) == 0.0


# A constructed prediction set on the fixture (20 line questions in 5 pairs, 14 lines executed).
# Repeat 0: coverage always YES; state right only in pairs DREval/0/0 and DREval/1/0 (8 of 20);
# path right except in DREval/0/1 and DREval/2/1 (13 of 20); output right except those two.
# Repeat 1: every answer right.
WRONG_STATE = {"DREval/0/1", "DREval/2/0", "DREval/2/1"}
WRONG_PATH_OUTPUT = {"DREval/0/1", "DREval/2/1"}
# Repeat 0 by hand: coverage TP 14, FP 6 -> acc 0.7, precision 0.7, recall 1, F1 14/17.
# IC: DREval/0/0 3 x 1, DREval/0/1 0 (coverage wrong), DREval/1/0 5 x 1, DREval/2/0: lines 3
# and 12 have coverage wrong, lines 7-9 are (1, 0, 1, 1) -> 0; DREval/2/1: lines 3, 4, 12 are
# (1, 0, 0, 0) -> 0.125 each, line 7 coverage wrong -> 0: (3 + 5 + 0.375) / 20 = 41.875 %.
REPEAT_0 = {
    "coverage": {
        "acc": 0.7,
        "prec": 0.7,
        "rec": 1.0,
        "f1": 14 / 17,
        "tp": 14,
        "fp": 6,
        "tn": 0,
        "fn": 0,
    },
    "state": 0.4,
    "path": 0.65,
    "output": 0.6,
    "avg_acc": 2.35 / 4,
    "consistency": 41.875,
}
MEAN = {
    "coverage": {
        "acc": 0.85,
        "prec": 0.85,
        "rec": 1.0,
        "f1": (14 / 17 + 1) / 2,
        "tp": 14,
        "fp": 3,
        "tn": 3,
        "fn": 0,
    },
    "state": 0.7,
    "path": 0.825,
    "output": 0.8,
    "avg_acc": (2.35 / 4 + 1) / 2,
    "consistency": (41.875 + 100) / 2,
}


@pytest.fixture(scope="module")
def items(pool: Pool, tmp_path_factory: pytest.TempPathFactory) -> list[Item]:
    paths = {name: FIXTURES / name for name in (reval.DATA.filename, reval.TASKS.filename)}
    return reval.load(paths, pool=pool, cache=tmp_path_factory.mktemp("cache"))


def pair_of(item: Item) -> str:
    return f"{item.metadata['task_id']}/{item.metadata['input_idx']}"


def right_answer(item: Item) -> str:
    truth = item.truth_value() if item.task != "output" else item.truth
    if item.task == "coverage":
        return "YES" if truth else "NO"
    if item.task == "path":
        first = truth[0]  # type: ignore[index]
        return "-1" if first == -1 else item.program.split("\n")[first - 1].strip()
    if item.task == "state":
        return "Nil" if truth is None else f"{truth[0][1]}; {truth[0][0]}"  # type: ignore[index]
    return str(truth)


def answer(item: Item, repeat: int) -> str:
    if repeat == 1:
        return right_answer(item)
    pair = pair_of(item)
    if item.task == "coverage":
        return "YES"
    if item.task == "state":
        return "no idea" if pair in WRONG_STATE else right_answer(item)
    if pair in WRONG_PATH_OUTPUT:
        return "-2" if item.task == "path" else "assert False"
    return right_answer(item)


def check(found: dict, expected: dict) -> None:
    for key, value in expected.items():
        if isinstance(value, dict):
            check(found[key], value)
        else:
            assert found[key] == pytest.approx(value), key


def extract(item: Item, text: str, mode: str = "official") -> Extracted:
    return tasks.get(item.task).extract(item, text, "direct", mode)


def test_scores_of_a_constructed_prediction_set(items: list[Item], pool: Pool) -> None:
    answers = {item.id: [] for item in items}
    for item in items:
        for repeat in (0, 1):
            answers[item.id].append(extract(item, answer(item, repeat)))
    scored = score_reval(items, answers, pool)
    check(scored.metrics(0), REPEAT_0)
    check(scored.metrics(1), {"state": 1.0, "path": 1.0, "output": 1.0, "consistency": 100.0})
    check(scored.mean_metrics(), MEAN)
    humaneval = [item for item in items if item.metadata["source"] == "humaneval"]
    # HumanEval part, repeat 0: DREval/0/0 and /1/0 right, DREval/0/1 wrong except state...
    # state: 8 right of 11; output 2 of 3; IC (3 + 5) / 11
    check(
        scored.metrics(0, humaneval),
        {"state": 8 / 11, "output": 2 / 3, "consistency": 100 * 8 / 11},
    )


def write_jsonl(path: Path, items: list[Item]) -> Path:
    lines = [
        json.dumps({"id": item.id, "sample": repeat, "answer": answer(item, repeat)})
        for item in items
        for repeat in (0, 1)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(tmp_path: Path, *args: str | Path) -> Ran:
    cache = {"CODEREASONER_CACHE": str(tmp_path / "cache")}
    return invoke("score", "--bench", "reval", "--data-dir", FIXTURES, *args, env=cache)


def test_score_cli_jsonl(items: list[Item], pool: Pool, tmp_path: Path) -> None:
    generations = write_jsonl(tmp_path / "gens.jsonl", items)
    done = cli(tmp_path, "-g", generations, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    check(report, MEAN)
    assert report["format"] == "jsonl" and report["repeats"] == dict.fromkeys(
        ("coverage", "state", "path", "output"), 2
    )
    assert report["output_subsets"]["classeval_leak"] == {"items": 1, "acc": 0.5}
    assert report["reasons"]["state"] == {"correct": 28, "not_a_literal": 12}
    # standard errors: the delete-one-program jackknife, worked out here from the verdicts
    answers = {item.id: [extract(item, answer(item, r)) for r in (0, 1)] for item in items}
    scored = score_reval(items, answers, pool)
    programs = sorted({str(item.metadata["task_id"]) for item in items})
    assert len(programs) >= 2
    for key in ("state", "output", "consistency"):
        left_out = [
            scored.mean_metrics([i for i in items if str(i.metadata["task_id"]) != program])[key]
            for program in programs
        ]
        mean, g = statistics.fmean(left_out), len(left_out)
        expected = math.sqrt((g - 1) / g * sum((value - mean) ** 2 for value in left_out))
        assert report["stderr"][key] == pytest.approx(expected), key
    assert set(report["stderr"]["coverage"]) == {"acc", "prec", "rec", "f1"}
    table = cli(tmp_path, "-g", generations)
    assert table.returncode == 0 and "consistency (IC, %)" in table.stdout
    assert "70.9375" in table.stdout


def log_line(item_results: dict[tuple[str, int], list[dict]], task_id: str) -> str:
    generation = [
        {"input_idx": index, "results": results}
        for (tid, index), results in item_results.items()
        if tid == task_id
    ]
    return json.dumps({"task_id": task_id, "generation": generation})


def write_logs(folder: Path, items: list[Item]) -> Path:
    """REval's own logs, one per kind, repeat 0 only; completions wrapped in answer tags."""
    for kind in ("coverage", "state", "path", "output"):
        results: dict[tuple[str, int], list[dict]] = {}
        for item in items:
            if item.task != kind:
                continue
            text = f"[ANSWER]\n{answer(item, 0)}\n[/ANSWER]"
            verdict = {
                "coverage": {"response": True, "expected": True},
                "path": {"response": [-2], "expected": [1]},
                "state": {"eq": False},
                "output": {"pass": True},
            }[kind]
            key = (str(item.metadata["task_id"]), int(item.metadata["input_idx"]))
            results.setdefault(key, []).append({"generated": text, **verdict})
        task_ids = sorted({key[0] for key in results})
        body = [log_line(results, task_id) for task_id in task_ids] + [json.dumps({"acc": 0})]
        target = folder / f"{kind}@model_direct_temp0.8" / "24-07-03-10-00.jsonl"
        target.parent.mkdir(parents=True)
        target.write_text("\n".join(body) + "\n")
    return folder


def test_score_cli_reval_logs(items: list[Item], tmp_path: Path) -> None:
    folder = write_logs(tmp_path / "model_generations", items)
    done = cli(tmp_path, "-g", folder, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    check(report, REPEAT_0)
    assert report["format"] == "reval-log"
    # the logs claim: coverage all right (6 are not), state all wrong (8 are right), path all
    # wrong (13 are right), output all right (2 are not)
    assert report["log_verdicts_differing"] == 6 + 8 + 13 + 2
    single = cli(tmp_path, "-g", next(folder.glob("state@*/*.jsonl")), "--json")
    assert json.loads(single.stdout)["state"] == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "DREval/9/0/1/coverage", "sample": 0, "answer": "YES"}'],
         "bad.jsonl:1: field 'id': unknown REval item 'DREval/9/0/1/coverage'"),
        (['{"id": "DREval/0/0/9/coverage", "sample": -1, "answer": "YES"}'],
         "field 'sample' must be an integer >= 0"),
        (['{"id": "DREval/0/0/9/coverage", "sample": 0}'],
         "give exactly one of 'completion' and 'answer'"),
        (['{"id": "DREval/0/0/9/coverage", "sample": 0, "answer": "YES"}'],
         "19 of 20 coverage items have no generations (first: 'DREval/0/0/10/coverage')"),
        (["not json"], "bad.jsonl:1: invalid JSON"),
    ],
)  # fmt: skip
def test_bad_generations(items: list[Item], tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(GenerationsError, match=re.escape(message)):
        read_reval_generations(path, items, extract)
    done = cli(tmp_path, "-g", path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_unparsable_answers_are_counted_wrong(items: list[Item], pool: Pool) -> None:
    coverage = [item for item in items if item.task == "coverage"]
    answers = {item.id: [extract(item, "maybe", "robust")] for item in coverage}
    scored = score_reval(items, answers, pool)
    # no answer at all: every executed line is a false negative, every other a false positive
    assert scored.metrics(0)["coverage"] == {
        "acc": 0.0,
        "prec": 0.0,
        "rec": 0.0,
        "f1": 0.0,
        "tp": 0,
        "fp": 6,
        "tn": 0,
        "fn": 14,
    }
    assert scored.reasons() == {"coverage": {"no_answer": 20}}


def test_a_source_without_items_has_no_figures(
    items: list[Item], pool: Pool, tmp_path: Path
) -> None:
    """A run holding one source's items only (``eval --limit``) reports no by-source row for
    the other: an empty group has no metrics (it once got every item's)."""
    sources = {str(item.metadata["source"]) for item in items}
    assert sources == {"humaneval", "classeval"}
    answers = {item.id: [extract(item, right_answer(item))] for item in items}
    scored = score_reval(items, answers, pool)
    assert scored.metrics(0, []) == {} and scored.mean_metrics([]) == {}
    run = tmp_path / "run"
    env = {**os.environ, "CODEREASONER_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "codereasoner", "eval", "--model", "oracle", "--bench", "reval",
         "--limit", "10", "--data-dir", FIXTURES.parent, "--out", run, "--json"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(run / "run.sqlite") as connection:
        held = {
            source
            for (source,) in connection.execute(
                "SELECT DISTINCT json_extract(metadata, '$.source') FROM items"
            )
        }
        (stored,) = connection.execute("SELECT report FROM results WHERE benchmark = 'reval'")
    assert len(held) == 1 and held < sources  # the first items: one source only
    report = json.loads(stored[0])
    assert set(report["by_source"]) == held
    page = tmp_path / "r.html"
    shown = subprocess.run(
        [sys.executable, "-m", "codereasoner", "report", run, "--out", page],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    (absent,) = sources - held
    text = page.read_text()
    assert f'<td class="name">{held.pop()}</td>' in text
    assert f'<td class="name">{absent}</td>' not in text
