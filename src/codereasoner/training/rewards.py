"""Verifiable rewards for RL on synthesized cases: one batch scorer, a TRL and a verl front-end.

The core, :func:`score_batch`, grades a whole generation batch through the task kinds
``case_forward`` / ``case_backward`` / ``case_probe`` (strict grading: the last ``<Answer>`` must
be a literal, or a call with literal arguments, which then runs in the sandbox; a probe's answer
is matched against its traced truth, no sandbox). Completions of one prompt form
one grading plan, so a prompt's backward answers share one sandbox batch, and
:func:`codereasoner.tasks.run_plans` spreads all plans over the pool's workers.

Rewards: ``config.correct`` (2.0) for a right answer; 0.0 for anything else, including a
truncated or over-long completion; ``None`` when the sandbox itself failed (an infrastructure
fault, masked rather than scored as wrong).

- :class:`CodeReasoningReward`: a TRL ``GRPOTrainer`` reward (picklable; opens its pool lazily
  in the process that calls it; grades each batch once, and the run's other terms read its
  verdicts: :meth:`CodeReasoningReward.scored`);
- :func:`compute_score`: verl's ``custom_reward_function`` (see
  :mod:`codereasoner.training.verl_reward` for the module verl loads by path, and
  :mod:`codereasoner.training.verl_manager` for the reward manager that tells it which
  responses were truncated);
- :func:`format_reward`, :func:`length_penalty`, :func:`process_reward`: optional, separate
  terms (the process term: :mod:`codereasoner.training.process`, in TRL
  :class:`ProcessReward`; verl adds it to :func:`compute_score` with
  ``reward_kwargs.process_weight``).
"""

from __future__ import annotations

import os
import re
import threading
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from codereasoner import tasks
from codereasoner.execution import Executor, Limits, open_executor
from codereasoner.families.cases.benchmark import DIRECTIONS
from codereasoner.settings import SettingError
from codereasoner.tasks import Extracted, GradingPlan, Item, Reason, Score
from codereasoner.training.process import COLUMN as PROBES_COLUMN
from codereasoner.training.process import process_score

__all__ = [
    "COLUMNS",
    "RESPONSE_TRUNCATED",
    "REWARD_LIMITS",
    "CodeReasoningReward",
    "ProcessReward",
    "RewardBatch",
    "RewardConfig",
    "Sample",
    "compute_score",
    "compute_score_batch",
    "format_reward",
    "length_penalty",
    "process_reward",
    "samples_from_columns",
    "score_batch",
]

# The dataset columns every RL row carries (the export also writes PROBES_COLUMN, which only the
# optional process term reads).
COLUMNS = ("direction", "code", "entry_point", "call", "target", "case_id")
# Per backward call. Synthesized cases run in milliseconds; a hang costs its probe plus this.
REWARD_LIMITS = Limits(timeout_s=1.0, wall_timeout_s=2.0, memory_mb=512)
STYLE = "reasoning"
PARSE_FAILURES = frozenset({Reason.NO_ANSWER, Reason.NOT_LITERAL, Reason.WRONG_ENTRY})
_PARSE_VALUES = frozenset(reason.value for reason in PARSE_FAILURES)
TRUNCATED = Reason.TRUNCATED.value
TOO_LONG = "too_long"


@dataclass(frozen=True)
class RewardConfig:
    """``correct``: the reward of a right answer; ``max_chars``: completions longer than this
    score 0 without grading; ``limits``: each backward call's sandbox limits."""

    correct: float = 2.0
    max_chars: int = 16_000
    limits: Limits = REWARD_LIMITS


@dataclass(frozen=True)
class Sample:
    """One completion and the columns of its dataset row; ``truncated``: generation stopped at
    the length limit (known from the token ids, when the caller has them)."""

    direction: str
    code: str
    entry_point: str
    call: str
    target: str
    case_id: str
    completion: str
    truncated: bool = False

    def item(self) -> Item:
        try:
            task = DIRECTIONS[self.direction]
        except KeyError:
            raise SettingError(
                "direction", self.direction, f"one of {', '.join(DIRECTIONS)}"
            ) from None
        return Item(
            self.case_id,
            "rl",
            task,
            program=self.code,
            entry=self.entry_point,
            call=self.call,
            truth=self.target,
        )


