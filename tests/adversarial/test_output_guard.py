"""Every output file goes through one guard, checked before any work: never a run's store
(whatever its name), a run folder's own file, or the data the command reads; a place under a
file is refused too. Each refusal is one error line, exit 2, and nothing is overwritten."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.commands import Ran, invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def refused(done: Ran, *words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert all(word in lines[0] for word in words), lines[0]


@pytest.fixture(scope="module")
def other_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run whose store must never be overwritten."""
    run = tmp_path_factory.mktemp("other") / "run"
    done = invoke("eval", "--model", "oracle", "--bench", "cruxeval-o", "--data-dir", FIXTURES,
                  "--limit", "2", "--out", run)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run


def eval_logging(log: Path, out: Path, data: Path = FIXTURES) -> Ran:
    return invoke("eval", "--model", "oracle", "--bench", "cruxeval-o", "--data-dir", data,
                  "--limit", "2", "--out", out, "--log-samples", log)  # fmt: skip


def test_log_samples_never_replaces_a_store_or_the_data_and_says_so_first(
    other_run: Path, tmp_path: Path
) -> None:
    store = other_run / "run.sqlite"
    renamed = tmp_path / "store-copy.jsonl"  # a store under another name is still a database
    shutil.copy(store, renamed)
    data = tmp_path / "data"
    shutil.copytree(FIXTURES, data)
    data_file = data / "cruxeval" / "cruxeval.jsonl"
    cases = {
        store: ("is a run folder's own run.sqlite",),
        renamed: ("is a database",),
        data_file: ("which this command reads",),
        tmp_path / "a-file" / "log.jsonl": ("is not a folder",),
    }
    (tmp_path / "a-file").write_text("x")
    for log, words in cases.items():
        before = log.read_bytes() if log.exists() else None
        out = tmp_path / f"run-{log.stem}"
        done = eval_logging(log, out, data)
        refused(done, "--log-samples", *words)
        assert not out.exists()  # refused before the run began
        assert (log.read_bytes() if log.exists() else None) == before
    own = tmp_path / "fresh"
    refused(eval_logging(own / "run.sqlite", own), "--log-samples", "the run folder's own")


def test_report_and_export_generations_never_replace_a_store(
    other_run: Path, tmp_path: Path
) -> None:
    renamed = tmp_path / "report.html"
    shutil.copy(other_run / "run.sqlite", renamed)
    before = renamed.read_bytes()
    refused(invoke("report", str(other_run), "--out", renamed), "--out", "is a database")
    refused(
        invoke("export-generations", str(other_run), "--out", renamed, "--force"),
        "--out", "is a database",
    )  # fmt: skip
    assert renamed.read_bytes() == before


def test_export_never_replaces_what_it_reads(tmp_path: Path) -> None:
    from tests.conftest import synth_cases

    synth = synth_cases(tmp_path / "synth", n=4, seed=1)
    distill = tmp_path / "distill"
    done = invoke("distill", "--teacher", "oracle", "--cases", synth, "--out", distill, "--k", "1")
    assert done.returncode == 0, done.stderr
    source = distill / "distilled.jsonl"
    before = source.read_bytes()
    refused(
        invoke("export", "--from", distill, "-f", "trl-sft", "-o", source, "--force"),
        "--out", "which this command reads",
    )  # fmt: skip
    assert source.read_bytes() == before


@pytest.mark.train
def test_train_refuses_a_folder_it_did_not_create(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "README.md").write_text("my notes\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"prompt": [{"role": "user", "content": "q"}], '
        '"completion": [{"role": "assistant", "content": "a"}]}\n'
    )
    recipe = Path(__file__).resolve().parents[2] / "recipes" / "cpu-tiny-sft.yaml"
    model = tmp_path / "model"  # refused before any model loads: a folder that names one will do
    model.mkdir()
    (model / "config.json").write_text("{}")
    done = invoke("train", "sft", "--config", recipe, f"output_dir={folder}", f"dataset={rows}",
                  f"model_name_or_path={model}")  # fmt: skip
    refused(done, "holds README.md, which no training run wrote")
    assert sorted(path.name for path in folder.iterdir()) == [".lock", "README.md"]
    assert (folder / "README.md").read_text() == "my notes\n"
