"""The RL reward's core scorer and its TRL front-end, on the real sandbox (no mocks)."""

from __future__ import annotations

import pickle
import time
from dataclasses import replace

import pytest

from codereasoner.execution import Limits, Pool
from codereasoner.training.rewards import (
    CodeReasoningReward,
    RewardConfig,
    Sample,
    compute_score,
    compute_score_batch,
    format_reward,
    length_penalty,
    score_batch,
)

pytestmark = pytest.mark.train

INC = "def f(x):\n    return x + 1"
EQ_ALWAYS = (
    "class Same:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n\n"
    "def f(x):\n    return Same() if x == 0 else x + 1"
)
HOSTILE = """import os, sys, time

def f(x):
    if x == 'spin':
        while True:
            pass
    if x == 'sleep':
        time.sleep(60)
    if x == 'crash':
        raise ValueError('boom')
    if x == 'exit':
        os._exit(3)
    if x == 'flood':
        while True:
            print('y' * 4096)
    if x == 'memory':
        return len(bytearray(1 << 33))
    return x * 2
"""


def row(direction: str, text: str, code: str = INC, **changes: object) -> Sample:
    sample = Sample(direction, code, "f", "f(172)", "173", "case-1", text)
    return replace(sample, **changes)  # type: ignore[arg-type]


def answer(text: str) -> str:
    return f"<Reasoning>add one</Reasoning>\n<Answer>{text}</Answer>"


FORWARD = {
    "right": (answer("173"), 2.0),
    "right, last answer wins": ("<Answer>5</Answer> no: " + answer("173"), 2.0),
    "wrong": (answer("174"), 0.0),
    "wrong type": (answer("'173'"), 0.0),
    "unparsable": (answer("173 +"), 0.0),
    "empty": (answer("  "), 0.0),
    "missing": ("the answer is 173", 0.0),
    "expression": (answer("172 + 1"), 0.0),
    "call": (answer("f(172)"), 0.0),
    "import": (answer("__import__('os').getpid()"), 0.0),
    "lambda": (answer("(lambda: 173)()"), 0.0),
    "int past the decimal digit limit": (answer("0x" + "f" * 4000), 0.0),
    "nested past the parser": (answer("[" * 3000 + "]" * 3000), 0.0),
}
BACKWARD = {
    "right": (answer("f(172)"), 2.0),
    "right, keyword": (answer("f(x=172)"), 2.0),
    "wrong": (answer("f(1)"), 0.0),
    "other function": (answer("g(172)"), 0.0),
    "unparsable": (answer("f(172"), 0.0),
    "empty": (answer(""), 0.0),
    "missing": ("f(172)", 0.0),
    "nested call": (answer("f(f(171))"), 0.0),
    "import": (answer("f(__import__('os').getpid())"), 0.0),
    "lambda": (answer("f((lambda: 172)())"), 0.0),
    "plain value": (answer("173"), 0.0),
    "int past the decimal digit limit": (answer("f(0x" + "f" * 4000 + ")"), 0.0),
    "nested past the parser": (answer("f(" + "[" * 3000 + "]" * 3000 + ")"), 0.0),
}


@pytest.mark.parametrize("direction, cases", [("forward", FORWARD), ("backward", BACKWARD)])
def test_each_answer_gets_its_reward(pool: Pool, direction: str, cases: dict) -> None:
    samples = [row(direction, text) for text, _ in cases.values()]
    batch = score_batch(samples, pool)
    got = dict(zip(cases, batch.rewards, strict=True))
    assert got == {name: reward for name, (_, reward) in cases.items()}, batch.reasons()


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_truncated_and_over_long_completions_score_zero(pool: Pool, direction: str) -> None:
    right = answer("173" if direction == "forward" else "f(172)")
    config = RewardConfig(max_chars=len(right) + 10)
    samples = [
        row(direction, right),
        row(direction, right, truncated=True),
        row(direction, "x" * 20 + right),
    ]
    batch = score_batch(samples, pool, config)
    assert batch.rewards == [2.0, 0.0, 0.0]
    assert batch.reasons() == ["correct", "truncated", "too_long"]
    assert batch.metrics["truncation_rate"] == pytest.approx(2 / 3)


def test_the_reward_for_a_right_answer_is_configurable(pool: Pool) -> None:
    batch = score_batch([row("forward", answer("173"))], pool, RewardConfig(correct=1.0))
    assert batch.rewards == [1.0]