@dataclass
class RewardBatch:
    """Per-completion rewards (None: masked) and verdicts (None: not graded, ``cut`` says why),
    plus the batch's metrics."""

    rewards: list[float | None]
    scores: list[Score | None]
    cut: list[str | None]
    metrics: dict[str, float] = field(default_factory=dict)

    def reasons(self) -> list[str]:
        """Each completion's outcome: a :class:`Reason` value, ``truncated`` or ``too_long``."""
        return [_outcome(score, cut) for score, cut in zip(self.scores, self.cut, strict=True)]

    def right(self) -> list[bool]:
        """Whether each completion's final answer was graded right."""
        return [score is not None and score.correct for score in self.scores]


def score_batch(
    samples: Sequence[Sample], pool: Executor, config: RewardConfig | None = None
) -> RewardBatch:
    """Grade every completion; backward answers of all prompts run together through ``pool``."""
    config = config or RewardConfig()
    cut = [_cut_reason(sample, config) for sample in samples]
    groups: dict[Sample, list[int]] = {}
    for index, sample in enumerate(samples):
        if cut[index] is None:
            groups.setdefault(_prompt_key(sample), []).append(index)
    plans = [_plan(key, [samples[i] for i in members]) for key, members in groups.items()]
    graded = tasks.run_plans(pool, plans, config.limits)
    scores: list[Score | None] = [None] * len(samples)
    for members, plan_scores in zip(groups.values(), graded, strict=True):
        for index, score in zip(members, plan_scores, strict=True):
            scores[index] = score
    rewards = [_reward(score, config) for score in scores]
    batch = RewardBatch(rewards, scores, cut)
    batch.metrics = batch_metrics(samples, batch)
    return batch


def _cut_reason(sample: Sample, config: RewardConfig) -> str | None:
    if sample.truncated:
        return TRUNCATED
    if len(sample.completion) > config.max_chars:
        return TOO_LONG
    return None


def _prompt_key(sample: Sample) -> Sample:
    """What the completions of one prompt share: the row without the completion."""
    return replace(sample, completion="", truncated=False)


def _plan(key: Sample, members: Sequence[Sample]) -> GradingPlan:
    item = key.item()
    kind = tasks.get(item.task)
    answers: list[Extracted] = [kind.extract(item, s.completion, STYLE) for s in members]
    return kind.plan(item, answers, "strict")


def _reward(score: Score | None, config: RewardConfig) -> float | None:
    if score is None:  # truncated or over-long: not graded
        return 0.0
    if score.reason is Reason.SANDBOX_ERROR:
        return None
    return config.correct if score.correct else 0.0


def batch_metrics(samples: Sequence[Sample], batch: RewardBatch) -> dict[str, float]:
    """Accuracy by direction (over graded, unmasked completions), rates of parse failures,
    truncation and masking, and a count per outcome (``reasons/<reason>``)."""
    total = max(len(samples), 1)
    outcomes = batch.reasons()
    metrics: dict[str, float] = {}
    for direction in DIRECTIONS:
        rewards = [
            reward
            for sample, reward in zip(samples, batch.rewards, strict=True)
            if sample.direction == direction and reward is not None
        ]
        if rewards:
            metrics[f"accuracy/{direction}"] = sum(r > 0 for r in rewards) / len(rewards)
    counts = Counter(outcomes)
    parse = sum(n for reason, n in counts.items() if reason in PARSE_FAILURES)
    metrics["parse_failure_rate"] = parse / total
    metrics["truncation_rate"] = (counts[TRUNCATED] + counts[TOO_LONG]) / total
    metrics["masked_rate"] = counts[Reason.SANDBOX_ERROR.value] / total
    metrics.update({f"reasons/{reason}": float(n) for reason, n in sorted(counts.items())})
    return metrics


def samples_from_columns(
    completions: Sequence[str], columns: Mapping[str, Sequence[Any]], truncated: Sequence[bool]
) -> list[Sample]:
    """Samples from per-completion column lists (``COLUMNS``), as trainers pass them."""
    missing = [name for name in COLUMNS if name not in columns]
    if missing:
        raise ValueError(f"the reward needs the dataset columns {', '.join(missing)}")
    rows = zip(*(columns[name] for name in COLUMNS), completions, truncated, strict=True)
    return [
        Sample(str(d), str(c), str(e), str(k), str(t), str(i), text, cut)
        for d, c, e, k, t, i, text, cut in rows
    ]


