"""Mistakes said before anything loads: a model name that names nothing, a recipe whose model
folder does not exist yet. Each is one line naming the fix, in a few seconds of CPU (the command
never imports torch or TRL, and never retries the hub)."""

from __future__ import annotations

import resource
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.commands import one_error_line, run_codereasoner

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CPU_BOUND_S = 5.0  # an interpreter and the CLI: about 1.5 s; torch alone takes longer


def timed(*args: str | Path, cwd: Path | None = None, **env: str) -> tuple[str, float]:
    """The refused command's one error line and the CPU seconds it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done: subprocess.CompletedProcess[str] = run_codereasoner(*args, cwd=cwd, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 2, done.stderr
    return one_error_line(done.stderr), cpu


def eval_args(model: str, out: Path) -> list[str | Path]:
    return ["eval", "--model", model, "--bench", "cruxeval-o", "--data-dir", FIXTURES,
            "--limit", "1", "--out", out]  # fmt: skip


def test_a_model_name_typo_gets_did_you_mean_without_the_hub(tmp_path: Path) -> None:
    line, cpu = timed(*eval_args("hf:smolm2-135m", tmp_path / "run"))
    assert "did you mean smollm2-135m?" in line and "hf:smolm2-135m" in line
    assert cpu < CPU_BOUND_S and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set"),
        ({"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "https://hub.invalid"}, "(hub.invalid) cannot be"),
    ],
)
def test_a_hub_name_without_a_hub_is_one_line(
    tmp_path: Path, env: dict[str, str], said: str
) -> None:
    home = tmp_path / "hf"  # an empty Hugging Face cache
    line, cpu = timed(
        *eval_args("hf:someone/no-such-model", tmp_path / "run"), HF_HOME=str(home), **env
    )
    assert said in line and "smollm2-135m, gemma3-270m" in line and "Retry" not in line
    assert cpu < CPU_BOUND_S


def test_a_missing_model_folder_names_the_command_that_builds_it(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    line, cpu = timed("train", "sft", "--config", "recipes/cpu-tiny-sft.yaml", cwd=tmp_path)
    assert "model_name_or_path runs/smoke/tiny: no such model folder" in line
    assert "`codereasoner train tiny-model runs/smoke/tiny`" in line
    assert cpu < CPU_BOUND_S and not (tmp_path / "runs").exists()


def test_a_missing_dataset_names_the_export_that_writes_it(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    built = run_codereasoner("train", "tiny-model", "runs/smoke/tiny", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    line, cpu = timed("train", "sft", "--config", "recipes/cpu-tiny-sft.yaml", cwd=tmp_path)
    assert "dataset runs/smoke/sft.jsonl: no such file" in line
    assert "--format trl-sft --out runs/smoke/sft.jsonl" in line
    assert cpu < CPU_BOUND_S and not (tmp_path / "runs" / "smoke" / "sft").exists()


def test_a_local_folder_of_no_model_is_refused_before_loading(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    line, cpu = timed(*eval_args(f"hf:{tmp_path / 'notes'}", tmp_path / "run"))
    assert "a folder without config.json" in line and cpu < CPU_BOUND_S


def test_a_data_dir_one_level_too_high_names_every_file_and_where_they_are(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "reval", root / "data" / "reval")
    line, _ = timed(
        "eval", "--model", "oracle", "--bench", "reval", "--data-dir", root, "--limit", "1",
        "--out", tmp_path / "run",
    )  # fmt: skip
    assert f"{root / 'DREval_data.jsonl'}, {root / 'DREval_tasks.jsonl'}: not found" in line
    assert f"did you mean --data-dir {root / 'data'}?" in line
    assert not (tmp_path / "run").exists()
