"""``codereasoner export``: every format read back with the real ``datasets`` library, byte-identical
reruns, atomic writes and one-line errors."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import datasets  # the train extra: make test installs it
import pytest
import typer
from typer.testing import CliRunner

from codereasoner.cli import export as export_cli
from codereasoner.training.export import (
    FORMATS,
    VERL_DATA_SOURCE,
    ExportError,
    export,
    write_export,
)

pytestmark = pytest.mark.train

CODE = "def f(x):\n    return [0] * (x % 4)"


def _record(case: str, direction: str, verified: bool, output: str = "[0, 0, 0]") -> dict[str, Any]:
    answer = output if direction == "forward" else "171"
    return {
        "id": f"{case}/{direction}",
        "case_id": case,
        "direction": direction,
        "style": "reasoning",
        "method": "int.imag",
        "depth": 1,
        "control": ["while"],
        "code": CODE,
        "entry_point": "f",
        "call": "f(171)",
        "input": "171",
        "output": output,
        "prompt": f"Predict the {direction} of f for {case}: ü ✓",
        "hint": None,
        "verified": verified,
        "n_tried": 4,
        "kept": (
            {
                "sample": 2,
                "completion": f"<Reasoning>{case} {direction} ✓</Reasoning>\n"
                f"<Answer>{answer}</Answer>",
                "answer": answer,
            }
            if verified
            else None
        ),
        "rejected": [{"sample": 0, "reason": "wrong_value", "detail": "...", "answer": "[]"}],
        "teacher": "oracle",
        "license": "MIT",
    }


RECORDS = [
    _record("off-0-0", "forward", True),
    _record("off-0-0", "backward", True),
    _record("off-0-1", "forward", True, output="'a\"b'"),
    _record("off-0-1", "backward", False, output="'a\"b'"),
]
VERIFIED = [record for record in RECORDS if record["verified"]]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    folder = tmp_path / "distill"
    folder.mkdir()
    lines = [json.dumps(record) for record in RECORDS]
    (folder / "distilled.jsonl").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return folder


def _app() -> typer.Typer:
    app = typer.Typer()
    export_cli.register(app)
    app.command("unused")(lambda: None)  # two commands: `export` stays a subcommand
    return app


def invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(_app(), ["export", *map(str, args)])


def run_ok(*args: str | Path) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def load_json(path: Path, cache: Path) -> Any:
    return datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(cache / "hf")
    )


def _suffix(fmt: str) -> str:
    return {"verl": ".parquet", "trl-sft": ".jsonl", "trl-grpo": ".jsonl"}.get(fmt, "")


def test_trl_sft(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    line = run_ok("--from", source, "--format", "trl-sft", "--out", out)
    assert line.strip() == (
        f"trl-sft: wrote 3 rows (forward 2, backward 1) to {out}; skipped 1 unverified"
    )
    ds = load_json(out, tmp_path)
    assert ds.column_names == ["prompt", "completion"]
    assert ds.num_rows == 3
    for row, record in zip(ds, VERIFIED, strict=True):
        assert row["prompt"] == [{"role": "user", "content": record["prompt"]}]
        assert row["completion"] == [{"role": "assistant", "content": record["kept"]["completion"]}]


def test_plain_trl_trains_a_trl_sft_row_on_its_completion_only(
    source: Path, tiny_model: Path, tmp_path: Path
) -> None:
    """TRL's SFTTrainer with its defaults, on the exported file as it is: the tokens with a
    label are exactly the assistant's chain as the chat template renders it after the prompt."""
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    out = tmp_path / "sft.jsonl"
    run_ok("--from", source, "--format", "trl-sft", "--out", out)
    args = SFTConfig(
        output_dir=str(tmp_path / "trl"), bf16=False, use_cpu=True, report_to="none",
        gradient_checkpointing=False, dataloader_num_workers=0, max_steps=1,
    )  # fmt: skip
    trainer = SFTTrainer(model=str(tiny_model), args=args, train_dataset=load_json(out, tmp_path))
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    for row, record in zip(trainer.train_dataset, VERIFIED, strict=True):
        user = [{"role": "user", "content": record["prompt"]}]
        chain = {"role": "assistant", "content": record["kept"]["completion"]}
        asked = tokenizer.apply_chat_template(user, add_generation_prompt=True, tokenize=False)
        whole = tokenizer.apply_chat_template([*user, chain], tokenize=False)
        prompt_ids = tokenizer(asked, add_special_tokens=False)["input_ids"]
        completion_ids = tokenizer(whole[len(asked) :], add_special_tokens=False)["input_ids"]
        trained = [label for label in row["labels"] if label != -100]
        assert row["input_ids"] == prompt_ids + completion_ids
        assert trained == completion_ids
        assert row["labels"][: len(prompt_ids)] == [-100] * len(prompt_ids)
        assert record["kept"]["completion"] in tokenizer.decode(trained)


