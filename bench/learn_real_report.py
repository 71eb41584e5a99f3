"""The claims table of ``bench/learn_real.py``: every arm and baseline on the same test items,
program-clustered bootstrap intervals over the seeds, a seed-level interval for every claim.

Rows (the claims' benchmarks), each on the test items of one set:

- ``cruxeval-o`` and ``cruxeval-i``: the CRUXEval test programs in the trained format (output
  prediction forward, input prediction backward); the raw model in its best form, chosen on the
  validation programs (when that is an official prompt, its verdict on the same program);
- ``heldout``: the cases of the held-out test methods, both directions.

A program is the cluster: the bootstrap resamples programs (a CRUXEval program's id, a case's
code), never items. A claim "A > B" holds only when the whole clustered 95 % interval of A - B
is above 0 and so is the seed-level one (a t-interval over the per-seed differences).
"""

from __future__ import annotations

import argparse
import ast
import json
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from learn_stats import Scored, accuracies, difference, seed_interval

CRUX_BENCHES = ("cruxeval-o", "cruxeval-i")
TRAINED = ("sft-direct", "sft-chains", "sft-corrupt", "chains-grpo")
BASELINES = ("copy", "majority")
# raw prompt form -> (how it is asked, style)
RAW_FORMS = {
    "official-fewshot": ("raw", "direct"),
    "official-chat": ("chat", "direct"),
    "trained-reasoning": ("cases", "reasoning"),
    "trained-direct": ("cases", "direct"),
}
ROWS = {"cruxeval-o": "forward", "cruxeval-i": "backward", "heldout": None}
CLAIMS = ("sft-direct", "sft-corrupt", "copy", "raw")  # chains-grpo > each of these
REPLICATES = 2000


@dataclass(frozen=True)
class Layout:
    """Where the study keeps each thing."""

    out: Path
    seeds: list[int]

    @property
    def synth(self) -> Path:
        return self.out / "synth"

    def heldout(self, share: str) -> Path:
        return self.out / "heldout" / share

    def crux_cases(self, share: str) -> Path:
        return self.out / "crux" / share

    def rows(self, teacher: str) -> Path:
        return self.out / "data" / f"sft-{teacher}.jsonl"

    def model(self, seed: int, arm: str) -> Path:
        return self.out / f"seed-{seed}" / arm

    def run(self, name: str) -> Path:
        return self.out / "eval" / name


Verdicts = dict[str, bool]  # item id -> right


def verdicts(run: Path, bench: str | None = None) -> Verdicts:
    """item id -> right, sample 0, of an eval run (one benchmark's when ``bench``)."""
    query = "SELECT item_id, correct FROM scores WHERE sample = 0"
    with sqlite3.connect(f"file:{run / 'run.sqlite'}?mode=ro", uri=True) as db:
        if bench is None:
            rows = db.execute(query).fetchall()
        else:
            rows = db.execute(query + " AND benchmark = ?", (bench,)).fetchall()
    return {item: bool(right) for item, right in rows}


def program(item_id: str) -> str:
    return item_id.split("/")[0]


def accuracy(found: Verdicts, ids: list[str]) -> float:
    return sum(found.get(i, False) for i in ids) / len(ids) if ids else 0.0


def _form_verdicts(at: Layout, form: str, share: str, row: str) -> Verdicts:
    """The raw model's verdicts in one form on one row's items of a share, keyed by the
    trained-format item id (an official verdict stands for its program's item)."""
    kind, _ = RAW_FORMS[form]
    if row == "heldout":
        return verdicts(at.run(f"raw/{form}/heldout-{share}"))
    direction = ROWS[row]
    if kind == "cases":
        found = verdicts(at.run(f"raw/{form}/crux-cases-{share}"))
        return {i: v for i, v in found.items() if i.endswith(f"/{direction}")}
    official = verdicts(at.run(f"raw/{form}/crux-{share}"), row)
    return {f"{item}/{direction}": right for item, right in official.items()}


def _row_ids(at: Layout, share: str, row: str) -> list[str]:
    folder = at.heldout(share) if row == "heldout" else at.crux_cases(share)
    ids = [json.loads(line)["id"] for line in (folder / "cases.jsonl").read_text().splitlines()]
    directions = ("forward", "backward") if row == "heldout" else (ROWS[row],)
    return [f"{case_id}/{direction}" for case_id in ids for direction in directions]


