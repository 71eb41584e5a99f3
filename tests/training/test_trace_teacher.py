"""The trace teacher and its corrupted control through ``codereasoner distill``: every chain
parses and its final answer verifies, the control differs from the true chain in a stated
value of every item, and the process reward cannot be gamed by restating or padding, while a
chain that traces correctly scores its maximum."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from codereasoner.training.process import (
    ProbedValue,
    judge_chain,
    parse_column,
    process_score,
    stated_values,
)
from tests.commands import invoke
from tests.conftest import synth_cases

pytestmark = pytest.mark.train

REASONING = re.compile(r"\A<Reasoning>\n(?P<chain>.+)\n</Reasoning>\n<Answer>(?P<answer>.+)</Answer>\Z", re.S)  # fmt: skip
# what a chain states blanked: the values after a line's colon, the value returned
SKELETON = re.compile(r"(?<=: ).+$|(?<=return ).+$|(?<=returns ).+$", re.M)
STATED = re.compile(r"^line \d+ `.*?`(?: \(iteration [\d.]+\))?: (?P<values>.+)$", re.M)


def distil(synth: Path, out: Path, teacher: str) -> list[dict[str, Any]]:
    done = invoke(
        "distill", "--teacher", teacher, "--cases", str(synth), "--out", str(out), "--k", "1",
        "--directions", "forward,backward", "--workers", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = (out / "distilled.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], ...]:
    folder = tmp_path_factory.mktemp("trace-teacher")
    synth = synth_cases(folder / "synth", n=40, seed=11)
    true = distil(synth, folder / "trace", "trace")
    control = distil(synth, folder / "control", "trace-corrupted")
    return true, control


def column(record: dict[str, Any]) -> str:
    return json.dumps(record["probes"])


def score(record: dict[str, Any], completion: str, right: bool = True) -> float:
    return process_score(
        completion, column(record), answer_right=right, direction=record["direction"],
        call=record["call"],
    )  # fmt: skip


def answer(record: dict[str, Any]) -> str:
    return record["call"] if record["direction"] == "backward" else record["output"]


def test_every_chain_parses_and_its_answer_verifies(
    distilled: tuple[list[dict[str, Any]], ...],
) -> None:
    for records in distilled:
        assert records and all(record["verified"] for record in records)
        for record in records:
            found = REASONING.match(record["kept"]["completion"])
            assert found, record["kept"]["completion"]
            chain = found.group("chain")
            assert found.group("answer") == answer(record)
            if record["direction"] == "forward":
                assert chain.startswith(f"Call {record['call']}.")
            else:
                assert chain.startswith("The call must return ") and record["call"] in chain


def test_the_control_differs_in_a_stated_value_of_every_item(
    distilled: tuple[list[dict[str, Any]], ...],
) -> None:
    true, control = distilled
    assert [record["id"] for record in true] == [record["id"] for record in control]
    for right, wrong in zip(true, control, strict=True):
        kept, corrupted = right["kept"]["completion"], wrong["kept"]["completion"]
        assert SKELETON.sub("", kept) == SKELETON.sub("", corrupted)  # the same format
        assert STATED.findall(kept) != STATED.findall(corrupted), right["id"]


def test_restating_first_values_and_shown_literals_never_earns(
    distilled: tuple[list[dict[str, Any]], ...],
) -> None:
    for record in distilled[0]:
        entries = parse_column(column(record))
        first = "\n".join(f"{entry.name} = {entry.history[0]}" for entry in entries)
        restated = f"<Reasoning>{first}</Reasoning><Answer>{answer(record)}</Answer>"
        assert score(record, restated) <= 0.0, record["id"]
        shown = [
            f"{entry.name} = {value}" for entry in entries for value in entry.history
            if value not in entry.credited
        ]  # fmt: skip
        everything = "\n".join(shown * 3)
        assert score(record, f"{everything}\n<Answer>{answer(record)}</Answer>") <= 0.0


def test_padding_never_earns(distilled: tuple[list[dict[str, Any]], ...]) -> None:
    padded = 0
    for record in distilled[0]:
        entries = [entry for entry in parse_column(column(record)) if entry.complete]
        if not entries:
            continue
        listed = "\n".join(
            f"{entry.name} = {value}"
            for entry in entries
            for value in [*entry.history, "-987654321", "'never'"]
        )
        assert score(record, f"{listed}\n<Answer>{answer(record)}</Answer>") < 0.0
        padded += 1
    assert padded


def correct_trace(entries: tuple[ProbedValue, ...]) -> str:
    return "\n".join(f"{entry.name} = {value}" for entry in entries for value in entry.credited)


def test_a_chain_that_traces_correctly_scores_the_maximum(
    distilled: tuple[list[dict[str, Any]], ...],
) -> None:
    creditable = at_max = 0
    for record in distilled[0]:
        entries = parse_column(column(record))
        verdict = judge_chain(correct_trace(entries), entries)
        if not verdict.creditable:
            continue
        creditable += 1
        completion = f"<Reasoning>{correct_trace(entries)}</Reasoning><Answer>{answer(record)}</Answer>"  # fmt: skip
        for weight in (0.5, 1.0):
            assert process_score(
                completion, column(record), weight, answer_right=True,
                direction=record["direction"], call=record["call"],
            ) == weight  # fmt: skip
        # the trace teacher's own chain: never below 0, the maximum unless a loop it shortens
        # holds every computed value
        teacher = score(record, record["kept"]["completion"])
        assert teacher >= 0.0
        at_max += teacher == 1.0
    assert creditable >= 10 and at_max >= 0.8 * creditable


def test_nothing_is_positive_without_a_right_answer(
    distilled: tuple[list[dict[str, Any]], ...],
) -> None:
    for records in distilled:
        for record in records:
            entries = parse_column(column(record))
            chains = [record["kept"]["completion"], correct_trace(entries) + "\n<Answer>0</Answer>"]
            for chain in chains:
                assert score(record, chain, right=False) <= 0.0


def test_statements_of_the_trace_format_are_read() -> None:
    text = "line 4 `total += x` (iteration 2): total = 3, x = 2"
    assert [(s.name, s.literal, s.line, s.iteration) for s in stated_values(text, ["total", "x"])] == [
        ("total", "3", 4, "2"), ("x", "2", 4, "2"),
    ]  # fmt: skip
