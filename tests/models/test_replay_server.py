"""The replay server itself: in a child process, and its scripted replies."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from codereasoner.models import BackendError, Request, load_backend
from codereasoner.models.base import prompt_hash
from codereasoner.models.replay_server import (
    Recorded,
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


def write_records(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_recorded_completions_are_served_by_prompt_and_sample(tmp_path: Path) -> None:
    chat_key = prompt_hash("q", chat=True, system="be brief")
    recorded = Recorded.load(
        str(
            write_records(
                tmp_path / "r.jsonl",
                [
                    {"prompt": "x y", "completion": "first"},
                    {"prompt": "x y", "completion": "second"},  # the next sample of that prompt
                    {"prompt_hash": chat_key, "sample": 0, "completion": "chat answer"},
                ],
            )
        )
    )
    assert len(recorded) == 3
    with ReplayServer(recorded=recorded) as server:
        status, body = post(
            server.url + "/completions", {"model": "replay", "prompt": "x y", "n": 2}
        )
        assert status == 200 and [c["text"] for c in body["choices"]] == ["first", "second"]
        messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q"}]
        status, body = post(
            server.url + "/chat/completions", {"model": "replay", "messages": messages}
        )
        assert status == 200 and body["choices"][0]["message"]["content"] == "chat answer"
        status, body = post(
            server.url + "/completions", {"model": "replay", "prompt": "x y", "n": 3}
        )
        assert status == 400 and f"{prompt_hash('x y')} sample 2" in body["error"]["message"]
        status, _ = post(server.url + "/completions", {"model": "replay", "prompt": "other"})
        assert status == 400 and server.stats()["failures"] == 2
    with ReplayServer(recorded=recorded, missing="echo") as server:
        status, body = post(server.url + "/completions", {"model": "replay", "prompt": "other"})
        assert status == 200 and body["choices"][0]["text"].startswith("echo ")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1]", "expected a JSON object"),
        ('{"completion": "x"}', "give 'prompt_hash' or 'prompt'"),
        ('{"prompt": "p", "completion": 3}', "'completion' must be a string"),
        ('{"prompt": "p", "sample": -1, "completion": "x"}', "'sample' must be an integer"),
        ('{"prompt": "p", "sample": 0, "completion": "x"}\n{"prompt": "p", "sample": 0, '
         '"completion": "y"}', "duplicate sample 0"),
        ("{oops", "invalid JSON"),
    ],
)  # fmt: skip
def test_bad_completion_files_are_one_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=message) as caught:
        Recorded.load(str(path))
    assert str(caught.value).startswith(f"{path}:")


def test_command_line_refuses_an_unreadable_completions_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "codereasoner.models.replay_server", "--port", "0",
         "--completions", str(tmp_path / "absent.jsonl")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "absent.jsonl: cannot read" in done.stderr
    assert "Traceback" not in done.stderr
