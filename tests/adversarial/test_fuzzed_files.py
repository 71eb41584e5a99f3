"""Crafted inputs, mutated at random from valid ones: ``score`` (a generations file),
``report`` and ``export-generations`` (a run store), ``eval --log-samples`` (a run store to
resume) and ``train`` (a dataset) each read 200 of them. Every run exits 0 or 2 (1 where the
command's own verdict is a failed check), with no traceback, and a refusal is one error line.

The mutations are seeded: flipped, inserted and deleted bytes, cut files, repeated or
swapped lines and JSON values of other types."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.commands import Ran, invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECIPES = Path(__file__).resolve().parents[2] / "recipes"
FILES = 200
ODD_VALUES = ["null", "1e999", "-1", '"x"', "[]", "{}", "true", '"\\ud800"', "[[[[[[[[1]]]]]]]]"]


def mutated(data: bytes, rng: random.Random) -> bytes:
    """``data`` changed by one to three seeded mutations."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        at = rng.randrange(len(data) + 1)
        if kind == 0 and data:  # flip a byte
            data = data[: at - 1] + bytes([rng.randrange(256)]) + data[at:] if at else data
        elif kind == 1:  # insert bytes
            data = (
                data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[at:]
            )
        elif kind == 2:  # delete a span
            data = data[:at] + data[at + rng.randint(1, 64) :]
        elif kind == 3:  # cut the file
            data = data[:at]
        elif kind == 4:  # repeat or swap lines
            lines = data.split(b"\n")
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
                lines.insert(i, lines[j])
            data = b"\n".join(lines)
        else:  # a JSON value of another type where a number, string or list was
            text = data.decode("utf-8", "replace")
            spots = [i for i, char in enumerate(text) if char in ":,["]
            if spots:
                i = rng.choice(spots) + 1
                end = min((text.find(c, i) for c in ",}]" if text.find(c, i) > 0), default=i)
                text = text[:i] + " " + rng.choice(ODD_VALUES) + text[end:]
            data = text.encode("utf-8", "surrogatepass")
    return data


def contained(done: Ran, allowed: tuple[int, ...] = (0, 1, 2)) -> None:
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said[-3000:]
    assert done.returncode in allowed, (done.returncode, said[-2000:])
    if done.returncode == 2:
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, done.stderr[-2000:]


def fuzz(source: Path, target: Path, run: Callable[[Path], Ran], seed: int) -> None:
    rng = random.Random(seed)
    original = source.read_bytes()
    for number in range(FILES):
        target.write_bytes(mutated(original, rng))
        done = run(target)
        try:
            contained(done)
        except AssertionError as failed:
            shown = target.read_bytes()[:1500]
            raise AssertionError(f"mutation {number} of seed {seed}: {shown!r}") from failed


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("fuzz") / "run"
    done = invoke("eval", "--model", "oracle", "--bench", "cruxeval-o", "--data-dir", FIXTURES,
                  "--out", run)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run


def test_score_reads_mutated_generations(store: Path, tmp_path: Path) -> None:
    generations = tmp_path / "generations.jsonl"
    assert invoke("export-generations", store, "--out", generations).returncode == 0
    fuzz(generations, tmp_path / "mutated.jsonl", lambda path: invoke(
        "score", "--bench", "cruxeval-o", "-g", path, "--data-dir", FIXTURES, "--subset"), 1)  # fmt: skip


def _mutated_store(store: Path, folder: Path) -> Callable[[Path], Path]:
    """Each mutation of the store's run config and results written into a copy of it."""
    with sqlite3.connect(store / "run.sqlite") as db:
        config, report = db.execute("SELECT r.config, s.report FROM run r, results s").fetchone()
    seed = json.dumps({"config": json.loads(config), "report": json.loads(report)})
    (folder / "seed.json").write_text(seed)

    def into(mutation: Path) -> Path:
        run = folder / "run"
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(store, run)
        text = mutation.read_bytes().decode("utf-8", "replace")
        config_text, _, report_text = text.partition('"report":')
        with sqlite3.connect(run / "run.sqlite") as db:
            db.execute(
                "UPDATE run SET config = ?", (config_text.removeprefix('{"config":').rstrip(", "),)
            )
            db.execute("UPDATE results SET report = ?", (report_text.removesuffix("}"),))
        return run

    return into


def test_report_and_export_generations_read_mutated_stores(store: Path, tmp_path: Path) -> None:
    into = _mutated_store(store, tmp_path)

    def both(mutation: Path) -> Ran:
        run = into(mutation)
        contained(invoke("export-generations", run, "--out", tmp_path / "g.jsonl", "--force"))
        return invoke("report", run, "--out", tmp_path / "r.html")

    fuzz(tmp_path / "seed.json", tmp_path / "mutation.json", both, 2)


def test_eval_log_samples_resumes_mutated_stores(store: Path, tmp_path: Path) -> None:
    into = _mutated_store(store, tmp_path)

    def resumed(mutation: Path) -> Ran:
        run = into(mutation)
        return invoke("eval", "--model", "oracle", "--bench", "cruxeval-o", "--data-dir",
                      FIXTURES, "--out", run, "--log-samples", tmp_path / "samples.jsonl")  # fmt: skip

    fuzz(tmp_path / "seed.json", tmp_path / "mutation.json", resumed, 3)


@pytest.mark.train
def test_train_reads_mutated_datasets(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(
        json.dumps({"prompt": [{"role": "user", "content": f"q{i}"}],
                    "completion": [{"role": "assistant", "content": f"<Answer>{i}</Answer>"}]})
        + "\n" for i in range(8)
    ))  # fmt: skip
    busy = tmp_path / "busy"  # a folder no training run wrote: a valid dataset stops there
    busy.mkdir()
    (busy / "notes.txt").write_text("mine\n")
    fuzz(rows, tmp_path / "mutated.jsonl", lambda path: invoke(
        "train", "sft", "--config", RECIPES / "cpu-tiny-sft.yaml", f"dataset={path}",
        f"output_dir={busy}"), 4)  # fmt: skip
