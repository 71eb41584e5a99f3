"""The hf backend's generation loop: one forward pass per step over the rows still running.

What it does that ``model.generate`` does not, for evaluation on CPUs:

- a row that ends (an end id, a stop sequence, its token limit) leaves the batch at once, its
  cache rows dropped, so one long answer does not keep every other row's compute running;
- the prompt prefix the rows of a batch share (a few-shot header, a system prompt, an
  instruction) is run once, on its own, and kept for later batches that share it too.

Rows are left-padded after the shared prefix (``prefix, pads, own tokens``); the attention mask
hides the pads and the position ids skip them, so each row is computed as if it were alone, up
to floating-point noise. Greedy rows take the arg-max; sampled rows draw from their own seeded
``torch.Generator`` (repetition penalty, top-k, temperature, then top-p), so a sample does not
depend on the others.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DecodeRow", "PrefixCache", "decode"]

MIN_PREFIX = 32  # shorter shared prefixes are not worth a forward pass of their own


@dataclass
class DecodeRow:
    """One sequence to continue: its prompt ids, how to choose tokens and where to stop."""

    ids: list[int]
    temperature: float
    top_p: float
    seed: int
    stop: tuple[str, ...]
    top_k: int = 0  # sampled rows: draw from the k most likely tokens (0: all)
    repetition_penalty: float = 1.0  # transformers' rule, on the prompt's and the new ids


# (row index, its generated ids, tokens it had when a stop sequence showed, or None)
Finish = Callable[[int, list[int], int | None], None]
# (tokens generated so far, rows finished, rows)
Progress = Callable[[int, int, int], None]


class PrefixCache:
    """The most recent shared prefix and its attention cache (one, reused while batches share
    it: a benchmark's items share their few-shot header)."""

    def __init__(self) -> None:
        self.ids: tuple[int, ...] = ()
        self.cache: Any = None

    def clear(self) -> None:
        self.ids, self.cache = (), None

    def length_for(self, rows: Sequence[Sequence[int]]) -> int:
        """How many leading ids of every row the cached prefix covers (0: none), leaving each
        row at least one id of its own."""
        size = len(self.ids)
        if not size or self.cache is None:
            return 0
        if all(len(ids) > size and tuple(ids[:size]) == self.ids for ids in rows):
            return size
        return 0


def shared_prefix(rows: Sequence[Sequence[int]]) -> int:
    """The length of the rows' longest common prefix, leaving each row one id of its own."""
    if len(rows) < 2:
        return 0
    limit = min(len(ids) for ids in rows) - 1
    size = 0
    first = rows[0]
    while size < limit and all(ids[size] == first[size] for ids in rows[1:]):
        size += 1
    return size


class _Model:
    """The forward pass in the argument names of the installed transformers (``cache`` in 5.25,
    ``past_key_values`` before)."""

    def __init__(self, torch: Any, transformers: Any, model: Any) -> None:
        self.torch, self.transformers, self.model = torch, transformers, model
        parameters = inspect.signature(model.forward).parameters
        self.cache_argument = "cache" if "cache" in parameters else "past_key_values"

    def new_cache(self) -> Any:
        try:
            return self.transformers.DynamicCache(config=self.model.config)
        except TypeError:  # versions whose DynamicCache takes no config
            return self.transformers.DynamicCache()

    def last_logits(self, ids: Any, mask: Any, positions: Any, cache: Any) -> Any:
        output = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_argument: cache},
        )
        return output.logits[:, -1, :].float()


