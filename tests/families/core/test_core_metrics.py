"""CoRE metrics against numbers worked out by hand, and ``codereasoner score --bench core``."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from codereasoner import benchmarks
from codereasoner.families.core import metrics as cm
from codereasoner.families.core.metrics import OutputOutcome, ProbeOutcome
from codereasoner.tasks import Reason, Score

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "core"


def outputs(problem: str, impls: dict[str, str], family: str = "OpenAI") -> list[OutputOutcome]:
    """``{"a": "TTF"}``: implementation a's three tests, right, right, wrong."""
    return [
        OutputOutcome(problem, f"{problem}/{name}", family, flag == "T")
        for name, flags in impls.items()
        for flag in flags
    ]


def probes(problem: str, flags: str, dims: tuple[str, ...] = ()) -> list[ProbeOutcome]:
    return [ProbeOutcome(problem, dims, flag == "T") for flag in flags]


def test_problem_scores_by_hand() -> None:
    scores = cm.problem_scores(
        outputs("p1", {"a": "TTT", "b": "TFT"})
        + outputs("p2", {"a": "TT"})
        + outputs("p3", {"a": "T", "b": "T", "c": "T"})
        + outputs("p4", {"a": "FF"}),
        probes("p1", "TFTT") + probes("p2", "TT") + probes("p3", "TF") + probes("p5", "T"),
    )
    p1 = scores["p1"]
    # p1: one wrong pair -> I 0; impls all right: a only -> Is 1/2; pairs 5/6; probes 3/4.
    assert (p1.I, p1.Is, p1.Is_pairs, p1.Ws, p1.W, p1.RCS) == (0, 0.5, 5 / 6, 0.75, 0, 0)
    assert (scores["p2"].I, scores["p2"].W, scores["p2"].RCS) == (1, 1, 1)
    assert (scores["p3"].I, scores["p3"].Ws, scores["p3"].W, scores["p3"].RCS) == (1, 0.5, 0, 0.5)
    assert (scores["p4"].I, scores["p4"].Is, scores["p4"].Ws, scores["p4"].RCS) == (
        0,
        0,
        None,
        None,
    )
    assert (scores["p5"].I, scores["p5"].Ws, scores["p5"].W) == (None, 1, 1)
    table = cm.summary(scores)
    # I over p1..p4: (0 + 1 + 1 + 0) / 4 = 50 %; Is: (0.5 + 1 + 1 + 0) / 4 = 62.5 %
    assert table["I"] == pytest.approx(50) and table["Is"] == pytest.approx(62.5)
    # Is_pairs: (5/6 + 1 + 1 + 0) / 4 = 0.708333... -> 70.8333 %
    assert table["Is_pairs"] == pytest.approx(100 * (5 / 6 + 2) / 4)
    # Ws over p1, p2, p3, p5: (0.75 + 1 + 0.5 + 1) / 4 = 81.25 %; W: (0 + 1 + 0 + 1) / 4 = 50 %
    assert table["Ws"] == pytest.approx(81.25) and table["W"] == pytest.approx(50)
    # RCS over p1..p3 (both parts): (0 + 1 + 0.5) / 3 = 50 %
    assert table["RCS"] == pytest.approx(50)
    # Cons_paper = 1 - ((0-0)^2 + (1-1)^2 + (1-0)^2) / 3 = 1 - 1/3 = 0.6667
    assert table["Cons_paper"] == pytest.approx(2 / 3)
    # Cons_text = 1 - ((0-0.75)^2 + (1-1)^2 + (1-0.5)^2) / 3 = 1 - (0.5625 + 0.25) / 3 = 0.729167
    assert table["Cons_text"] == pytest.approx(1 - 0.8125 / 3)
    assert table["problems"] == {"outputs": 4, "probes": 4, "both": 3}


def test_cons_paper_is_one_minus_i_when_no_problem_is_fully_transparent() -> None:
    """Table 1's GPT-5/IO row: W = 0 everywhere, so Cons = 1 - I (0.154 for I = 84.62 %)."""
    # 13 problems, 11 invariant: I = 11/13 = 84.62 %; Ws = 0.25 each, W = 0.
    out = [o for n in range(13) for o in outputs(f"p{n}", {"a": "T" if n < 11 else "F"})]
    pro = [p for n in range(13) for p in probes(f"p{n}", "TFFF")]
    table = cm.summary(cm.problem_scores(out, pro))
    assert table["I"] == pytest.approx(100 * 11 / 13)
    assert table["Cons_paper"] == pytest.approx(2 / 13)  # 1 - 11/13 = 0.1538
    # Cons_text = 1 - (11 * (1 - 0.25)^2 + 2 * (0 - 0.25)^2) / 13 = 1 - (6.1875 + 0.125) / 13
    assert table["Cons_text"] == pytest.approx(1 - 6.3125 / 13)


