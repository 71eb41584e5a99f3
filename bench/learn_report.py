"""The report of ``bench/learn.py``: Markdown tables on stdout, a summary line, ``learn.json``.

Every accuracy is on the test split's held-out families, every item kept (the copy rule is
scored on the same items as the arms), the mean over seeds with a program-level bootstrap
interval (``learn_stats``); the per-seed figures stand beside it, and so does chance (a
uniform guess among the ten digits an answer can be). Each claim is a paired difference
between two arms, over all held-out families and over each of their two kinds (new pairs of
length 2, longer programs of length 3); it holds when the whole bootstrap interval lies above 0
and so does the seed-level one (a t-interval over the per-seed differences). A trained arm
that does not fit its own training items is marked so in the table.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from learn_data import SPLITS
from learn_model import Item
from learn_stats import Interval, Scored, accuracies, difference, seed_interval

if TYPE_CHECKING:
    from learn_run import Plan, Seeded

ARMS = ("copy", "raw", "sft-direct", "sft-chain", "grpo")
CHANCE = 0.1  # an answer is one digit (forward) or a call of one digit (backward): 1 in 10
TRAINED = ("sft-direct", "sft-chain", "grpo")
TITLES = {
    "copy": "copy rule",
    "raw": "raw (untrained)",
    "sft-direct": "SFT, direct answers",
    "sft-chain": "SFT, reasoning chains",
    "grpo": "SFT chains + GRPO",
}
# (better, than): the differences the run is meant to show
CLAIMS = (("sft-chain", "sft-direct"), ("grpo", "sft-chain"), ("grpo", "copy"))
FIT_FLOOR = 0.9  # a trained arm "fits" its training items at this accuracy or above

Keep = Callable[[Item], bool]
VIEWS: dict[str, Keep] = {
    "all held-out": lambda item: True,
    "new pairs (length 2)": lambda item: item[0].length == 2,
    "longer (length 3)": lambda item: item[0].length == 3,
}
DIRECTIONS: dict[str, Keep] = {
    "forward": lambda item: item[1] == "forward",
    "backward": lambda item: item[1] == "backward",
}


def restricted(runs: Sequence[Seeded], keep: Keep) -> list[dict[str, Scored]]:
    """Each seed's test verdicts on the items ``keep`` accepts."""
    views = []
    for run in runs:
        chosen = [index for index, item in enumerate(run.items["test"]) if keep(item)]
        views.append(
            {
                arm: Scored(
                    tuple(scored.right[i] for i in chosen),
                    tuple(scored.programs[i] for i in chosen),
                )
                for arm, scored in run.test.items()
            }
        )
    return views


def shown(share: float) -> str:
    return "n/a" if math.isnan(share) else f"{share:.3f}"


def mean_of(runs: Sequence[Seeded], arm: str, keep: Keep) -> float:
    shares = [
        view[arm].accuracy if view[arm].right else math.nan for view in restricted(runs, keep)
    ]
    return sum(shares) / len(shares)


def holds(claim: Interval, seed_level: Interval | None = None) -> bool:
    return claim.low > 0 and (seed_level is None or seed_level.low > 0)


def per_seed_differences(runs: Sequence[Seeded], better: str, than: str, keep: Keep) -> list[float]:
    return [by_arm[better].accuracy - by_arm[than].accuracy for by_arm in restricted(runs, keep)]


def figures(runs: Sequence[Seeded], plan: Plan) -> dict[str, Any]:
    """The intervals: each arm's accuracy and each claim's difference, in every view."""
    found: dict[str, Any] = {"accuracy": {}, "claims": {}}
    for view, keep in VIEWS.items():
        seeds = restricted(runs, keep)
        if not all(next(iter(by_arm.values())).right for by_arm in seeds):
            continue  # a view with no items in some seed (a --quick run)
        found["accuracy"][view] = accuracies(seeds, plan.bootstrap, seed=0)
        found["claims"][view] = {
            f"{better} > {than}": difference(seeds, better, than, plan.bootstrap, seed=0)
            for better, than in CLAIMS
        }
        found.setdefault("seed_level", {})[view] = {
            f"{better} > {than}": seed_interval(per_seed_differences(runs, better, than, keep))
            for better, than in CLAIMS
        }
    return found


def arm_table(runs: Sequence[Seeded], found: Mapping[str, Any]) -> list[str]:
    seeds = " | ".join(f"seed {run.seed}" for run in runs)
    views = [view for view in VIEWS if view in found["accuracy"]]
    head = " | ".join(f"{view} [95% CI]" for view in views)
    lines = [
        f"| arm | {head} | {seeds} | {' | '.join(DIRECTIONS)} | training items (fit) |",
        "|---|" + "---|" * len(views) + "---:|" * (len(runs) + len(DIRECTIONS) + 1),
    ]
    for arm in ARMS:
        intervals = " | ".join(found["accuracy"][view][arm].text() for view in views)
        per_seed = " | ".join(f"{run.test[arm].accuracy:.3f}" for run in runs)
        directions = " | ".join(shown(mean_of(runs, arm, keep)) for keep in DIRECTIONS.values())
        share = sum(run.fit.get(arm, math.nan) for run in runs) / len(runs)
        fit = shown(share)
        if arm in TRAINED and not share >= FIT_FLOOR:
            fit += " (did not fit)"
        lines.append(f"| {TITLES[arm]} | {intervals} | {per_seed} | {directions} | {fit} |")
    chance = " | ".join(f"{CHANCE:.3f}" for _ in views)
    seeds_chance = " | ".join(f"{CHANCE:.3f}" for _ in runs)
    directions_chance = " | ".join(f"{CHANCE:.3f}" for _ in DIRECTIONS)
    lines.append(f"| chance (1 in 10) | {chance} | {seeds_chance} | {directions_chance} | - |")
    return lines


