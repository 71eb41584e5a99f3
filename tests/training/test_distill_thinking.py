"""``codereasoner distill`` from a reasoning teacher: whatever shape its hidden thinking takes on
the wire (a real replay server on 127.0.0.1), the kept chains are those of the same teacher
without thinking, and an answer given only while thinking is not one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.models.replay_server import Query, ReplayServer
from codereasoner.training.cases import read_cases
from codereasoner.training.replay_teacher import ReplayTeacher
from tests.conftest import synth_cases

pytestmark = pytest.mark.train

THINKING = "Let me think. Could it be <Answer>0</Answer>? I should trace f first."


def distill(synth: Path, out: Path, server: ReplayServer) -> list[dict[str, Any]]:
    args = ["--teacher", f"openai:teacher@{server.url}", "--cases", str(synth)]
    more = ["--out", str(out), "--k", "2", "--workers", "2", "--max-tokens", "4000"]
    done = CliRunner().invoke(app, ["distill", *args, *more], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    lines = (out / "distilled.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


Chains = dict[str, str | None]  # item id -> its kept chain


def chains(records: list[dict[str, Any]]) -> Chains:
    return {r["id"]: None if r["kept"] is None else r["kept"]["completion"] for r in records}


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_cases(tmp_path_factory.mktemp("thinking") / "synth", n=12, seed=3)


@pytest.fixture(scope="module")
def teacher(synth: Path) -> ReplayTeacher:
    return ReplayTeacher(read_cases(synth / "cases.jsonl"), wrong=0.3)


@pytest.fixture(scope="module")
def plain(synth: Path, teacher: ReplayTeacher, tmp_path_factory: pytest.TempPathFactory) -> Chains:
    with ReplayServer(reply=teacher.reply, model="teacher") as server:
        return chains(distill(synth, tmp_path_factory.mktemp("plain") / "out", server))


def prefilled(reply: Callable[[Query], str]) -> Callable[[Query], str]:
    """The chat template wrote the opening tag: the content starts inside the thinking."""
    return lambda query: f"{THINKING}\n</think>\n\n{reply(query)}"


def tagged(reply: Callable[[Query], str]) -> Callable[[Query], str]:
    return lambda query: f"<think>\n{THINKING}\n</think>\n\n{reply(query)}"


@pytest.mark.parametrize("shape", ["prefilled", "tagged", "reasoning_content", "reasoning"])
def test_the_kept_chains_are_the_visible_ones(
    shape: str, synth: Path, teacher: ReplayTeacher, plain: Chains, tmp_path: Path
) -> None:
    options: dict[str, Any] = {"reply": teacher.reply}
    if shape == "prefilled":
        options["reply"] = prefilled(teacher.reply)
    elif shape == "tagged":
        options["reply"] = tagged(teacher.reply)
    else:  # a server-side reasoning parser: the thinking comes in its own field
        options.update(reasoning=lambda query: THINKING, reasoning_field=shape)
    with ReplayServer(model="teacher", **options) as server:
        records = distill(synth, tmp_path / "out", server)
    assert chains(records) == plain
    assert sum(chain is not None for chain in plain.values()) > len(plain) // 2
    text = (tmp_path / "out" / "distilled.jsonl").read_text(encoding="utf-8")
    assert "think>" not in text and "Let me think" not in text


def test_an_answer_given_only_while_thinking_is_rejected(
    synth: Path, teacher: ReplayTeacher, tmp_path: Path
) -> None:
    def thought_only(query: Query) -> str:
        return f"<think>{teacher.reply(query)}</think>\n\nDone."

    with ReplayServer(reply=thought_only, model="teacher") as server:
        records = distill(synth, tmp_path / "out", server)
    assert not any(record["verified"] for record in records)
    assert {r["reason"] for record in records for r in record["rejected"]} == {"no_answer"}