# ---------------------------------------------------------------------------------------
# TRL
# ---------------------------------------------------------------------------------------


class CodeReasoningReward:
    """A ``GRPOTrainer`` reward: ``reward(prompts=..., completions=..., completion_ids=...,
    direction=..., code=..., ...)`` returns one float (or None, masked) per completion.

    ``eos_token_ids``: the ids that end a completion (e.g. ``<|im_end|>`` and the pad id); a
    completion whose ids do not end with one was cut at ``max_completion_length`` and scores 0.
    Without them only ``config.max_chars`` applies. The sandbox pool opens on first call in the
    calling process (never pickled); :meth:`close` (or the end of the process) stops it.
    """

    def __init__(
        self,
        config: RewardConfig | None = None,
        *,
        eos_token_ids: Collection[int] = (),
        workers: int | None = None,
        isolation: str = "auto",
        executor: str | None = None,
    ) -> None:
        self.config = config or RewardConfig()
        self.eos_token_ids = frozenset(eos_token_ids)
        self.workers = workers
        self.isolation = isolation
        self.executor = executor  # local, ray or ray:ADDRESS (default: $CODEREASONER_EXECUTOR)
        self.last: RewardBatch | None = None
        self._last_key: tuple[Any, ...] | None = None
        self._pool: Executor | None = None
        self._owner = 0

    @property
    def __name__(self) -> str:  # TRL's name for the reward: rewards/code_reasoning/mean
        return "code_reasoning"

    def pool(self) -> Executor:
        if self._pool is None or self._owner != os.getpid():
            # a forked child must not use (or close) its parent's workers
            self._pool = open_executor(self.executor, self.workers, isolation=self.isolation)
            self._owner = os.getpid()
            weakref.finalize(self, _close_in, self._pool, self._owner)
        return self._pool

    def close(self) -> None:
        if self._pool is not None and self._owner == os.getpid():
            self._pool.close()
        self._pool = None

    def __enter__(self) -> CodeReasoningReward:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_pool=None, _owner=0, last=None, _last_key=None)
        return state

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        return self.scored(prompts, completions, completion_ids, **kwargs).rewards

    def scored(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        completion_ids: Sequence[Sequence[int]] | None = None,
        *,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list[Any]], None] | None = None,
        trainer_state: Any = None,
        **columns: Any,
    ) -> RewardBatch:
        """The verdicts of the batch TRL passes (the same keyword arguments as a call).

        A batch is graded and logged once: the run's other terms ask for its verdicts too
        (before or after TRL calls this reward), and get the same ones."""
        texts = [completion_text(completion) for completion in completions]
        truncated = self._truncated(completion_ids, len(texts))
        samples = samples_from_columns(texts, columns, truncated)
        key = (getattr(trainer_state, "global_step", None), *samples)
        if self.last is not None and key == self._last_key:
            return self.last
        batch = self._grade(samples)
        self.last, self._last_key = batch, key
        if log_metric is not None:
            for name, value in batch.metrics.items():
                log_metric(f"code_reasoning/{name}", value)
        if log_extra is not None:
            log_extra("outcome", batch.reasons())
        return batch

    def _grade(self, samples: Sequence[Sample]) -> RewardBatch:
        return score_batch(samples, self.pool(), self.config)

    def _truncated(self, ids: Sequence[Sequence[int]] | None, count: int) -> list[bool]:
        if ids is None:
            return [False] * count
        if not self.eos_token_ids:  # cut completions would score as if complete
            raise ValueError(
                "CodeReasoningReward: completion_ids arrived but no eos_token_ids were given; "
                "pass eos_token_ids=[tokenizer.eos_token_id, ...] so that truncated "
                "completions score 0"
            )
        return [not row or row[-1] not in self.eos_token_ids for row in ids]


def _close_in(pool: Executor, pid: int) -> None:
    """Close ``pool`` at exit, only in the process that opened it (a forked child inherits the
    finalizer, and must not stop its parent's workers)."""
    if os.getpid() == pid:
        pool.close()


def _outcome(score: Score | None, cut: str | None) -> str:
    return score.reason.value if score is not None else str(cut)


