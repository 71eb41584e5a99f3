"""Reasoning models' hidden thinking: both reply shapes from a real server on 127.0.0.1, and the
visible text a distillation keeps."""

from __future__ import annotations

import time

import pytest

from codereasoner.models import Completion, Request, Sampling, load_backend
from codereasoner.models.base import Backend
from codereasoner.models.openai import OpenAIBackend
from codereasoner.models.replay_server import Query, ReplayServer, count_tokens
from codereasoner.models.thinking import MAX_REPLY_CHARS, WithoutThinking, visible_text

ANSWER = "<Reasoning>x + 1 is 4</Reasoning>\n<Answer>4</Answer>"
THINKING = "Hmm, f adds one. Is it <Answer>5</Answer>? No: 3 + 1 is 4."


def answer(query: Query) -> str:
    return ANSWER


def thinking(query: Query) -> str:
    return THINKING


def generate(backend: Backend, request: Request) -> list[Completion]:
    results: dict[int, list[Completion]] = {}

    def on_result(index: int, completions: list[Completion]) -> None:
        results[index] = completions

    backend.generate([request], on_result)
    return results[0]


def openai(server: ReplayServer) -> OpenAIBackend:
    made = load_backend(f"openai:{server.model}@{server.url}", backoff_s=0.01)
    assert isinstance(made, OpenAIBackend)
    return made


CHAT = Request(
    "f(3)?", samples=(0, 1), sampling=Sampling(temperature=0.7, max_tokens=500), chat=True
)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_thinking_a_server_reports_apart_is_kept_apart(field: str) -> None:
    with ReplayServer(reply=answer, reasoning=thinking, reasoning_field=field) as server:
        completions = generate(openai(server), CHAT)
    for completion in completions:
        assert completion.text == ANSWER  # what is graded: the answer alone
        assert completion.reasoning == THINKING
        assert completion.finish_reason == "stop"
    # the thinking is generated tokens too: usage counts it, and so do the shares
    total = 2 * (count_tokens(ANSWER) + count_tokens(THINKING))
    assert sum(c.completion_tokens or 0 for c in completions) == total


def test_the_thinking_counts_against_max_tokens() -> None:
    short = Request("f(3)?", sampling=Sampling(max_tokens=count_tokens(THINKING) + 3), chat=True)
    with ReplayServer(reply=answer, reasoning=thinking) as server:
        (cut,) = generate(openai(server), short)
    assert cut.reasoning == THINKING and cut.finish_reason == "length"
    assert cut.text == "<Reasoning>"  # the three tokens the thinking left


def test_a_reply_with_its_thinking_in_the_text_reaches_the_benchmarks_as_sent() -> None:
    """Without a reasoning parser the thinking is in the content; the backend does not edit
    what benchmarks grade, a distillation keeps the visible text (below)."""
    prefilled = f"{THINKING}\n</think>\n\n{ANSWER}"
    with ReplayServer(reply=lambda query: prefilled) as server:
        model = openai(server)
        sent, _ = generate(model, CHAT)
        visible, _ = generate(WithoutThinking(model), CHAT)
    assert sent.text == prefilled and sent.reasoning is None
    assert visible.text == ANSWER
    assert WithoutThinking(model).model_id == model.model_id


@pytest.mark.parametrize(
    ("text", "visible"),
    [
        (ANSWER, ANSWER),  # no tags: unchanged, whitespace included
        (f"  {ANSWER}\n", f"  {ANSWER}\n"),
        (f"<think>\n{THINKING}\n</think>\n\n{ANSWER}", ANSWER),
        (f"{THINKING}</think>{ANSWER}", ANSWER),  # the template wrote the opening tag
        (f"{THINKING}</think></think>\n{ANSWER}", ANSWER),
        (f"<think>a<think>b</think>c</think>{ANSWER}", ANSWER),  # nested
        (f"{ANSWER}<think>{THINKING}", ANSWER),  # thinking never closed: cut at the limit
        (f"<think>{THINKING}", ""),
        (f"<think>{THINKING}</think>", ""),
        (f"<think>x</think>{ANSWER}<think>y</think> done", f"{ANSWER} done"),
    ],
)
def test_visible_text(text: str, visible: str) -> None:
    assert visible_text(text) == visible
    assert "think>" not in visible_text(text)


@pytest.mark.parametrize(
    "text",
    ["<think>" * 20_000, "</think>" * 20_000, "<think></think>" * 20_000, "<think>a" * 200_000],
)
def test_pathological_tags_take_linear_time(text: str) -> None:
    started = time.process_time()  # CPU time: a loaded machine does not stretch it
    assert visible_text(text + ANSWER) in ("", ANSWER)
    assert time.process_time() - started < 0.5


def test_a_reply_over_the_cap_is_read_up_to_the_cap() -> None:
    huge = "<think>" + "x" * MAX_REPLY_CHARS + f"</think>{ANSWER}"
    assert visible_text(huge) == ""  # its thinking never closed within the cap