def claim_table(runs: Sequence[Seeded], found: Mapping[str, Any]) -> list[str]:
    seeds = " | ".join(f"seed {run.seed}" for run in runs)
    lines = [
        f"| claim | on | difference [95% CI, programs] | seed-level [95% CI] | {seeds} | holds |",
        "|---|---|---|---|" + "---:|" * len(runs) + "---|",
    ]
    for better, than in CLAIMS:
        for view, claims in found["claims"].items():
            name = f"{better} > {than}"
            claim, seed_level = claims[name], found["seed_level"][view][name]
            per_seed = " | ".join(
                f"{d:+.3f}" for d in per_seed_differences(runs, better, than, VIEWS[view])
            )
            lines.append(
                f"| {TITLES[better]} > {TITLES[than]} | {view} | {claim.text(True)} | "
                f"{seed_level.text(True)} | {per_seed} | "
                f"{'yes' if holds(claim, seed_level) else 'no'} |"
            )
    for arm in TRAINED:
        value = found["accuracy"]["all held-out"][arm]
        gap = Interval(value.estimate - CHANCE, value.low - CHANCE, value.high - CHANCE)
        seed_level = seed_interval([run.test[arm].accuracy - CHANCE for run in runs])
        per_seed = " | ".join(f"{run.test[arm].accuracy - CHANCE:+.3f}" for run in runs)
        lines.append(
            f"| {TITLES[arm]} > chance | all held-out | {gap.text(True)} | "
            f"{seed_level.text(True)} | {per_seed} | {'yes' if holds(gap, seed_level) else 'no'} |"
        )
    return lines


def choice_table(runs: Sequence[Seeded]) -> list[str]:
    lines = [
        "| arm | seed | chosen lr | chosen steps | validation accuracy |",
        "|---|---:|---:|---:|---:|",
    ]
    for arm in TRAINED:
        for run in runs:
            c = run.choices[arm]
            lines.append(
                f"| {TITLES[arm]} | {run.seed} | {c.rate:g} | {c.steps} | {c.validation:.3f} |"
            )
    return lines


def summary(runs: Sequence[Seeded], found: Mapping[str, Any]) -> str:
    means = found["accuracy"]["all held-out"]
    said = ", ".join(f"{arm} {means[arm].estimate:.3f}" for arm in ARMS)
    claims, seed_level = found["claims"]["all held-out"], found["seed_level"]["all held-out"]
    verdicts = "; ".join(
        f"{name}: {'holds' if holds(claims[name], seed_level[name]) else 'does not hold'}"
        for name in (f"{better} > {than}" for better, than in CLAIMS)
    )
    return (
        f"learn: held-out test accuracy, mean of {len(runs)} seeds: {said}; chance {CHANCE}; "
        f"{verdicts}"
    )


def seed_intervals(run: Seeded, plan: Plan) -> dict[str, dict[str, Any]]:
    """One seed's accuracies with their intervals, by arm, in every view and direction."""
    found: dict[str, dict[str, Any]] = {arm: {} for arm in ARMS}
    for view, keep in {**VIEWS, **DIRECTIONS}.items():
        (seeds,) = restricted([run], keep)
        if not seeds["copy"].right:
            continue
        for arm, value in accuracies([seeds], plan.bootstrap, seed=run.seed).items():
            found[arm][view] = asdict(value)
    return found


def seed_record(run: Seeded, plan: Plan) -> dict[str, Any]:
    data = run.data
    return {
        "seed": run.seed,
        "model": run.model,
        "pairs": {name: [list(pair) for pair in getattr(data.split, name)] for name in SPLITS},
        "families": {name: sorted({c.family for c in data.cases[name]}) for name in SPLITS},
        "left_out_same_function": data.same_function,
        "items": {name: len(items) for name, items in run.items.items()},
        "copy_solved": run.copy_solved,
        "test": seed_intervals(run, plan),
        "training_fit": run.fit,
        "choices": {arm: asdict(choice) for arm, choice in run.choices.items()},
    }


def report(runs: Sequence[Seeded], plan: Plan, wall_s: float, out: Path) -> dict[str, Any]:
    """Print the tables and the summary line; write ``learn.json``."""
    found = figures(runs, plan)
    record: dict[str, Any] = {
        "command": sys.argv,
        "plan": asdict(plan),
        "seeds": [run.seed for run in runs],
        "wall_s": wall_s,
        "accuracy": {
            view: {arm: asdict(value) for arm, value in by_arm.items()}
            for view, by_arm in found["accuracy"].items()
        },
        "chance": CHANCE,
        "claims": {
            view: {
                name: {
                    **asdict(value),
                    "seed_level": asdict(found["seed_level"][view][name]),
                    "holds": holds(value, found["seed_level"][view][name]),
                }
                for name, value in claims.items()
            }
            for view, claims in found["claims"].items()
        },
        "per_seed": [seed_record(run, plan) for run in runs],
    }
    (out / "learn.json").write_text(json.dumps(record, indent=2) + "\n")
    for table in (arm_table(runs, found), claim_table(runs, found), choice_table(runs)):
        print("\n".join(table))
        print()
    # wall times go to stderr and learn.json: the same command prints the same stdout
    print(f"learn: {wall_s:.0f} s; figures: {out / 'learn.json'}", file=sys.stderr)
    print(summary(runs, found))
    return record
