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
# pytest-xdist workers inherit the controller's terminal size as COLUMNS and LINES; a console
# built at import would keep that width for good, and commands run in this process (and their
# subprocesses) would not read the width a test gives them, as a user's shell would.
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)


@pytest.fixture(scope="session")
def pool() -> Iterator[Pool]:
    with Pool(2, isolation="bubblewrap", limits=Limits(timeout_s=1.0, memory_mb=256)) as shared:
        yield shared


@pytest.fixture(scope="session")
def fallback_pool() -> Iterator[Pool]:
    with Pool(1, isolation="fallback", limits=Limits(timeout_s=1.0, memory_mb=256)) as shared:
        yield shared


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random Qwen2-style model with a locally trained tokenizer (training.md, section 3)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from codereasoner.training.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"))


def synth_cases(out: Path, n: int, seed: int) -> Path:
    """A small offline synthesis into ``out`` through the real command (no decontamination)."""
    from typer.testing import CliRunner

    from codereasoner.cli import app

    args = ["synth", "--generator", "offline", "--n", str(n), "--seed", str(seed), "--out"]
    done = CliRunner().invoke(app, [*args, str(out), "--no-decontam"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return out


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--docs-run",
        action="store_true",
        help="run every documented shell line at its documented size (tests/docs_run; hours)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tiers (pyproject.toml's markers) are declared by each module or test, never guessed
    from a name: a module that reads the shared benchmark data must say ``full_data``, or
    collection stops here naming it."""
    unmarked = sorted(
        {
            str(item.path)
            for item in items
            if "SHARED_DATA" in getattr(item.module, "__dict__", {})
            and item.get_closest_marker("full_data") is None
        }
    )
    if unmarked:
        raise pytest.UsageError(
            f"{unmarked[0]}: reads SHARED_DATA but is not marked full_data "
            "(pytestmark = pytest.mark.full_data)"
        )
    if not config.getoption("--docs-run"):
        opt_in = pytest.mark.skip(reason="the docs-run tier takes hours: pass --docs-run")
        for item in items:
            if item.get_closest_marker("docs_run") is not None:
                item.add_marker(opt_in)
    _costly_files_first(items)


_COSTLY = ("train", "ray", "slow")


def _costly_files_first(items: list[pytest.Item]) -> None:
    """The files holding training, Ray or slow tests first, each file's tests in their order.
    pytest-xdist hands whole files to its workers in this order (``--dist loadfile``), so a
    long file is not started when the other workers are nearly done."""
    costly = {item.path for item in items if any(item.get_closest_marker(m) for m in _COSTLY)}
    items.sort(key=lambda item: item.path not in costly)
