"""Does the CodeReasoner recipe make a real pretrained model reason better about code? The CPU
study: SmolLM2-135M-Instruct trained through ``codereasoner`` commands, beside trivial
baselines, on data training never saw.

    python bench/learn_real.py --data-dir DATA --out runs/study [--seeds 0,1] [--phase data]

Data (once):

1. ``synth --generator offline --data-dir DATA``: cases decontaminated against CRUXEval (and
   the other benchmarks present) by the literal 10-gram rule;
2. the cases split by catalog method (``MethodSplit(seed=0)``, 70/15/15 percent of the
   methods): training rows come from the ``train`` methods only; ``heldout/validation`` and
   ``heldout/test`` hold the other methods' cases, as cases files for ``eval``;
3. three teachers over the same cases, so that every SFT arm has the same rows: ``oracle
   --style direct`` (direct answers), ``trace`` (chains from our exact trace) and
   ``trace-corrupted`` (the same chains, every stated value wrong, the answer right), each
   exported with ``export --methods train``;
4. CRUXEval: the test programs are ``eval --limit T``'s fixed subset, the validation programs
   the next ones of the same order (``--skip T --limit V``); both are also written as cases
   files, to ask the same programs in the trained format (input prediction is the backward
   direction). A program whose call takes a lambda has no case form; every arm and baseline is
   scored on the others (the report says how many).

Per training seed (``--seeds``): SFT on each teacher's rows (the same rows and steps), then
GRPO from the chains model with the binary execution-verified reward, on train-method prompts
that model sometimes solves (``export --pass-rate``: groups with mixed outcomes).

Evaluation, once per arm, after every setting is fixed: CRUXEval-O and -I in the trained format
and in the official chat prompt, and the held-out test methods. The raw model's prompt is chosen
on the validation sets (the official few-shot prompt, the official chat prompt, or the trained
format), then it is asked once on the test sets. Baselines on the same items: the copy rule, the
majority answer of the training cases, chance (not defined: the answers are open literals).

Every step is one ``codereasoner`` command whose output marks it done, so a killed study goes
on where it stopped, across sessions. Logs: ``OUT/logs/``; wall times: ``OUT/timings.json``;
the claims table (``bench/learn_real_report.py``): ``OUT/learn.json`` and ``OUT/claims.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learn_real_report import (
    CRUX_BENCHES,
    RAW_FORMS,
    TRAINED,
    Layout,
    best_raw_forms,
    write_report,
)

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"
PHASES = ("data", "train", "eval", "report")
# teacher -> (spec, style): the same cases, three kinds of completion
TEACHERS = {
    "direct": ("oracle", "direct"),
    "chains": ("trace", "reasoning"),
    "corrupt": ("trace-corrupted", "reasoning"),
}
SPLIT_SEED = 0


def log(message: str) -> None:
    print(f"learn_real: {message}", file=sys.stderr, flush=True)


class Study:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.at = Layout(args.out.resolve(), [int(s) for s in args.seeds.split(",")])
        self.data_dir: Path = args.data_dir.resolve()
        (self.at.out / "logs").mkdir(parents=True, exist_ok=True)
        self.timings_file = self.at.out / "timings.json"
        self.timings: dict[str, float] = (
            json.loads(self.timings_file.read_text()) if self.timings_file.exists() else {}
        )

    def step(self, name: str, done: Path, *command: str) -> None:
        """Run one ``codereasoner`` command unless ``done`` exists; its output goes to
        ``OUT/logs/<name>.log``, its wall time to ``timings.json``."""
        if done.exists():
            return
        log(f"{name}: codereasoner {' '.join(command)}")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(self.args.threads)}
        started = time.monotonic()
        with (self.at.out / "logs" / f"{name.replace('/', '_')}.log").open("a") as out:
            result = subprocess.run(
                [sys.executable, "-m", "codereasoner", *command],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
            )  # fmt: skip
        if result.returncode not in (0, 1):  # 1: finished with a failed check (a low score)
            raise SystemExit(f"learn_real: {name} failed (exit {result.returncode}); see logs/")
        if not done.exists():  # exit 1 with no output is a crash, not a low score
            raise SystemExit(f"learn_real: {name} wrote no {done.name} (exit 1); see logs/")
        self.timings[name] = round(time.monotonic() - started, 1)
        self.timings_file.write_text(json.dumps(self.timings, indent=2) + "\n")

    # -- data ----------------------------------------------------------------------------------

    def data(self) -> None:
        at = self.at
        self.step(
            "synth", at.synth / "summary.json", "synth", "--generator", "offline",
            "--n", str(self.args.candidates), "--seed", "0", "--data-dir", str(self.data_dir),
            "--out", str(at.synth),
        )  # fmt: skip
        self.write_heldout()
        for teacher, (spec, style) in TEACHERS.items():
            folder = at.out / f"distill-{teacher}"
            self.step(
                f"distill-{teacher}", folder / "distilled.jsonl", "distill", "--teacher", spec,
                "--style", style, "--cases", str(at.heldout("train")), "--out", str(folder),
                "--directions", "forward,backward", "--k", "1",
            )  # fmt: skip
            self.step(
                f"export-{teacher}", at.rows(teacher), "export", "--from", str(folder),
                "-f", "trl-sft", "--methods", "train", "--method-seed", str(SPLIT_SEED),
                "-o", str(at.rows(teacher)),
            )  # fmt: skip
        self.write_crux_cases()

    def write_heldout(self) -> None:
        from codereasoner.training.cases import read_cases
        from codereasoner.training.method_split import MethodSplit, split_cases

        lines = (self.at.synth / "cases.jsonl").read_text(encoding="utf-8").splitlines()
        by_id = {json.loads(line)["id"]: line for line in lines}
        cases = read_cases(self.at.synth / "cases.jsonl")
        for share in ("train", "validation", "test"):
            chosen = split_cases(cases, MethodSplit(SPLIT_SEED), share)
            limit = None if share == "train" else self.args.heldout
            write_once(
                self.at.heldout(share) / "cases.jsonl",
                "".join(by_id[case.id] + "\n" for case in chosen[:limit]),
            )

    def write_crux_cases(self) -> None:
        """The CRUXEval test and validation programs (``eval``'s fixed order) as cases files;
        a program whose call is no literal call (a lambda argument) is left out."""
        from codereasoner import benchmarks
        from codereasoner.evaluation.run_items import load_items, select_items
        from codereasoner.execution import CallSyntaxError, parse_call

        bench = benchmarks.get("cruxeval-o")
        items = load_items(bench, self.data_dir)
        for share, (skip, limit) in self.crux_windows().items():
            lines = []
            for item in select_items(bench, items, limit, skip):
                try:
                    parse_call(item.call)
                except CallSyntaxError:
                    continue
                case = {
                    "id": item.id, "method": "cruxeval", "constraints": {}, "code": item.program,
                    "entry_point": item.entry, "call": item.call,
                    "input": item.call[len(item.entry) + 1 : -1], "output": item.truth,
                }  # fmt: skip
                lines.append(json.dumps(case) + "\n")
            write_once(self.at.crux_cases(share) / "cases.jsonl", "".join(lines))

    def crux_windows(self) -> dict[str, tuple[int, int]]:
        """share -> (skip, limit) of ``eval``'s fixed order."""
        test, validation = self.args.crux, self.args.crux_validation
        return {"test": (0, test), "validation": (test, validation)}

    # -- training ------------------------------------------------------------------------------

    def train(self) -> None:
        at = self.at
        for seed in at.seeds:
            for teacher in TEACHERS:
                arm = f"sft-{teacher}"
                self.step(
                    f"seed-{seed}/{arm}", at.model(seed, arm) / "train_done.json", "train", "sft",
                    "--config", str(RECIPES / "cpu-smollm2-sft.yaml"),
                    f"model_name_or_path={self.args.model}", f"dataset={at.rows(teacher)}",
                    f"output_dir={at.model(seed, arm)}", f"seed={seed}",
                    f"max_steps={self.args.sft_steps}", "max_length=1024", "save_steps=8",
                )  # fmt: skip
            self.grpo(seed)

    def grpo(self, seed: int) -> None:
        at = self.at
        start = at.model(seed, "sft-chains")
        rates = at.out / f"seed-{seed}" / "pass-rate"
        self.step(
            f"seed-{seed}/pass-rate", rates / "distilled.jsonl", "distill",
            "--teacher", f"hf:{start}", "--chat", "--style", "reasoning",
            "--cases", str(at.heldout("train")), "--out", str(rates),
            "--directions", "forward,backward", "--k", "4", "--temperature", "1.0",
            "--max-tokens", str(self.args.max_tokens), "--limit", str(self.args.grpo_prompts),
        )  # fmt: skip
        prompts = at.out / f"seed-{seed}" / "grpo.jsonl"
        rows = ("export", "--from", str(at.out / "distill-chains"), "-f", "trl-grpo",
                "--methods", "train", "-o", str(prompts))  # fmt: skip
        try:
            self.step(f"seed-{seed}/grpo-rows", prompts, *rows, "--pass-rate", str(rates))
        except SystemExit:
            # no sampled prompt had mixed outcomes: every GRPO group would have advantage 0;
            # the study says so and trains on the unfiltered prompts
            log(f"seed {seed}: the pass-rate filter kept no prompt; GRPO takes them unfiltered")
            (at.out / f"seed-{seed}" / "grpo-unfiltered").touch()
            self.step(f"seed-{seed}/grpo-rows-unfiltered", prompts, *rows)
        self.step(
            f"seed-{seed}/chains-grpo", at.model(seed, "chains-grpo") / "train_done.json",
            "train", "grpo", "--config", str(RECIPES / "cpu-smollm2-grpo.yaml"),
            f"model_name_or_path={start}", f"dataset={prompts}",
            f"output_dir={at.model(seed, 'chains-grpo')}", f"seed={seed}",
            f"max_completion_length={self.args.max_tokens}",
            f"max_steps={self.args.grpo_steps}", "save_steps=4",
        )  # fmt: skip

    # -- evaluation ----------------------------------------------------------------------------

    def evaluate(self, name: str, model: str, bench: str, data: Path, *flags: str) -> None:
        folder = self.at.run(name)
        self.step(
            f"eval/{name}", folder / "results.json", "eval", "--model", model, "--bench", bench,
            "--data-dir", str(data), "--out", str(folder), "--json", *flags,
        )  # fmt: skip

    def trained_format(self, name: str, model: str, style: str, data: Path) -> None:
        tokens = self.args.max_tokens if style == "reasoning" else 64
        flags = ("--chat", "--style", style, "--max-tokens", str(tokens))
        self.evaluate(name, model, "cases", data, *flags)

    def official(self, name: str, model: str, share: str, chat: bool) -> None:
        skip, limit = self.crux_windows()[share]
        flags = ["--chat" if chat else "--raw", "--limit", str(limit), "--skip", str(skip)]
        flags += ["--max-tokens", str(self.args.official_tokens)]
        self.evaluate(name, model, ",".join(CRUX_BENCHES), self.data_dir, *flags)

    def evaluations(self) -> None:
        at = self.at
        raw = f"hf:{self.args.model}"
        # the raw model: every prompt form on the validation sets first
        for form, (kind, style) in RAW_FORMS.items():
            if kind == "cases":
                self.trained_format(f"raw/{form}/heldout-validation", raw, style,
                                    at.heldout("validation"))  # fmt: skip
                self.trained_format(f"raw/{form}/crux-cases-validation", raw, style,
                                    at.crux_cases("validation"))  # fmt: skip
            else:
                self.official(f"raw/{form}/crux-validation", raw, "validation", kind == "chat")
        best = best_raw_forms(at)  # chosen on validation only, then fixed
        (at.out / "raw-choice.json").write_text(json.dumps(best, indent=2) + "\n")
        for form in sorted(set(best.values())):
            kind, style = RAW_FORMS[form]
            if kind == "cases":
                self.trained_format(f"raw/{form}/heldout-test", raw, style, at.heldout("test"))
                self.trained_format(f"raw/{form}/crux-cases-test", raw, style,
                                    at.crux_cases("test"))  # fmt: skip
            else:
                self.official(f"raw/{form}/crux-test", raw, "test", kind == "chat")
        for seed in at.seeds:
            for arm in TRAINED:
                model = f"hf:{at.model(seed, arm)}"
                style = "direct" if arm == "sft-direct" else "reasoning"
                self.trained_format(f"seed-{seed}/{arm}/heldout-test", model, style,
                                    at.heldout("test"))  # fmt: skip
                self.trained_format(f"seed-{seed}/{arm}/crux-cases-test", model, style,
                                    at.crux_cases("test"))  # fmt: skip
                self.official(f"seed-{seed}/{arm}/crux-test", model, "test", chat=True)


def write_once(path: Path, text: str) -> None:
    """Write ``path`` unless it exists (a resumed study keeps what it wrote), atomically."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.rename(path)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("runs/study"))
    parser.add_argument("--seeds", default="0,1", help="training seeds (at least 2 for claims)")
    parser.add_argument("--phase", choices=PHASES, action="append",
                        help="run this phase only (repeatable; default: all, in order)")  # fmt: skip
    parser.add_argument(
        "--model", default="smollm2-135m", help="the model to train (hf: spec rest)"
    )
    parser.add_argument("--candidates", type=int, default=600, help="synth --n")
    parser.add_argument("--heldout", type=int, default=60, help="held-out cases per share")
    parser.add_argument("--crux", type=int, default=200, help="CRUXEval test programs")
    parser.add_argument("--crux-validation", type=int, default=50)
    parser.add_argument("--sft-steps", type=int, default=24, help="of 8 rows each")
    parser.add_argument("--grpo-steps", type=int, default=8)
    parser.add_argument("--grpo-prompts", type=int, default=32, help="sampled for pass rates")
    parser.add_argument("--max-tokens", type=int, default=320, help="chains, in eval and GRPO")
    parser.add_argument("--official-tokens", type=int, default=96, help="official prompts")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per command")
    args = parser.parse_args(argv)
    study = Study(args)
    phases = args.phase or list(PHASES)
    if "data" in phases:
        study.data()
    if "train" in phases:
        study.train()
    if "eval" in phases:
        study.evaluations()
    if "report" in phases:
        print(write_report(study.at, args))


if __name__ == "__main__":
    main()
