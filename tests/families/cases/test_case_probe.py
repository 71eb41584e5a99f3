"""The ``case_probe`` task kind: prompt, extraction, grading against the probe's truth (no
sandbox) and the oracle, on a probe of a real traced call."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from codereasoner import tasks
from codereasoner.execution import Pool, Program, parse_call
from codereasoner.families.cases.probe import PROBE_TASK
from codereasoner.programs.probes import probes_for
from codereasoner.tasks import Item, Reason
from codereasoner.trace import trace_call

CODE = (
    "def f(nums):\n    total = {}\n    for n in nums:\n        total[n] = n * 2\n    return total"
)
CALL = "f([1, 2, 3])"


@pytest.fixture(scope="module")
def items(pool: Pool) -> list[Item]:
    traced = trace_call(pool, Program(CODE, "f"), parse_call(CALL))
    assert traced.trace is not None
    probes = probes_for(CODE, traced.trace, frame="f", limit=4, rng=random.Random(0))
    assert probes
    return [
        Item(
            f"c/probe/{n}",
            "cases",
            PROBE_TASK,
            program=CODE,
            entry="f",
            call=CALL,
            truth=probe.truth,
            fields={"question": probe.question},
        )
        for n, probe in enumerate(probes)
    ]


def grade(item: Item, *texts: str, style: str = "reasoning") -> list[tasks.Score]:
    kind = tasks.get(PROBE_TASK)
    answers = [kind.extract(item, text, style) for text in texts]
    return tasks.run_plans(None, [kind.plan(item, answers, "strict")])[0]  # no sandbox


def test_the_prompt_shows_code_call_and_question(items: list[Item]) -> None:
    kind = tasks.get(PROBE_TASK)
    assert PROBE_TASK in tasks.names()
    for item in items:
        for style in ("reasoning", "direct"):
            prompt = kind.prompt(item, style)
            assert CODE in prompt and f"Call: {CALL}" in prompt  # braces in the code kept
            assert f"Question: {item.fields['question']}" in prompt
            assert ("<Reasoning>" in prompt) == (style == "reasoning")
            assert "<Answer>" in prompt
        hinted = kind.prompt(replace(item, fields={**item.fields, "hint": "TR"}))
        assert "TR" in hinted
    with pytest.raises(ValueError, match="expected one of"):
        kind.prompt(items[0], "cot")


def test_grading_matches_the_truth_and_the_oracle_is_right(items: list[Item]) -> None:
    kind = tasks.get(PROBE_TASK)
    for item in items:
        for style in ("reasoning", "direct"):
            (oracle,) = grade(item, kind.oracle(item, style), style=style)
            assert oracle.correct, item.id
        right, named, wrong, missing, prose = grade(
            item,
            f"<Reasoning>the last answer block counts</Reasoning><Answer>0</Answer>"
            f"<Answer>{item.truth}</Answer>",
            f"<Answer>x = {item.truth}</Answer>",
            "<Answer>'certainly not this'</Answer>",
            f"the value is {item.truth}",
            "<Answer>I do not know</Answer>",
        )
        assert right.correct and named.correct, item.id
        assert wrong.reason is Reason.WRONG and not wrong.correct
        assert missing.reason is Reason.NO_ANSWER
        assert not prose.correct
