"""The run of ``bench/learn.py`` (see its docstring): seeds, arms, the choice of settings on the
validation split, one test evaluation per arm; the report is ``learn_report``."""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from datasets import disable_progress_bars
from transformers import PreTrainedTokenizerFast, Qwen2ForCausalLM
from transformers.utils import logging as hf_logging

from codereasoner.execution import Executor
from codereasoner.training.rewards import CodeReasoningReward
from learn_data import DIRECTIONS, SPLITS, Case, Data, build, family_id
from learn_model import (
    END_IDS,
    Item,
    ModelSize,
    accuracy_items,
    answer,
    build_model,
    build_tokenizer,
    copy_answer,
    grade,
    token_length,
    training_texts,
)
from learn_report import report
from learn_stats import Scored
from learn_train import Trained, log, train_grpo, train_sft, weights


@dataclass(frozen=True)
class Plan:
    """The sizes of one run (``--quick`` shrinks them; the code path is the same)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    held_pairs: int = 5  # operation pairs held out for validation, and as many for test
    size: ModelSize = field(default_factory=ModelSize)
    sft_steps: int = 600
    sft_batch: int = 16
    sft_rates: tuple[float, ...] = (1e-3, 3e-3)
    grpo_steps: int = 30
    grpo_prompts: int = 4
    grpo_generations: int = 8
    grpo_rates: tuple[float, ...] = (3e-5, 3e-4)
    checkpoints: int = 3  # weights kept (and scored on validation) per run, evenly spaced
    held_programs: int | None = None  # programs per held-out split (None: all); for --quick
    bootstrap: int = 2000
    log_every: int = 50


QUICK = Plan(
    seeds=(0, 1),
    sft_steps=400,
    sft_rates=(3e-3,),
    grpo_steps=4,
    grpo_prompts=2,
    grpo_generations=4,
    grpo_rates=(3e-4,),
    checkpoints=1,
    held_programs=10,
    bootstrap=200,
    log_every=100,
)


@dataclass
class Choice:
    """One trained arm: the settings chosen on validation, every setting's validation accuracy,
    the training runs' logged figures and the arm's wall time."""

    rate: float | None = None
    steps: int | None = None
    validation: float | None = None
    candidates: list[dict[str, float]] = field(default_factory=list)
    logged: dict[str, list[float]] = field(default_factory=dict)
    wall_s: float = 0.0


@dataclass
class Seeded:
    """One seed's data, items and each arm's test verdicts."""

    seed: int
    data: Data
    items: dict[str, list[Item]]
    copy_solved: dict[str, int]
    test: dict[str, Scored] = field(default_factory=dict)
    choices: dict[str, Choice] = field(default_factory=dict)
    model: dict[str, int] = field(default_factory=dict)  # its parameters and vocabulary
    fit: dict[str, float] = field(default_factory=dict)  # accuracy on the training items


@dataclass(frozen=True)
class Context:
    """What every stage of a seed uses."""

    plan: Plan
    tokenizer: PreTrainedTokenizerFast  # trained on the seed's training texts
    reward: CodeReasoningReward
    pool: Executor
    folder: Path
    max_new_tokens: int  # twice the longest teacher answer to a training item, and a margin


# ---------------------------------------------------------------------------------------
# data and evaluation
# ---------------------------------------------------------------------------------------


def asked(cases: Sequence[Case]) -> list[Item]:
    return [(case, direction) for case in cases for direction in DIRECTIONS]


def copy_verdicts(items: Sequence[Item], pool: Executor) -> list[bool]:
    """Whether the copy rule answers each item right, graded like any answer."""
    return grade(items, [(copy_answer(case, direction), False) for case, direction in items], pool)


def prepare(plan: Plan, pool: Executor, seed: int) -> Seeded:
    """The seed's programs and items. Every held-out item is kept: the copy rule is scored on
    the same items as the arms, not filtered away."""
    data = build(plan.held_pairs, seed, pool)
    items = {"train": asked(data.cases["train"])}
    solved = {}
    for name in SPLITS[1:]:
        families = sorted({case.family for case in data.cases[name]})
        limit = plan.held_programs or len(families)
        kept = set(random.Random(seed).sample(families, min(limit, len(families))))
        items[name] = asked([case for case in data.cases[name] if case.family in kept])
        solved[name] = sum(copy_verdicts(items[name], pool))
    return Seeded(seed, data, items, solved)


def scored(items: Sequence[Item], right: Sequence[bool]) -> Scored:
    return Scored(tuple(right), tuple(case.family for case, _ in items))


def evaluate(context: Context, model: Qwen2ForCausalLM, items: Sequence[Item]) -> Scored:
    right = accuracy_items(model, context.tokenizer, items, context.pool, context.max_new_tokens)
    return scored(items, right)


def longest_answer(tokenizer: PreTrainedTokenizerFast, items: Sequence[Item]) -> int:
    return max(token_length(tokenizer, answer(case, d, "chain")) for case, d in items)


# ---------------------------------------------------------------------------------------
# arms
# ---------------------------------------------------------------------------------------

Train = Callable[[Qwen2ForCausalLM, float, list[int]], Trained]


def kept_steps(steps: int, checkpoints: int) -> list[int]:
    return sorted({max(round(steps * k / checkpoints), 1) for k in range(1, checkpoints + 1)})


def tune(
    context: Context,
    seeded: Seeded,
    arm: str,
    model: Qwen2ForCausalLM,
    start: dict[str, torch.Tensor],
    rates: Sequence[float],
    steps: int,
    train: Train,
) -> Choice:
    """Train from ``start`` at each rate, score the kept weights on validation, keep the best
    (the first on a tie: the lower rate, the fewer steps) and score it once on test."""
    began = time.perf_counter()
    choice = Choice()
    best: dict[str, torch.Tensor] = start
    for rate in rates:
        model.load_state_dict(start)
        trained = train(model, rate, kept_steps(steps, context.plan.checkpoints))
        choice.logged[f"{rate:g}"] = trained.logged
        for step, state in sorted(trained.snapshots.items()):
            model.load_state_dict(state)
            accuracy = evaluate(context, model, seeded.items["validation"]).accuracy
            log(f"  [seed {seeded.seed}] {arm} lr {rate:g} step {step}: validation {accuracy:.3f}")
            choice.candidates.append({"rate": rate, "steps": step, "validation": accuracy})
            if choice.validation is None or accuracy > choice.validation:
                choice.rate, choice.steps, choice.validation, best = rate, step, accuracy, state
    model.load_state_dict(best)
    seeded.test[arm] = evaluate(context, model, seeded.items["test"])
    seeded.fit[arm] = evaluate(context, model, seeded.items["train"]).accuracy
    choice.wall_s = time.perf_counter() - began
    seeded.choices[arm] = choice
    log(
        f"[seed {seeded.seed}] {arm}: chose lr {choice.rate:g}, {choice.steps} steps "
        f"(validation {choice.validation:.3f}); test {seeded.test[arm].accuracy:.3f}"
        f", training items {seeded.fit[arm]:.3f} ({choice.wall_s:.0f} s)"
    )
    return choice


def sft_arm(
    context: Context,
    seeded: Seeded,
    model: Qwen2ForCausalLM,
    start: dict[str, torch.Tensor],
    answer_format: str,
) -> dict[str, torch.Tensor]:
    """Train on direct answers or on chains; returns the chosen weights."""
    plan = context.plan

    def train(model: Qwen2ForCausalLM, rate: float, keep: list[int]) -> Trained:
        return train_sft(
            model,
            context.tokenizer,
            seeded.items["train"],
            answer_format,
            steps=plan.sft_steps,
            batch=plan.sft_batch,
            learning_rate=rate,
            keep=keep,
            seed=seeded.seed,
            folder=context.folder / f"sft-{answer_format}",
            log_every=plan.log_every,
        )

    tune(
        context, seeded, f"sft-{answer_format}", model, start, plan.sft_rates, plan.sft_steps, train
    )
    return weights(model)


def grpo_arm(
    context: Context, seeded: Seeded, model: Qwen2ForCausalLM, start: dict[str, torch.Tensor]
) -> None:
    """GRPO from the chosen chain-SFT weights, on the training items."""
    plan = context.plan
    longest = longest_answer(context.tokenizer, seeded.items["train"])

    def train(model: Qwen2ForCausalLM, rate: float, keep: list[int]) -> Trained:
        return train_grpo(
            model,
            context.tokenizer,
            seeded.items["train"],
            context.reward,
            steps=plan.grpo_steps,
            prompts_per_step=plan.grpo_prompts,
            generations=plan.grpo_generations,
            learning_rate=rate,
            max_completion=longest + 8,
            keep=keep,
            seed=seeded.seed,
            folder=context.folder / "grpo",
            log_every=max(plan.log_every // 10, 1),
        )

    tune(context, seeded, "grpo", model, start, plan.grpo_rates, plan.grpo_steps, train)


def run_seed(plan: Plan, reward: CodeReasoningReward, folder: Path, seed: int) -> Seeded:
    began = time.perf_counter()
    pool = reward.pool()
    seeded = prepare(plan, pool, seed)
    tokenizer = build_tokenizer(training_texts(seeded.items["train"]))
    # from training items only: held-out programs are longer, so their chains get room to grow
    longest = 2 * longest_answer(tokenizer, seeded.items["train"]) + 8
    context = Context(plan, tokenizer, reward, pool, folder / f"seed-{seed}", longest)
    log_data(seeded, time.perf_counter() - began)
    test = seeded.items["test"]
    seeded.test["copy"] = scored(test, copy_verdicts(test, pool))
    model = build_model(plan.size, tokenizer, seed)
    seeded.model = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocabulary": len(tokenizer),
    }
    log(f"[seed {seed}] model: Qwen2, {seeded.model}")
    start = weights(model)
    seeded.test["raw"] = evaluate(context, model, test)
    seeded.fit["raw"] = evaluate(context, model, seeded.items["train"]).accuracy
    log(
        f"[seed {seed}] copy rule {seeded.test['copy'].accuracy:.3f}, raw {seeded.test['raw'].accuracy:.3f}"
    )
    sft_arm(context, seeded, model, start, "direct")
    chain = sft_arm(context, seeded, model, start, "chain")
    grpo_arm(context, seeded, model, chain)
    return seeded


def log_data(seeded: Seeded, wall_s: float) -> None:
    data = seeded.data
    held = {
        name: " ".join(family_id(pair) for pair in getattr(data.split, name)) for name in SPLITS[1:]
    }
    families = {name: len({case.family for case in data.cases[name]}) for name in SPLITS}
    log(
        f"[seed {seeded.seed}] data: held-out pairs validation {held['validation']}; test "
        f"{held['test']}; families {families}; left out for computing a training function "
        f"{ {k: len(v) for k, v in data.same_function.items()} }; items "
        f"{ {k: len(v) for k, v in seeded.items.items()} }, of which the copy rule solves "
        f"{seeded.copy_solved} ({wall_s:.0f} s)"
    )


# ---------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a smoke run (1-3 min), same path")
    parser.add_argument("--out", type=Path, default=None, help="default: a temporary folder")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    return parser.parse_args()


def quiet() -> None:
    hf_logging.set_verbosity_error()
    disable_progress_bars()
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)


def run(description: str) -> None:
    args = arguments(description)
    plan = QUICK if args.quick else Plan()
    out = args.out or Path(tempfile.mkdtemp(prefix="learn-"))
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)  # the same command gives the same table
    quiet()
    began = time.perf_counter()
    reward = CodeReasoningReward(eos_token_ids=END_IDS, workers=2)
    runs: list[Seeded] = []
    try:
        for seed in plan.seeds:
            runs.append(run_seed(plan, reward, out, seed))
    finally:
        reward.close()
    report(runs, plan, time.perf_counter() - began, out)
