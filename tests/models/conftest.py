"""Fixtures for the backend tests: a replay server on 127.0.0.1 (the tiny model: tests/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from codereasoner.models.replay_server import ReplayServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    """A replay server with default behaviour (echo replies, no latency, no key)."""
    with ReplayServer() as server:
        yield server