def test_an_always_equal_object_is_not_the_target(pool: Pool) -> None:
    samples = [
        row("backward", answer("f(0)"), EQ_ALWAYS),
        row("backward", answer("f(172)"), EQ_ALWAYS),
    ]
    batch = score_batch(samples, pool)
    assert batch.rewards == [0.0, 2.0]
    assert batch.reasons()[0] == "non_literal_value"


def test_hostile_backward_answers_score_zero_and_the_rest_is_scored(pool: Pool) -> None:
    hostile = ["spin", "sleep", "crash", "exit", "flood", "memory"]
    texts = [answer(f"f({name!r})") for name in hostile] + [answer("f('ok')"), answer("f('no')")]
    samples = [row("backward", text, HOSTILE, target="'okok'") for text in texts]
    start = time.monotonic()
    batch = score_batch(samples, pool)
    elapsed = time.monotonic() - start
    assert batch.rewards == [0.0] * len(hostile) + [2.0, 0.0], batch.reasons()
    reasons = dict(zip([*hostile, "ok", "no"], batch.reasons(), strict=True))
    assert reasons["spin"] == reasons["sleep"] == "timeout"
    assert reasons["crash"] == "error" and reasons["flood"] == "output_limit"
    assert reasons["exit"] in {"error", "killed"} and reasons["memory"] in {"memory", "error"}
    # A hang guard, not a speed figure: the answers run in parallel, each under the probe's
    # 1.5 s wall limit then the full limits' 2 s; ten times that is never reached unless a
    # limit failed to cut an answer.
    assert elapsed < 10 * (1.5 + 2.0), elapsed


def test_a_sandbox_failure_is_masked_not_wrong(pool: Pool) -> None:
    impossible = RewardConfig(limits=Limits(timeout_s=1.0, memory_mb=1 << 45))
    samples = [row("backward", answer("f(172)")), row("backward", answer("f(1)"))]
    samples.append(row("forward", answer("173")))  # forward answers need no sandbox
    batch = score_batch(samples, pool, impossible)
    assert batch.rewards == [None, None, 2.0]
    assert batch.reasons()[:2] == ["sandbox_error", "sandbox_error"]
    assert batch.metrics["masked_rate"] == pytest.approx(2 / 3)
    assert "accuracy/backward" not in batch.metrics  # masked answers count for nothing


def test_the_completions_of_a_prompt_share_one_sandbox_batch(pool: Pool) -> None:
    double = "def f(x):\n    return x * 2"
    samples = [row("backward", answer(f"f({n})")) for n in range(170, 176)]
    samples += [row("backward", answer(f"f({n})"), double, case_id="c2") for n in range(4)]
    samples += [row("forward", answer("173"))] * 3
    sizes: list[int] = []
    pool.on_batch = sizes.append
    try:
        batch = score_batch(samples, pool)
    finally:
        pool.on_batch = None
    assert sorted(sizes) == [4, 6]
    assert batch.rewards[:6] == [0.0, 0.0, 2.0, 0.0, 0.0, 0.0]


def test_metrics_by_direction(pool: Pool) -> None:
    samples = [
        row("forward", answer("173")),
        row("forward", answer("1")),
        row("forward", "no answer"),
        row("backward", answer("f(172)")),
        row("backward", answer("f(x")),
        row("backward", answer("f(172)"), truncated=True),
    ]
    metrics = score_batch(samples, pool).metrics
    assert metrics["accuracy/forward"] == pytest.approx(1 / 3)
    assert metrics["accuracy/backward"] == pytest.approx(1 / 3)
    assert metrics["parse_failure_rate"] == pytest.approx(2 / 6)
    assert metrics["truncation_rate"] == pytest.approx(1 / 6)
    assert metrics["reasons/correct"] == 2 and metrics["reasons/wrong_value"] == 1
    assert metrics["reasons/no_answer"] == 1 and metrics["reasons/not_a_literal"] == 1


def test_an_unknown_direction_is_refused(pool: Pool) -> None:
    with pytest.raises(ValueError, match="direction"):
        score_batch([row("sideways", answer("173"))], pool)


def columns(samples: list[Sample]) -> dict[str, list[str]]:
    names = ("direction", "code", "entry_point", "call", "target", "case_id")
    return {name: [getattr(s, name) for s in samples] for name in names}


