"""Shared fixtures: a real sandbox pool (bubblewrap isolation; `make test` installs bubblewrap)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codereasoner.execution import Limits, Pool

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SECRET = "codereasoner-canary-secret-7f3a91"
os.environ["CODEREASONER_TEST_SECRET"] = SECRET  # before any pool starts


@pytest.fixture(scope="session")
def pool() -> Iterator[Pool]:
    with Pool(2, isolation="bubblewrap", limits=Limits(timeout_s=1.0, memory_mb=256)) as shared:
        yield shared


@pytest.fixture(scope="session")
def fallback_pool() -> Iterator[Pool]:
    with Pool(1, isolation="fallback", limits=Limits(timeout_s=1.0, memory_mb=256)) as shared:
        yield shared