def test_trl_grpo(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "grpo.jsonl"
    line = run_ok("--from", source, "--format", "trl-grpo", "--out", out)
    assert "wrote 4 rows (forward 2, backward 2)" in line
    ds = load_json(out, tmp_path)
    assert ds.column_names == [
        "prompt",
        "direction",
        "code",
        "entry_point",
        "call",
        "target",
        "case_id",
        "probes",
    ]
    assert ds.num_rows == 4  # the unverified record too
    for row, record in zip(ds, RECORDS, strict=True):
        assert row == {
            "prompt": [{"role": "user", "content": record["prompt"]}],
            "direction": record["direction"],
            "code": CODE,
            "entry_point": "f",
            "call": "f(171)",
            "target": record["output"],
            "case_id": record["case_id"],
            "probes": "[]",  # records distilled without probed values
        }


def test_llamafactory_alpaca(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "lf"
    line = run_ok("--from", source, "--format", "llamafactory-alpaca", "--out", out)
    assert "wrote 3 rows" in line and "skipped 1 unverified" in line
    info = json.loads((out / "dataset_info.json").read_text())
    assert list(info) == ["codereasoner_alpaca"]
    entry = info["codereasoner_alpaca"]
    assert entry["formatting"] == "alpaca"
    assert sorted(os.listdir(out)) == sorted(["dataset_info.json", entry["file_name"]])
    ds = load_json(out / entry["file_name"], tmp_path)
    # LLaMA-Factory's keys (prompt, query, response) name columns that the file has.
    assert entry["columns"] == {"prompt": "instruction", "query": "input", "response": "output"}
    assert set(entry["columns"].values()) == set(ds.column_names)
    assert ds.num_rows == 3
    for row, record in zip(ds, VERIFIED, strict=True):
        assert row == {
            "instruction": record["prompt"],
            "input": "",
            "output": record["kept"]["completion"],
        }


def test_llamafactory_sharegpt(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "lf"
    run_ok("--from", source, "--format", "llamafactory-sharegpt", "--out", out)
    info = json.loads((out / "dataset_info.json").read_text())
    entry = info["codereasoner_sharegpt"]
    assert entry["formatting"] == "sharegpt"
    assert entry["columns"] == {"messages": "conversations"}
    tags = entry["tags"]
    assert (tags["role_tag"], tags["content_tag"]) == ("from", "value")
    assert (tags["user_tag"], tags["assistant_tag"]) == ("human", "gpt")
    assert (out / entry["file_name"]).is_file()
    ds = load_json(out / entry["file_name"], tmp_path)
    assert ds.column_names == ["conversations"]
    assert ds.num_rows == 3
    for row, record in zip(ds, VERIFIED, strict=True):
        turns = row["conversations"]
        # human at odd positions (1-based), gpt at even ones.
        assert [turn[tags["role_tag"]] for turn in turns] == ["human", "gpt"]
        assert turns[0]["value"] == record["prompt"]
        assert turns[1]["value"] == record["kept"]["completion"]


def test_verl(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "rl.parquet"
    line = run_ok("--from", source, "--format", "verl", "--out", out, "--split", "test")
    assert "wrote 4 rows (forward 2, backward 2)" in line
    loaded = datasets.load_dataset(
        "parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf")
    )
    direct = datasets.Dataset.from_parquet(str(out), cache_dir=str(tmp_path / "hf2"))
    for ds in (loaded, direct):
        assert ds.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
        assert ds.num_rows == 4
        for index, (row, record) in enumerate(zip(ds, RECORDS, strict=True)):
            assert row == {
                "data_source": VERL_DATA_SOURCE,
                "prompt": [{"role": "user", "content": record["prompt"]}],
                "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": record["output"]},
                "extra_info": {
                    "code": CODE,
                    "entry_point": "f",
                    "direction": record["direction"],
                    "target": record["output"],
                    "call": "f(171)",
                    "case_id": record["case_id"],
                    "split": "test",
                    "index": index,
                    "probes": "[]",
                },
            }


@pytest.mark.parametrize("fmt", FORMATS)
def test_byte_identical_rerun(source: Path, tmp_path: Path, fmt: str) -> None:
    first, second = tmp_path / ("a" + _suffix(fmt)), tmp_path / ("b" + _suffix(fmt))
    run_ok("--from", source, "--format", fmt, "--out", first)
    run_ok("--from", source, "--format", fmt, "--out", second)

    def contents(path: Path) -> dict[str, bytes]:
        if path.is_dir():
            return {child.name: child.read_bytes() for child in sorted(path.iterdir())}
        return {"": path.read_bytes()}

    before = contents(first)
    assert before == contents(second)
    run_ok("--from", source, "--format", fmt, "--out", first, "--force")
    assert contents(first) == before
    # Nothing left behind: no temporary files beside the outputs.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    umask = os.umask(0o022)
    os.umask(umask)
    mode = stat.S_IMODE(first.stat().st_mode)
    assert mode == (0o777 if first.is_dir() else 0o666) & ~umask


def test_directions_filter(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.jsonl"
    line = run_ok("--from", source, "-f", "trl-sft", "-o", out, "--directions", "backward")
    assert "wrote 1 rows (backward 1)" in line
    assert "skipped 1 unverified" in line and "2 records of other directions left out" in line
    rows = [json.loads(text) for text in out.read_text().splitlines()]
    assert [row["completion"][0]["content"] for row in rows] == [RECORDS[1]["kept"]["completion"]]
    grpo = tmp_path / "f.jsonl"
    run_ok("--from", source, "-f", "trl-grpo", "-o", grpo, "--directions", " forward ,")
    assert [json.loads(t)["direction"] for t in grpo.read_text().splitlines()] == ["forward"] * 2


def one_error(*args: str | Path) -> str:
    """The command fails with exit 2 and exactly one line on stderr; returns it."""
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def _write_lines(folder: Path, *lines: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "distilled.jsonl").write_text("".join(line + "\n" for line in lines))
    return folder


def test_bad_inputs(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    missing = tmp_path / "nowhere"
    assert "no such folder" in one_error("--from", missing, "-f", "trl-sft", "-o", out)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no distilled.jsonl in it" in one_error("--from", empty, "-f", "trl-sft", "-o", out)

    good = json.dumps(RECORDS[0])
    bad = _write_lines(tmp_path / "bad", good, "{not json")
    message = one_error("--from", bad, "-f", "trl-sft", "-o", out)
    assert f"{bad / 'distilled.jsonl'}:2: not valid JSON" in message

    wrong = dict(RECORDS[1], direction="sideways")
    _write_lines(bad, good, json.dumps(wrong))
    message = one_error("--from", bad, "-f", "trl-grpo", "-o", out)
    assert message.endswith(
        f"{bad / 'distilled.jsonl'}:2: field 'direction' expected one of \"forward\", "
        '"backward", "probe", got a string "sideways"'
    )
    no_code = {key: value for key, value in RECORDS[1].items() if key != "code"}
    _write_lines(bad, good, "", json.dumps(no_code))
    message = one_error("--from", bad, "-f", "trl-grpo", "-o", out)
    assert "distilled.jsonl:3: field 'code' missing (expected a string)" in message
    _write_lines(bad, json.dumps(dict(RECORDS[0], kept=None)))
    message = one_error("--from", bad, "-f", "verl", "-o", out)
    assert "distilled.jsonl:1: field 'kept' expected an object (the record is verified)" in message
    _write_lines(bad, json.dumps(dict(RECORDS[0], verified="yes")))
    message = one_error("--from", bad, "-f", "verl", "-o", out)
    assert "field 'verified' expected true or false, got a string \"yes\"" in message
    _write_lines(bad, good, good)
    message = one_error("--from", bad, "-f", "trl-sft", "-o", out)
    assert "distilled.jsonl:2: field 'id' expected a unique id" in message
    _write_lines(bad, "[1, 2]")
    assert "expected a JSON object, got an array" in one_error(
        "--from", bad, "-f", "trl-sft", "-o", out
    )
    _write_lines(bad)
    assert "no records" in one_error("--from", bad, "-f", "trl-sft", "-o", out)
    _write_lines(bad, json.dumps(RECORDS[3]))
    assert "nothing to export" in one_error("--from", bad, "-f", "trl-sft", "-o", out)
    assert not out.exists()

    message = one_error("--from", source, "-f", "csv", "-o", out)
    assert "--format 'csv': expected one of trl-sft, trl-grpo" in message
    message = one_error("--from", source, "-f", "trl-sft", "-o", out, "--directions", "up")
    assert "--directions 'up'" in message


def test_existing_output(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    out.write_text("keep me\n")
    assert "already exists; pass --force" in one_error("--from", source, "-f", "trl-sft", "-o", out)
    assert out.read_text() == "keep me\n"
    run_ok("--from", source, "-f", "trl-sft", "-o", out, "--force")
    assert len(out.read_text().splitlines()) == 3
    assert "is a file; llamafactory-alpaca writes a folder" in one_error(
        "--from", source, "-f", "llamafactory-alpaca", "-o", out, "--force"
    )
    folder = tmp_path / "lf"
    run_ok("--from", source, "-f", "llamafactory-sharegpt", "-o", folder)
    assert "already exists" in one_error(
        "--from", source, "-f", "llamafactory-sharegpt", "-o", folder
    )
    run_ok("--from", source, "-f", "llamafactory-sharegpt", "-o", folder, "--force")
    (folder / "notes.txt").write_text("mine")
    message = one_error("--from", source, "-f", "llamafactory-sharegpt", "-o", folder, "--force")
    assert "holds other files (notes.txt)" in message
    assert "is a folder; verl writes a file" in one_error(
        "--from", source, "-f", "verl", "-o", folder, "--force"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_failed_write_leaves_nothing(tmp_path: Path, fmt: str) -> None:
    """A write that fails midway (here: a row neither JSON nor the parquet schema accepts) leaves
    no output and no temporary file, and an existing output untouched."""
    bad_rows = [{"data_source": float("nan")}]
    out = tmp_path / "out" / ("data" + _suffix(fmt))
    with pytest.raises((ValueError, TypeError)):
        write_export(out, fmt, bad_rows)
    assert list(out.parent.iterdir()) == []
    if _suffix(fmt):
        out.write_text("old\n")
    else:
        out.mkdir()
        (out / "dataset_info.json").write_text("{}")
    with pytest.raises((ValueError, TypeError)):
        write_export(out, fmt, bad_rows)
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]
    if out.is_dir():
        assert os.listdir(out) == ["dataset_info.json"]
    else:
        assert out.read_text() == "old\n"


def test_verl_without_pyarrow(source: Path, tmp_path: Path) -> None:
    """With pyarrow unimportable, verl fails in one line; the JSONL formats still work."""
    script = (
        "import sys; sys.modules['pyarrow'] = None\n"
        "from pathlib import Path\n"
        "from codereasoner.training.export import ExportError, export\n"
        f"source, tmp = Path({str(source)!r}), Path({str(tmp_path)!r})\n"
        "try:\n"
        "    export(source, 'verl', tmp / 'x.parquet')\n"
        "except ExportError as exc:\n"
        "    print(exc)\n"
        "print(export(source, 'trl-grpo', tmp / 'x.jsonl').total)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == [
        "the verl format writes parquet and needs pyarrow: pip install 'codereasoner[train]'",
        "4",
    ]
    assert not (tmp_path / "x.parquet").exists()


def test_no_heavy_imports() -> None:
    """The command and the exporter import neither pyarrow nor datasets at module level."""
    script = (
        "import sys, codereasoner.cli.export, codereasoner.training.export\n"
        "print(sorted(m for m in ('pyarrow', 'datasets', 'pandas') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_library_errors(source: Path, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="expected one of"):
        export(source, "jsonl", tmp_path / "x")
    summary = export(source, "trl-grpo", tmp_path / "deep" / "er" / "x.jsonl")
    assert summary.rows == {"forward": 2, "backward": 2, "probe": 0}
    assert summary.files == (tmp_path / "deep" / "er" / "x.jsonl",)
