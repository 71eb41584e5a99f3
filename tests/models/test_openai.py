"""The OpenAI-compatible backend against a real replay server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from codereasoner.models import (
    BackendError,
    Completion,
    Request,
    Sampling,
    SpecError,
    load_backend,
    parse_spec,
)
from codereasoner.models.base import BackendUnavailable, model_identity
from codereasoner.models.openai import OpenAIBackend, cut_at_stop, share_tokens
from codereasoner.models.replay_server import Query, ReplayServer, count_tokens, echo_reply

FAST = {"backoff_s": 0.01, "backoff_max_s": 0.05}


def backend(server: ReplayServer, **options: object) -> OpenAIBackend:
    made = load_backend(f"openai:{server.model}@{server.url}", **{**FAST, **options})
    assert isinstance(made, OpenAIBackend)
    return made


def collect(model: OpenAIBackend, requests: list[Request]) -> dict[int, list[Completion]]:
    results: dict[int, list[Completion]] = {}

    def on_result(index: int, completions: list[Completion]) -> None:
        assert index not in results, "each request is reported once"
        results[index] = completions

    model.generate(requests, on_result)
    assert sorted(results) == list(range(len(requests)))
    return results


def test_spec_strings() -> None:
    assert str(parse_spec("openai:m@http://h:1/v1/")) == "openai:m@http://h:1/v1"
    assert parse_spec("hf:/tmp/x").kind == "hf"
    for bad in ("gpt4", "openai:m", "openai:m@ftp://x", "hf:", "tgi:x"):
        with pytest.raises(SpecError):
            parse_spec(bad)
    with pytest.raises(SpecError, match="batch_size"):
        load_backend("openai:m@http://127.0.0.1:1/v1", batch_size=4)
    # options of other kinds left unset (None) are ignored, so a CLI can pass all its flags
    made = load_backend("openai:m@http://127.0.0.1:1/v1", batch_size=None, concurrency=3)
    assert isinstance(made, OpenAIBackend) and made.concurrency == 3
    assert made.model_id == "openai:m@http://127.0.0.1:1/v1"
    assert load_backend("oracle").model_id == "oracle"  # imported only when asked for
    with pytest.raises(SpecError, match="do not apply to oracle"):
        load_backend("oracle", concurrency=4)


def test_raw_completion_samples_and_token_counts(replay: ReplayServer) -> None:
    sampling = Sampling(temperature=0.8, max_tokens=200)
    requests = [
        Request(f"def f{i}(x):\n    return x", samples=(0, 1, 2), sampling=sampling)
        for i in range(5)
    ]
    results = collect(backend(replay), requests)
    for request, completions in zip(requests, results.values(), strict=True):
        assert [c.sample for c in completions] == [0, 1, 2]
        expected = [echo_reply(Query(request.prompt, None, {}, i)) for i in range(3)]
        assert [c.text for c in completions] == expected
        assert all(c.finish_reason == "stop" for c in completions)
        assert {c.prompt_tokens for c in completions} == {count_tokens(request.prompt)}
        assert sum(c.completion_tokens or 0 for c in completions) == sum(
            map(count_tokens, expected)
        )
    # one call per request: n=3 choices each
    assert replay.stats()["requests"] == 5 and replay.stats()["completions"] == 15


def test_chat_and_raw_use_their_endpoints() -> None:
    seen: list[tuple[bool, list | None]] = []

    def reply(query: Query) -> str:
        seen.append((query.chat, query.messages))
        return "chat" if query.chat else "raw"

    with ReplayServer(reply=reply) as server:
        requests = [Request("p", chat=True, system="be brief"), Request("p", chat=False)]
        results = collect(backend(server), requests)
    assert results[0][0].text == "chat" and results[1][0].text == "raw"
    messages = next(m for chat, m in seen if chat)
    assert messages == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "p"}]


def test_stop_sequences_and_length() -> None:
    with ReplayServer(reply=lambda query: "a = 1\n[ANSWER] 42 [/ANSWER] trailing words") as server:
        stop = Sampling(stop=("[/ANSWER]",))
        short = Sampling(max_tokens=3)
        results = collect(
            backend(server), [Request("q", sampling=stop), Request("q", sampling=short)]
        )
    assert results[0][0].text == "a = 1\n[ANSWER] 42 "
    assert results[0][0].finish_reason == "stop"
    assert results[1][0].text == "a = 1" and results[1][0].finish_reason == "length"
    assert results[1][0].completion_tokens == 3
    assert cut_at_stop("x<s>y</s>", ("</s>", "<s>")) == ("x", True)
    assert cut_at_stop("xyz", ("q",)) == ("xyz", False)


def test_share_tokens_keeps_the_total() -> None:
    assert share_tokens(10, ["aaaa", "a", ""]) == [8, 2, 0]
    assert share_tokens(10, ["aa", "a"]) == [7, 3]  # the remainder goes to the longest
    assert share_tokens(7, ["abc"]) == [7]
    assert share_tokens(None, ["a", "b"]) == [None, None]
    assert sum(share_tokens(5, ["", ""])) == 5


def test_greedy_is_one_call_and_seeds_are_per_sample(replay: ReplayServer) -> None:
    model = backend(replay)
    greedy = collect(model, [Request("g", samples=(0, 1, 2, 3))])[0]
    assert len({c.text for c in greedy}) == 1
    assert replay.stats()["requests"] == 1
    replay.reset()
    seeded = Sampling(temperature=1.0, seed=100)
    both = collect(model, [Request("s", samples=(0, 1, 2), sampling=seeded)])[0]
    assert replay.stats()["requests"] == 3  # one call per sample
    later = collect(model, [Request("s", samples=(2,), sampling=seeded)])[0]
    assert later[0].text == both[2].text  # sample 2 does not depend on what came with it
    assert len({c.text for c in both}) == 3


def test_fewer_choices_than_asked_are_topped_up() -> None:
    with ReplayServer(max_choices=2) as server:
        completions = collect(
            backend(server),
            [Request("x", samples=(0, 1, 2, 3, 4), sampling=Sampling(temperature=1))],
        )[0]
        assert [c.sample for c in completions] == [0, 1, 2, 3, 4]
        assert server.stats()["requests"] == 3  # 2 + 2 + 1 choices


def test_retries_on_429_and_5xx_honour_retry_after() -> None:
    with ReplayServer(failures=(429, 503, 500), retry_after_s=0.05) as server:
        requests = [Request(f"prompt {i}") for i in range(4)]
        results = collect(backend(server, max_retries=3), requests)
        stats = server.stats()
    assert stats["requests"] == 16 and stats["failures"] == 12  # 3 failures + 1 success each
    assert [results[i][0].text for i in range(4)] == [
        echo_reply(Query(f"prompt {i}", None, {}, 0)) for i in range(4)
    ]
    # Retry-After (0.05 s) was waited twice per prompt, plus the backoff after the 500
    assert min(c[0].latency_s for c in results.values()) >= 0.1


def test_gives_up_after_max_retries() -> None:
    with ReplayServer(failures=(503,) * 10) as server:
        with pytest.raises(BackendError, match=r"gave up after 3 attempts; last: HTTP 503"):
            collect(backend(server, max_retries=2), [Request("x")])
        assert server.stats()["requests"] == 3


def test_timeout_then_retry_succeeds_and_persistent_slowness_fails() -> None:
    attempts: dict[str, int] = {}
    lock = threading.Lock()

    def latency(prompt: str) -> float:
        with lock:
            attempts[prompt] = attempts.get(prompt, 0) + 1
            first = attempts[prompt] == 1
        return 5.0 if prompt == "always slow" or first else 0.0

    with ReplayServer(latency_s=latency) as server:
        model = backend(server, timeout_s=0.5, max_retries=1)
        done = collect(model, [Request("slow once")])
        assert done[0][0].text == echo_reply(Query("slow once", None, {}, 0))
        with pytest.raises(BackendError, match="timed out"):
            collect(model, [Request("always slow")])
    assert attempts == {"slow once": 2, "always slow": 2}


def test_wrong_key_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAY_TEST_KEY", "wrong-secret-key")
    with ReplayServer(api_key="right-key") as server:
        model = backend(server, api_key_env="REPLAY_TEST_KEY")
        with pytest.raises(BackendError) as caught:
            model.preflight()
        message = str(caught.value)
        assert "REPLAY_TEST_KEY" in message and "401" in message and "\n" not in message
        assert "wrong-secret-key" not in message and "wrong-secret-key" not in repr(model)
        server.reset()
        with pytest.raises(BackendError, match="rejected the API key"):
            collect(model, [Request("x")] * 3)
        assert 1 <= server.stats()["requests"] <= 3  # no retries on 401
        monkeypatch.setenv("REPLAY_TEST_KEY", "right-key")
        good = backend(server, api_key_env="REPLAY_TEST_KEY")
        good.preflight()
        assert collect(good, [Request("x")])[0][0].text


def test_unknown_model_names_the_served_ones(replay: ReplayServer) -> None:
    model = load_backend(f"openai:qwen-7b@{replay.url}")
    with pytest.raises(BackendError, match=r"does not serve model 'qwen-7b' \(it serves: replay\)"):
        model.preflight()
    with pytest.raises(BackendError, match="404"):
        collect(model, [Request("x")])
    backend(replay).preflight()


def test_unreachable_server() -> None:
    with ReplayServer() as server:
        url = server.url
    model = load_backend(f"openai:replay@{url}", max_retries=1, **FAST)
    with pytest.raises(BackendError, match=r"cannot reach http://127\.0\.0\.1:\d+/v1"):
        model.preflight()
    with pytest.raises(BackendError, match="gave up after 2 attempts; last: connection failed"):
        collect(model, [Request("x")])


def test_concurrency_is_bounded_and_high_by_default() -> None:
    gate = {"wanted": 8, "open": False}

    async def hold(prompt: str) -> None:
        """Hold replies until `wanted` requests are in flight at once (or 10 s have passed)."""
        deadline = time.monotonic() + 10
        while not gate["open"] and time.monotonic() < deadline:
            gate["open"] = server.in_flight >= gate["wanted"]
            await asyncio.sleep(0.02)

    with ReplayServer(latency_s=hold) as server:
        collect(backend(server, concurrency=8), [Request(f"{i}") for i in range(40)])
        assert server.stats()["max_in_flight"] == 8
        server.reset()
        gate.update(wanted=256, open=False)
        collect(backend(server), [Request(f"{i}") for i in range(300)])
        assert server.stats()["max_in_flight"] >= 256
        assert server.stats()["completions"] == 300


def test_callback_errors_propagate_and_loops_nest(replay: ReplayServer) -> None:
    def broken(index: int, completions: list[Completion]) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        backend(replay).generate([Request("x")] * 5, broken)

    async def inside_a_loop() -> dict[int, list[Completion]]:
        return collect(backend(replay), [Request("y")])

    assert asyncio.run(inside_a_loop())[0][0].text


def test_failures_that_go_on_are_warned_about_then_the_recovery_noted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="codereasoner.models.openai")
    with ReplayServer(failures=(503,) * 5) as server:
        model = OpenAIBackend(
            server.model, server.url, backoff_s=0.05, backoff_max_s=0.1, warn_after_s=0.1
        )
        assert collect(model, [Request("x")])[0][0].text
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # then not again before warn_every_s
    assert warnings[0].startswith(f"{server.url}/completions: every request has failed for")
    assert "HTTP 503" in warnings[0]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == [f"{server.url}: the server answers again"]


def test_short_failures_are_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="codereasoner.models.openai")
    with ReplayServer(failures=(503, 503)) as server:
        collect(backend(server), [Request("x")])
    assert not caplog.records


def test_the_last_attempt_gives_up_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="codereasoner.models.openai")
    with ReplayServer(failures=(503,) * 5) as server:
        # the second (last) attempt comes 0.1-0.2 s after the first: past warn_after_s
        model = OpenAIBackend(
            server.model, server.url, max_retries=1, backoff_s=0.2, warn_after_s=0.05
        )
        with pytest.raises(BackendUnavailable, match="gave up after 2 attempts; last: HTTP 503"):
            collect(model, [Request("x")])
        assert server.stats()["requests"] == 2
    assert not caplog.records  # no "still retrying" right before giving up


def test_a_permanent_refusal_is_not_unavailable() -> None:
    with (
        ReplayServer(failures=(400,)) as server,
        pytest.raises(BackendError, match="HTTP 400") as caught,
    ):
        collect(backend(server), [Request("x")])
    assert not isinstance(caught.value, BackendUnavailable)


def test_the_identity_leaves_out_the_server_url() -> None:
    a = load_backend("openai:qwen@http://node17:8000/v1")
    b = load_backend("openai:qwen@https://node18/v1/")
    assert a.model_id != b.model_id
    assert model_identity(a.model_id) == model_identity(b.model_id) == "openai:qwen"
    assert model_identity("openai:org@x@http://h/v1") == "openai:org@x"  # split at the last @
    for own in ("hf:/models/q@v2", "vllm:Qwen/Qwen2.5", "oracle"):
        assert model_identity(own) == own
