"""Run the same calls under several hash seeds and report where the outcomes differ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from codereasoner.execution.call import Call, Program
from codereasoner.execution.pool import Pool
from codereasoner.execution.protocol import ExecResult, Limits


def observable(result: ExecResult) -> tuple[Any, ...]:
    """What a user of the result can see; timings and memory use excluded."""
    return (
        result.status,
        result.value,
        result.exception_type,
        result.exception_message,
        result.stdout,
    )


def run_under_seeds(
    program: Program,
    calls: Sequence[Call],
    seeds: Sequence[int] = (0, 1),
    *,
    limits: Limits | None = None,
    **pool_options: Any,
) -> dict[int, list[ExecResult]]:
    """Results of ``calls`` under each ``PYTHONHASHSEED`` in ``seeds`` (one small pool per seed)."""
    if not seeds:
        raise ValueError("at least one hash seed is needed")
    outcomes: dict[int, list[ExecResult]] = {}
    for seed in seeds:
        with Pool(1, hash_seed=seed, limits=limits, **pool_options) as pool:
            outcomes[seed] = pool.run_batch(program, calls)
    return outcomes


def nondeterministic_calls(outcomes: dict[int, list[ExecResult]]) -> list[int]:
    """Indices of calls whose observable outcome is not the same under every seed."""
    runs = list(outcomes.values())
    return [
        index for index in range(len(runs[0])) if len({observable(run[index]) for run in runs}) > 1
    ]
