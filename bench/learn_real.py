"""A real model learns on CPU: SmolLM2-135M-Instruct, SFT then GRPO through ``codereasoner
train`` and its recipes, evaluated on CRUXEval against the untrained model and a copy rule.

  1. cases: ``codereasoner synth --generator offline`` with the benchmark data, so cases
     sharing a 10-gram with CRUXEval (and the other benchmarks present) are dropped by the
     literal rule;
  2. data: ``codereasoner distill --teacher oracle --style direct`` (answers from the ground
     truth: no LLM teacher on this machine), exported as trl-sft and trl-grpo rows;
  3. sft: ``codereasoner train sft --config recipes/cpu-smollm2-sft.yaml``;
  4. grpo: ``codereasoner train grpo --config recipes/cpu-smollm2-grpo.yaml`` from the SFT model;
  5. eval: ``codereasoner eval --chat`` on ``--limit`` items of CRUXEval-O and -I (eval's fixed
     subset, the same for every arm): the raw model with the official extraction, the trained
     ones with ``answer-tag`` (they were taught ``<Answer>`` tags);
  6. the same CRUXEval-O programs in the prompt the models were trained on: the subset written as
     a cases file (``eval --bench cases``: output prediction forward, input prediction backward,
     "answer inside <Answer> tags"), every arm evaluated on it too;
  7. copy: the rule that copies from the prompt (output: the first argument; input: ``f(OUTPUT)``),
     graded by ``codereasoner score`` on the same items.

Settings were fixed before any evaluation (no search: the recipes as shipped), and the benchmark
subset is evaluated once per model. Each CRUXEval item is its own program, so the confidence
intervals resample items (paired between arms: 2,000 bootstrap draws, 95 %).

Every step is a resumable command of its own (synth, distill, eval and train resume; a finished
step is skipped), so a killed run goes on where it stopped. Commands run with one torch thread
each (``OMP_NUM_THREADS=1``) unless the environment says otherwise: on a small shared machine,
busy-waiting threads of several processes slow each other down many times over.

    python bench/learn_real.py --data-dir /work/shared/data [--out runs/learn-real] [--limit 100]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"
BENCHES = ("cruxeval-o", "cruxeval-i")
CASES = "cases"  # CRUXEval-O's subset in the trained prompt, both directions
ARMS = ("raw", "sft", "grpo")
BOOTSTRAP_DRAWS = 2000
SYNTH_CANDIDATES = 400
MODEL = "smollm2-135m"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def codereasoner(*args: str, stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    log("codereasoner " + " ".join(args))
    env = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **os.environ}
    return subprocess.run(
        [sys.executable, "-m", "codereasoner", *args], stdout=stdout, text=True, env=env
    )


def step(name: str, done: Path, *args: str) -> None:
    """Run one command unless ``done`` exists; its wall time goes into the timing record."""
    if done.exists():
        return
    started = time.monotonic()
    result = codereasoner(*args)
    if result.returncode not in (0, 1):  # 1: finished with a failed check (a low score)
        raise SystemExit(f"learn_real: {name} failed (exit {result.returncode})")
    timings[name] = round(time.monotonic() - started, 1)


timings: dict[str, float] = {}


def prepare(out: Path, data_dir: Path) -> tuple[Path, Path]:
    synth, distill = out / "synth", out / "distill"
    step(
        "synth", synth / "summary.json", "synth", "--generator", "offline",
        "--n", str(SYNTH_CANDIDATES), "--seed", "0", "--data-dir", str(data_dir),
        "--out", str(synth),
    )  # fmt: skip
    step(
        "distill", distill / "distilled.jsonl", "distill", "--teacher", "oracle",
        "--cases", str(synth), "--out", str(distill), "--style", "direct",
        "--directions", "forward,backward", "--k", "1",
    )  # fmt: skip
    sft, grpo = out / "sft.jsonl", out / "grpo.jsonl"
    for kind, path in (("trl-sft", sft), ("trl-grpo", grpo)):
        step(
            f"export {kind}", path, "export", "--from", str(distill), "--format", kind,
            "--out", str(path), "--directions", "forward,backward",
        )  # fmt: skip
    return sft, grpo


def train(out: Path, sft_rows: Path, grpo_rows: Path) -> None:
    sft, grpo = out / "sft", out / "grpo"
    step(
        "train sft", sft / "config.json", "train", "sft",
        "--config", str(RECIPES / "cpu-smollm2-sft.yaml"),
        f"dataset={sft_rows}", f"output_dir={sft}",
    )  # fmt: skip
    step(
        "train grpo", grpo / "config.json", "train", "grpo",
        "--config", str(RECIPES / "cpu-smollm2-grpo.yaml"),
        f"model_name_or_path={sft}", f"dataset={grpo_rows}", f"output_dir={grpo}",
    )  # fmt: skip


def evaluate(out: Path, data_dir: Path, limit: int) -> None:
    models = {"raw": MODEL, "sft": str(out / "sft"), "grpo": str(out / "grpo")}
    for arm in ARMS:
        folder = out / "eval" / arm
        extraction = ["--extraction", "answer-tag"] if arm != "raw" else []
        step(
            f"eval {arm}", folder / "results.json", "eval", "--model", f"hf:{models[arm]}",
            "--chat", "--bench", ",".join(BENCHES), "--limit", str(limit),
            "--data-dir", str(data_dir), "--out", str(folder), "--json", *extraction,
        )  # fmt: skip


def crux_cases(out: Path, data_dir: Path) -> Path:
    """CRUXEval-O's evaluated subset as a cases file: the same programs and calls, asked in the
    prompt the models were trained on (items whose call is not literal, a lambda argument, are
    left out: a case's call must be)."""
    from codereasoner.execution import CallSyntaxError, parse_call

    folder = out / "crux-cases"
    if (folder / "cases.jsonl").exists():
        return folder
    ids = set(read_verdicts(out, ("raw",), BENCHES)["raw"]["cruxeval-o"])
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for item in cruxeval_items(data_dir).values():
        try:
            parse_call(f"f({item['input']})")
        except CallSyntaxError:
            continue
        if item["id"] in ids:
            case = {
                "id": item["id"], "method": "cruxeval", "constraints": {}, "code": item["code"],
                "entry_point": "f", "call": f"f({item['input']})", "input": item["input"],
                "output": item["output"],
            }  # fmt: skip
            lines.append(json.dumps(case) + "\n")
    (folder / "cases.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


def evaluate_cases(out: Path, cases: Path) -> None:
    models = {"raw": MODEL, "sft": str(out / "sft"), "grpo": str(out / "grpo")}
    for arm in ARMS:
        folder = out / "eval-cases" / arm
        step(
            f"eval cases {arm}", folder / "results.json", "eval", "--model", f"hf:{models[arm]}",
            "--chat", "--bench", CASES, "--data-dir", str(cases), "--out", str(folder), "--json",
        )  # fmt: skip


def cruxeval_items(data_dir: Path) -> dict[str, dict[str, str]]:
    return {
        record["id"]: record
        for line in (data_dir / "cruxeval" / "cruxeval.jsonl").read_text().splitlines()
        for record in [json.loads(line)]
    }


def copy_answer(bench: str, item: dict[str, str]) -> str:
    """What copying from the prompt answers: the first argument as the output, or the output
    as the argument."""
    if bench == "cruxeval-i":
        return f"f({item['output']})"
    call = ast.parse(f"f({item['input']})", mode="eval").body
    assert isinstance(call, ast.Call)
    return ast.unparse(call.args[0]) if call.args else item["input"]


def copy_rule(
    out: Path,
    data_dir: Path,
    verdicts: dict[str, dict[str, dict[str, bool]]],
    benches: tuple[str, ...] = BENCHES,
) -> None:
    items = cruxeval_items(data_dir)
    for bench in benches:
        ids = sorted(verdicts["raw"][bench])
        generations = out / f"copy-{bench}.json"
        answers = {item_id: [copy_answer(bench, items[item_id])] for item_id in ids}
        generations.write_text(json.dumps(answers), encoding="utf-8")
        results = out / f"copy-{bench}.results.jsonl"
        done = codereasoner(
            "score", "--bench", bench, "-g", str(generations), "--data-dir", str(data_dir),
            "--subset", "--results", str(results), "--json", stdout=subprocess.DEVNULL,
        )  # fmt: skip
        if done.returncode not in (0, 1):
            raise SystemExit(f"learn_real: scoring the copy rule failed (exit {done.returncode})")
        verdicts.setdefault("copy", {})[bench] = {
            row["id"]: bool(row["correct"])
            for line in results.read_text().splitlines()
            for row in [json.loads(line)]
        }


def copy_cases(out: Path, cases: Path, verdicts: dict[str, dict[str, dict[str, bool]]]) -> None:
    """The copy rule on the cases subset, graded by ``codereasoner score --bench cases``."""
    records = [json.loads(line) for line in (cases / "cases.jsonl").read_text().splitlines()]
    lines = []
    for record in records:
        for direction, bench in (("forward", "cruxeval-o"), ("backward", "cruxeval-i")):
            answer = copy_answer(bench, record)
            row = {
                "id": f"{record['id']}/{direction}",
                "sample": 0,
                "completion": f"<Answer>{answer}</Answer>",
            }
            lines.append(json.dumps(row) + "\n")
    generations = out / "copy-cases.jsonl"
    generations.write_text("".join(lines), encoding="utf-8")
    results = out / "copy-cases.results.jsonl"
    done = codereasoner(
        "score", "--bench", CASES, "-g", str(generations), "--data-dir", str(cases),
        "--subset", "--results", str(results), "--json", stdout=subprocess.DEVNULL,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"learn_real: scoring the copy rule failed (exit {done.returncode})")
    verdicts.setdefault("copy", {})[CASES] = {
        row["id"]: bool(row["correct"])
        for line in results.read_text().splitlines()
        for row in [json.loads(line)]
    }


def read_verdicts(
    out: Path,
    arms: tuple[str, ...] = ARMS,
    benches: tuple[str, ...] = BENCHES,
    folder: str = "eval",
) -> dict[str, dict[str, dict[str, bool]]]:
    """arm -> benchmark -> item id -> correct (greedy: one sample per item)."""
    import sqlite3

    verdicts: dict[str, dict[str, dict[str, bool]]] = {}
    for arm in arms:
        store = out / folder / arm / "run.sqlite"
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            for bench in benches:
                rows = db.execute(
                    "SELECT item_id, correct FROM scores WHERE benchmark = ? AND sample = 0",
                    (bench,),
                ).fetchall()
                verdicts.setdefault(arm, {})[bench] = {item: bool(ok) for item, ok in rows}
    return verdicts


def paired_interval(a: list[bool], b: list[bool], seed: int = 0) -> tuple[float, float, float]:
    """The mean of a - b over items, with a 95 % bootstrap interval (items resampled)."""
    rng = random.Random(seed)
    differences = [int(x) - int(y) for x, y in zip(a, b, strict=True)]
    count = len(differences)
    draws = sorted(
        sum(differences[rng.randrange(count)] for _ in range(count)) / count
        for _ in range(BOOTSTRAP_DRAWS)
    )
    low, high = draws[int(0.025 * BOOTSTRAP_DRAWS)], draws[int(0.975 * BOOTSTRAP_DRAWS) - 1]
    return sum(differences) / count, low, high


def interval(a: list[bool]) -> tuple[float, float, float]:
    return paired_interval(a, [False] * len(a))


def table(
    verdicts: dict[str, dict[str, dict[str, bool]]], benches: tuple[str, ...] = (*BENCHES, CASES)
) -> tuple[str, dict[str, object]]:
    lines = ["| benchmark | arm | pass@1 (95% CI) | vs raw (95% CI) | vs copy rule (95% CI) |"]
    lines.append("|---|---|---|---|---|")
    figures: dict[str, object] = {}
    for bench in benches:
        ids = sorted(verdicts["raw"][bench])
        column = {arm: [verdicts[arm][bench].get(i, False) for i in ids] for arm in verdicts}
        for arm in ("copy", *ARMS):
            mean, low, high = interval(column[arm])
            cells = [f"{100 * mean:.1f} ({100 * low:.1f}, {100 * high:.1f})"]
            for other in ("raw", "copy"):
                if other == arm:
                    cells.append("-")
                    continue
                d, dl, dh = paired_interval(column[arm], column[other])
                cells.append(f"{100 * d:+.1f} ({100 * dl:+.1f}, {100 * dh:+.1f})")
            lines.append(f"| {bench} | {arm} | {' | '.join(cells)} |")
            figures[f"{bench}/{arm}"] = {"pass@1": mean, "ci95": [low, high], "items": len(ids)}
    return "\n".join(lines), figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--out", type=Path, default=Path("runs/learn-real"))
    parser.add_argument(
        "--limit", type=int, default=100, help="CRUXEval items (eval --limit: a fixed subset)"
    )
    args = parser.parse_args()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    timing_file = out / "timing.json"
    if timing_file.exists():
        timings.update(json.loads(timing_file.read_text()))
    try:
        sft_rows, grpo_rows = prepare(out, args.data_dir)
        train(out, sft_rows, grpo_rows)
        evaluate(out, args.data_dir, args.limit)
        cases = crux_cases(out, args.data_dir)
        evaluate_cases(out, cases)
    finally:
        timing_file.write_text(json.dumps(timings, indent=2) + "\n")
    verdicts = read_verdicts(out)
    for arm, found in read_verdicts(out, benches=(CASES,), folder="eval-cases").items():
        verdicts[arm].update(found)
    copy_rule(out, args.data_dir, verdicts)
    copy_cases(out, cases, verdicts)
    text, figures = table(verdicts)
    (out / "learn_real.json").write_text(
        json.dumps({"figures": figures, "seconds": timings, "limit": args.limit}, indent=2) + "\n"
    )
    print(text)
    print(f"wall time of the steps: {sum(timings.values()) / 60:.0f} min")


if __name__ == "__main__":
    main()
