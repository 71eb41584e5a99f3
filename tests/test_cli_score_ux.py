"""What a researcher meets first in ``codereasoner score``, through the console script's entry
point: the default --k of a one-sample file, per-sample results, a wrong-task file, a file whose
answers keep the stop tag, progress off a terminal, and markup in file names and answers."""

from __future__ import annotations

import json
import re
from collections import Counter
from math import comb
from pathlib import Path
from typing import Any

import pytest

from codereasoner import benchmarks, tasks
from tests.commands import Ran, invoke
from tests.conftest import SHARED_DATA
from tests.fixtures import official_verdicts

pytestmark = pytest.mark.full_data

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CRUX = FIXTURES / "cruxeval"
CRUX_DATA = SHARED_DATA / "cruxeval"
SAMPLES = CRUX_DATA / "samples"
needs_samples = pytest.mark.skipif(
    not SAMPLES.exists(), reason="shared CRUXEval samples not present"
)


def cli(*args: str | Path, **env: str) -> Ran:
    return invoke(*args, env=env)


def score(*args: str | Path, bench: str = "cruxeval-o", data: Path = CRUX) -> Any:
    done = cli("score", "--bench", bench, "--data-dir", data, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def one_error_line(done: Ran, *parts: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for part in parts:
        assert part in lines[0], lines[0]


def official_samples(task: str) -> dict[str, list[str]]:
    path = SAMPLES / f"sample_codellama-7b_temp0.2_{task}_generations.json"
    data: dict[str, list[str]] = json.loads(path.read_text())
    return data


def official_verdicts_of(task: str) -> dict[str, list[bool]]:
    path = SAMPLES / f"sample_scored_codellama-7b_temp0.2_{task}.json"
    data: dict[str, list[bool]] = json.loads(path.read_text())["raw_scored_generations"]
    return data


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


# -- 1. a greedy (one-sample) file -------------------------------------------------------------


@needs_samples
def test_one_sample_file_scores_pass_at_1_by_default_and_k5_is_one_line(tmp_path: Path) -> None:
    greedy = tmp_path / "greedy.json"
    samples = official_samples("output")
    greedy.write_text(json.dumps({key: answers[:1] for key, answers in samples.items()}))
    report, stderr = score("-g", greedy, data=CRUX_DATA)
    assert [key for key in report if key.startswith("pass@")] == ["pass@1"]
    verdicts = official_verdicts_of("output")
    expected = 100 * sum(verdicts[key][0] for key in samples) / len(samples)
    assert report["pass@1"] == pytest.approx(expected, abs=1e-9)
    assert (report["items"], report["samples"], report["warnings"]) == (800, 800, [])
    assert warnings_in(stderr) == []
    explicit = cli(
        "score", "--bench", "cruxeval-o", "-g", greedy, "--data-dir", CRUX_DATA, "--k", "5"
    )
    one_error_line(explicit, "--k 5", "pass@5 needs at least 5 samples per item", "has 1")


# -- 2. per-sample results ---------------------------------------------------------------------


def read_results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(("bench", "task"), [("cruxeval-o", "output"), ("cruxeval-i", "input")])
def test_results_hold_every_samples_verdict(tmp_path: Path, bench: str, task: str) -> None:
    out = tmp_path / "results.jsonl"
    report, stderr = score(
        "-g", CRUX / f"{task}_generations.json", "--results", out, "--strict-report",
        "--timeout", "0.5", bench=bench,
    )  # fmt: skip
    records = read_results(out)
    assert report["results"] == {"path": str(out), "records": len(records)} and len(records) == 60
    assert f"per-sample results: {out} (60 records)" in stderr
    expected = official_verdicts(task)
    for record in records:
        verdict = expected["official"][record["id"]][record["sample"]]
        assert (record["correct"], record["skipped"]) == (verdict is True, verdict is None)
        assert record["strict"]["correct"] is expected["strict"][record["id"]][record["sample"]]
        assert set(record) >= {"task", "answer", "reason", "detail"}
    assert Counter(record["reason"] for record in records) == report["reasons"]
    assert Counter(r["strict"]["reason"] for r in records) == report["strict"]["reasons"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results.jsonl"]  # no temp file


def test_results_replace_an_old_file_but_never_the_generations(tmp_path: Path) -> None:
    generations = tmp_path / "gens.json"
    original = (CRUX / "output_generations.json").read_text()
    generations.write_text(original)
    same = [generations, tmp_path / "sub" / ".." / "gens.json"]
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.json").symlink_to(generations)
    for target in [*same, tmp_path / "link.json"]:
        done = cli("score", "--bench", "cruxeval-o", "-g", generations, "--data-dir", CRUX,
                   "--results", target)  # fmt: skip
        one_error_line(done, f"--results {target}", "--generations")
        assert generations.read_text() == original
    missing = tmp_path / "nowhere" / "results.jsonl"
    done = cli("score", "--bench", "cruxeval-o", "-g", generations, "--data-dir", CRUX,
               "--results", missing)  # fmt: skip
    one_error_line(done, "--results", "does not exist")
    assert not missing.parent.exists()
    old = tmp_path / "old.jsonl"
    old.write_text("stale\n")
    score("-g", generations, "--results", old, "--timeout", "0.5")
    assert len(read_results(old)) == 60


def test_results_of_reval_and_core(tmp_path: Path) -> None:
    reval = benchmarks.get("reval")
    items = reval.load(FIXTURES / "reval")
    gens = tmp_path / "reval.jsonl"
    lines = [
        {"id": item.id, "sample": 0, "completion": tasks.get(item.task).oracle(item)}
        for item in items
    ]
    gens.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "reval-results.jsonl"
    report, _ = score("-g", gens, "--results", out, bench="reval", data=FIXTURES)
    records = read_results(out)
    assert report["results"]["records"] == len(records) == len(items)
    by_task: dict[str, Counter[str]] = {}
    for record in records:
        by_task.setdefault(record["task"], Counter())[record["reason"]] += 1
    assert by_task == report["reasons"] and all(record["correct"] for record in records)
    assert report["warnings"] == []
    out = tmp_path / "core-results.jsonl"
    core, _ = score("-g", FIXTURES / "core" / "generations.jsonl", "--results", out,
                    bench="core", data=FIXTURES)  # fmt: skip
    records = read_results(out)
    assert len(records) == core["samples"] == core["results"]["records"]
    variants = core["variants"]
    assert Counter(r["reason"] for r in records) == variants["project"]["reasons"]
    assert Counter(r["ancestor"]["reason"] for r in records) == variants["ancestor"]["reasons"]


# -- 3. answers shaped like the other task's -------------------------------------------------


@needs_samples
@pytest.mark.parametrize(
    ("task", "bench", "right"),
    [("input", "cruxeval-o", "cruxeval-i"), ("output", "cruxeval-i", "cruxeval-o")],
)
def test_a_file_of_the_other_task_is_named(
    tmp_path: Path, task: str, bench: str, right: str
) -> None:
    """The official samples of the fixture's six items, scored as the other task."""
    ids = [json.loads(line)["id"] for line in (CRUX / "cruxeval.jsonl").read_text().splitlines()]
    samples = official_samples(task)
    wrong = tmp_path / f"{task}.json"
    wrong.write_text(json.dumps({key: samples[key] for key in ids}))
    report, stderr = score("-g", wrong, "--timeout", "0.5", bench=bench)
    [line] = warnings_in(stderr)
    assert f"--bench {right}" in line and line.startswith("warning: 100% of the answers look like")
    assert report["warnings"] == [line.removeprefix("warning: ")]
    fits, _ = score("-g", wrong, "--timeout", "0.5", bench=right)
    assert fits["warnings"] == []


def test_a_mixed_file_is_not_called_the_other_task(tmp_path: Path) -> None:
    """Half calls, half values: not 'nearly all', so no warning; nor is prose."""
    ids = [f"sample_{i}" for i in range(6)]
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({key: ["f(1)", "[1]"] for key in ids}))
    report, stderr = score("-g", mixed, "--timeout", "0.5")
    assert report["warnings"] == [] and warnings_in(stderr) == []
    # LiveCodeBench's two benchmarks share a dataset but no items: prose is only unparsable.
    lcb = [json.loads(line)["id"] for line in (FIXTURES / "livecodebench" / "execution-v2.jsonl")
           .read_text().splitlines()]  # fmt: skip
    prose = tmp_path / "prose.json"
    prose.write_text(json.dumps({key: ["the answer is two"] for key in lcb}))
    report, _ = score("-g", prose, bench="lcb-execution", data=FIXTURES)
    [warning] = report["warnings"]
    assert "failed to parse" in warning and "--bench" not in warning


# -- 4. nearly everything fails to parse ------------------------------------------------------


@needs_samples
def test_answers_keeping_the_stop_tag_get_a_hint_and_unchanged_verdicts(tmp_path: Path) -> None:
    tagged = tmp_path / "tagged.json"
    samples = official_samples("output")
    tagged.write_text(
        json.dumps({key: [a + "\n[/ANSWER]" for a in v] for key, v in samples.items()})
    )
    report, stderr = score("-g", tagged, data=CRUX_DATA)
    assert report["reasons"] == {"syntax_error": 8000}  # as upstream: the splice cannot compile
    [line] = warnings_in(stderr)
    assert "8,000 of 8,000 samples failed to parse (commonest: syntax_error, 8,000)" in line
    assert "stop sequence '[/ANSWER]'" in line and report["warnings"] == [line[len("warning: ") :]]


def test_jsonl_completions_with_the_stop_tag_and_prose_get_their_hints(tmp_path: Path) -> None:
    ids = [f"sample_{i}" for i in range(6)]
    tagged = tmp_path / "tagged.jsonl"
    lines = [{"id": key, "sample": 0, "completion": "assert f(x) == 1\n[/ANSWER]"} for key in ids]
    tagged.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report, _ = score("-g", tagged)
    assert len(report["warnings"]) == 1 and "'[/ANSWER]'" in report["warnings"][0]
    prose = tmp_path / "prose.json"
    prose.write_text(json.dumps({key: ["The answer is two."] for key in ids}))
    report, stderr = score("-g", prose)
    [line] = warnings_in(stderr)
    assert "6 of 6 samples failed to parse" in line and "'completion' fields" in line
    assert sum(report["reasons"].values()) == 6


# -- 5. progress off a terminal ---------------------------------------------------------------


def test_progress_lines_off_a_terminal() -> None:
    done = cli(
        "score", "--bench", "cruxeval-i", "-g", CRUX / "input_generations.json",
        "--data-dir", CRUX, "--timeout", "0.5", CODEREASONER_PROGRESS_SECONDS="0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    counts = [
        int(match.group(1).replace(",", ""))
        for match in re.finditer(r": ([\d,]+)(?:/[\d,]+ \(\d+%\))? \d+s", done.stderr)
    ]
    assert len(counts) >= 2 and max(counts) > 0, done.stderr
    assert "\x1b" not in done.stderr  # plain lines, no live display


# -- 6. markup in file names and answers ------------------------------------------------------


def test_brackets_in_file_names_and_answers_print_as_typed(tmp_path: Path) -> None:
    folder = tmp_path / "run["
    folder.mkdir()
    named = folder / "b].json"  # -g 'run[/b].json'
    answers = json.loads((CRUX / "output_generations.json").read_text())
    answers["sample_0"][0] = "[2, 6] + ['[/red]'][:0]"  # right upstream, not a literal
    named.write_text(json.dumps(answers))
    missing = cli("score", "--bench", "cruxeval-o", "-g", "nope[/b].json", "--data-dir", CRUX)
    one_error_line(missing, "nope[/b].json: no such file")
    results = tmp_path / "out[/b]["
    results.mkdir(parents=True)
    done = cli(
        "score", "--bench", "cruxeval-o", "-g", named, "--data-dir", CRUX, "--timeout", "0.5",
        "--strict-report", "--results", results / "[red]r.jsonl", COLUMNS="300",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"per-sample results: {results / '[red]r.jsonl'}" in done.stderr
    assert "sample_0: [2, 6] + ['[/red]'][:0]" in done.stdout  # a strict-report example
    bad = folder / "b].json"
    bad.write_text("{")
    broken = cli("score", "--bench", "cruxeval-o", "-g", bad, "--data-dir", CRUX)
    one_error_line(broken, f"{bad}: invalid JSON")


# -- 7. --json everywhere ----------------------------------------------------------------------


def test_json_reports_carry_warnings_and_results(tmp_path: Path) -> None:
    crux, _ = score("-g", CRUX / "output_generations.json", "--timeout", "0.5")
    core, _ = score("-g", FIXTURES / "core" / "generations.jsonl", bench="core", data=FIXTURES)
    for report in (crux, core):
        assert report["warnings"] == [] and "results" not in report


# -- 8. --subset: the items a file has (e.g. an eval --limit run's) --------------------------


@needs_samples
def test_subset_of_the_official_samples_scores_upstreams_verdicts(tmp_path: Path) -> None:
    samples = official_samples("output")
    ids = sorted(samples)[::20]  # 40 of the 800 items
    part = tmp_path / "part.json"
    part.write_text(json.dumps({key: samples[key] for key in ids}))
    refused = cli("score", "--bench", "cruxeval-o", "-g", part, "--data-dir", CRUX_DATA)
    one_error_line(refused, "760 of 800 ids have no generations", "with --subset")
    out = tmp_path / "results.jsonl"
    report, _ = score("-g", part, "--subset", "--results", out, data=CRUX_DATA)
    verdicts = official_verdicts_of("output")
    for k in (1, 5):
        expected = [
            1 - comb(len(flags) - sum(flags), k) / comb(len(flags), k)
            for flags in (verdicts[key] for key in ids)
        ]
        assert report[f"pass@{k}"] == pytest.approx(100 * sum(expected) / len(ids), abs=1e-9)
    assert (report["items"], report["samples"]) == (40, 400)
    assert report["subset"] == {"items": 40, "of": 800}
    assert sum(row["items"] for row in report["breakdown"]["rows"].values()) == 40
    assert {record["id"] for record in read_results(out)} == set(ids)
    table = cli("score", "--bench", "cruxeval-o", "-g", part, "--data-dir", CRUX_DATA, "--subset")
    assert table.returncode == 0, table.stderr
    assert "subset: 40 of 800 cruxeval-o items (those in the generations file" in table.stdout


def test_subset_of_core_gives_the_full_runs_verdicts_on_those_items(tmp_path: Path) -> None:
    gens = FIXTURES / "core" / "generations.jsonl"
    lines = gens.read_text().splitlines()
    full_results = tmp_path / "full.jsonl"
    full, _ = score("-g", gens, "--results", full_results, bench="core", data=FIXTURES)
    problem = json.loads(lines[0])["id"].split("_")[0]
    kept = [line for line in lines if json.loads(line)["id"].startswith(f"{problem}_")]
    part = tmp_path / "part.jsonl"
    part.write_text("\n".join(kept) + "\n")
    refused = cli("score", "--bench", "core", "-g", part, "--data-dir", FIXTURES)
    one_error_line(refused, "ids have no generations", "with --subset")
    part_results = tmp_path / "part-results.jsonl"
    report, _ = score("-g", part, "--subset", "--results", part_results, bench="core",
                      data=FIXTURES)  # fmt: skip
    ids = {json.loads(line)["id"] for line in kept}
    assert report["subset"] == {"items": len(ids), "of": full["items"]} and len(ids) < full["items"]
    assert (report["items"], report["samples"]) == (len(ids), len(kept))
    expected = [record for record in read_results(full_results) if record["id"] in ids]
    assert read_results(part_results) == expected
    assert Counter(r["reason"] for r in expected) == report["variants"]["project"]["reasons"]
    table = cli("score", "--bench", "core", "-g", part, "--data-dir", FIXTURES, "--subset")
    assert f"subset: {len(ids)} of {full['items']} core items" in table.stdout


def reval_lines(items: list[Any]) -> list[dict[str, Any]]:
    """The oracle's completions, except a wrong one for the first output question."""
    first_output = next(item.id for item in items if item.task == "output")
    return [
        {"id": item.id, "sample": 0,
         "completion": "no idea" if item.id == first_output else tasks.get(item.task).oracle(item)}
        for item in items
    ]  # fmt: skip


def reval_logs(folder: Path, lines: list[dict[str, Any]], items: list[Any]) -> Path:
    """The same completions as REval's own logs: one file per kind, one line per program."""
    by_id = {item.id: item for item in items}
    verdicts = {"coverage": {"expected": True}, "path": {"expected": [1]}, "state": {"eq": True},
                "output": {"pass": True}}  # fmt: skip
    for kind, verdict in verdicts.items():
        programs: dict[str, dict[int, list[dict[str, Any]]]] = {}
        for line in lines:
            item = by_id[line["id"]]
            if item.task == kind:
                inputs = programs.setdefault(str(item.metadata["task_id"]), {})
                results = inputs.setdefault(int(item.metadata["input_idx"]), [])
                results.append({"generated": line["completion"], **verdict})
        body = [
            json.dumps({"task_id": task_id, "generation": [
                {"input_idx": index, "results": results} for index, results in inputs.items()
            ]})
            for task_id, inputs in programs.items()
        ]  # fmt: skip
        target = folder / f"{kind}@model_direct" / "log.jsonl"
        target.parent.mkdir(parents=True)
        target.write_text("\n".join([*body, json.dumps({"acc": 0})]) + "\n")
    return folder


def test_subset_of_reval_as_json_lines_and_as_logs(tmp_path: Path) -> None:
    """Two of the fixture's five program inputs, whole, as --limit keeps them: every kind's
    accuracy on those items alone, the same from both formats."""
    bench = benchmarks.get("reval")
    items = bench.load(FIXTURES / "reval")
    groups = sorted({bench.group(item) for item in items})[:2]
    chosen = [item for item in items if bench.group(item) in groups]
    lines = reval_lines(chosen)
    jsonl = tmp_path / "reval.jsonl"
    jsonl.write_text("".join(json.dumps(line) + "\n" for line in lines))
    logs = reval_logs(tmp_path / "logs", lines, chosen)
    for path in (jsonl, logs):
        refused = cli("score", "--bench", "reval", "-g", path, "--data-dir", FIXTURES)
        one_error_line(refused, "items have no generations", "with --subset")
    reports = [score("-g", path, "--subset", bench="reval", data=FIXTURES)[0]
               for path in (jsonl, logs)]  # fmt: skip
    outputs = sum(item.task == "output" for item in chosen)
    for report in reports:
        assert report["subset"] == {"items": len(chosen), "of": len(items)}
        assert report["items"] == dict(Counter(item.task for item in chosen))
        assert (report["coverage"]["acc"], report["state"], report["path"]) == (1.0, 1.0, 1.0)
        assert report["output"] == pytest.approx((outputs - 1) / outputs)
    keys = ("items", "coverage", "state", "path", "output", "avg_acc", "consistency", "subset")
    assert {key: reports[0][key] for key in keys} == {key: reports[1][key] for key in keys}
    torn = tmp_path / "torn.jsonl"  # one question of a program input left out
    torn.write_text("".join(json.dumps(line) + "\n" for line in lines[1:]))
    done = cli("score", "--bench", "reval", "-g", torn, "--data-dir", FIXTURES, "--subset")
    one_error_line(done, f"{torn}: 1 of", "items have no generations")
    odd = tmp_path / "odd.jsonl"  # odd values where ids and inputs go: the reader's own errors
    odd.write_text('{"id": [1], "sample": 0}\n{"task_id": "x", "generation": [{"input_idx": []}]}')
    done = cli("score", "--bench", "reval", "-g", odd, "--data-dir", FIXTURES, "--subset")
    one_error_line(done, f"{odd}:1: field 'id' must be a string")


def test_a_reval_subset_of_one_source_prints_its_table(tmp_path: Path) -> None:
    """Answers for HumanEval programs only: the table has no ClassEval column (it crashed)."""
    bench = benchmarks.get("reval")
    items = bench.load(FIXTURES / "reval")
    chosen = [item for item in items if item.metadata.get("source") == "humaneval"]
    assert chosen and len(chosen) < len(items)
    path = tmp_path / "human.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in reval_lines(chosen)))
    done = cli("score", "--bench", "reval", "-g", path, "--data-dir", FIXTURES, "--subset")
    assert done.returncode == 0, done.stderr
    assert "humaneval" in done.stdout and "classeval" not in done.stdout
    assert "Traceback" not in done.stderr


# -- 9. flags and paths checked before anything is loaded ---------------------------------


def test_generations_are_checked_before_the_data_is_fetched(tmp_path: Path) -> None:
    """No --data-dir and an empty cache: a missing -g is named, not a failed download."""
    cache = tmp_path / "cache"
    cache.mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    cases = [
        ("cruxeval-o", tmp_path / "nonexist.json", "nonexist.json: no such file"),
        ("cruxeval-o", folder, "folder: is a folder; expected a generations file"),
        ("reval", tmp_path / "logs", "logs: no such file"),
        ("core", tmp_path / "nonexist.jsonl", "nonexist.jsonl: no such file"),
    ]
    for bench, path, message in cases:
        done = cli("score", "--bench", bench, "-g", path, CODEREASONER_CACHE=str(cache))
        one_error_line(done, message)
        assert list(cache.iterdir()) == []
    for flags, message in [
        (["--workers", "0"], "--workers 0: expected at least 1"),
        (["--results", f"{folder / 'x.jsonl'}/r.jsonl"], "x.jsonl does not exist"),
    ]:
        done = cli("score", "--bench", "cruxeval-o", "-g", CRUX / "output_generations.json",
                   *flags, CODEREASONER_CACHE=str(cache))  # fmt: skip
        one_error_line(done, message)
        assert list(cache.iterdir()) == []