def completion_text(completion: Any) -> str:
    """A TRL completion's text: a plain string, or the content of a conversational reply."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"unexpected completion {type(completion).__name__}")


# ---------------------------------------------------------------------------------------
# verl
# ---------------------------------------------------------------------------------------

# The extra_info key our verl reward manager sets: whether the response was cut at the response
# length limit (verl's naive manager hands compute_score the decoded text only).
RESPONSE_TRUNCATED = "response_truncated"
_VERL_POOL: dict[int, Executor] = {}
_VERL_POOL_LOCK = threading.Lock()  # verl's naive manager scores from several threads at once
# Sandbox workers per verl reward process (verl runs several reward processes per node).
WORKERS_ENV = "CODEREASONER_REWARD_WORKERS"


def _process_pool() -> Executor:
    """One pool per process for verl's reward workers, closed when the process exits; its
    size is ``$CODEREASONER_REWARD_WORKERS`` (default: one worker per core, or the Ray
    cluster's CPUs), and ``$CODEREASONER_EXECUTOR`` says where it runs (default: locally)."""
    pid = os.getpid()
    with _VERL_POOL_LOCK:
        if pid not in _VERL_POOL:
            workers = os.environ.get(WORKERS_ENV)
            pool = open_executor(None, int(workers) if workers else None)
            _VERL_POOL[pid] = pool
            weakref.finalize(pool, _close_in, pool, pid)
        return _VERL_POOL[pid]


def verl_sample(
    solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None
) -> Sample:
    info = dict(extra_info or {})
    missing = [
        name for name in ("code", "entry_point", "direction", "call", "case_id") if name not in info
    ]
    if missing:
        raise ValueError(f"extra_info lacks {', '.join(missing)}")
    if RESPONSE_TRUNCATED not in info:
        warnings.warn(
            f"extra_info has no {RESPONSE_TRUNCATED!r}: a truncated response scores as if "
            "complete; run verl with the reward manager CodeReasonerRewardManager "
            "(codereasoner/training/verl_manager.py, recipes/verl-grpo.sh)",
            stacklevel=3,
        )
    target = info.get("target") if ground_truth is None else ground_truth
    return Sample(
        str(info["direction"]),
        str(info["code"]),
        str(info["entry_point"]),
        str(info["call"]),
        str(target),
        str(info["case_id"]),
        solution_str,
        truncated=info.get(RESPONSE_TRUNCATED) is True,
    )


def _verl_result(batch: RewardBatch, index: int) -> dict[str, Any]:
    """verl's ``{"score": float, ...}``. verl has no masked reward: a sandbox failure scores 0.0
    and is flagged ``sandbox_error`` so that it can be told apart from a wrong answer. Only
    numbers: verl averages every key it is given."""
    reward = batch.rewards[index]
    return {
        "score": 0.0 if reward is None else reward,
        "correct": float(bool(reward)),
        "sandbox_error": float(reward is None),
        "parse_failure": float(_outcome(batch.scores[index], batch.cut[index]) in _PARSE_VALUES),
        "truncated": float(batch.cut[index] is not None),
    }


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """verl's ``custom_reward_function``: one solution, one score (0.0 for a response cut at the
    response limit, which :class:`~codereasoner.training.verl_manager.CodeReasonerRewardManager`
    flags in ``extra_info``)."""
    sample = verl_sample(solution_str, ground_truth, extra_info)
    batch = score_batch([sample], _process_pool(), _config(kwargs))
    return _with_process(_verl_result(batch, 0), solution_str, extra_info, kwargs)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None],
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """verl's batch reward manager form: every solution of the step graded together."""
    samples = [
        verl_sample(solution, truth, info)
        for solution, truth, info in zip(solution_strs, ground_truths, extra_infos, strict=True)
    ]
    batch = score_batch(samples, _process_pool(), _config(kwargs))
    return [
        _with_process(_verl_result(batch, index), solution, info, kwargs)
        for index, (solution, info) in enumerate(zip(solution_strs, extra_infos, strict=True))
    ]


