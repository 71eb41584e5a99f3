"""Fixtures for the backend tests: a replay server on 127.0.0.1 and a tiny local model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codereasoner.models.replay_server import ReplayServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    """A replay server with default behaviour (echo replies, no latency, no key)."""
    with ReplayServer() as server:
        yield server


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random Qwen2-style model with a locally trained tokenizer (training.md, section 3)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.models.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"))
