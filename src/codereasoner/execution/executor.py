"""Where sandboxed calls run: the local pool (the default) or a Ray cluster.

Every command that runs calls takes ``--executor local|ray|ray:ADDRESS`` (or the
``CODEREASONER_EXECUTOR`` environment variable, for code we do not start, such as verl's reward
workers) and opens its executor with :func:`open_executor`. Both kinds have the same interface
(:class:`Executor`) and give the same results in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from codereasoner.execution.call import Call, Program
from codereasoner.execution.pool import Batch, Pool
from codereasoner.execution.protocol import ExecResult, Limits
from codereasoner.execution.sandbox import IsolationPlan
from codereasoner.settings import SettingError

EXECUTOR_ENV = "CODEREASONER_EXECUTOR"
EXECUTOR_HELP = (
    "Where sandboxed calls run: local (this machine's pool), ray (the Ray cluster named by "
    "RAY_ADDRESS, or a new local one) or ray:ADDRESS (e.g. ray:auto, ray:10.0.0.1:6379)."
)


class Executor(Protocol):
    """What a command needs from a pool of sandbox workers, local or spread over a cluster."""

    limits: Limits
    hash_seed: int
    on_batch: Callable[[int], None] | None

    @property
    def isolation(self) -> str: ...

    @property
    def warnings(self) -> tuple[str, ...]: ...

    @property
    def plan(self) -> IsolationPlan: ...

    @property
    def worker_info(self) -> dict: ...

    def run(self, program: Program, call: Call, limits: Limits | None = None) -> ExecResult: ...

    def run_batch(
        self, program: Program, calls: Sequence[Call], limits: Limits | None = None
    ) -> list[ExecResult]: ...

    def run_all(self, batches: Iterable[Batch]) -> list[list[ExecResult]]: ...

    def map(self, batches: Iterable[Batch]) -> Iterator[list[ExecResult]]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc_info: object) -> None: ...


@dataclass(frozen=True)
class ExecutorSpec:
    kind: Literal["local", "ray"] = "local"
    address: str | None = None  # ray only: None means RAY_ADDRESS, a running cluster or a new one

    def __str__(self) -> str:
        return self.kind if self.address is None else f"{self.kind}:{self.address}"


def parse_executor(text: str | None = None) -> ExecutorSpec:
    """``local``, ``ray`` or ``ray:ADDRESS``; ``None`` reads ``CODEREASONER_EXECUTOR`` (default
    local). Raises SettingError (``executor``) for a bad ``text``, ValueError naming the
    variable for a bad ``CODEREASONER_EXECUTOR``."""
    given = text
    if text is None:
        text = os.environ.get(EXECUTOR_ENV) or "local"
    kind, colon, address = text.strip().partition(":")
    if kind == "local" and not colon:
        return ExecutorSpec()
    if kind == "ray" and not (colon and not address.strip()):
        return ExecutorSpec("ray", address.strip() or None)
    expected = "an address after 'ray:'" if kind == "ray" else "local, ray or ray:ADDRESS"
    if given is None:
        raise ValueError(f"{EXECUTOR_ENV}={text}: expected {expected}")
    raise SettingError("executor", given, expected)


def check_executor(spec: ExecutorSpec | str | None = None) -> ExecutorSpec:
    """The spec, checked as far as can be without starting anything: its syntax (ValueError)
    and, for Ray, that Ray is installed and a HOST:PORT answers (SandboxUnavailable). Commands
    call it before they create their output folder."""
    if not isinstance(spec, ExecutorSpec):
        spec = parse_executor(spec)
    if spec.kind == "ray":
        from codereasoner.execution.ray_pool import check_available

        check_available(spec.address)
    return spec


def open_executor(
    spec: ExecutorSpec | str | None = None, workers: int | None = None, **pool_options: Any
) -> Executor:
    """A started executor (use it as a context manager). ``workers`` is the number of sandbox
    workers: this machine's cores by default, locally; on Ray, the cluster's CPUs."""
    if not isinstance(spec, ExecutorSpec):
        spec = parse_executor(spec)
    if spec.kind == "local":
        return Pool(workers, **pool_options)
    from codereasoner.execution.ray_pool import RayPool

    return RayPool(workers, address=spec.address, **pool_options)
