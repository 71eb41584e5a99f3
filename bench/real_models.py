"""The real-model evaluation table: packaged pretrained models on CPU through ``codereasoner eval``.

Each row is one ``codereasoner eval`` command (greedy, official prompts, ``hf:`` backend), run as
a subprocess into ``OUT/<run>/<benchmark>`` (its own wall time, its own ``--limit``: eval's
fixed subsets, the same items for every model, unless ``--full``); benchmark by benchmark; the runs
are the eval command's own resumable run folders, so a killed table resumes where it stopped
(the wall times of every invocation are added up in the folder's ``timing.json``).
At the end (or with ``--table`` alone) it prints a Markdown table: score ± standard error,
items, wall time, completion tokens and end-to-end tokens per second (model load and grading
included), and the share of completions cut at the token limit.

    python bench/real_models.py --data-dir /work/shared/data [--out runs/real] [--only smollm2-raw]
    python bench/real_models.py --table [--out runs/real]

Models: ``smollm2-135m`` (SmolLM2-135M-Instruct, ``codereasoner[smollm2]``: docs/models.md) with
the official raw prompts and with ``--chat``; ``gemma3-270m`` (Gemma-3-270M base,
``codereasoner[gemma3]``) with the raw prompts. ``core-gen`` needs ``codereasoner core build
--from cruxeval --limit 30 --out OUT/core-gen-data`` first (this script runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Fixed subsets (eval --limit's: the same items for every model), sized for a 2-core machine;
# --full runs every item.
CRUXEVAL_LIMIT = 200
CORE_PROBE_LIMIT = 100
REVAL_LIMIT = 200  # questions, kept in whole (program, input) groups: every kind of question
CORE_GEN_PROBLEMS = 30
# Rows per batch: a batch runs to its longest row, so more rows share each straggler's steps.
MODEL_ARGS = "batch_size=32"


@dataclass(frozen=True)
class Run:
    name: str
    model: str
    chat: bool


BENCHES = (
    ("cruxeval-o", CRUXEVAL_LIMIT),
    ("cruxeval-i", CRUXEVAL_LIMIT),
    ("core-probe", CORE_PROBE_LIMIT),
    ("core-gen", None),
    ("reval", REVAL_LIMIT),
)
RUNS = (
    Run("smollm2-raw", "hf:smollm2-135m", False),
    Run("gemma3-raw", "hf:gemma3-270m", False),
    Run("smollm2-chat", "hf:smollm2-135m", True),
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def codereasoner(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codereasoner", *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def build_core_gen(out: Path, data_dir: Path) -> Path:
    folder = out / "core-gen-data"
    done = codereasoner(
        "core", "build", "--from", "cruxeval", "--limit", str(CORE_GEN_PROBLEMS),
        "--data-dir", str(data_dir), "--out", str(folder),
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"core build failed (exit {done.returncode})")
    return folder


def run_one(run: Run, bench: str, limit: int | None, out: Path, data_dir: Path) -> None:
    folder = out / run.name / bench
    args = ["eval", "--model", run.model, "--bench", bench, "--out", str(folder), "--json"]
    args += ["--data-dir", str(data_dir), "--model-args", MODEL_ARGS]
    args += ["--chat"] if run.chat else []
    args += ["--limit", str(limit)] if limit is not None else []
    log(f"{run.name} {bench}: codereasoner {' '.join(args)}")
    started = time.monotonic()
    done = codereasoner(*args)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1) or not done.stdout.strip():  # 1: sandbox errors, or a check
        raise SystemExit(f"{run.name} {bench}: eval failed (exit {done.returncode})")
    summary = json.loads(done.stdout)
    timing_file = folder / "timing.json"
    timing = json.loads(timing_file.read_text()) if timing_file.exists() else {}
    timing["seconds"] = timing.get("seconds", 0.0) + seconds
    timing["generated"] = timing.get("generated", 0) + summary["generated"].get(bench, 0)
    timing_file.write_text(json.dumps(timing, indent=2) + "\n")
    log(f"{run.name} {bench}: {seconds:.0f} s, headline {summary['headline'].get(bench)}")


def _tokens(folder: Path, bench: str) -> tuple[int, int, int]:
    """(completion tokens, completions, completions cut at the limit) of one benchmark."""
    with sqlite3.connect(f"file:{folder / 'run.sqlite'}?mode=ro", uri=True) as db:
        row = db.execute(
            "SELECT COALESCE(SUM(c.completion_tokens), 0), COUNT(*), "
            "COALESCE(SUM(c.finish_reason = 'length'), 0) FROM completions c "
            "WHERE c.prompt_hash IN (SELECT prompt_hash FROM items WHERE benchmark = ?)",
            (bench,),
        ).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def _headline(report: dict[str, Any]) -> str:
    errors = report.get("stderr") or {}
    if "pass@1" in report:
        return f"pass@1 {report['pass@1']:.2f} ± {errors.get('pass@1', 0):.2f}"
    parts = []
    for key in ("coverage", "state", "path", "output"):  # REval accuracies (coverage: acc)
        block = report.get(key)
        value = block.get("acc") if isinstance(block, dict) else block
        if isinstance(value, int | float):
            parts.append(f"{key} {value:.3f}")
    if isinstance(report.get("consistency"), int | float):
        parts.append(f"IC {report['consistency']:.1f}")
    variants = report.get("variants")
    core = variants.get("project", {}).get("mean", {}) if isinstance(variants, dict) else {}
    core_errors = core.get("stderr") or {}
    for key in ("I", "Is", "W", "Ws", "RCS"):  # CoRE: the project's variants, their mean
        if core.get(key) is not None:
            parts.append(f"{key} {core[key]:.1f} ± {core_errors.get(key) or 0:.1f}")
    return ", ".join(parts) or "?"


def copy_rows(out: Path, data_dir: Path) -> list[str]:
    """The copy rule (learn_real.py's: the input as the output, ``f(OUTPUT)`` as the input) on
    each CRUXEval subset the table holds, graded by ``codereasoner score``."""
    from learn_real import copy_rule

    rows = []
    for bench in ("cruxeval-o", "cruxeval-i"):
        store = out / RUNS[0].name / bench / "run.sqlite"
        if not store.exists():
            continue
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            ids = [
                row[0]
                for row in db.execute("SELECT item_id FROM items WHERE benchmark = ?", (bench,))
            ]
        verdicts = {"raw": {bench: dict.fromkeys(ids, False)}}
        folder = out / "copy-rule"
        folder.mkdir(exist_ok=True)
        copy_rule(folder, data_dir, verdicts, benches=(bench,))
        right = sum(verdicts["copy"][bench].values())
        share = right / len(ids)
        error = (share * (1 - share) / len(ids)) ** 0.5
        rows.append(
            f"| copy rule | - | - | {bench} | {len(ids)} | pass@1 {100 * share:.2f} ± "
            f"{100 * error:.2f} | - | - | - | - |"
        )
    return rows


def table(out: Path, data_dir: Path | None = None) -> str:
    lines = [
        "| run | model | prompts | benchmark | items | score ± se | wall | tokens | tokens/s | cut |",
        "|---|---|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for run in RUNS:
        for bench, _ in BENCHES:
            folder = out / run.name / bench
            results = folder / "results.json"
            if not results.exists():
                continue
            report = json.loads(results.read_text())["reports"].get(bench)
            if report is None:
                continue
            timing_file = folder / "timing.json"
            timing = json.loads(timing_file.read_text()) if timing_file.exists() else {}
            items = report["items"]
            count = sum(items.values()) if isinstance(items, dict) else items
            tokens, completions, cut = _tokens(folder, bench)
            seconds = float(timing.get("seconds", 0.0))
            rate = f"{tokens / seconds:.0f}" if seconds else "-"
            prompts = "chat" if run.chat else "raw"
            lines.append(
                f"| {run.name} | {run.model} | {prompts} | {bench} | {count} | "
                f"{_headline(report)} | {seconds / 60:.0f} min | {tokens:,} | {rate} | "
                f"{100 * cut / max(completions, 1):.0f}% |"
            )
    if data_dir is not None:
        lines += copy_rows(out, data_dir)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--out", type=Path, default=Path("runs/real"))
    parser.add_argument("--only", action="append", help="run names (default: all)")
    parser.add_argument("--bench", action="append", help="benchmarks (default: all)")
    parser.add_argument("--table", action="store_true", help="print the table only")
    parser.add_argument("--full", action="store_true", help="every item, not the subsets")
    args = parser.parse_args()
    if not args.table:
        args.out.mkdir(parents=True, exist_ok=True)
        core_gen: Path | None = None
        # benchmark by benchmark, so a stopped table has every model on its first benchmarks
        for bench, limit in BENCHES:
            if args.bench and bench not in args.bench:
                continue
            for run in RUNS:
                if args.only and run.name not in args.only:
                    continue
                data_dir = args.data_dir
                if bench == "core-gen":
                    core_gen = core_gen or build_core_gen(args.out, args.data_dir)
                    data_dir = core_gen
                run_one(run, bench, None if args.full else limit, args.out, data_dir)
    print(table(args.out, args.data_dir))


if __name__ == "__main__":
    main()
