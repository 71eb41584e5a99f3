"""Every command prints the package's log records escaped: a backend's warning carries a
server's or a model's text (screen clear, window title, bidi override, markup), and no command
may let it reach the terminal raw, as Python's last-resort handler would.

The backend is an installed plugin (``hostile:TEXT``) that logs such a warning through the
package's logger on every request, as the OpenAI backend does with a failing server's error
text, then answers ``TEXT``; each command that asks a model runs with it in a process of its
own."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import synth_cases
from tests.test_plugins import cli

HOSTILE = "\\x1b]0;PWNED\\x07\\x1b[2J\\u202e [/red] server said"
PLUGIN = textwrap.dedent(
    f'''
    import logging

    from codereasoner.models import BackendType, Completion

    log = logging.getLogger("codereasoner.models.hostile")


    class Hostile:
        def __init__(self, text):
            self.text = text
            self.model_id = f"hostile:{{text}}"

        def preflight(self):
            log.warning("{HOSTILE}")

        def generate(self, requests, on_result):
            for index, request in enumerate(requests):
                log.warning("{HOSTILE}")
                on_result(index, [Completion(s, self.text) for s in request.samples])

        def close(self):
            """Nothing to release."""


    BACKEND = BackendType("hostile", "hostileplugin:Hostile", "logs hostile text", form="TEXT")
    '''
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    (site / "hostileplugin.py").write_text(PLUGIN)
    info = site / "hostileplugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostileplugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[codereasoner.backends]\nhostile = hostileplugin:BACKEND\n"
    )
    return site


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_cases(tmp_path_factory.mktemp("hostile-logs") / "synth", n=6, seed=2)


def test_every_command_that_asks_a_model_prints_its_logged_text_escaped(
    site: Path, cases: Path, tmp_path: Path
) -> None:
    commands = {
        "distill": ["distill", "--teacher", "hostile:x", "--cases", cases, "--out",
                    tmp_path / "distill", "--k", "1", "--limit", "2"],
        "eval": ["eval", "--model", "hostile:x", "--bench", "cases", "--data-dir", cases,
                 "--out", tmp_path / "eval", "--limit", "2"],
        "synth": ["synth", "--generator", "llm", "--model", "hostile:x", "--n", "2",
                  "--out", tmp_path / "synth", "--no-decontam"],
    }  # fmt: skip
    for name, args in commands.items():
        done = cli(site, *args)
        said = done.stdout + done.stderr
        assert "Traceback" not in said, (name, said[-2000:])
        warnings = [line for line in said.splitlines() if "server said" in line]
        assert warnings, (name, done.returncode, said[-2000:])  # the warning is shown ...
        for raw in ("\x1b", "\x07", "\u202e"):
            assert raw not in said, (name, said[-2000:])  # ... escaped
        assert all(line.startswith("warning: ") for line in warnings), warnings
        assert "\\x1b]0;PWNED\\x07\\x1b[2J\\u202e [/red] server said" in warnings[0], warnings[0]