def best_raw_forms(at: Layout) -> dict[str, str]:
    """Per row, the raw model's form with the best validation accuracy (the first of equals,
    in RAW_FORMS order), and per CRUXEval benchmark its best official form (``official/NAME``:
    the official-prompt table's raw row); only validation runs are read."""
    chosen: dict[str, str] = {}
    for row in ROWS:
        ids = _row_ids(at, "validation", row)
        forms = [f for f in RAW_FORMS if row != "heldout" or RAW_FORMS[f][0] == "cases"]
        scores = {f: accuracy(_form_verdicts(at, f, "validation", row), ids) for f in forms}
        chosen[row] = max(forms, key=lambda form: scores[form])
        if row in CRUX_BENCHES:
            official = [f for f in forms if RAW_FORMS[f][0] != "cases"]
            chosen[f"official/{row}"] = max(official, key=lambda form: scores[form])
    return chosen


def _cases_file(at: Layout, row: str) -> Path:
    return (at.heldout("test") if row == "heldout" else at.crux_cases("test")) / "cases.jsonl"


def _baseline_answers(at: Layout, row: str) -> dict[str, dict[str, str]]:
    """The copy rule's and the majority rule's answer for each test item of a row."""
    train = [
        json.loads(line) for line in (at.heldout("train") / "cases.jsonl").read_text().splitlines()
    ]
    common_output = Counter(case["output"] for case in train).most_common(1)[0][0]
    common_input = Counter(case["input"] for case in train).most_common(1)[0][0]
    answers: dict[str, dict[str, str]] = {"copy": {}, "majority": {}}
    for line in _cases_file(at, row).read_text().splitlines():
        case = json.loads(line)
        call = ast.parse(case["call"], mode="eval").body
        assert isinstance(call, ast.Call)
        first = ast.unparse(call.args[0]) if call.args else "None"
        entry = case["entry_point"]
        answers["copy"][f"{case['id']}/forward"] = first
        answers["copy"][f"{case['id']}/backward"] = f"{entry}({case['output']})"
        answers["majority"][f"{case['id']}/forward"] = common_output
        answers["majority"][f"{case['id']}/backward"] = f"{entry}({common_input})"
    return answers


def baseline_verdicts(at: Layout, row: str) -> dict[str, Verdicts]:
    """Each baseline's verdicts on a row's test items, graded by ``codereasoner score``."""
    found: dict[str, Verdicts] = {}
    for name, answers in _baseline_answers(at, row).items():
        folder = at.out / "baselines" / f"{name}-{row}"
        results = folder / "results.jsonl"
        if not results.exists():
            folder.mkdir(parents=True, exist_ok=True)
            generations = folder / "generations.jsonl"
            generations.write_text("".join(
                json.dumps({"id": i, "sample": 0, "completion": f"<Answer>{a}</Answer>"}) + "\n"
                for i, a in answers.items()
            ))  # fmt: skip
            done = subprocess.run(
                [sys.executable, "-m", "codereasoner", "score", "--bench", "cases",
                 "-g", str(generations), "--data-dir", str(_cases_file(at, row).parent),
                 "--subset", "--results", str(results), "--json"],
                stdout=subprocess.DEVNULL, check=False,
            )  # fmt: skip
            if done.returncode not in (0, 1):
                raise SystemExit(f"learn_real: scoring the {name} rule failed")
        rows = [json.loads(line) for line in results.read_text().splitlines()]
        found[name] = {r["id"]: bool(r["correct"]) for r in rows}
    return found


def _programs(at: Layout, row: str, ids: list[str]) -> tuple[str, ...]:
    if row != "heldout":
        return tuple(program(i) for i in ids)
    code = {
        case["id"]: case["code"]
        for case in map(json.loads, _cases_file(at, row).read_text().splitlines())
    }
    return tuple(code[program(i)] for i in ids)


def scored(at: Layout, raw_form: Mapping[str, str]) -> dict[str, list[dict[str, Scored]]]:
    """row -> per seed: arm -> verdicts on the row's test items (baselines and the raw model
    are the same in every seed)."""
    table: dict[str, list[dict[str, Scored]]] = {}
    for row in ROWS:
        ids = _row_ids(at, "test", row)
        clusters = _programs(at, row, ids)
        fixed = {
            **baseline_verdicts(at, row),
            "raw": _form_verdicts(at, raw_form[row], "test", row),
        }
        per_seed = []
        for seed in at.seeds:
            arms = dict(fixed)
            for arm in TRAINED:
                name = "heldout-test" if row == "heldout" else "crux-cases-test"
                arms[arm] = verdicts(at.run(f"seed-{seed}/{arm}/{name}"))
            per_seed.append(
                {
                    arm: Scored(tuple(v.get(i, False) for i in ids), clusters)
                    for arm, v in arms.items()
                }
            )
        table[row] = per_seed
    return table


