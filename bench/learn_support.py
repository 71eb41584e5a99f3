"""The parts of ``bench/learn.py`` (see its docstring): data, model, evaluation, training, the run."""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset, disable_progress_bars
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    PreTrainedTokenizerFast,
    PrinterCallback,
    Qwen2ForCausalLM,
    TrainerCallback,
    set_seed,
)
from transformers.utils import logging as hf_logging
from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

from codereasoner.execution import Pool
from codereasoner.synth.catalog import catalog
from codereasoner.synth.decontam import BenchmarkIndex, BenchmarkProgram, Decontamination
from codereasoner.synth.generators.offline import OfflineGenerator, OfflineSource
from codereasoner.synth.pipeline import SynthConfig
from codereasoner.synth.pipeline import run as synthesize_run
from codereasoner.training.cases import CASES_FILE, Case, read_cases
from codereasoner.training.rewards import CodeReasoningReward, Sample, score_batch
from codereasoner.training.tiny import qwen2_model

FAMILY = (
    "str.upper",
    "str.lower",
    "str.swapcase",
    "str.capitalize",
    "str.title",
    "str.strip",
    "list.reverse",
    "list.sort",
    "list.append",
    "list.copy",
    "builtins.sorted",
    "builtins.reversed",
)
DIRECTIONS = ("forward", "backward")
MAX_CODE_CHARS = 120
# A held-out program is dropped for these; near duplicates (the same program up to the names it
# binds) are counted, not dropped: in a family this narrow nearly every program has one.
DROP_RULES = frozenset({"ngram10", "short_exact"})
PAD, EOS = "<|endoftext|>", "<|im_end|>"
ANSWER_TAGS = ("<Answer>", "</Answer>")
THREADS = 2


@dataclass(frozen=True)
class Plan:
    """The sizes of one run (``--quick`` shrinks them, the code path is the same)."""

    candidates: int = 8000  # offline candidates drawn (about 60% survive the filters)
    max_output_chars: int = 16
    held_share: float = 0.4  # of the programs, before decontamination
    max_eval: int = 1000  # held-out items (cases x directions) at most
    hidden: int = 128
    layers: int = 2
    heads: int = 4
    ffn: int = 2  # the MLP's width, in multiples of ``hidden``
    sft_steps: int = 1200
    sft_batch: int = 32
    sft_lr: float = 3e-3
    # Loss on the prompt too: more signal per step (the code repeats its names, a first
    # lesson in copying from the context); not compared with completion-only loss.
    prompt_loss: bool = True
    grpo_steps: int = 300
    grpo_prompts: int = 8
    grpo_generations: int = 8
    grpo_lr: float = 5e-5  # 3e-4 wrecked the SFT policy (0.197 -> 0.056 held-out)
    max_completion: int = 40
    log_every: int = 20


QUICK = Plan(
    candidates=1000,
    max_eval=80,
    sft_steps=60,
    sft_batch=16,
    grpo_steps=4,
    grpo_prompts=4,
    log_every=5,
)


@dataclass
class Stage:
    name: str
    accuracy: dict[str, float]
    n: dict[str, int]
    wall_s: float
    right: list[bool] = field(default_factory=list)  # per held-out item, in a fixed order
    extra: dict[str, Any] = field(default_factory=dict)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------


def synthesize(plan: Plan, seed: int, folder: Path) -> list[Case]:
    """Cases of the family from the offline synthesizer: depth 0, no extras, no nested calls."""
    methods = tuple(method for method in catalog() if method.qualname in FAMILY)
    source = OfflineSource(OfflineGenerator(seed, max_depth=0, methods=methods))
    config = SynthConfig(
        out=folder, n=plan.candidates, seed=seed, workers=2, max_output_chars=plan.max_output_chars
    )
    skip = Decontamination.skip("bench/learn.py: held-out is checked against train instead")
    synthesize_run(config, source=source, decontam=skip)
    plain = {
        record["id"]
        for record in map(json.loads, (folder / CASES_FILE).read_text().splitlines())
        if not record["constraints"]["extras"] and not record["constraints"]["nested_calls"]
    }
    cases = read_cases(folder / CASES_FILE)
    return [case for case in cases if case.id in plain and len(case.code) <= MAX_CODE_CHARS]


def split_by_program(
    cases: Sequence[Case], held_share: float, seed: int
) -> tuple[list[Case], list[Case]]:
    programs = sorted({case.code for case in cases})
    random.Random(seed).shuffle(programs)
    held = set(programs[: round(held_share * len(programs))])
    return [c for c in cases if c.code not in held], [c for c in cases if c.code in held]


