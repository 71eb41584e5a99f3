"""The model of ``bench/learn.py``, its prompts and answers, and grading by the project's reward.

A byte-level BPE trained on the training texts (every digit and line break a token of its own, the
code between them merged, the answer and reasoning tags single tokens) and a random
Qwen2-architecture model of a few hundred thousand parameters. Answers are
graded as the GRPO reward grades them (``rewards.score_batch``: the last ``<Answer>`` counts; a
backward answer runs in the sandbox).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from tokenizers.trainers import BpeTrainer
from transformers import PreTrainedTokenizerFast, Qwen2ForCausalLM, set_seed

from codereasoner.execution import Executor
from codereasoner.training.rewards import Sample, score_batch
from codereasoner.training.tiny import qwen2_model
from learn_data import ANSWER_TAGS, REASONING_TAGS, Case

PAD, EOS = "<|endoftext|>", "<|im_end|>"
END_IDS = (1, 0)  # EOS and padding: the tokenizer trainer numbers its special tokens first
MAX_POSITIONS = 512
VOCABULARY = 512  # room for every fragment between two digits to become one token
FORMATS = ("direct", "chain")

Item = tuple[Case, str]  # a case asked in one direction


@dataclass(frozen=True)
class ModelSize:
    hidden: int = 128
    layers: int = 2
    heads: int = 4
    ffn: int = 2  # the MLP's width, in multiples of ``hidden``


def build_tokenizer(texts: Iterable[str]) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on ``texts``. Digits and line breaks stay single tokens, so a
    value is always one token; the code between them (``    x = (x + ``) merges into a few
    tokens, as a real model's vocabulary does, which keeps sequences short and puts what a step
    of a chain reads a few tokens from what it writes."""
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"[0-9]|\n"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    raw.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(
        vocab_size=VOCABULARY,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[PAD, EOS],
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    if (raw.token_to_id(EOS), raw.token_to_id(PAD)) != END_IDS:
        raise RuntimeError("the tokenizer trainer numbered its special tokens differently")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token=EOS,
        pad_token=PAD,
        bos_token=None,
        unk_token=None,
        model_max_length=MAX_POSITIONS,
        padding_side="left",
    )
    # added (not special) tokens: decoding keeps them, so the grader sees the tags
    tokenizer.add_tokens([*ANSWER_TAGS, *REASONING_TAGS])
    return tokenizer


def training_texts(items: Iterable[Item]) -> list[str]:
    """What the tokenizer is trained on: the training prompts and both kinds of answer."""
    return [
        prompt(case, direction) + answer(case, direction, answer_format)
        for case, direction in items
        for answer_format in FORMATS
    ]


def build_model(size: ModelSize, tokenizer: PreTrainedTokenizerFast, seed: int) -> Qwen2ForCausalLM:
    set_seed(seed)
    return qwen2_model(
        tokenizer,
        hidden=size.hidden,
        ffn=size.ffn * size.hidden,
        layers=size.layers,
        heads=size.heads,
        kv_heads=size.heads,
        max_positions=MAX_POSITIONS,
    )


def end_ids(tokenizer: PreTrainedTokenizerFast) -> list[int]:
    return [tokenizer.eos_token_id, tokenizer.pad_token_id]


def prompt(case: Case, direction: str) -> str:
    """A compact prompt: the function, then an assert with the unknown side left as ``?``."""
    asked = f"{case.call} == ?" if direction == "forward" else f"? == {case.output}"
    return f"{case.code}assert {asked}\n"


def stated(case: Case, direction: str) -> str:
    return case.output if direction == "forward" else case.call


def answer(case: Case, direction: str, answer_format: str) -> str:
    """The teacher's completion: the answer alone, or the traced chain then the answer."""
    tagged = f"{ANSWER_TAGS[0]}{stated(case, direction)}{ANSWER_TAGS[1]}"
    if answer_format == "direct":
        return tagged
    chain = case.forward_chain if direction == "forward" else case.backward_chain
    return f"{REASONING_TAGS[0]}\n{chain}\n{REASONING_TAGS[1]}\n{tagged}"


def copy_answer(case: Case, direction: str) -> str:
    """The copy rule: forward, the call's own argument; backward, the function applied to the
    value it should return."""
    copied = (
        case.argument if direction == "forward" else f"{case.call.split('(')[0]}({case.output})"
    )
    return f"{ANSWER_TAGS[0]}{copied}{ANSWER_TAGS[1]}"


def reward_row(case: Case, direction: str) -> dict[str, str]:
    """A ``trl-grpo`` row (``codereasoner.training.export``) with a plain-text prompt."""
    return {
        "prompt": prompt(case, direction),
        "direction": direction,
        "code": case.code,
        "entry_point": case.call.split("(")[0],
        "call": case.call,
        "target": case.output,
        "case_id": case.case_id,
    }


def token_length(tokenizer: PreTrainedTokenizerFast, text: str) -> int:
    return len(tokenizer(text)["input_ids"])


def grade(items: Sequence[Item], texts: Sequence[tuple[str, bool]], pool: Executor) -> list[bool]:
    """Whether each completion (text, cut at the length limit) is right, by the reward's rule."""
    samples = [
        Sample(
            direction,
            case.code,
            case.call.split("(")[0],
            case.call,
            case.output,
            case.case_id,
            text,
            truncated,
        )
        for (case, direction), (text, truncated) in zip(items, texts, strict=True)
    ]
    return [bool(reward) for reward in score_batch(samples, pool).rewards]


def completions(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    prompts: Sequence[str],
    max_new_tokens: int,
    batch: int = 256,
) -> list[tuple[str, bool]]:
    """Greedy completions and whether each was cut at ``max_new_tokens``."""
    stops = set(end_ids(tokenizer))
    model.eval()
    # similar lengths together: less padding to run through the model
    order = sorted(range(len(prompts)), key=lambda index: len(prompts[index]))
    by_index: dict[int, tuple[str, bool]] = {}
    with torch.no_grad():
        for start in range(0, len(order), batch):
            chosen = order[start : start + batch]
            encoded = tokenizer([prompts[i] for i in chosen], return_tensors="pt", padding=True)
            generated = model.generate(
                **encoded,
                do_sample=False,
                max_new_tokens=max_new_tokens,
                eos_token_id=sorted(stops),
                pad_token_id=tokenizer.pad_token_id,
            )
            for index, row in zip(
                chosen, generated[:, encoded["input_ids"].shape[1] :].tolist(), strict=True
            ):
                ended = next((i for i, token in enumerate(row) if token in stops), None)
                kept = row if ended is None else row[:ended]
                text = str(tokenizer.decode(kept, skip_special_tokens=True))
                by_index[index] = (text, ended is None)
    return [by_index[index] for index in range(len(prompts))]


def accuracy_items(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    items: Sequence[Item],
    pool: Executor,
    max_new_tokens: int,
) -> list[bool]:
    """Greedy answers to ``items``, graded."""
    texts = completions(model, tokenizer, [prompt(c, d) for c, d in items], max_new_tokens)
    return grade(items, texts, pool)