def test_the_trl_reward_reads_columns_ids_and_logs(pool: Pool) -> None:
    samples = [row("forward", "")] * 2 + [row("backward", "")] * 2
    texts = [answer("173"), answer("173"), answer("f(172)"), answer("f(2)")]
    completions = [[{"role": "assistant", "content": text}] for text in texts]
    ids = [[5, 6, 2], [5, 6, 7], [5, 0], [5, 2]]  # the second was cut: no EOS at its end
    metrics: dict[str, float] = {}
    extra: dict[str, list] = {}
    with CodeReasoningReward(eos_token_ids=[2, 0], workers=1) as reward:
        rewards = reward(
            prompts=["p"] * 4,
            completions=completions,
            completion_ids=ids,
            log_metric=metrics.__setitem__,
            log_extra=extra.__setitem__,
            trainer_state=None,
            **columns(samples),
        )
        assert rewards == [2.0, 0.0, 2.0, 0.0]
        assert extra["outcome"] == ["correct", "truncated", "correct", "wrong_value"]
        assert metrics["code_reasoning/truncation_rate"] == 0.25
        assert metrics["code_reasoning/accuracy/backward"] == 0.5
        # picklable at any time: the copy opens its own pool in the process that calls it
        copy = pickle.loads(pickle.dumps(reward))
        assert copy._pool is None
        with copy:
            assert copy(completions=texts, **columns(samples)) == [2.0, 2.0, 2.0, 0.0]
        assert copy._pool is None
    assert reward._pool is None


def test_the_trl_reward_needs_eos_ids_to_see_truncation() -> None:
    samples = [row("forward", "")]
    with CodeReasoningReward(workers=1) as reward, pytest.raises(ValueError, match="eos_token_ids"):
        reward(completions=[answer("173")], completion_ids=[[5, 6]], **columns(samples))


def test_the_trl_reward_needs_the_columns() -> None:
    with CodeReasoningReward(workers=1) as reward, pytest.raises(ValueError, match="case_id"):
        reward(
            completions=["x"],
            direction=["forward"],
            code=[INC],
            entry_point=["f"],
            call=["f(1)"],
            target=["2"],
        )


def test_verl_scores_in_process(pool: Pool) -> None:
    info = {
        "code": INC,
        "entry_point": "f",
        "direction": "backward",
        "target": "173",
        "call": "f(172)",
        "case_id": "c",
    }
    right = compute_score("codereasoner", answer("f(172)"), "173", info)
    assert right == {
        "score": 2.0,
        "correct": 1.0,
        "sandbox_error": 0.0,
        "parse_failure": 0.0,
        "truncated": 0.0,
    }
    scores = compute_score_batch(
        ["codereasoner"] * 2, [answer("f(1)"), "none"], ["173"] * 2, [info, info], correct=1.0
    )
    assert [s["score"] for s in scores] == [0.0, 0.0]
    assert [s["parse_failure"] for s in scores] == [0.0, 1.0]


def test_format_and_length_terms() -> None:
    good = "<Reasoning>r</Reasoning>\n<Answer>1</Answer>"
    bad = [
        "<Answer>1</Answer>",
        good + "<Answer>2</Answer>",
        "<Reasoning>r</Reasoning><Answer></Answer>",
    ]
    assert format_reward([good, *bad], weight=0.5) == [0.5, 0.0, 0.0, 0.0]
    assert format_reward([[{"role": "assistant", "content": good}]]) == [1.0]
    ids = [[0] * n for n in (10, 80, 90, 100)]
    assert length_penalty(ids, max_length=100, buffer=20) == [0.0, 0.0, -0.5, -1.0]


def _score_in_child(reward: CodeReasoningReward, texts: list[str]) -> tuple[list, bool]:
    samples = [row("backward", "")] * len(texts)
    with reward:
        return reward(completions=texts, **columns(samples)), reward._pool is not None


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_the_trl_reward_works_in_another_process(method: str) -> None:
    import multiprocessing

    texts = [answer("f(172)"), answer("f(3)")]
    samples = [row("backward", "")] * 2
    with CodeReasoningReward(workers=1) as reward:
        assert reward(completions=texts, **columns(samples)) == [2.0, 0.0]  # the parent's pool
        with multiprocessing.get_context(method).Pool(1) as children:
            rewards, opened = children.apply(_score_in_child, (reward, texts))
        assert rewards == [2.0, 0.0] and opened
        assert reward(completions=texts, **columns(samples)) == [2.0, 0.0]  # still serves
