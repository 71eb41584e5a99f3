"""The local helper servers (the replay server, and the replay teacher built on it) bound every
request and require their key on every route: a hostile request is one HTTP 400 or 401, and the
server goes on serving."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from codereasoner.models.replay_server import MAX_CHOICES, ReplayServer

KEY = "local-secret"


def _post(url: str, body: Any, key: str | None = KEY) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)
    return _open(request)


def _open(request: urllib.request.Request) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


GOOD = {"model": "replay", "prompt": "x", "max_tokens": 4}
HOSTILE = {
    "n far too large": {**GOOD, "n": 50_000_000},
    "n zero": {**GOOD, "n": 0},
    "n a string": {**GOOD, "n": "7"},
    "n a float": {**GOOD, "n": 2.5},
    "max_tokens huge": {**GOOD, "max_tokens": 10**30},
    "max_tokens negative": {**GOOD, "max_tokens": -1},
    "stop not strings": {**GOOD, "stop": [1, 2]},
    "stop too many": {**GOOD, "stop": ["a"] * 1000},
    "body a list": [GOOD],
    "body nested": b"[" * 100_000 + b"]" * 100_000,
}
HOSTILE_CHAT = {
    "messages not objects": {"model": "replay", "messages": ["hi"]},
    "content not a string": {"model": "replay", "messages": [{"role": "user", "content": [1]}]},
}


@pytest.fixture(scope="module")
def server() -> Any:
    with ReplayServer(api_key=KEY, model="replay") as running:
        yield running


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_completion_request_is_a_400_and_the_server_serves_on(
    server: Any, name: str
) -> None:
    status, body = _post(f"{server.url}/completions", HOSTILE[name])
    assert status == 400, body
    status, body = _post(f"{server.url}/completions", GOOD)
    assert status == 200 and len(body["choices"]) == 1


@pytest.mark.parametrize("name", HOSTILE_CHAT)
def test_a_hostile_chat_request_is_a_400(server: Any, name: str) -> None:
    status, body = _post(f"{server.url}/chat/completions", HOSTILE_CHAT[name])
    assert status == 400, body


def test_n_up_to_the_bound_is_served(server: Any) -> None:
    status, body = _post(f"{server.url}/completions", {**GOOD, "n": MAX_CHOICES})
    assert status == 200 and len(body["choices"]) == MAX_CHOICES


@pytest.mark.parametrize("route", ["/replay/stats", "/replay/reset"])
def test_every_route_needs_the_key(server: Any, route: str) -> None:
    base = server.url.removesuffix("/v1")
    method = "GET" if route.endswith("stats") else "POST"
    data = None if method == "GET" else b""
    anonymous = urllib.request.Request(base + route, data=data, method=method)
    assert _open(anonymous)[0] == 401
    keyed = urllib.request.Request(
        base + route, data=data, method=method, headers={"Authorization": f"Bearer {KEY}"}
    )
    assert _open(keyed)[0] == 200
    assert _post(f"{server.url}/completions", GOOD, key=None)[0] == 401
