"""The Python API of ``codereasoner core build``: :func:`build_core` builds a CoRE-style
benchmark as the command does, and :func:`plan_core_build` is the checks they share. Errors as
every builder's (:mod:`codereasoner.evaluation.builders`): SettingError for a setting that
cannot be used, BuildError, one line, for anything else that stops the build.

    from codereasoner.families.core.api import BuildSettings, build_core
    core = build_core("runs/core-gen", BuildSettings(source="synth:runs/synth", limit=30))
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.evaluation.api import open_backend
from codereasoner.evaluation.builders import BuildError, load_builder_plugins
from codereasoner.evaluation.run_settings import RunError
from codereasoner.execution import SandboxUnavailable, open_executor
from codereasoner.families.core.build import (
    HASH_SEEDS,
    BuildSettings,
    BuildSummary,
    build,
    check_out,
)
from codereasoner.families.core.sources import SourceProblems, read_problems
from codereasoner.models import BackendError
from codereasoner.settings import SettingError, check_at_least
from codereasoner.synth.writer import FolderBusy, OutputError, SettingsChanged

__all__ = ["BuildSettings", "CoreBuildPlan", "build_core", "plan_core_build"]


@dataclass(frozen=True)
class CoreBuildPlan:
    """A core build checked before any pool opens: its settings, its output folder (new, or a
    build of the same settings to resume) and the problems read from its source."""

    out: Path
    settings: BuildSettings
    problems: SourceProblems


def plan_core_build(
    out: str | Path, settings: BuildSettings, *, workers: int | None = None
) -> CoreBuildPlan:
    """The checks of :func:`build_core` (which ``codereasoner core build`` shares): SettingError
    for a setting that cannot be used, BuildError (raised from the cause, a
    :class:`~codereasoner.synth.writer.SettingsChanged` for a folder of other settings) for an
    output folder or a source that cannot be used."""
    check_at_least(1, workers=workers)
    try:
        check_out(Path(out), settings)
        problems = read_problems(settings.source, settings.data_dir)
    except SettingsChanged as exc:
        raise BuildError(f"{out}: holds a build with other settings ({exc})") from exc
    except (DataUnavailable, OutputError, ValueError) as exc:
        raise BuildError(str(exc).splitlines()[0]) from exc
    if not problems.problems:
        left_out = "; ".join(f"{n} left out: {why}" for why, n in problems.skipped.items())
        raise SettingError(
            "source", settings.source, f"a usable program ({left_out or 'none read'})"
        )
    return CoreBuildPlan(Path(out), settings, problems)


def build_core(
    out: str | Path,
    settings: BuildSettings,
    *,
    workers: int | None = None,
    isolation: str = "auto",
    executor: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> BuildSummary:
    """Build a CoRE-style benchmark into ``out`` as ``codereasoner core build`` does
    (``BuildSettings`` holds its flags, with the same defaults; ``source`` as ``--from``,
    e.g. ``synth:PATH``)."""
    load_builder_plugins()
    plan = plan_core_build(out, settings, workers=workers)
    with contextlib.ExitStack() as stack:
        backend = None
        if settings.rewriter is not None:
            try:
                backend = open_backend(settings.rewriter, flag="rewriter")
            except RunError as exc:
                raise BuildError(str(exc)) from None
            stack.callback(backend.close)
        try:
            pools = (
                stack.enter_context(
                    open_executor(executor, workers, isolation=isolation, hash_seed=HASH_SEEDS[0])
                ),
                stack.enter_context(
                    open_executor(executor, 1, isolation=isolation, hash_seed=HASH_SEEDS[1])
                ),
            )
            return build(
                plan.settings,
                plan.out,
                pools,
                progress,
                problems=plan.problems,
                rewriter=backend,
            )
        except SettingsChanged as exc:
            raise BuildError(f"{out}: holds a build with other settings ({exc})") from exc
        except (FolderBusy, OutputError, BackendError, SandboxUnavailable) as exc:
            raise BuildError(str(exc).splitlines()[0]) from None
