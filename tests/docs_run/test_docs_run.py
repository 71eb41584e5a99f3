"""The docs-run tier: every shell line of the README, recipes/README.md and docs/*.md, run as
written, at its documented size, one page at a time in a scratch folder (hours on 2 cores:
opt-in with ``--docs-run``, or ``make docs-run``). A line that cannot run on this machine is
reported with its reason (tests/docs_run/steps.py); every other line must exit 0. Each page's
outcomes are printed and kept in its folder's ``outcomes.json``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA
from tests.docs_run.runner import fill_cache, run_document
from tests.docs_run.steps import DOCUMENTS, ROOT

pytestmark = [pytest.mark.docs_run, pytest.mark.full_data]


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The download cache every page reads, filled once from the data root."""
    if not SHARED_DATA.is_dir():
        pytest.skip("needs ../shared/data (the data root the docs call ./data)")
    folder = tmp_path_factory.mktemp("docs-cache")
    fill_cache(folder, SHARED_DATA)
    return folder


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_line_of_the_page_runs_as_written(
    document: Path, tmp_path: Path, cache: Path
) -> None:
    outcomes = run_document(document, tmp_path, SHARED_DATA, cache=cache)
    failed = [outcome.line() for outcome in outcomes if outcome.status == "failed"]
    assert not failed, "\n".join(failed)