def write_report(at: Layout, args: argparse.Namespace) -> str:
    raw_form = json.loads((at.out / "raw-choice.json").read_text())
    table = scored(at, raw_form)
    lines = ["| benchmark | arm | accuracy [95% CI, programs] | per seed |", "|---|---|---|---|"]
    claims = ["| claim | benchmark | difference [95% CI, programs] | seed-level 95% CI | holds |",
              "|---|---|---|---|---|"]  # fmt: skip
    figures: dict[str, object] = {"raw_form": raw_form, "seeds": at.seeds}
    for row, per_seed in table.items():
        found = accuracies(per_seed, REPLICATES, 0)
        for arm, value in found.items():
            seeds = [s[arm].accuracy for s in per_seed]
            label = f"raw ({raw_form[row]})" if arm == "raw" else arm
            lines.append(
                f"| {row} | {label} | {value.text()} | {', '.join(f'{v:.3f}' for v in seeds)} |"
            )
            figures[f"{row}/{arm}"] = {"accuracy": value.__dict__, "per_seed": seeds,
                                       "items": len(per_seed[0][arm].right)}  # fmt: skip
        for other in CLAIMS:
            gap = difference(per_seed, "chains-grpo", other, REPLICATES, 0)
            by_seed = seed_interval(
                [s["chains-grpo"].accuracy - s[other].accuracy for s in per_seed]
            )
            holds = gap.low > 0 and by_seed.low > 0
            claims.append(f"| chains-grpo > {other} | {row} | {gap.text(True)} | "
                          f"{by_seed.text(True)} | {'holds' if holds else 'does not hold'} |")  # fmt: skip
            figures[f"claim/{row}/{other}"] = {"difference": gap.__dict__,
                                               "seed_level": by_seed.__dict__, "holds": holds}  # fmt: skip
    official = official_table(at, raw_form, figures)
    chance = ("Chance is not defined on these rows: every answer is an open Python literal, "
              "so there is no finite set of choices to guess among.")  # fmt: skip
    text = "\n".join([*lines, "", chance, "", *claims, "", *official])
    (at.out / "claims.md").write_text(text + "\n")
    settings = {key: str(value) for key, value in vars(args).items()}
    (at.out / "learn.json").write_text(
        json.dumps({"settings": settings, "figures": figures}, indent=2) + "\n"
    )
    return text


def official_table(
    at: Layout, raw_form: Mapping[str, str], figures: dict[str, object]
) -> list[str]:
    """CRUXEval's test programs in the official chat prompt (official extraction and grading),
    every program included: the trained arms beside the raw model's best official form."""
    lines = ["| benchmark (official prompt) | arm | pass@1 [95% CI, programs] | per seed |",
             "|---|---|---|---|"]  # fmt: skip
    for bench in CRUX_BENCHES:
        form = raw_form[f"official/{bench}"]
        raw = verdicts(at.run(f"raw/{form}/crux-test"), bench)
        ids = sorted(raw)
        per_seed = []
        for seed in at.seeds:
            arms = {"raw": raw} | {
                arm: verdicts(at.run(f"seed-{seed}/{arm}/crux-test"), bench) for arm in TRAINED
            }
            per_seed.append(
                {
                    arm: Scored(tuple(v.get(i, False) for i in ids), tuple(ids))
                    for arm, v in arms.items()
                }
            )
        for arm, value in accuracies(per_seed, REPLICATES, 0).items():
            seeds = [s[arm].accuracy for s in per_seed]
            label = f"raw ({form})" if arm == "raw" else arm
            lines.append(
                f"| {bench} | {label} | {value.text()} | {', '.join(f'{v:.3f}' for v in seeds)} |"
            )
            figures[f"official/{bench}/{arm}"] = {"accuracy": value.__dict__, "per_seed": seeds,
                                                  "items": len(ids)}  # fmt: skip
    return lines