def _with_process(
    result: dict[str, Any],
    solution: str,
    extra_info: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> dict[str, Any]:
    """``reward_kwargs.process_weight`` > 0 (default 0: off) adds the process term
    (:mod:`codereasoner.training.process`) to the score, from ``extra_info.probes`` and the
    result's own verdict, and reports it as ``process``."""
    weight = float(kwargs.get("process_weight", 0.0))
    if weight <= 0:
        return result
    info = extra_info or {}
    column = str(info.get(PROBES_COLUMN) or "[]")
    term = process_score(
        solution,
        column,
        weight,
        answer_right=result["correct"] == 1.0,
        direction=info.get("direction"),
        call=info.get("call"),
    )
    return {**result, "score": result["score"] + term, "process": term}


def _config(kwargs: Mapping[str, Any]) -> RewardConfig:
    """``reward_kwargs`` from verl's config: ``correct`` and ``max_chars`` may be set there."""
    defaults = RewardConfig()
    return RewardConfig(
        correct=float(kwargs.get("correct", defaults.correct)),
        max_chars=int(kwargs.get("max_chars", defaults.max_chars)),
    )


# ---------------------------------------------------------------------------------------
# optional shaping terms
# ---------------------------------------------------------------------------------------

_WELL_FORMED = re.compile(
    r"\A\s*<Reasoning>(?:(?!</?Reasoning>|</?Answer>).)*</Reasoning>\s*"
    r"<Answer>(?:(?!</?Answer>|</?Reasoning>).)+</Answer>\s*\Z",
    re.S,
)


def format_reward(completions: Sequence[Any], weight: float = 1.0, **kwargs: Any) -> list[float]:
    """``weight`` when a completion is exactly ``<Reasoning>…</Reasoning> <Answer>…</Answer>``
    (each tag once, in order, nothing around them), else 0.0. A TRL reward function as is."""
    return [weight if _WELL_FORMED.match(completion_text(c)) else 0.0 for c in completions]


def process_reward(
    completions: Sequence[Any],
    probes: Sequence[str] | None = None,
    weight: float = 1.0,
    *,
    answer_right: Sequence[bool] | None = None,
    direction: Sequence[str] | None = None,
    call: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[float]:
    """The process term of each completion (:mod:`codereasoner.training.process`): in
    ``[-weight, +weight]``, from the ``probes`` column ``export --format trl-grpo`` writes and
    whether each final answer is right (``answer_right``; :class:`ProcessReward` reads it
    from the code reward). ``direction`` and ``call``: a backward chain is judged when it
    answers the case's call."""
    if probes is None:
        raise ValueError(
            f"the process reward needs the dataset column {PROBES_COLUMN!r}: export the "
            "distillation again (codereasoner export --format trl-grpo)"
        )
    if answer_right is None:
        raise ValueError("the process reward needs each answer's verdict (answer_right)")
    count = len(completions)
    directions = [None] * count if direction is None else list(direction)
    calls = [None] * count if call is None else list(call)
    rows = zip(completions, probes, answer_right, directions, calls, strict=True)
    return [
        process_score(
            completion_text(c), str(column), weight, answer_right=right, direction=d, call=k
        )
        for c, column, right, d, k in rows
    ]


class ProcessReward:
    """The process term as a TRL reward: its credit goes only to completions whose answer the
    run's code reward graded right (the same batch's verdicts, never graded twice)."""

    def __init__(self, code: CodeReasoningReward, weight: float = 1.0) -> None:
        self.code = code
        self.weight = weight

    @property
    def __name__(self) -> str:  # rewards/process/mean
        return "process"

    def __call__(self, **kwargs: Any) -> list[float]:
        right = self.code.scored(**kwargs).right()
        return process_reward(weight=self.weight, answer_right=right, **kwargs)


def length_penalty(
    completion_ids: Sequence[Sequence[int]],
    max_length: int,
    buffer: int,
    factor: float = 1.0,
    **kwargs: Any,
) -> list[float]:
    """DAPO's soft over-long penalty: 0 up to ``max_length - buffer`` tokens, then a linear ramp
    down to ``-factor`` at ``max_length``. Bind the sizes for TRL (``grpo_rewards.NamedReward``)."""
    if not 0 < buffer <= max_length:
        raise ValueError("buffer must be in 1..max_length")
    start = max_length - buffer
    return [-factor * min(max(len(ids) - start, 0) / buffer, 1.0) for ids in completion_ids]
