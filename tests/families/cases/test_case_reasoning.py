"""The training task kinds: both directions prompted, extracted and graded through the sandbox."""

from __future__ import annotations

import pytest

from codereasoner import tasks
from codereasoner.execution import Pool
from codereasoner.families.cases.reasoning import BACKWARD_TASK, FORWARD_TASK, last_answer
from codereasoner.tasks import Item, ParseFailure, Reason

CODE = "def f(xs, k):\n    out = {}\n    for x in xs:\n        out[x % k] = x\n    return out"


def item(task: str, hint: str = "") -> Item:
    return Item(
        id=f"c0/{task}",
        benchmark="cases",
        task=task,
        program=CODE,
        entry="f",
        call="f([1, 2, 3], 2)",
        truth="{1: 3, 0: 2}",
        fields={"hint": hint} if hint else {},
    )


@pytest.fixture(scope="module")
def pool() -> Pool:
    with Pool(1) as shared:
        yield shared


def test_prompts_say_what_to_answer_and_where() -> None:
    forward = tasks.get(FORWARD_TASK).prompt(item(FORWARD_TASK))
    assert CODE in forward and "Call: f([1, 2, 3], 2)" in forward
    assert "<Reasoning>" in forward and "as a Python literal" in forward
    backward = tasks.get(BACKWARD_TASK).prompt(item(BACKWARD_TASK), "direct")
    assert "Returned value: {1: 3, 0: 2}" in backward and "Call:" not in backward
    assert "<Reasoning>" not in backward and "a call of f with literal arguments" in backward
    hinted = tasks.get(FORWARD_TASK).prompt(item(FORWARD_TASK, hint="L2 out = {}"))
    assert "An exact trace of this call" in hinted and "L2 out = {}" in hinted
    with pytest.raises(ValueError, match="expected one of reasoning, direct"):
        tasks.get(FORWARD_TASK).prompt(item(FORWARD_TASK), "cot")


def test_the_last_answer_is_taken() -> None:
    text = "<Answer>1</Answer> no, wait: <Answer> {0: 2} </Answer>"
    assert last_answer(text).text == "{0: 2}"  # type: ignore[union-attr]
    assert isinstance(last_answer("<Reasoning>x</Reasoning>"), ParseFailure)
    assert isinstance(last_answer("<Answer>  </Answer>"), ParseFailure)
    assert isinstance(last_answer("<Answer>1"), ParseFailure)  # cut off


@pytest.mark.parametrize("task", [FORWARD_TASK, BACKWARD_TASK])
@pytest.mark.parametrize("style", ["reasoning", "direct"])
def test_the_oracle_is_verified(task: str, style: str, pool: Pool) -> None:
    kind, case = tasks.get(task), item(task)
    answer = kind.extract(case, kind.oracle(case, style), style)
    assert kind.score(case, answer, pool).correct


@pytest.mark.parametrize(
    ("task", "answer", "right", "reason"),
    [
        (FORWARD_TASK, "{0: 2, 1: 3}", True, Reason.CORRECT),  # a dict's order does not matter
        (FORWARD_TASK, "{1: 3, 0: '2'}", False, Reason.WRONG),  # types must match
        (FORWARD_TASK, "f([1, 2, 3], 2)", False, Reason.NOT_LITERAL),  # never evaluated
        (FORWARD_TASK, "__import__('os').getpid()", False, Reason.NOT_LITERAL),
        (BACKWARD_TASK, "f([3, 2], 2)", True, Reason.CORRECT),  # any input that returns it
        (BACKWARD_TASK, "f([1, 2], 2)", False, Reason.WRONG),
        (BACKWARD_TASK, "g([1, 2, 3], 2)", False, Reason.WRONG_ENTRY),
        (BACKWARD_TASK, "f((lambda: [1, 2, 3])(), 2)", False, Reason.NOT_LITERAL),
        (BACKWARD_TASK, "f([1, 2, 3], 0)", False, Reason.ERROR),  # ZeroDivisionError
    ],
)
def test_answers_are_graded_strictly(
    task: str, answer: str, right: bool, reason: Reason, pool: Pool
) -> None:
    kind, case = tasks.get(task), item(task)
    score = kind.score(case, kind.extract(case, f"<Answer>{answer}</Answer>"), pool, "official")
    assert (score.correct, score.reason) == (right, reason), score
