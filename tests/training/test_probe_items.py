"""Probe items (direction ``probe``) from synthesized cases: the items and their grading, distill
with a real replay teacher (resumed to the same bytes), every export format, and the reward
scorer grading probe rows without the sandbox."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from codereasoner import tasks, values
from codereasoner.cli import app
from codereasoner.execution import Pool
from codereasoner.families.cases.probe import PROBE_TASK
from codereasoner.models.replay_server import Query, ReplayServer
from codereasoner.programs.probes import DIMENSIONS
from codereasoner.tasks import Reason
from codereasoner.tasks.literal_answers import match_value
from codereasoner.training.cases import case_items, draw_probes, read_cases, trace_cases
from codereasoner.training.process import parse_column
from codereasoner.training.replay_teacher import ReplayTeacher, other_literal, probes_of
from codereasoner.training.rewards import Sample, score_batch
from tests.training.conftest import ProbeDistill

pytestmark = pytest.mark.train

OUTPUTS = ("distilled.jsonl", "distill_summary.json")


def records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "distilled.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(app, [str(arg) for arg in args], catch_exceptions=False)


def grade(item: Any, text: str, style: str) -> Any:
    kind = tasks.get(PROBE_TASK)
    return tasks.run_plans(None, [kind.plan(item, [kind.extract(item, text, style)], "strict")])[0]


def test_probe_items_grade_their_own_truth_right_and_another_value_wrong(
    probe_distill: ProbeDistill, pool: Pool
) -> None:
    cases = read_cases(probe_distill.synth / "cases.jsonl")
    traces = trace_cases(pool, cases)
    asked, drawn = draw_probes(cases, traces, 2)
    assert asked == draw_probes(cases, trace_cases(pool, cases), 2)[0]  # stable
    assert all(asked[case_id] == drawn[case_id][:2] for case_id in asked)
    items = case_items(cases, ("probe",), probes=asked)
    assert len(items) == sum(map(len, asked.values())) >= len(cases)
    assert len({item.id for item in items}) == len(items)
    kind = tasks.get(PROBE_TASK)
    by_case = {case.id: case for case in cases}
    for item in items:
        found = re.fullmatch(r"(.+)/probe/(\d+)", item.id)
        assert found is not None, item.id
        case_id, number = found.groups()
        probe = asked[case_id][int(number)]
        case = by_case[case_id]
        assert item.task == PROBE_TASK and item.metadata["direction"] == "probe"
        assert (item.program, item.call, item.truth) == (case.code, case.call, probe.truth)
        assert item.fields["question"] == probe.question
        meta = item.metadata["probe"]
        assert meta["kind"] == probe.kind and meta["line"] == probe.line
        assert set(meta["dimensions"]) <= set(DIMENSIONS) and meta["dimensions"]
        assert meta["trace_distance"] == probe.trace_distance > 0
        for style in ("reasoning", "direct"):
            prompt = kind.prompt(item, style)
            assert case.code in prompt and case.call in prompt and probe.question in prompt
            right = kind.extract(item, kind.oracle(item, style), style)
            wrong = kind.extract(item, f"<Answer>{other_literal(probe.truth)}</Answer>", style)
            assert not values.equal(values.parse(other_literal(probe.truth)), probe.truth)
            scores = tasks.run_plans(None, [kind.plan(item, [right, wrong], "strict")])[0]
            assert [score.correct for score in scores] == [True, False], item.id
            assert scores[1].reason is Reason.WRONG


def test_distill_asks_probes_and_resumes_to_the_same_bytes(probe_distill: ProbeDistill) -> None:
    got = records(probe_distill.out)
    probes = [record for record in got if record["direction"] == "probe"]
    assert probes and {r["direction"] for r in got} == {"forward", "backward", "probe"}
    cases = {case.id: case for case in read_cases(probe_distill.synth / "cases.jsonl")}
    for record in probes:
        assert record["id"].startswith(f"{record['case_id']}/probe/")
        assert record["output"] == cases[record["case_id"]].output
        assert record["question"] in record["prompt"]
        assert record["probe"]["kind"] and record["probe"]["dimensions"]
        if record["verified"]:
            assert match_value(values.parse(record["truth"]), record["kept"]["answer"])
        for rejected in record["rejected"]:
            assert not match_value(values.parse(record["truth"]), rejected["answer"] or "")
    kept = sum(r["verified"] for r in probes)
    assert 0 < kept <= len(probes)
    samples = [r["n_tried"] - len(r["rejected"]) for r in probes]
    assert abs(1 - sum(samples) / (3 * len(probes)) - probe_distill.wrong) < 0.2
    # every record carries its case's probed values; a probed truth is a value the name took
    assert all(isinstance(record["probes"], list) for record in got)
    entries = [entry for record in got for entry in parse_column(json.dumps(record["probes"]))]
    assert entries
    for entry in entries:
        assert any(values.equal(values.parse(entry.truth), values.parse(t)) for t in entry.history)
        assert len(set(entry.history)) == len(entry.history)
        assert set(entry.at_line) <= set(entry.history)
    summary = json.loads((probe_distill.out / "distill_summary.json").read_text("utf-8"))
    assert summary["by_direction"]["probe"] == {
        "items": len(probes),
        "accepted": kept,
        "percent": round(100 * kept / len(probes), 2),
    }
    assert sum(row["items"] for row in summary["by_probe_kind"].values()) == len(probes)
    assert Counter(r["probe"]["kind"] for r in probes) == {
        kind: row["items"] for kind, row in summary["by_probe_kind"].items()
    }
    assert set(summary["by_dimension"]) <= set(DIMENSIONS)
    # the same --out again: nothing asked, the same bytes written
    before = {name: (probe_distill.out / name).read_bytes() for name in OUTPUTS}
    cases_list = list(cases.values())
    teacher = ReplayTeacher(cases_list, wrong=1.0, probes=probes_of(cases_list, 2))
    with ReplayServer(reply=teacher.reply, model="teacher", port=probe_distill.port) as server:
        args = ["--teacher", f"openai:teacher@{server.url}", "--cases", probe_distill.synth]
        more = ["--directions", "forward,backward,probe", "--k", "3", "--json"]
        done = invoke("distill", *args, "--out", probe_distill.out, *more)
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["generated"] == 0
        assert {name: (probe_distill.out / name).read_bytes() for name in OUTPUTS} == before
        other = invoke(
            "distill", *args, "--out", probe_distill.out, *more, "--probes-per-case", "3"
        )
    assert other.exit_code == 2 and "probes_per_case=2" in other.stderr


def test_probe_rows_in_every_format(probe_distill: ProbeDistill, tmp_path: Path) -> None:
    got = [record for record in records(probe_distill.out) if record["direction"] == "probe"]
    verified = [record for record in got if record["verified"]]
    source = probe_distill.out
    sft = tmp_path / "sft.jsonl"
    done = invoke("export", "--from", source, "-f", "trl-sft", "-o", sft, "--directions", "probe")
    assert done.exit_code == 0, done.output
    assert f"probe {len(verified)}" in done.stdout
    rows = [json.loads(line) for line in sft.read_text("utf-8").splitlines()]
    assert rows == [
        {
            "prompt": [{"role": "user", "content": record["prompt"]}],
            "completion": [{"role": "assistant", "content": record["kept"]["completion"]}],
        }
        for record in verified
    ]
    grpo = tmp_path / "grpo.jsonl"
    assert invoke("export", "--from", source, "-f", "trl-grpo", "-o", grpo).exit_code == 0
    rows = [json.loads(line) for line in grpo.read_text("utf-8").splitlines()]
    probe_rows = [row for row in rows if row["direction"] == "probe"]
    assert len(probe_rows) == len(got) and len(rows) == len(records(source))
    for row, record in zip(probe_rows, got, strict=True):
        assert row["prompt"] == [{"role": "user", "content": record["prompt"]}]
        assert (row["target"], row["call"]) == (record["truth"], record["call"])
        assert [e.to_dict() for e in parse_column(row["probes"])] == record["probes"]
    parquet = tmp_path / "rl.parquet"
    assert invoke("export", "--from", source, "-f", "verl", "-o", parquet).exit_code == 0
    table = [row for row in pq.read_table(parquet).to_pylist() if row["extra_info"]]
    verl_probes = [row for row in table if row["extra_info"]["direction"] == "probe"]
    for row, record in zip(verl_probes, got, strict=True):
        assert row["reward_model"]["ground_truth"] == record["truth"]
        assert row["extra_info"]["target"] == record["truth"]
        assert json.loads(row["extra_info"]["probes"]) == record["probes"]
    # the reward scorer grades probe rows by their truth: no sandbox (no pool at all)
    samples = [
        Sample("probe", r["code"], r["entry_point"], r["call"], r["target"], r["case_id"], text)
        for r in probe_rows
        for text in (
            f"<Reasoning>.</Reasoning>\n<Answer>{r['target']}</Answer>",
            f"<Reasoning>.</Reasoning>\n<Answer>{other_literal(r['target'])}</Answer>",
        )
    ]
    batch = score_batch(samples, None)  # type: ignore[arg-type]
    assert batch.rewards == [2.0, 0.0] * len(probe_rows)
    assert batch.metrics["accuracy/probe"] == 0.5


def test_old_records_export_an_empty_probes_column(tmp_path: Path) -> None:
    record = {
        "id": "c/forward",
        "case_id": "c",
        "direction": "forward",
        "code": "def f(x):\n    return x",
        "entry_point": "f",
        "call": "f(1)",
        "output": "1",
        "prompt": "What does f(1) return?",
        "verified": False,
    }
    (tmp_path / "distilled.jsonl").write_text(json.dumps(record) + "\n", "utf-8")
    out = tmp_path / "grpo.jsonl"
    assert invoke("export", "--from", tmp_path, "-f", "trl-grpo", "-o", out).exit_code == 0
    (row,) = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert row["probes"] == "[]" and row["target"] == "1"
    bad = tmp_path / "bad"
    bad.mkdir()
    probe = {**record, "id": "c/probe/0", "direction": "probe", "question": "What is x?"}
    (bad / "distilled.jsonl").write_text(json.dumps(probe) + "\n", "utf-8")
    done = invoke("export", "--from", bad, "-f", "trl-grpo", "-o", tmp_path / "b.jsonl")
    assert done.exit_code == 2 and "field 'truth' missing" in done.stderr


@pytest.mark.parametrize("per_case", ["0", "-1"])
def test_probes_per_case_must_be_positive(
    probe_distill: ProbeDistill, tmp_path: Path, per_case: str
) -> None:
    args = ["--teacher", "oracle", "--cases", probe_distill.synth, "--out", tmp_path / "o"]
    done = invoke("distill", *args, "--directions", "probe", "--probes-per-case", per_case)
    assert done.exit_code == 2 and "--probes-per-case" in done.stderr


def test_the_replay_teacher_knows_probe_prompts_with_and_without_a_hint(
    probe_distill: ProbeDistill, pool: Pool
) -> None:
    cases = read_cases(probe_distill.synth / "cases.jsonl")
    traces = trace_cases(pool, cases)
    asked = draw_probes(cases, traces, 2)[0]
    teacher = ReplayTeacher(cases, wrong=0.0, probes=asked)
    hints = {case.id: f"call f(...)\n\nQuestion: {case.id}?\n" for case in cases}
    kind = tasks.get(PROBE_TASK)
    for item in case_items(cases, ("probe",), hints, probes=asked):
        for style in ("reasoning", "direct"):
            found = teacher.find(kind.prompt(item, style))
            assert found is not None and found[0].id == item.id, item.id
            reply = teacher.reply(Query(kind.prompt(item, style), None, {}, 0))
            (score,) = grade(item, reply, style)
            assert score.correct, item.id
