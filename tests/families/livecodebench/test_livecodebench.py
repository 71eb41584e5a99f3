"""LiveCodeBench loaders on schema-identical fixtures; execution and test-output grading."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codereasoner import benchmarks, tasks
from codereasoner.benchmarks import cache
from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.execution import Limits, Pool
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.families.livecodebench.benchmark import (
    BASE_IMPORTS,
    EXECUTION_REVISION,
    SPLIT_PATTERN,
    TEST_GENERATION_REVISION,
)
from codereasoner.tasks import Answer, ParseFailure, Reason, run_plans, truth_jobs
from tests.benchmarks.test_cache import parquet_bytes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "livecodebench"
BENCHES = ("lcb-execution", "lcb-test-output")
FAST = Limits(timeout_s=1.0, wall_timeout_s=2.0, memory_mb=512)


def test_execution_items_are_ordered_by_sample_number() -> None:
    items = benchmarks.get("lcb-execution").load(FIXTURES)
    assert [item.id for item in items] == ["sample_0", "sample_1", "sample_2", "sample_10"]
    first = items[0]
    assert first.entry == "rankOf" and first.call == "rankOf(a = [5, 1, 3], x = 4)"
    assert first.program.startswith(
        SITE_PACKAGES_PREAMBLE + BASE_IMPORTS
    ) and first.program.endswith(first.fields["code"])
    assert first.metadata["difficulty"] == "hard"
    assert items[2].metadata["contest_date"] == "2023-05-20T00:00:00"  # epoch milliseconds


def test_execution_ground_truth_runs_with_base_imports(pool: Pool) -> None:
    """Counter, List/Dict/Tuple and the `bisect` *module* come from BASE_IMPORTS."""
    items = benchmarks.get("lcb-execution").load(FIXTURES)
    results = run_plans(pool, truth_jobs(items), FAST)
    assert [scores[0].reason for scores in results] == [Reason.CORRECT] * len(items)


def test_execution_grading(pool: Pool) -> None:
    bench = benchmarks.get("lcb-execution")
    item = {item.id: item for item in bench.load(FIXTURES)}["sample_1"]  # extremes -> (2, 9)
    completions = [
        "assert extremes(a = [4, 9, 2]) == (2, 9)\n[/ANSWER]",
        "assert extremes(a = [4, 9, 2]) == [2, 9]\n[/ANSWER]",  # list != tuple
        "assert extremes(a = [4, 9, 2]) == (min([4, 9, 2]), 9)",  # evaluated in the sandbox
        "assert extremes(a = [4, 9, 2]) == extremes(a = [4, 9, 2])",  # copies the call: skipped
        "assert extremes(a = [4, 9, 2]) == (\n2, 9)",  # upstream keeps the first line only
    ]
    task = tasks.get(item.task)
    assert task.name == "lcb_execution"
    answers = [task.extract(item, text) for text in completions]
    scores = run_plans(pool, [task.plan(item, answers)], FAST)[0]
    assert [(s.correct, s.skipped) for s in scores] == [
        (True, False),
        (False, False),
        (True, False),
        (False, True),
        (False, False),
    ]


def test_test_output_items() -> None:
    items = benchmarks.get("lcb-test-output").load(FIXTURES)
    assert [item.id for item in items] == ["1999_0", "2001_0", "2001_1"]  # (question_id, test_id)
    same = items[0]
    assert same.fields["testcase_args"] == '"ab", "ab"'  # one argument per input line
    assert same.call == 'isSame("ab", "ab")' and same.truth == "true" and same.truth_value() is True
    assert items[1].truth == "[2, 4, 6]"  # test[0] only
    prompt = tasks.get(same.task).prompt(same)
    assert prompt.startswith(
        "Problem:\nReturn true when a equals b.Function:\n```\nclass Solution:"
    )
    assert 'assert isSame("ab", "ab") == # TODO\n```\n' in prompt


def test_test_output_grading(pool: Pool) -> None:
    bench = benchmarks.get("lcb-test-output")
    items = {item.id: item for item in bench.load(FIXTURES)}
    double, same = items["2001_0"], items["1999_0"]
    cases = [
        (double, "```python\nassert doubleIt([1, 2, 3]) == [2, 4, 6]\n```", True, True),
        (
            double,
            "```python\nassert doubleIt([1, 2, 3]) == (2, 4, 6)\n```",
            False,
            False,
        ),  # tuple != JSON list
        (
            double,
            "```python\nassert doubleIt([1, 2, 3]) == [x * 2 for x in [1, 2, 3]]\n```",
            True,
            False,
        ),
        (double, "```\n[2, 4, 6]\n```", True, True),  # a bare literal
        (same, 'assert isSame("ab", "ab") == True', True, True),
        (same, 'assert isSame("ab", "ab") == 1', True, True),  # 1 == True under ==
        (same, 'assert isSame("ab", "ab") == true', False, True),  # NameError upstream
        (same, 'assert isSame("ab", "ab")', False, False),
    ]
    for grading in ("official", "strict"):
        column = 2 if grading == "official" else 3
        plans = [
            tasks.get(item.task).plan(item, [tasks.get(item.task).extract(item, text)], grading)
            for item, text, *_ in cases
        ]
        got = [scores[0].correct for scores in run_plans(pool, plans, FAST)]
        assert got == [case[column] for case in cases], grading


def test_test_output_extraction_failure_is_a_scored_failure() -> None:
    bench = benchmarks.get("lcb-test-output")
    item = bench.load(FIXTURES)[0]
    task = tasks.get(item.task)
    answer = task.extract(item, "I cannot tell.")
    assert isinstance(answer, ParseFailure)
    score = task.score(item, answer)
    assert (score.correct, score.reason) == (False, Reason.NO_ANSWER)
    assert task.score(item, Answer("assert isSame('ab', 'ab') == True")).correct


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_loader_errors_name_the_record(tmp_path: Path) -> None:
    rows = [
        json.loads(line) for line in (FIXTURES / "test_generation.jsonl").read_text().splitlines()
    ]
    two_defs = dict(rows[0], starter_code="def a():\n    pass\ndef b():\n    pass")
    write_rows(tmp_path / "test_generation.jsonl", [rows[1], two_defs])
    with pytest.raises(
        DataUnavailable, match=r"test_generation.jsonl:2: starter_code defines 2 functions"
    ):
        benchmarks.get("lcb-test-output").load(tmp_path)
    write_rows(tmp_path / "test_generation.jsonl", [dict(rows[0], test="[]")])
    with pytest.raises(DataUnavailable, match=r":1: field 'test' must decode to a non-empty list"):
        benchmarks.get("lcb-test-output").load(tmp_path)
    no_def = dict(rows[0], starter_code="x = 1")
    write_rows(tmp_path / "test_generation.jsonl", [no_def])
    assert benchmarks.get("lcb-test-output").load(tmp_path)[0].fields["func_name"] == "None"
    execution = [
        json.loads(line) for line in (FIXTURES / "execution-v2.jsonl").read_text().splitlines()
    ]
    write_rows(tmp_path / "execution-v2.jsonl", [dict(execution[0], id="first")])
    with pytest.raises(DataUnavailable, match=r"id 'first' is not of the form sample_N"):
        benchmarks.get("lcb-execution").load(tmp_path)
    del execution[1]["code"]
    write_rows(tmp_path / "execution-v2.jsonl", execution[:2])
    with pytest.raises(DataUnavailable, match=r"execution-v2.jsonl:2: missing field 'code'"):
        benchmarks.get("lcb-execution").load(tmp_path)


def test_execution_gold_outputs_are_decontamination_strings() -> None:
    """A synthesized case that copies a LiveCodeBench answer is benchmark content too."""
    from codereasoner.benchmarks.programs import load_benchmark_programs

    loaded = load_benchmark_programs(FIXTURES, names=["lcb-execution"])
    items = benchmarks.get("lcb-execution").load(FIXTURES)
    strings = {text for program in loaded.programs for text in program.strings}
    assert loaded.checked == ["lcb-execution"]
    assert {item.truth for item in items} <= strings
    assert {item.call for item in items} <= strings


def test_sources_are_the_hub_repositories_at_a_pinned_commit() -> None:
    execution, tests = (benchmarks.get(name).sources[0] for name in BENCHES)
    assert cache.hub_split(execution) == cache.HubSplit(
        "livecodebench/execution-v2", EXECUTION_REVISION, SPLIT_PATTERN
    )
    assert cache.hub_split(tests) == cache.HubSplit(
        "livecodebench/test_generation", TEST_GENERATION_REVISION, SPLIT_PATTERN
    )
    for revision in (EXECUTION_REVISION, TEST_GENERATION_REVISION):
        assert re.fullmatch("[0-9a-f]{40}", revision)
    assert tests.upstream_sha256 and {execution.kind, tests.kind} == {cache.HF_HUB}
    assert execution.url == (
        f"https://huggingface.co/datasets/livecodebench/execution-v2/tree/{EXECUTION_REVISION}/"
        "data/test-*.parquet"
    )


@pytest.mark.parametrize("name", BENCHES)
def test_parquet_rows_load_as_the_jsonl_export(name: str, tmp_path: Path) -> None:
    """Upstream's parquet file, written as JSON Lines by the cache, gives the same items as a
    ``datasets`` export of the same rows (dates as timestamps there, ISO text or epoch ms here)."""
    bench = benchmarks.get(name)
    filename = bench.sources[0].filename
    rows = [json.loads(line) for line in (FIXTURES / filename).read_text().splitlines()]
    parquet = tmp_path / "test.parquet"
    parquet.write_bytes(parquet_bytes(rows))
    with (tmp_path / filename).open("wb") as out:
        cache.write_parquet_rows(parquet, out)
    assert [vars(item) for item in bench.load(tmp_path)] == [
        vars(item) for item in bench.load(FIXTURES)
    ]