def decontaminate(train: Sequence[Case], held: Sequence[Case]) -> tuple[list[Case], Counter[str]]:
    """Held-out cases whose program matches no training program under the literal 10-gram rule
    (and short exact strings); the counter says what was dropped and what near duplicates
    were kept."""
    programs = sorted({case.code for case in train})
    index = BenchmarkIndex(
        [BenchmarkProgram("train", str(number), code) for number, code in enumerate(programs)],
        rule="literal",
    )
    verdicts: dict[str, frozenset[str]] = {}
    for code in sorted({case.code for case in held}):
        verdicts[code] = frozenset(match.rule for match in index.check(code))
    counts: Counter[str] = Counter()
    for rules in verdicts.values():
        counts["programs dropped" if rules & DROP_RULES else "programs kept"] += 1
        if not rules & DROP_RULES and "near_duplicate" in rules:
            counts["kept programs with a near duplicate in train"] += 1
    kept = [case for case in held if not verdicts[case.code] & DROP_RULES]
    counts["cases dropped"] = len(held) - len(kept)
    counts["cases kept"] = len(kept)
    return kept, counts


def prompt(case: Case, direction: str) -> str:
    """A compact prompt: the function, then an assert with the unknown side left as ``?``."""
    asked = f"{case.call} == ?" if direction == "forward" else f"? == {case.output}"
    return f"{case.code}\nassert {asked}\n"


def answer(case: Case, direction: str) -> str:
    stated = case.output if direction == "forward" else case.call
    return f"{ANSWER_TAGS[0]}{stated}{ANSWER_TAGS[1]}"


def reward_row(case: Case, direction: str) -> dict[str, str]:
    """A ``trl-grpo`` row (codereasoner.training.export) with a plain-text prompt."""
    return {
        "prompt": prompt(case, direction),
        "direction": direction,
        "code": case.code,
        "entry_point": case.entry_point,
        "call": case.call,
        "target": case.output,
        "case_id": case.id,
    }


# ---------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Bytes as tokens (a BPE with no merges over the byte-level alphabet)."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {token: number for number, token in enumerate([PAD, EOS, *alphabet])}
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    raw.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token=EOS,
        pad_token=PAD,
        bos_token=None,
        unk_token=None,
        model_max_length=512,
        padding_side="left",
    )
    tokenizer.add_tokens(list(ANSWER_TAGS))
    return tokenizer


def build_model(plan: Plan, tokenizer: PreTrainedTokenizerFast, seed: int) -> Qwen2ForCausalLM:
    set_seed(seed)
    return qwen2_model(
        tokenizer,
        hidden=plan.hidden,
        ffn=plan.ffn * plan.hidden,
        layers=plan.layers,
        heads=plan.heads,
        kv_heads=plan.heads,
        max_positions=512,
    )


def end_ids(tokenizer: PreTrainedTokenizerFast) -> list[int]:
    return [tokenizer.eos_token_id, tokenizer.pad_token_id]


# ---------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------


def completions(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    prompts: Sequence[str],
    max_new_tokens: int,
    batch: int = 64,
) -> list[tuple[str, bool]]:
    """Greedy completions and whether each was cut at ``max_new_tokens``."""
    stops = set(end_ids(tokenizer))
    found: list[tuple[str, bool]] = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(prompts), batch):
            encoded = tokenizer(
                list(prompts[start : start + batch]), return_tensors="pt", padding=True
            )
            generated = model.generate(
                **encoded,
                do_sample=False,
                max_new_tokens=max_new_tokens,
                eos_token_id=sorted(stops),
                pad_token_id=tokenizer.pad_token_id,
            )
            for row in generated[:, encoded["input_ids"].shape[1] :].tolist():
                ended = next((i for i, token in enumerate(row) if token in stops), None)
                kept = row if ended is None else row[:ended]
                found.append((tokenizer.decode(kept, skip_special_tokens=True), ended is None))
    return found


def evaluate(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    held: Sequence[Case],
    pool: Pool,
    plan: Plan,
) -> dict[str, list[bool]]:
    """Whether each held-out item was answered right, grouped by direction, ``overall`` and
    method; graded as the reward grades (a right ``<Answer>`` counts; a backward answer is run
    in the sandbox)."""
    asked = [(case, direction) for case in held for direction in DIRECTIONS]
    texts = completions(model, tokenizer, [prompt(c, d) for c, d in asked], plan.max_completion)
    samples = [
        Sample(d, c.code, c.entry_point, c.call, c.output, c.id, text, truncated)
        for (c, d), (text, truncated) in zip(asked, texts, strict=True)
    ]
    rewards = score_batch(samples, pool).rewards
    right: dict[str, list[bool]] = {name: [] for name in (*DIRECTIONS, "overall")}
    for (case, direction), reward in zip(asked, rewards, strict=True):
        for group in (direction, "overall", case.method):
            right.setdefault(group, []).append(bool(reward))
    return right