def test_dimension_and_family_tables() -> None:
    pro = (
        probes("p", "T", ("A", "S"))
        + probes("p", "F", ("S",))
        + probes("p", "T")
        + probes("q", "TF", ("L",))
    )
    # A: 1/1; L: 1/2; S: 1/2 (memberships counted per dimension); no dimension: 1/1
    assert cm.dimension_ws(pro) == {
        "A": {"probes": 1, "Ws": 100.0},
        "L": {"probes": 2, "Ws": 50.0},
        "S": {"probes": 2, "Ws": 50.0},
        "none": {"probes": 1, "Ws": 100.0},
    }
    out = outputs("p", {"a": "TT", "b": "TF"}, "OpenAI") + outputs("q", {"a": "F"}, "Qwen")
    out += outputs("q", {"b": "TT"}, "OpenAI")
    # OpenAI: p/a all right, p/b not, q/b all right -> 2/3; Qwen: q/a wrong -> 0/1
    assert cm.family_is(out) == {
        "OpenAI": {"implementations": 3, "Is": pytest.approx(200 / 3)},
        "Qwen": {"implementations": 1, "Is": 0.0},
    }


def _score(item_id: str, sample: int, correct: bool) -> Score:
    reason = Reason.CORRECT if correct else Reason.NO_ANSWER  # an unparsable answer: wrong
    return Score(item_id, sample, None, correct, reason)


def test_runs_are_scored_alone_then_averaged() -> None:
    items = benchmarks.get("core").load(FIXTURES)
    right = {item.id: [_score(item.id, 0, True), _score(item.id, 1, True)] for item in items}
    right["36_4"][1] = _score("36_4", 1, False)  # run 1: problem 36 loses I
    report = cm.report(items, right)
    assert report["runs"] == 2
    assert [row["I"] for row in report["per_run"]] == pytest.approx([100, 100 * 2 / 3])
    assert report["mean"]["I"] == pytest.approx((100 + 200 / 3) / 2)  # 83.33
    assert report["mean"]["Ws"] == pytest.approx(100)
    # Run 1: Cons_paper = 1 - ((0-1)^2 + 0 + 0) / 3 = 2/3; run 0: 1 -> mean 5/6
    assert report["mean"]["Cons_paper"] == pytest.approx(5 / 6)
    right["36_0"] = right["36_0"][:1]
    with pytest.raises(ValueError, match="same number of samples per item; '36_0' has 1"):
        cm.report(items, right)


