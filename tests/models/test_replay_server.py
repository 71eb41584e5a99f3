"""The replay server itself: in a child process, and its scripted replies."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from codereasoner.models import BackendError, Request, load_backend
from codereasoner.models.replay_server import (
    ReplayProcess,
    ReplayServer,
    count_tokens,
    cut_at_tokens,
)


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_child_process_with_failures_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with ReplayProcess(fail=(429, 503), retry_after_s=0.01, api_key="sesame") as server:
        monkeypatch.setenv("REPLAY_KEY", "sesame")
        model = load_backend(
            f"openai:replay@{server.url}", api_key_env="REPLAY_KEY", backoff_s=0.01
        )
        model.preflight()
        done: list[str] = []
        model.generate([Request("a"), Request("b")], lambda i, c: done.append(c[0].text))
        assert len(done) == 2
        stats = server.stats()
        assert (stats["requests"], stats["completions"], stats["failures"]) == (6, 2, 4)
        monkeypatch.delenv("REPLAY_KEY")
        with pytest.raises(BackendError, match=r"\$REPLAY_KEY \(it is unset\)"):
            load_backend(f"openai:replay@{server.url}", api_key_env="REPLAY_KEY").preflight()
        server.reset()
        assert server.stats()["requests"] == 0


def test_models_choices_stop_and_length(replay: ReplayServer) -> None:
    with urllib.request.urlopen(replay.url + "/models") as response:
        assert [entry["id"] for entry in json.loads(response.read())["data"]] == ["replay"]
    status, body = post(
        replay.url + "/completions",
        {"model": "replay", "prompt": "x y z", "n": 3, "max_tokens": 2, "stop": ["never"]},
    )
    assert status == 200 and [c["index"] for c in body["choices"]] == [0, 1, 2]
    assert all(c["finish_reason"] == "length" for c in body["choices"])
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9}
    status, body = post(replay.url + "/chat/completions", {"model": "replay", "messages": "no"})
    assert status == 400 and "messages" in body["error"]["message"]
    assert cut_at_tokens("a, b c", 2) == ("a,", True)
    assert cut_at_tokens("a b", 5) == ("a b", False)
    assert count_tokens("f(x) == 3") == 7  # f ( x ) = = 3
