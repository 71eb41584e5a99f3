"""Grading plans: verdicts decided in the parent now, or after the sandbox runs their jobs.

A task kind turns one item's answers into a :class:`GradingPlan`; :func:`run_plans` runs the
jobs of many plans through one pool (each distinct call once, calls of one benchmark program
batched).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from codereasoner.execution import Batch, Call, ExecResult, Executor, Limits, Program, Status
from codereasoner.tasks.base import Extracted, Item, ParseFailure, Reason, Score, one_line

# Upstream: a 3 s wall-clock itimer (ITIMER_REAL) per program; CPU time can be no more.
OFFICIAL_LIMITS = Limits(timeout_s=3.0, wall_timeout_s=3.0, memory_mb=1024)

# A finisher turns a job's result into the verdict, or into a follow-up job that decides it.
Finish = Callable[[ExecResult], "Score | Job"]
# Longer answers are refused before any parsing (no benchmark's truth comes near this).
MAX_ANSWER_CHARS = 100_000


@dataclass(frozen=True)
class Job:
    """One sandboxed call that decides one sample; ``shared`` jobs may share a batch."""

    sample: int
    program: Program
    call: Call
    finish: Finish
    shared: bool = False


@dataclass
class GradingPlan:
    """The grading of one item's samples: scores decided now, jobs still to run, and samples
    whose answer text repeats an earlier sample's (graded once, the verdict copied)."""

    item: Item
    scores: list[Score | None]
    jobs: list[Job] = field(default_factory=list)
    aliases: dict[int, int] = field(default_factory=dict)

    def add(self, sample: int, outcome: Score | Job) -> None:
        if isinstance(outcome, Score):
            self.scores[sample] = outcome
        else:
            self.jobs.append(outcome)

    def resolve(self) -> list[Score]:
        for sample, original in self.aliases.items():
            score = self.scores[original]
            self.scores[sample] = None if score is None else replace(score, sample=sample)
        missing = [index for index, score in enumerate(self.scores) if score is None]
        if missing:
            raise RuntimeError(f"{self.item.id}: samples {missing} were never graded")
        return [score for score in self.scores if score is not None]


def build_plan(
    item: Item, answers: Sequence[Extracted], grade: Callable[[int, str], Score | Job]
) -> GradingPlan:
    """A plan grading each distinct answer text once; extraction failures are wrong."""
    plan = GradingPlan(item, [None] * len(answers))
    first: dict[str, int] = {}
    for sample, answer in enumerate(answers):
        if isinstance(answer, ParseFailure):
            plan.add(sample, verdict(item, sample, None, Reason.NO_ANSWER, answer.reason))
        elif len(answer.text) > MAX_ANSWER_CHARS:
            detail = f"{len(answer.text)} characters, more than {MAX_ANSWER_CHARS}"
            plan.add(
                sample, verdict(item, sample, answer.text[:200], Reason.ANSWER_TOO_LONG, detail)
            )
        elif answer.text in first:
            plan.aliases[sample] = first[answer.text]
        else:
            first[answer.text] = sample
            plan.add(sample, grade(sample, answer.text))
    return plan


Memo = dict[tuple[Program, str], ExecResult]
Key = tuple[Program, str]
PROBE_S = 0.25


def run_plans(
    pool: Executor | None,
    plans: Sequence[GradingPlan],
    limits: Limits = OFFICIAL_LIMITS,
    memo: Memo | None = None,
) -> list[list[Score]]:
    """Run every plan's jobs and return all scores.

    Each distinct (program, call) runs once; shared jobs of one program form one batch. A first
    pass runs under a short CPU limit; only calls that hit it run again, each alone, under
    ``limits``, so slow answers spread over all workers instead of queueing in one batch (the
    outcome is the same: a call that finishes in the probe would finish under ``limits``).
    ``memo`` carries results between runs under the same limits (e.g. official then strict).
    """
    memo = {} if memo is None else memo
    pending = [(plan, job) for plan in plans for job in plan.jobs]
    while pending:  # a finisher may ask for a follow-up job (a second phase): run those next
        waiting: dict[Key, list[tuple[GradingPlan, Job]]] = {}
        decided: list[tuple[GradingPlan, Job, ExecResult]] = []
        for plan, job in pending:
            key = (job.program, json.dumps(job.call.wire(), sort_keys=True))
            if key in memo:
                decided.append((plan, job, memo[key]))
            else:
                waiting.setdefault(key, []).append((plan, job))
        if waiting:
            if pool is None:
                raise ValueError("grading these answers needs a sandbox pool")
            results = _execute(pool, waiting, limits)
            for key, entries in waiting.items():
                memo[key] = results[key]
                decided.extend((plan, job, results[key]) for plan, job in entries)
        pending = []
        for plan, job, result in decided:
            outcome = job.finish(result)
            if isinstance(outcome, Job):
                pending.append((plan, outcome))
            else:
                plan.scores[job.sample] = outcome
    return [plan.resolve() for plan in plans]


def _execute(
    pool: Executor, waiting: dict[Key, list[tuple[GradingPlan, Job]]], limits: Limits
) -> Memo:
    probe = limits
    if limits.timeout_s > PROBE_S:
        probe = replace(limits, timeout_s=PROBE_S, wall_timeout_s=None)
    groups: dict[Program, list[Key]] = {}
    batches: list[Batch] = []
    owners: list[list[Key]] = []
    for key, entries in waiting.items():
        if entries[0][1].shared:
            groups.setdefault(key[0], []).append(key)
        else:
            batches.append(Batch(key[0], [entries[0][1].call], probe))
            owners.append([key])
    for program, keys in groups.items():
        batches.append(Batch(program, [waiting[key][0][1].call for key in keys], probe))
        owners.append(keys)
    results: Memo = {}
    for keys, batch_results in zip(owners, pool.map(batches), strict=True):
        results.update(zip(keys, batch_results, strict=True))
    if probe is not limits:
        slow = [key for key, result in results.items() if result.status is Status.TIMEOUT]
        batches = [Batch(key[0], [waiting[key][0][1].call], limits) for key in slow]
        for key, (result,) in zip(slow, pool.map(batches), strict=True):
            results[key] = result
    return results


def verdict(
    item: Item, sample: int, answer: str | None, reason: Reason, detail: str = "", **extra: bool
) -> Score:
    return Score(
        item.id, sample, answer, reason is Reason.CORRECT, reason, one_line(detail), **extra
    )
