"""The replay teacher as a smoke run uses it: synthesized cases, a real server on 127.0.0.1, a
real ``distill`` run that keeps the right chains and rejects the scripted wrong ones."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from codereasoner import tasks, values
from codereasoner.cli import app
from codereasoner.execution import CallSyntaxError, Pool, Program, parse_call
from codereasoner.families.cases.reasoning import ReasoningStyle
from codereasoner.models.replay_server import Query, ReplayServer, echo_reply
from codereasoner.training.cases import case_items, read_cases
from codereasoner.training.replay_teacher import ReplayTeacher, other_literal
from tests.conftest import synth_cases

pytestmark = pytest.mark.train

WRONG = 0.3
K = 3


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_cases(tmp_path_factory.mktemp("teacher") / "synth", n=24, seed=3)


def post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_every_prompt_form_is_known_and_others_are_echoed(synth_dir: Path) -> None:
    cases = read_cases(synth_dir / "cases.jsonl")
    teacher = ReplayTeacher(cases, wrong=WRONG)
    # a hint with blank lines and the prompt's own words in it: only its place tells it apart
    trace = "call f(...)\n\nline 2: x = 1\n\nReturned value: 3\n\n"
    hints = {case.id: f"{trace}{case.id}" for case in cases}
    for item in case_items(cases, ("forward", "backward"), hints):
        kind = tasks.get(item.task)
        plain = replace(item, fields={})
        for style in ReasoningStyle:
            for asked in (item, plain):
                found = teacher.find(kind.prompt(asked, style))
                assert found is not None, (item.id, style)
                # cases with the same code and output share a backward prompt: either is it
                assert kind.prompt(found[0], style) == kind.prompt(plain, style)
                assert found[1] == style
    with ReplayServer(reply=teacher.reply, model="teacher") as server:
        forward = case_items(cases[:1], ("forward",))[0]
        prompt = tasks.get(forward.task).prompt(forward, "reasoning")
        chat = post(
            server.url,
            "/chat/completions",
            {
                "model": "teacher",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": prompt},
                ],
                "n": 4,
            },
        )
        texts = [choice["message"]["content"] for choice in chat["choices"]]
        assert all(text.startswith("<Reasoning>") and "</Answer>" in text for text in texts)
        raw = post(server.url, "/completions", {"model": "teacher", "prompt": prompt, "n": 4})
        assert [choice["text"] for choice in raw["choices"]] == texts
        unknown = post(server.url, "/completions", {"model": "teacher", "prompt": "2 + 2?"})
        assert unknown["choices"][0]["text"] == echo_reply(Query("2 + 2?", None, {}, 0))


def test_which_pairs_are_wrong_is_deterministic_and_about_the_share(synth_dir: Path) -> None:
    cases = read_cases(synth_dir / "cases.jsonl")
    pairs = [(f"prompt {index}", choice) for index in range(500) for choice in range(4)]

    def marks(wrong: float, seed: int = 7) -> list[bool]:
        teacher = ReplayTeacher(cases, wrong=wrong, seed=seed)
        return [teacher.answers_wrong(prompt, choice) for prompt, choice in pairs]

    marked = marks(WRONG)
    assert marked == marks(WRONG) != marks(WRONG, seed=8)
    assert abs(sum(marked) / len(marked) - WRONG) < 0.04
    assert not any(marks(0)) and all(marks(1))
    with pytest.raises(ValueError, match=r"--wrong 1\.5"):
        ReplayTeacher(cases, wrong=1.5)


@pytest.mark.parametrize(
    ("text", "other"),
    [("3", "4"), ("True", "False"), ("'ab'", "'b'"), ("''", "None"), ("[]", "None")],
)
def test_another_literal_has_another_value(text: str, other: str) -> None:
    assert other_literal(text) == other


def records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "distilled.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def verified(pool: Pool, record: dict[str, Any], answer: str) -> bool:
    """The answer checked again here: a literal compared, or a literal call run."""
    truth = values.parse(record["output"])
    try:
        if record["direction"] == "forward":
            return values.equal(values.parse(answer), truth)
        call = parse_call(answer)
    except (values.ValueParseError, CallSyntaxError):
        return False
    return pool.run(Program(record["code"], record["entry_point"]), call).matches(truth)


def test_distill_keeps_the_right_chains_and_rejects_the_wrong_share(
    synth_dir: Path, tmp_path: Path, pool: Pool
) -> None:
    teacher = ReplayTeacher(read_cases(synth_dir / "cases.jsonl"), wrong=WRONG)
    out = tmp_path / "distill"
    with ReplayServer(reply=teacher.reply, model="teacher") as server:
        args = ["--teacher", f"openai:teacher@{server.url}", "--cases", str(synth_dir)]
        done = CliRunner().invoke(
            app,
            ["distill", *args, "--out", str(out), "--k", str(K), "--json"],
            catch_exceptions=False,
        )
    assert done.exit_code == 0, done.output
    got = records(out)
    kept = [r for r in got if r["verified"]]
    assert kept and len(kept) < len(got)
    samples = rejected = 0
    for record in got:
        wrong = {s for s in range(K) if teacher.answers_wrong(record["prompt"], s)}
        assert {r["sample"] for r in record["rejected"]} == wrong, record["id"]
        assert {r["reason"] for r in record["rejected"]} <= {"wrong_value", "not_a_literal"}
        samples, rejected = samples + record["n_tried"], rejected + len(record["rejected"])
        if record["verified"]:
            chain = record["kept"]["completion"]
            assert chain.startswith("<Reasoning>") and record["kept"]["sample"] not in wrong
            assert verified(pool, record, record["kept"]["answer"]), record["id"]
        for verdict in record["rejected"]:
            assert not verified(pool, record, verdict["answer"]), (record["id"], verdict)
    assert abs(rejected / samples - WRONG) < 0.1, (rejected, samples)
    summary = json.loads(done.stdout)
    assert summary["accepted"] == len(kept) and summary["self_check"] is None


def serve(*args: str) -> subprocess.Popen[str]:
    """The command in an environment without the key variable it reads by default."""
    cmd = [sys.executable, "-m", "codereasoner.training.replay_teacher", *args]
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_API_KEY"}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_the_command_serves_until_sigterm_and_refuses_bad_input(
    synth_dir: Path, tmp_path: Path
) -> None:
    process = serve(
        "--cases", str(synth_dir / "cases.jsonl"), "--port", "0", "--wrong", "0", "--no-key"
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        match = re.fullmatch(
            r"replay teacher on (http://127\.0\.0\.1:\d+/v1) \(\d+ cases\)\n", first
        )
        assert match, first
        item = case_items(read_cases(synth_dir / "cases.jsonl")[:1], ("backward",))[0]
        prompt = tasks.get(item.task).prompt(item, "direct")
        reply = post(match.group(1), "/completions", {"model": "teacher", "prompt": prompt})
        assert reply["choices"][0]["text"] == f"<Answer>{item.call}</Answer>"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        process.communicate()
    (tmp_path / "cases.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    for args, words in (
        (("--cases", str(tmp_path / "none"), "--no-key"), ("none/cases.jsonl", "cannot read")),
        (("--cases", str(tmp_path), "--no-key"), ("cases.jsonl:1", "missing field")),
        (("--cases", str(synth_dir), "--wrong", "2", "--no-key"), ("--wrong 2",)),
        # no key, and none asked for by name: refused, the ground truth is never served openly
        (("--cases", str(synth_dir)), ("OPENAI_API_KEY", "requires a key", "--no-key")),
        (
            ("--cases", str(synth_dir), "--api-key-env", "CODEREASONER_NO_SUCH_VARIABLE"),
            ("--api-key-env CODEREASONER_NO_SUCH_VARIABLE", "unset"),
        ),
    ):
        done = serve(*args, "--port", "0")
        stdout, stderr = done.communicate(timeout=60)
        assert done.returncode == 2 and stdout == "", (stdout, stderr)
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), stderr
        assert all(word in lines[0] for word in words), lines[0]


def test_the_ground_truth_is_served_only_with_the_key(synth_dir: Path) -> None:
    env = {**os.environ, "TEACHER_KEY": "s3cret"}
    cmd = [sys.executable, "-m", "codereasoner.training.replay_teacher"]
    cmd += ["--cases", str(synth_dir), "--port", "0", "--api-key-env", "TEACHER_KEY"]
    process = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        url = re.search(r"(http://\S+/v1)", process.stdout.readline())
        assert url is not None
        body = json.dumps({"model": "teacher", "prompt": "x"}).encode()
        anonymous = urllib.request.Request(f"{url.group(1)}/completions", data=body)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(anonymous, timeout=30)
        assert refused.value.code == 401
        keyed = urllib.request.Request(
            f"{url.group(1)}/completions", data=body, headers={"Authorization": "Bearer s3cret"}
        )
        with urllib.request.urlopen(keyed, timeout=30) as response:
            assert response.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        process.communicate()