def test_score_cli_on_the_fixture_generations() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codereasoner",
            "score",
            "--bench",
            "core",
            "--generations",
            str(FIXTURES / "generations.jsonl"),
            "--data-dir",
            str(FIXTURES),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["items"], report["samples"], report["format"]) == (17, 34, "jsonl")
    project, ancestor = report["variants"]["project"], report["variants"]["ancestor"]
    # Verdicts decided by hand from generations.jsonl (T right, F wrong), problems 36 / 3034 / 9001:
    # run 0: outputs 36 all T; 3034_1 F (8); 9001 T T (true; False).
    #        probes 36: T T; 3034: T, F ([[1, 6]]); 9001: F (no Answer line: no_answer).
    # run 1: outputs 36_4 F (3); 3034 all T; 9001_0 T, 9001_1 F (True).
    #        probes 36: T, F ((3, True)); 3034: T T; 9001: T (false).
    # Project, run 0: I (1, 0, 1), Is (1, 1/2, 1), pairs (1, 3/4, 1), Ws (1, 1/2, 0), W (1, 0, 0)
    #   -> I 66.67, Is 83.33, pairs 91.67, Ws 50, W 33.33, RCS (1 + 0 + 0)/3 = 33.33,
    #   Cons_paper 1 - (0 + 0 + 1)/3 = 0.6667, Cons_text 1 - (0 + 0.25 + 1)/3 = 0.5833.
    # Project, run 1: I (0, 1, 0), Is (1/2, 1, 0), pairs (5/6, 1, 1/2), Ws (1/2, 1, 1), W (0, 1, 1)
    #   -> I 33.33, Is 50, pairs 77.78, Ws 83.33, W 66.67, RCS (0 + 1 + 0)/3 = 33.33,
    #   Cons_paper 1 - (0 + 0 + 1)/3 = 0.6667, Cons_text 1 - (0.25 + 0 + 1)/3 = 0.5833.
    expected = {
        "I": 50.0,
        "Is": 200 / 3,
        "Is_pairs": (11 / 4 + 7 / 3) / 6 * 100,
        "W": 50.0,
        "Ws": 200 / 3,
        "RCS": 100 / 3,
        "Cons_paper": 2 / 3,
        "Cons_text": 1 - 1.25 / 3,
    }
    for name, value in expected.items():
        assert project["mean"][name] == pytest.approx(value), name
    assert project["reasons"] == {"correct": 28, "wrong_value": 5, "no_answer": 1}
    # Ancestor: the JSON golds true/false crash upstream (bad_truth, 4 samples) and "7 (two
    # disjoint ranges)" is not cut (3034_1 wrong in run 1). Run 0: I (1, 0, 0), Is (1, 1/2, 0),
    # pairs (1, 3/4, 0); run 1: I (0, 0, 0), Is (1/2, 1/2, 0), pairs (5/6, 3/4, 0). Probes as
    # above. RCS: run 0 (1 + 0 + 0)/3, run 1 0 -> 16.67. Cons_paper: run 0 1 - 0 = 1, run 1
    # 1 - (0 + 1 + 1)/3 = 1/3 -> 0.6667. Cons_text: run 0 1 - (0 + 0.25 + 0)/3, run 1
    # 1 - (0.25 + 1 + 1)/3 -> (0.9167 + 0.25)/2 = 0.5833.
    expected = {
        "I": 50 / 3,
        "Is": (0.5 + 1 / 3) / 2 * 100,
        "Is_pairs": (1.75 / 3 + (5 / 6 + 0.75) / 3) / 2 * 100,
        "W": 50.0,
        "Ws": 200 / 3,
        "RCS": 50 / 3,
        "Cons_paper": 2 / 3,
        "Cons_text": (1 - 0.25 / 3 + 1 - 2.25 / 3) / 2,
    }
    for name, value in expected.items():
        assert ancestor["mean"][name] == pytest.approx(value), name
    assert ancestor["reasons"] == {"correct": 24, "wrong_value": 5, "bad_truth": 4, "no_answer": 1}
    # Dimensions (project): A (3034_2#0) F, T -> 50; S: run 0 3/3, run 1 2/3 -> 83.33
    assert project["mean"]["dimensions"]["A"]["Ws"] == pytest.approx(50)
    assert project["mean"]["dimensions"]["S"]["Ws"] == pytest.approx(250 / 3)
    assert project["mean"]["families"]["Claude"]["Is"] == pytest.approx(50)  # 36/1: run 1 wrong

    # Standard errors over the 3 problems, per run (values above), averaged over the 2 runs
    def stderr(*runs: tuple[float, ...]) -> float:
        return statistics.fmean(statistics.stdev(run) / math.sqrt(len(run)) for run in runs)

    errors = project["mean"]["stderr"]
    assert errors["I"] == pytest.approx(100 * stderr((1, 0, 1), (0, 1, 0)))
    assert errors["Ws"] == pytest.approx(100 * stderr((1, 0.5, 0), (0.5, 1, 1)))
    assert errors["Cons_text"] == pytest.approx(stderr((0, 0.25, 1), (0.25, 0, 1)))


def test_score_cli_text_output_for_probes_alone(tmp_path: Path) -> None:
    lines = [
        line
        for line in (FIXTURES / "generations.jsonl").read_text().splitlines()
        if '"Fine/' in line
    ]
    (tmp_path / "probes.jsonl").write_text("\n".join(lines) + "\n")
    args = [
        sys.executable,
        "-m",
        "codereasoner",
        "score",
        "--bench",
        "core-probe",
        "--data-dir",
        str(FIXTURES),
        "--generations",
    ]
    done = subprocess.run([*args, str(tmp_path / "probes.jsonl")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "core-probe: 5 items, 10 samples, 2 run(s)" in done.stdout
    rows = [line.split() for line in done.stdout.splitlines()]
    table = {row[0]: row[1:] for row in rows if len(row) == 3 and row[0] in cm.METRICS}
    assert table["I"] == ["-", "-"]  # no output samples: undefined, not zero
    # Ws: run 0 problems (36: 1, 3034: 1/2, 9001: 0), run 1 (1/2, 1, 1) -> (50 + 83.33) / 2
    assert table["Ws"] == ["66.6667", "66.6667"]
    done = subprocess.run(
        [*args, str(FIXTURES / "generations.jsonl")], capture_output=True, text=True
    )
    assert done.returncode == 2 and "unknown id" in done.stderr  # output ids are not probes


def test_score_cli_needs_as_many_runs_for_every_item(tmp_path: Path) -> None:
    lines = (FIXTURES / "generations.jsonl").read_text().splitlines()
    (tmp_path / "g.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # Fine/9001_1#0: 1 sample
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codereasoner",
            "score",
            "--bench",
            "core",
            "--generations",
            str(tmp_path / "g.jsonl"),
            "--data-dir",
            str(FIXTURES),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "same number of samples per item; 'Fine/9001_1#0' has 1" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
