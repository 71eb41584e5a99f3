"""Run the in-process tracer tests once per line handler: the C fast path and pure Python."""

from __future__ import annotations

import pytest

from tests.trace import load_flat

ENGINES = ("c", "python")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tracer_engine" in metafunc.fixturenames:
        metafunc.parametrize("tracer_engine", ENGINES, indirect=True)


@pytest.fixture
def tracer_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Tracers built during the test use this engine (``Tracer(engine="auto")`` follows it)."""
    tracer = load_flat("tracer")
    if request.param == "python":
        monkeypatch.setattr(tracer, "ACCELERATOR", None)
    else:
        assert tracer.ACCELERATOR is not None, (
            "the tracer's C fast path is not built: pip install -e . (needs a C compiler)"
        )
    return request.param