# ---------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------


class Progress(TrainerCallback):
    """One stderr line per logging step: the stage, the step and the logged figures."""

    def __init__(self, stage: str, keys: Sequence[str]) -> None:
        self.stage = stage
        self.keys = keys

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **_: Any):
        shown = [f"{key} {logs[key]:.3f}" for key in self.keys if logs and key in logs]
        if shown:
            log(f"  {self.stage} step {state.global_step}/{state.max_steps}: {', '.join(shown)}")


CPU_SETTINGS: dict[str, Any] = {
    "bf16": False,
    "gradient_checkpointing": False,
    "use_cpu": True,
    "report_to": "none",
    "save_strategy": "no",
    "dataloader_num_workers": 0,
    "disable_tqdm": True,
}


def train_sft(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    train: Sequence[Case],
    plan: Plan,
    seed: int,
    folder: Path,
) -> None:
    rows = [
        {"prompt": prompt(case, direction), "completion": answer(case, direction)}
        for case in train
        for direction in DIRECTIONS
    ]
    args = SFTConfig(
        output_dir=str(folder),
        max_steps=plan.sft_steps,
        per_device_train_batch_size=plan.sft_batch,
        learning_rate=plan.sft_lr,
        lr_scheduler_type="cosine",
        warmup_steps=max(plan.sft_steps // 20, 1),
        weight_decay=0.0,
        max_length=256,
        completion_only_loss=not plan.prompt_loss,
        logging_steps=plan.log_every,
        seed=seed,
        **CPU_SETTINGS,
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[Progress("sft", ("loss", "mean_token_accuracy"))],
    )
    trainer.remove_callback(PrinterCallback)  # Progress prints the figures, to stderr
    trainer.train()


def train_grpo(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    train: Sequence[Case],
    reward: CodeReasoningReward,
    plan: Plan,
    seed: int,
    folder: Path,
) -> dict[str, float]:
    rows = [reward_row(case, direction) for case in train for direction in DIRECTIONS]
    random.Random(seed).shuffle(rows)
    args = GRPOConfig(
        output_dir=str(folder),
        max_steps=plan.grpo_steps,
        per_device_train_batch_size=plan.grpo_prompts * plan.grpo_generations,
        num_generations=plan.grpo_generations,
        max_completion_length=plan.max_completion,
        learning_rate=plan.grpo_lr,
        lr_scheduler_type="constant",
        beta=0.0,
        mask_truncated_completions=True,
        temperature=1.0,
        use_vllm=False,
        logging_steps=max(plan.log_every // 4, 1),
        seed=seed,
        **CPU_SETTINGS,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[Progress("grpo", ("reward", "reward_std", "frac_reward_zero_std", "loss"))],
    )
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    rewards = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    return {"first_reward": rewards[0], "last_reward": rewards[-1]} if rewards else {}


# ---------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------


def measure(
    name: str,
    started: float,
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    held: Sequence[Case],
    pool: Pool,
    plan: Plan,
) -> Stage:
    right = evaluate(model, tokenizer, held, pool, plan)
    shares = {group: sum(flags) / max(len(flags), 1) for group, flags in right.items()}
    headline = (*DIRECTIONS, "overall")
    stage = Stage(
        name,
        {group: shares[group] for group in headline},
        {group: len(right[group]) for group in headline},
        time.perf_counter() - started,
        right["overall"],
    )
    stage.extra["by_method"] = {
        group: f"{sum(flags)}/{len(flags)}"
        for group, flags in sorted(right.items())
        if group not in headline
    }
    accuracy = stage.accuracy
    log(
        f"[{name}] held-out accuracy: forward {accuracy['forward']:.3f}, backward "
        f"{accuracy['backward']:.3f}, overall {accuracy['overall']:.3f} "
        f"({stage.wall_s:.0f} s)"
    )
    return stage


def table(stages: Sequence[Stage]) -> str:
    lines = [
        "| stage | forward | backward | overall | n | wall s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for stage in stages:
        a = stage.accuracy
        lines.append(
            f"| {stage.name} | {a['forward']:.3f} | {a['backward']:.3f} | {a['overall']:.3f} "
            f"| {stage.n['overall']} | {stage.wall_s:.0f} |"
        )
    return "\n".join(lines)


def _figures(stage: Stage) -> dict[str, Any]:
    figures = asdict(stage)
    del figures["right"]
    return figures


def verdict(stages: dict[str, Stage]) -> str:
    """Each stage against the one before: the change, and the items it turned right and
    wrong (a paired view: the same held-out items every time)."""
    parts = []
    for before, after in (("raw", "sft"), ("sft", "grpo")):
        old, new = stages[before], stages[after]
        change = new.accuracy["overall"] - old.accuracy["overall"]
        gained = sum(n and not o for o, n in zip(old.right, new.right, strict=True))
        lost = sum(o and not n for o, n in zip(old.right, new.right, strict=True))
        word = "above" if change > 0 else "NOT above"
        parts.append(f"{after} {word} {before} ({change:+.3f}: {gained} items gained, {lost} lost)")
    return "; ".join(parts)


def run(description: str) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a tiny run (1-2 min), same path")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="default: a temporary folder")
    parser.add_argument("--grpo-steps", type=int, default=None, help="GRPO steps (default 300)")
    parser.add_argument("--grpo-lr", type=float, default=None, help="GRPO learning rate")
    args = parser.parse_args()
    plan = QUICK if args.quick else Plan()
    if args.grpo_steps is not None:
        plan = replace(plan, grpo_steps=args.grpo_steps)
    if args.grpo_lr is not None:
        plan = replace(plan, grpo_lr=args.grpo_lr)
    out = args.out or Path(tempfile.mkdtemp(prefix="learn-"))
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(THREADS)
    hf_logging.set_verbosity_error()
    disable_progress_bars()
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    began = time.perf_counter()

    started = time.perf_counter()
    cases = synthesize(plan, args.seed, out / "synth")
    train, candidates = split_by_program(cases, plan.held_share, args.seed)
    held, counts = decontaminate(train, candidates)
    held = held[: plan.max_eval // len(DIRECTIONS)]
    data_s = time.perf_counter() - started
    log(
        f"[data] {len(cases)} cases of {len(FAMILY)} methods; train {len(train)} cases "
        f"({len({c.code for c in train})} programs); held-out candidates {len(candidates)} "
        f"cases; 10-gram decontamination against train: {dict(counts)}; evaluated "
        f"{len(held)} held-out cases x {len(DIRECTIONS)} directions ({data_s:.0f} s)"
    )

    tokenizer = build_tokenizer()
    model = build_model(plan, tokenizer, args.seed)
    parameters = sum(p.numel() for p in model.parameters())
    log(f"[model] Qwen2, {parameters:,} parameters, vocabulary {len(tokenizer)}")
    reward = CodeReasoningReward(eos_token_ids=end_ids(tokenizer), workers=2)
    stages: dict[str, Stage] = {}
    try:
        pool = reward.pool()
        stages["raw"] = measure("raw", time.perf_counter(), model, tokenizer, held, pool, plan)

        started = time.perf_counter()
        train_sft(model, tokenizer, train, plan, args.seed, out / "sft")
        stages["sft"] = measure("sft", started, model, tokenizer, held, pool, plan)

        started = time.perf_counter()
        rewards = train_grpo(model, tokenizer, train, reward, plan, args.seed, out / "grpo")
        stages["grpo"] = measure("grpo", started, model, tokenizer, held, pool, plan)
        stages["grpo"].extra.update(rewards)
    finally:
        reward.close()

    total_s = time.perf_counter() - began
    report = {
        "plan": asdict(plan),
        "seed": args.seed,
        "family": list(FAMILY),
        "parameters": parameters,
        "data": {
            "cases": len(cases),
            "train_cases": len(train),
            "held_candidates": len(candidates),
            "held_evaluated": len(held),
            "decontam": dict(counts),
            "wall_s": data_s,
        },
        "stages": {name: _figures(stage) for name, stage in stages.items()},
        "total_s": total_s,
    }
    (out / "learn.json").write_text(json.dumps(report, indent=2) + "\n")
    print(table(list(stages.values())))
    print(
        f"data {data_s:.0f} s; total {total_s:.0f} s; {verdict(stages)}; figures: {out}/learn.json"
    )
    raw, sft, grpo = (stages[name].accuracy["overall"] for name in ("raw", "sft", "grpo"))
    print(f"learn: raw {raw:.3f} sft {sft:.3f} grpo {grpo:.3f}")