def decode(
    torch: Any,
    transformers: Any,
    model: Any,
    rows: Sequence[DecodeRow],
    *,
    pad: int,
    eos: set[int],
    max_tokens: int,
    decode_tail: Callable[[list[int]], str],
    finish: Finish,
    progress: Progress,
    prefixes: PrefixCache,
) -> None:
    """Generate up to ``max_tokens`` ids for each row, calling ``finish`` once per row as soon
    as it ends and ``progress`` after every step. ``decode_tail``: the text of a row's last ids,
    where stop sequences are looked for."""
    forward = _Model(torch, transformers, model)
    device = next(model.parameters()).device
    all_ids = [row.ids for row in rows]
    known = prefixes.length_for(all_ids)
    if not known:
        size = shared_prefix(all_ids)
        if size >= MIN_PREFIX:
            prefixes.ids = tuple(all_ids[0][:size])
            prefixes.cache = forward.new_cache()
            ids = torch.tensor([list(prefixes.ids)], device=device)
            positions = torch.arange(size, device=device)[None, :]
            forward.last_logits(ids, torch.ones_like(ids), positions, prefixes.cache)
            known = size
    count = len(rows)
    if known:
        cache = copy.deepcopy(prefixes.cache)
        cache.batch_repeat_interleave(count)
    else:
        cache = forward.new_cache()
    own = [ids[known:] for ids in all_ids]
    width = max(len(ids) for ids in own)
    ids = torch.tensor([[pad] * (width - len(x)) + x for x in own], device=device)
    own_mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in own], device=device)
    mask = torch.cat([torch.ones(count, known, dtype=own_mask.dtype, device=device), own_mask], 1)
    positions = known + (own_mask.cumsum(1) - 1).clamp(min=0)
    logits = forward.last_logits(ids, mask, positions, cache)
    following = positions[:, -1] + 1
    choose = _Chooser(torch, rows)
    generated: list[list[int]] = [[] for _ in rows]
    active = list(range(count))  # the rows still running, in the order of the cache's rows
    window = 4 * max((len(stop) for row in rows for stop in row.stop), default=0) + 4
    for step in range(1, max_tokens + 1):
        tokens = choose(logits, active, generated)
        running: list[int] = []
        for position, (index, token) in enumerate(zip(active, tokens.tolist(), strict=True)):
            generated[index].append(token)
            row = rows[index]
            stopped = bool(row.stop) and any(
                stop in decode_tail(generated[index][-window:]) for stop in row.stop
            )
            if stopped or token in eos or step == max_tokens:
                finish(index, generated[index], step if stopped else None)
            else:
                running.append(position)
        progress(step, count - len(running), count)
        if not running:
            return
        if len(running) < len(active):
            keep = torch.tensor(running, device=device)
            cache.batch_select_indices(keep)
            mask, following, tokens = mask[keep], following[keep], tokens[keep]
            active = [active[position] for position in running]
        mask = torch.cat([mask, torch.ones(len(active), 1, dtype=mask.dtype, device=device)], 1)
        logits = forward.last_logits(tokens[:, None], mask, following[:, None], cache)
        following = following + 1


class _Chooser:
    """The next id of each running row: the arg-max, or a draw from the row's own generator."""

    def __init__(self, torch: Any, rows: Sequence[DecodeRow]) -> None:
        self.torch, self.rows = torch, rows
        self.generators = {
            index: torch.Generator().manual_seed(row.seed)
            for index, row in enumerate(rows)
            if row.temperature > 0
        }

    def __call__(self, logits: Any, active: list[int], generated: list[list[int]]) -> Any:
        torch = self.torch
        for position, index in enumerate(active):
            row = self.rows[index]
            if row.repetition_penalty != 1.0:
                seen = torch.tensor(sorted({*row.ids, *generated[index]}), device=logits.device)
                picked = logits[position, seen]
                logits[position, seen] = torch.where(
                    picked > 0, picked / row.repetition_penalty, picked * row.repetition_penalty
                )
        chosen = logits.argmax(dim=-1)
        for position, index in enumerate(active):
            generator = self.generators.get(index)
            if generator is None:
                continue
            row = self.rows[index]
            scores = logits[position].cpu()
            if 0 < row.top_k < scores.numel():
                floor = torch.topk(scores, row.top_k).values[-1]
                scores = scores.masked_fill(scores < floor, float("-inf"))
            probs = torch.softmax(scores / row.temperature, dim=-1)
            if row.top_p < 1.0:
                ordered, order = torch.sort(probs, descending=True)
                outside = torch.cumsum(ordered, dim=-1) - ordered > row.top_p
                probs[order[outside]] = 0.0
            chosen[position] = torch.multinomial(probs, 1, generator=generator).item()
        return chosen
