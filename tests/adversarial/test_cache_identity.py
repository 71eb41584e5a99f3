"""The completion cache is keyed by everything that changes a completion: a model retrained
into the same folder is another model (its old completions are never served for it), a
request's extra body fields are part of the key and may not replace the fields the run sets,
and a bare name that is both a packaged model and a local folder is refused as ambiguous."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codereasoner.models.base import BackendError, backend_identity
from codereasoner.models.openai import OpenAIBackend
from tests.commands import invoke, one_error_line
from tests.conftest import synth_cases

pytestmark = pytest.mark.train  # builds and evaluates a tiny transformers model


def test_a_model_retrained_into_its_folder_is_another_model(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    cases = synth_cases(tmp_path / "synth", n=4, seed=3)
    model = tmp_path / "model"
    assert invoke("train", "tiny-model", model, "--seed", "1").returncode == 0
    args = ["eval", "--model", f"hf:{model}", "--bench", "cases", "--data-dir", cases,
            "--limit", "2", "--max-tokens", "8"]  # fmt: skip
    first = invoke(*args, "--out", tmp_path / "run")
    assert first.returncode == 0, first.stderr
    retrained = tmp_path / "retrained"
    assert invoke("train", "tiny-model", retrained, "--seed", "2").returncode == 0
    for path in retrained.iterdir():  # training again into the same folder
        shutil.copy(path, model / path.name)
    again = invoke(*args, "--out", tmp_path / "run")
    assert again.returncode == 2
    line = one_error_line(again.stderr)
    assert "holds a run of model" in line and f"hf:{model}#files-" in line, line
    fresh = invoke(*args, "--out", tmp_path / "run-2")
    assert fresh.returncode == 0, fresh.stderr  # evaluated anew, nothing served from the cache


def test_extra_body_is_keyed_and_cannot_replace_the_runs_fields() -> None:
    url = "http://127.0.0.1:9/v1"
    plain = OpenAIBackend("m", url)
    shaped = OpenAIBackend("m", url, extra_body={"min_p": 0.2})
    assert backend_identity(plain) == "openai:m"
    assert backend_identity(shaped).startswith("openai:m#body-")
    assert backend_identity(shaped) != backend_identity(
        OpenAIBackend("m", url, extra_body={"min_p": 0.1})
    )
    for field in ("model", "prompt", "messages", "temperature", "max_tokens", "stop", "top_k"):
        with pytest.raises(BackendError, match=f"extra_body sets {field}"):
            OpenAIBackend("m", url, extra_body={field: 1})
    done = invoke("eval", "--model", f"openai:m@{url}", "--bench", "cruxeval-o",
                  "--model-args", 'extra_body={"temperature": 1.5}')  # fmt: skip
    assert done.returncode == 2 and "extra_body sets temperature" in one_error_line(done.stderr)


def test_a_packaged_name_that_is_also_a_local_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "smollm2-135m").mkdir()
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    done = invoke("eval", "--model", "hf:smollm2-135m", "--bench", "cruxeval-o",
                  "--data-dir", fixtures, "--limit", "1", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert "ambiguous" in line and "./smollm2-135m" in line, line
