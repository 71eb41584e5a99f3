"""``codereasoner distill`` as a user runs it: synthesized cases, a real sandbox, a real replay
server on 127.0.0.1, the real run store, SIGKILL and resume, and bad input."""

from __future__ import annotations

import ast
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from codereasoner import tasks, values
from codereasoner.cli import app
from codereasoner.execution import CallSyntaxError, Pool, Program, parse_call
from codereasoner.models.replay_server import Query, ReplayProcess, ReplayServer, count_tokens
from codereasoner.tasks import Item
from codereasoner.training.cases import case_items, read_cases

pytestmark = pytest.mark.train

MAX_TOKENS = 300  # --max-tokens of the scripted runs: an over-long chain is cut by the server
OUTPUTS = ("distilled.jsonl", "distill_summary.json")


@pytest.fixture(scope="session")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One offline synthesis run per session (a few seconds)."""
    out = tmp_path_factory.mktemp("synth") / "cases"
    cmd = [sys.executable, "-m", "codereasoner", "synth", "--generator", "offline", "--n", "40"]
    done = subprocess.run(
        [*cmd, "--seed", "0", "--out", str(out), "--no-decontam"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (out / "cases.jsonl").stat().st_size > 0
    return out


def invoke(*args: str) -> Any:
    """The command in this process (click's runner)."""
    return CliRunner().invoke(app, ["distill", *args], catch_exceptions=False)


def distill_args(cases: Path, out: Path, teacher: str, *args: str) -> list[str]:
    return ["--teacher", teacher, "--cases", str(cases), "--out", str(out), *args]


def records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "distilled.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def one_error_line(done: Any, *words: str) -> str:
    code = getattr(done, "returncode", getattr(done, "exit_code", None))
    assert code == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# 1. the oracle: every case verified both ways, labelled a self-check


def assert_all_verified(out: Path, k: int) -> list[dict[str, Any]]:
    got = records(out)
    assert got
    assert all(r["verified"] and r["n_tried"] == k and r["rejected"] == [] for r in got)
    assert all(r["kept"]["sample"] == 0 for r in got)  # equal texts: the earliest is kept
    by_case = defaultdict(set)
    for record in got:
        by_case[record["case_id"]].add(record["direction"])
    assert set(map(frozenset, by_case.values())) == {frozenset({"forward", "backward"})}
    # a backward prompt shows the code and the output only: cases sharing both share one
    # prompt, so the oracle's completion may state any of their calls
    calls = defaultdict(set)
    for record in got:
        calls[(record["code"], record["output"])].add(record["call"])
    for record in got:
        if record["direction"] == "forward":
            assert record["kept"]["answer"] == record["output"]
        else:
            assert record["kept"]["answer"] in calls[(record["code"], record["output"])]
    return got


def test_the_oracle_verifies_every_case_both_ways(synth_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "oracle"
    done = invoke(*distill_args(synth_dir, out, "oracle", "--k", "2"))  # every case
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("SELF-CHECK") and "rejected samples: none" in done.stdout
    got = assert_all_verified(out, 2)
    cases = (synth_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(got) == 2 * len(cases)
    assert all("<Reasoning>" in r["kept"]["completion"] and r["hint"] is None for r in got)
    summary = json.loads((out / "distill_summary.json").read_text(encoding="utf-8"))
    assert summary["rejections"] == {} and summary["samples"] == 2 * len(got)
    assert {row["percent"] for row in summary["by_direction"].values()} == {100.0}
    assert (out / "distill_summary.png").stat().st_size > 0
    before = {name: (out / name).read_bytes() for name in OUTPUTS}
    # the same --out again, as JSON: everything cached, the same bytes written
    again = invoke(*distill_args(synth_dir, out, "oracle", "--k", "2", "--json"))
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["teacher"] == "oracle" and report["self_check"]["passed"] is True
    assert report["items"] == report["accepted"] == len(got)
    prompts = {record["prompt"] for record in got}  # items sharing a prompt share its samples
    assert report["generated"] == 0 and report["cached"] == 2 * len(prompts)
    assert {name: (out / name).read_bytes() for name in OUTPUTS} == before


def test_the_oracle_direct_style_and_trace_hint(synth_dir: Path, tmp_path: Path) -> None:
    direct = tmp_path / "direct"
    done = invoke(
        *distill_args(
            synth_dir, direct, "oracle", "--k", "1", "--limit", "8", "--style", "direct", "--json"
        )
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["self_check"]["passed"] is True
    for record in assert_all_verified(direct, 1):
        assert record["style"] == "direct" and "<Reasoning>" not in record["kept"]["completion"]
        assert "<Reasoning>" not in record["prompt"]
    hinted = tmp_path / "hinted"
    done = invoke(
        *distill_args(
            synth_dir, hinted, "oracle", "--k", "1", "--limit", "8", "--hint", "trace", "--json"
        )
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["self_check"]["passed"] is True
    for record in assert_all_verified(hinted, 1):
        hint = record["hint"]
        assert hint and hint.startswith(f"call {record['entry_point']}(")
        assert "An exact trace of this call" in record["prompt"] and hint in record["prompt"]


# 2. a scripted teacher: right, wrong, garbled and over-long chains


def scripted_cases(synth_dir: Path, folder: Path) -> tuple[Path, dict[str, list[str]]]:
    """A small cases.jsonl: pairs of cases with the same code and different outputs (so that a
    sibling's call or output is a known wrong answer), and for each case its siblings' ids."""
    lines = (synth_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        record = json.loads(line)
        groups[record["code"]].append(record)
    chosen: list[dict[str, Any]] = []
    for group in groups.values():
        pair = [group[0], *(r for r in group[1:] if r["output"] != group[0]["output"])][:2]
        if len(pair) == 2:
            chosen += pair
        if len(chosen) >= 8:
            break
    assert len(chosen) == 8
    folder.mkdir()
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chosen), "utf-8")
    return folder, {
        r["id"]: [o["id"] for o in chosen if o["code"] == r["code"] and o is not r] for r in chosen
    }


def other_calls(call: str) -> Iterator[str]:
    """Calls with some argument changed (negated, reversed, its elements reordered)."""
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    args = [ast.literal_eval(arg) for arg in node.args]
    for index, arg in enumerate(args):
        changed: list[str] = []
        if type(arg) is int:
            changed += [repr(-arg), repr(arg + 1)]
        elif isinstance(arg, (str, bytes, list, tuple)):
            changed.append(repr(arg[::-1]))
        elif isinstance(arg, (set, frozenset)) and arg:
            with_order = sorted(arg, key=repr, reverse=True)
            text = "{" + ", ".join(map(repr, with_order)) + "}"
            changed.append(text if type(arg) is set else f"frozenset({text})")
        for text in changed:
            parts = [repr(a) for a in args]
            parts[index] = text
            yield f"{node.func.id}({', '.join(parts)})"


def alternative_calls(pool: Pool, items: list[Item]) -> dict[str, str]:
    """For backward items: another literal call returning the case's output, where the sandbox
    finds one among :func:`other_calls`."""
    found = {}
    for item in items:
        if item.metadata["direction"] != "backward":
            continue
        truth = values.parse(item.truth)
        for candidate in other_calls(item.call):
            if candidate == item.call:
                continue
            try:
                call = parse_call(candidate)
            except CallSyntaxError:  # e.g. frozenset(...) is not a literal call
                continue
            if pool.run(Program(item.program, item.entry), call).matches(truth):
                found[item.id] = candidate
                break
    return found


def chain(reasoning: str, answer: str) -> str:
    return f"<Reasoning>{reasoning}</Reasoning>\n<Answer>{answer}</Answer>"


class Script:
    """Per item (found by its prompt) and choice index: which chain the teacher sends."""

    PATTERNS = (
        ("garbled", "wrong", "right_long", "overlong", "right_short"),
        ("right_long", "cut_right", "right_short", "wrong", "overlong"),
        ("right_short", "overlong", "wrong", "right_short", "right_long"),  # a tie: sample 0
        ("wrong", "garbled", "overlong", "not_literal", "crash"),  # nothing right
    )
    WITH_ALTERNATIVE = ("wrong", "right_alt", "garbled", "overlong", "right_long")

    def __init__(
        self, items: list[Item], siblings: dict[str, list[str]], alternatives: dict[str, str]
    ) -> None:
        self.by_prompt: dict[str, Item] = {}
        self.roles: dict[str, tuple[str, ...]] = {}
        self.texts: dict[str, list[str]] = {}
        self.unknown: list[str] = []
        by_id = {item.id: item for item in items}
        for index, item in enumerate(items):
            prompt = tasks.get(item.task).prompt(item, "reasoning")
            assert prompt not in self.by_prompt
            self.by_prompt[prompt] = item
            direction = item.metadata["direction"]
            # items go case by case, forward then backward: both see every pattern
            shift = index // 2 + (direction == "backward")
            roles: tuple[str, ...] = self.PATTERNS[shift % len(self.PATTERNS)]
            if item.id in alternatives:
                roles = self.WITH_ALTERNATIVE
            if direction == "forward":  # nothing runs: a call that raises is just not a literal
                roles = tuple("not_literal" if role == "crash" else role for role in roles)
            self.roles[item.id] = roles
            sibling = by_id[f"{siblings[item.metadata['case_id']][0]}/{direction}"]
            truth = item.truth if direction == "forward" else item.call
            wrong = sibling.truth if direction == "forward" else sibling.call
            nonliteral = "len([1, 2])" if direction == "forward" else f"{item.entry}(x)"
            chains = {
                "right_short": chain("Short.", truth),
                "right_long": chain("step " * 40, truth),
                "right_alt": chain("Another input works.", alternatives.get(item.id, "")),
                "wrong": chain("A guess.", wrong),
                "garbled": f"I think it is {truth}, but I will not say so in tags.",
                "not_literal": chain("An expression.", nonliteral),
                "crash": chain("No arguments.", f"{item.entry}()"),
                "overlong": chain("loop " * (2 * MAX_TOKENS), truth),
                # a right answer, then more than the token limit: cut, so rejected all the same
                "cut_right": chain("Short.", truth) + " and more" * MAX_TOKENS,
            }
            self.texts[item.id] = [chains[role] for role in roles]
            for role, text in zip(roles, self.texts[item.id], strict=True):
                assert (count_tokens(text) > MAX_TOKENS) == (role in CUT), text

    def reply(self, query: Query) -> str:
        item = self.by_prompt.get(query.prompt)
        if item is None:
            self.unknown.append(query.prompt)
            return "unknown prompt"
        return self.texts[item.id][query.choice]


CUT = ("overlong", "cut_right")  # roles the server cuts at --max-tokens
REASONS = {
    "cut_right": "truncated",  # its answer is right, but the chain is unfinished
    "wrong": "wrong_value",
    "garbled": "no_answer",
    "overlong": "truncated",  # cut by the server (before its <Answer>)
    "not_literal": "not_a_literal",
    "crash": "error",  # run in the sandbox: a TypeError
}


def test_exactly_the_right_chains_are_kept_the_shortest_first(
    synth_dir: Path, tmp_path: Path, pool: Pool
) -> None:
    cases, siblings = scripted_cases(synth_dir, tmp_path / "cases")
    items = case_items(read_cases(cases / "cases.jsonl"), ("forward", "backward"))
    found = alternative_calls(pool, items)
    assert len(found) >= 2, found  # another call returning the same value
    alternatives = dict(sorted(found.items())[:2])
    script = Script(items, siblings, alternatives)
    k = len(Script.PATTERNS[0])
    used = {role for roles in script.roles.values() for role in roles}
    assert used == {*REASONS, "right_short", "right_long", "right_alt"}, used
    out = tmp_path / "out"
    with ReplayServer(reply=script.reply) as server:
        teacher = f"openai:replay@{server.url}"
        options = ("--k", str(k), "--max-tokens", str(MAX_TOKENS), "--json")
        done = invoke(*distill_args(cases, out, teacher, *options))
        assert done.exit_code == 0, done.output
        assert server.stats()["completions"] == len(items) * k
    assert script.unknown == []
    with sqlite3.connect(out / "run.sqlite") as connection:
        cut = connection.execute(
            "SELECT COUNT(*) FROM completions WHERE finish_reason = 'length'"
        ).fetchone()[0]
    assert cut == sum(role in CUT for roles in script.roles.values() for role in roles)
    got = {record["id"]: record for record in records(out)}
    assert sorted(got) == sorted(item.id for item in items)
    counted: dict[str, int] = defaultdict(int)
    for item in items:
        record, roles, texts = got[item.id], script.roles[item.id], script.texts[item.id]
        right = [s for s, role in enumerate(roles) if role.startswith("right")]
        assert record["n_tried"] == k and record["verified"] == bool(right), item.id
        if right:
            best = min(right, key=lambda s: (len(texts[s]), s))
            kept = record["kept"]
            assert kept["sample"] == best and kept["completion"] == texts[best], item.id
            assert kept["answer"] == texts[best].split("<Answer>")[1].split("</Answer>")[0]
            if roles[best] == "right_alt":
                assert kept["answer"] == alternatives[item.id] != item.call
        else:
            assert record["kept"] is None
        rejected = {r["sample"]: r for r in record["rejected"]}
        assert sorted(rejected) == [s for s in range(k) if s not in right], item.id
        for sample, verdict in rejected.items():
            assert verdict["reason"] == REASONS[roles[sample]], (item.id, sample, verdict)
            counted[verdict["reason"]] += 1
            if roles[sample] == "wrong":
                assert verdict["answer"] not in (None, "")
            if roles[sample] == "crash":
                assert "TypeError" in verdict["detail"], verdict
    assert any(
        script.roles[i.id][got[i.id]["kept"]["sample"]] == "right_alt"
        for i in items
        if i.id in alternatives
    )
    summary = json.loads((out / "distill_summary.json").read_text(encoding="utf-8"))
    assert summary["rejections"] == dict(counted)
    report = json.loads(done.stdout)
    assert report["accepted"] == sum(r["verified"] for r in got.values()) < len(items)
    assert report["self_check"] is None


# 3. SIGKILL mid-run, then resume


def stored_completions(out: Path) -> int:
    """Completions in the store, read while the run may be writing (WAL: readers never block)."""
    path = out / "run.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as connection:
            return connection.execute("SELECT COUNT(*) FROM completions").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def test_killed_and_resumed_writes_the_same_bytes_asking_nothing_twice(
    synth_dir: Path, tmp_path: Path
) -> None:
    k, options = 2, ("--k", "2", "--limit", "24", "--concurrency", "2")
    with ReplayProcess(latency_s=0.05) as server:
        teacher = f"openai:replay@{server.url}"
        reference = tmp_path / "reference"
        done = invoke(*distill_args(synth_dir, reference, teacher, *options))
        assert done.exit_code == 0, done.output
        total = stored_completions(reference)
        items = len(records(reference))
        assert total == items * k and server.stats()["completions"] == total
        server.reset()
        out = tmp_path / "killed"
        cmd = [
            sys.executable,
            "-m",
            "codereasoner",
            "distill",
            *distill_args(synth_dir, out, teacher, *options),
        ]
        process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if stored_completions(out) >= 6:
                os.kill(process.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
        assert process.wait(timeout=60) == -signal.SIGKILL  # killed mid-run, not finished
        stored = stored_completions(out)
        assert 6 <= stored < total and not (out / "distilled.jsonl").exists()
        while server.stats()["in_flight"] and time.monotonic() < deadline:
            time.sleep(0.01)  # the killed run's last requests are answered into the void
        served = server.stats()["completions"]
        lost = served - stored  # answered while the killed run was dying: never stored
        assert 0 <= lost <= 2 * k  # at most the requests in flight (--concurrency 2)
        server.reset()
        resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        # the resumed run asks only for what is missing: no stored completion is asked again
        assert server.stats()["completions"] == total - stored
        assert served + server.stats()["completions"] == items * k + lost
    assert stored_completions(out) == total
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


# 4. bad input: one error line, exit 2, nothing written or lost


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_bad_or_unreachable_teacher_is_one_line_and_loses_nothing(
    synth_dir: Path, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh"
    one_error_line(invoke(*distill_args(synth_dir, fresh, "gpt-4")), "--teacher", "model spec")
    port = closed_port()
    unreachable = f"openai:replay@http://127.0.0.1:{port}/v1"
    one_error_line(invoke(*distill_args(synth_dir, fresh, unreachable)), f"127.0.0.1:{port}")
    assert not fresh.exists()
    done = tmp_path / "done"
    finished = invoke(*distill_args(synth_dir, done, "oracle", "--k", "1", "--limit", "4"))
    assert finished.exit_code == 0, finished.output
    before = files(done)
    assert {"distilled.jsonl", "distill_summary.json", "run.sqlite"} <= set(before)
    for teacher, words in (("gpt-4", ("--teacher",)), (unreachable, (str(port),))):
        again = invoke(*distill_args(synth_dir, done, teacher, "--k", "1", "--limit", "4"))
        one_error_line(again, *words)
        assert files(done) == before


def first_lines(synth_dir: Path) -> list[str]:
    return (synth_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:3]


def output_not_a_literal(line: str) -> str:
    return json.dumps({**json.loads(line), "output": "f(1)"})


def missing_call(line: str) -> str:
    record = json.loads(line)
    del record["call"]
    return json.dumps(record)


def cut_short(line: str) -> str:
    return line[: len(line) // 2]


def call_of_another_function(line: str) -> str:
    record = json.loads(line)
    return json.dumps({**record, "call": "g" + record["call"][len(record["entry_point"]) :]})


@pytest.mark.parametrize(
    ("spoil", "words"),
    [
        (output_not_a_literal, ("field 'output'", "not a literal")),
        (missing_call, ("missing field 'call'",)),
        (cut_short, ("invalid JSON",)),
        (call_of_another_function, ("field 'call'", "not the entry point")),
    ],
)
def test_a_malformed_case_names_the_file_line_and_field(
    synth_dir: Path, tmp_path: Path, spoil: Any, words: tuple[str, ...]
) -> None:
    lines = first_lines(synth_dir)
    lines[1] = spoil(lines[1])
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    one_error_line(invoke(*distill_args(cases, out, "oracle")), f"{cases}:2:", *words)
    assert not out.exists()


def test_malformed_cases_leave_a_finished_folder_as_it_was(synth_dir: Path, tmp_path: Path) -> None:
    done = tmp_path / "done"
    finished = invoke(*distill_args(synth_dir, done, "oracle", "--k", "1", "--limit", "4"))
    assert finished.exit_code == 0, finished.output
    before = files(done)
    spoilt = tmp_path / "spoilt"
    spoilt.mkdir()
    lines = first_lines(synth_dir)
    lines[2] = output_not_a_literal(lines[2])
    (spoilt / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    again = invoke(*distill_args(spoilt, done, "oracle", "--k", "1", "--limit", "4"))
    one_error_line(again, f"{spoilt / 'cases.jsonl'}:3:", "field 'output'")
    assert files(done) == before


def test_no_cases_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text("", encoding="utf-8")
    out = tmp_path / "out"
    one_error_line(invoke(*distill_args(tmp_path, out, "oracle")), "cases.jsonl", "no cases")
    assert not out.exists()


def test_settings_a_folder_cannot_take_are_refused_without_a_resume_hint(
    synth_dir: Path, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh"
    line = one_error_line(invoke(*distill_args(synth_dir, fresh, "oracle", "--limit", "0")))
    assert "--limit 0" in line and "resume" not in line
    assert not fresh.exists()
    done = tmp_path / "done"
    options = ("--k", "1", "--limit", "4")
    finished = invoke(*distill_args(synth_dir, done, "oracle", *options))
    assert finished.exit_code == 0, finished.output
    before = files(done)
    for other in (("--temperature", "0.2"), ("--style", "direct"), ("--directions", "forward")):
        line = one_error_line(invoke(*distill_args(synth_dir, done, "oracle", *options, *other)))
        assert "choose another --out" in line and "resume" not in line, line
        assert files(done) == before


def test_a_file_of_cases_may_have_any_name(synth_dir: Path, tmp_path: Path) -> None:
    """``distill --cases``, ``eval --bench cases --data-dir`` and ``replay_teacher --cases`` take
    a file of cases whatever it is called, not only a synthesis folder's ``cases.jsonl``."""
    held_out = tmp_path / "held_out.jsonl"
    lines = (synth_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:4]
    held_out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    done = invoke(*distill_args(held_out, tmp_path / "distilled", "oracle"))
    assert done.exit_code == 0, done.output
    assert len(records(tmp_path / "distilled")) == 2 * len(lines)
    evaluated = CliRunner().invoke(
        app,
        ["eval", "--model", "oracle", "--bench", "cases", "--data-dir", str(held_out),
         "--out", str(tmp_path / "eval"), "--json"],
        catch_exceptions=False,
    )  # fmt: skip
    assert evaluated.exit_code == 0, evaluated.output
    report = json.loads(evaluated.stdout)["reports"]["cases"]
    assert (report["items"], report["pass@1"]) == (2 * len(lines), 100.0)
    missing = invoke(*distill_args(tmp_path / "absent.jsonl", tmp_path / "none", "oracle"))
    assert missing.exit_code != 0 and "absent.jsonl" in missing.output
    teacher = subprocess.Popen(
        [sys.executable, "-m", "codereasoner.training.replay_teacher", "--cases", str(held_out),
         "--port", "0", "--no-key"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert teacher.stdout is not None
        assert f"({len(lines)} cases)" in teacher.stdout.readline()
    finally:
        teacher.terminate()
        teacher.wait(30)
