"""``codereasoner score`` and ``codereasoner bench`` as a user runs them: the console script's
entry point, the real sandbox."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from tests.commands import invoke as cli
from tests.conftest import SHARED_DATA
from tests.fixtures import official_verdicts

pytestmark = pytest.mark.full_data

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CRUX = FIXTURES / "cruxeval"


def hand_pass_at_k(verdicts: dict[str, list[bool | None]], k: int, official: bool) -> float:
    """Percent; from the hand-decided verdicts, with the textbook formula (not the project's)."""
    total = 0.0
    for flags in verdicts.values():
        c = sum(flag is True for flag in flags)
        n = sum(flag is not None for flag in flags) if official and c else len(flags)
        total += 1.0 if n - c < k else 1 - comb(n - c, k) / comb(n, k)
    return 100 * total / len(verdicts)


@pytest.mark.parametrize(("bench", "task"), [("cruxeval-o", "output"), ("cruxeval-i", "input")])
def test_score_fixture_generations_json(bench: str, task: str) -> None:
    expected = official_verdicts(task)
    done = cli(
        "score",
        "--bench",
        bench,
        "--generations",
        CRUX / f"{task}_generations.json",
        "--data-dir",
        CRUX,
        "--json",
        "--strict-report",
        "--timeout",
        "0.5",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["benchmark"], report["format"], report["items"], report["samples"]) == (
        bench,
        "official",
        6,
        60,
    )
    for k in (1, 5):
        assert report[f"pass@{k}"] == pytest.approx(
            hand_pass_at_k(expected["official"], k, True), abs=1e-9
        )
        assert report["strict"][f"pass@{k}"] == pytest.approx(
            hand_pass_at_k(expected["strict"], k, False), abs=1e-9
        )
    differ = sum(
        bool(a) != b
        for item_id, flags in expected["official"].items()
        for a, b in zip(flags, expected["strict"][item_id], strict=True)
    )
    assert report["strict"]["disagreements"] == differ > 0
    assert sum(row["items"] for row in report["breakdown"]["rows"].values()) == 6
    assert report["sandbox_errors"] == 0


def test_score_table_output() -> None:
    done = cli(
        "score",
        "--bench",
        "cruxeval-o",
        "-g",
        CRUX / "output_generations.json",
        "--data-dir",
        CRUX,
        "--k",
        "1",
    )
    assert done.returncode == 0, done.stderr
    assert "pass@1" in done.stdout and "pass@5" not in done.stdout
    assert "bool" in done.stdout and "output_type" in done.stdout


def test_score_jsonl_completions(tmp_path: Path) -> None:
    truth = {"sample_0": "[2, 6]", "sample_1": "['c', 'b', 'a']", "sample_2": "[('a', 1), ('b', 2)]",
             "sample_3": "[4, 2]", "sample_4": "1", "sample_5": "true"}  # fmt: skip
    lines = []
    for item_id, value in truth.items():
        lines.append(
            {"id": item_id, "sample": 0, "completion": f"assert f(x) == {value}\n[/ANSWER]"}
        )
        lines.append(
            {"id": item_id, "sample": 1, "completion": f"[ANSWER]\nassert f(x) == {value} # why\n"}
        )
    path = tmp_path / "gens.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    base = [
        "score",
        "--bench",
        "cruxeval-o",
        "-g",
        path,
        "--data-dir",
        CRUX,
        "--k",
        "1,2",
        "--json",
    ]
    official = json.loads(cli(*base).stdout)
    robust = json.loads(cli(*base, "--extraction", "robust").stdout)
    # Official extraction keeps the text after '==': sample 0 carries '\n[/ANSWER]' (a syntax
    # error once spliced), sample 1 a comment (fine). JSON 'true' is a NameError upstream.
    assert official["format"] == "jsonl"
    assert official["pass@1"] == pytest.approx(100 * (5 * 0.5 + 0) / 6)
    assert robust["pass@1"] == pytest.approx(100 * 5 / 6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-g", "missing.json"], "missing.json: no such file"),
        (["-g", "{bad}"], "invalid JSON at line 1 column 17 (Expecting value)"),
        (["-g", "{unknown}"], "record 'sample_99': unknown id for cruxeval-o"),
        (
            ["-g", "{shape}"],
            "record 'sample_0': expected a list of generation strings, got an object",
        ),
        (
            ["-g", "{few}", "--k", "1,5"],
            "pass@5 needs at least 5 samples per item; 'sample_0' has 2",
        ),
        (["-g", "{ok}", "--k", "one"], "--k: expected comma-separated integers"),
        (["-g", "{ok}", "--bench", "nope"], "--bench: unknown benchmark 'nope'"),
        (["-g", "{ok}", "--data-dir", "{empty}"], "cruxeval.jsonl: not found"),
        (["-g", "{ok}", "--style", "haiku"], "--style 'haiku': expected one cruxeval-o supports: direct"),
        (["-g", "{ok}", "--grading", "loose"], "--grading 'loose': expected official or strict"),
        (["-g", "{ok}", "--grading", "strict", "--strict-report"], "drop it with --grading"),
        (["-g", "{ok}", "--extraction", "x"], "--extraction 'x': expected one of official"),
        (["-g", "{ok}", "--bench", "reval", "--k", "1"], "--k does not apply to reval"),
        (["-g", "{ok}", "--bench", "core", "--timeout", "1"], "--timeout does not apply to core"),
        (["-g", "{ok}", "--bench", "core", "--grading", "strict"], "--grading does not apply"),
        (["-g", "{ok}", "--bench", "reval", "--strict-report"], "--strict-report does not apply"),
        (["-g", "{part}"], "4 of 6 ids have no generations (first: 'sample_2'); every id needs at "
         "least one, or score only the ids the file has with --subset"),
        (["-g", "{ok}", "--workers", "0"], "--workers 0: expected at least 1 sandbox worker"),
        (["-g", "{ok}", "--workers", "-2"], "--workers -2: expected at least 1 sandbox worker"),
        (["-g", "{ok}", "--isolation", "foo"], "--isolation 'foo': expected one of auto"),
        (["-g", "{ok}", "--results", "{ok}/x.jsonl"], "ok.json is a file, not a folder"),
        (["-g", "{ok}", "--results", "{ok}/sub/x.jsonl"], "ok.json is a file, not a folder"),
        (["-g", "{empty}"], "empty: is a folder; expected a generations file"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    ids = [f"sample_{i}" for i in range(6)]
    files = {
        "bad": '{"sample_0": [1,',
        "unknown": json.dumps({**{i: ["1"] for i in ids}, "sample_99": ["1"]}),
        "shape": json.dumps({**{i: ["1"] for i in ids}, "sample_0": {"0": "1"}}),
        "few": json.dumps({i: ["1", "2"] for i in ids}),
        "ok": json.dumps({i: ["1"] for i in ids}),
        "part": json.dumps({i: ["1"] for i in ids[:2]}),
    }
    values = {"empty": str(tmp_path / "empty")}
    (tmp_path / "empty").mkdir()
    for name, text in files.items():
        (tmp_path / f"{name}.json").write_text(text)
        values[name] = str(tmp_path / f"{name}.json")
    argv = [arg.format(**values) if arg.startswith("{") else arg for arg in args]
    if "--bench" not in argv:
        argv += ["--bench", "cruxeval-o"]
    if "--data-dir" not in argv:
        argv += ["--data-dir", str(CRUX)]
    done = cli("score", *argv)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    created = {path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*")}
    assert created == {"empty", *(f"{name}.json" for name in files)}  # nothing written


def test_bench_list_and_show() -> None:
    listed = cli("bench", "list")
    assert listed.returncode == 0, listed.stderr
    for name in ("cruxeval-o", "cruxeval-i", "lcb-execution", "lcb-test-output"):
        assert name in listed.stdout
    shown = cli("bench", "show", "cruxeval-i", "--data-dir", CRUX, "--json")
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    assert info["task"] == "input_prediction" and info["counts"] == {"items": 800}
    assert info["loaded"]["items"] == 6 and info["license"].startswith("MIT")
    assert info["files"][0]["pinned_sha256"] and info["styles"] == ["direct", "cot"]
    lcb = json.loads(cli("bench", "show", "lcb-execution", "--json").stdout)
    assert (
        "livecodebench/execution-v2" in lcb["files"][0]["url"]
        and lcb["files"][0]["kind"] == "hf-hub"
    )
    unknown = cli("bench", "show", "nope")
    assert unknown.returncode == 2 and "unknown benchmark 'nope'" in unknown.stderr


@pytest.mark.skipif(
    not (SHARED_DATA / "cruxeval" / "samples").exists(), reason="shared CRUXEval data not present"
)
def test_score_official_cruxeval_output_samples() -> None:
    data = SHARED_DATA / "cruxeval"
    gens = data / "samples" / "sample_codellama-7b_temp0.2_output_generations.json"
    done = cli(
        "score", "--bench", "cruxeval-o", "--generations", gens, "--data-dir", data, "--json"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert round(report["pass@1"], 4) == 34.2125 and round(report["pass@5"], 4) == 40.2867
    assert report["samples"] == 8000


def test_k_defaults_to_what_the_file_supports(tmp_path: Path) -> None:
    """One sample per item: pass@1 only, no '--k 1' needed; ten samples: pass@1 and pass@5."""
    one = tmp_path / "one.json"
    one.write_text(json.dumps({f"sample_{i}": ["[2, 6]"] for i in range(6)}))
    report = json.loads(
        cli("score", "--bench", "cruxeval-o", "-g", one, "--data-dir", CRUX, "--json").stdout
    )
    assert [key for key in report if key.startswith("pass@")] == ["pass@1"]
    full = json.loads(
        cli(
            "score",
            "--bench",
            "cruxeval-o",
            "-g",
            CRUX / "output_generations.json",
            "--data-dir",
            CRUX,
            "--json",
        ).stdout
    )
    assert [key for key in full if key.startswith("pass@")] == ["pass@1", "pass@5"]


def test_grading_strict_is_the_strict_report_as_primary() -> None:
    base = [
        "score",
        "--bench",
        "cruxeval-o",
        "-g",
        CRUX / "output_generations.json",
        "--data-dir",
        CRUX,
        "--json",
    ]
    both = json.loads(cli(*base, "--strict-report").stdout)
    strict = json.loads(cli(*base, "--grading", "strict").stdout)
    assert strict["grading"] == "strict" and both["grading"] == "official"
    assert strict["pass@1"] == both["strict"]["pass@1"] != both["pass@1"]
    assert strict["reasons"] == both["strict"]["reasons"]


@pytest.mark.parametrize("where", [FIXTURES, CRUX], ids=["data root", "benchmark folder"])
def test_data_dir_is_the_root_or_the_benchmark_folder(where: Path, tmp_path: Path) -> None:
    """score, eval and bench show read the same data from the data root (one folder per
    dataset) and from the benchmark's own folder."""
    shown = cli("bench", "show", "cruxeval-o", "--data-dir", where, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["loaded"] == {"data_dir": str(CRUX), "items": 6}
    done = cli(
        "score",
        "--bench",
        "cruxeval-o",
        "-g",
        CRUX / "output_generations.json",
        "--data-dir",
        where,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"] == 6
    run = cli(
        "eval",
        "--model",
        "oracle",
        "--bench",
        "cruxeval-o",
        "--data-dir",
        where,
        "--out",
        tmp_path / "run",
        "--json",
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["self_check"]["cruxeval-o"]["passed"]
    assert summary["reports"]["cruxeval-o"]["pass@1"] == 100.0
