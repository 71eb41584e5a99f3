"""Python APIs beside :func:`codereasoner.evaluation.evaluate` for the two commands that build
data: :func:`synthesize` (``codereasoner synth``) and :func:`build_core` (``codereasoner core
build``). Each composes what its command composes (sources, decontamination, sandbox pools, an
optional model) and raises :class:`~codereasoner.settings.SettingError` (a ValueError naming
the setting, its value and what was expected) for a setting that cannot be used and
:class:`BuildError`, one line, for anything else that stops the build; both resume a folder of
the same settings.

    from codereasoner.evaluation import build_core, synthesize
    cases = synthesize("runs/synth", n=400, data_dir="data")
    core = build_core("runs/core-gen", source="synth:runs/synth", limit=30)  # as --from
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.benchmarks.core_build import (
    HASH_SEEDS,
    BuildSettings,
    BuildSummary,
    build,
    check_out,
)
from codereasoner.benchmarks.core_sources import SourceProblems, read_problems
from codereasoner.benchmarks.programs import load_benchmark_programs
from codereasoner.evaluation.api import open_backend
from codereasoner.evaluation.plugins import PluginError, load_plugins
from codereasoner.evaluation.run_settings import RunError
from codereasoner.execution import SandboxUnavailable, open_executor
from codereasoner.models import BackendError, SpecError
from codereasoner.settings import SettingError, check_at_least
from codereasoner.synth import generators
from codereasoner.synth.decontam import DEFAULT_RULE, Decontamination, check_rule
from codereasoner.synth.pipeline import (
    Summary,
    SynthConfig,
    make_source,
    run,
)
from codereasoner.synth.writer import FolderBusy, OutputError, SettingsChanged

__all__ = [
    "BuildError",
    "CoreBuildPlan",
    "NoBenchmarkData",
    "build_core",
    "decontamination_plan",
    "plan_core_build",
    "synthesize",
]


class BuildError(ValueError):
    """A build that cannot run as asked (one line naming the setting)."""


def _load_plugins() -> None:
    """Installed packages' extensions (benchmarks, rewrites, ...), as the commands load them."""
    try:
        load_plugins()
    except PluginError as exc:
        raise BuildError(str(exc)) from None


class NoBenchmarkData(BuildError):
    """Decontamination asked for, and no benchmark's programs found to check against."""

    def __init__(self, skipped: list[str]) -> None:
        self.skipped = skipped
        super().__init__(
            f"no benchmark data to decontaminate against (none of {', '.join(skipped)}): "
            "give data_dir, or decontaminate=False"
        )


def decontamination_plan(
    data_dir: Path | None, rule: str | None, *, decontaminate: bool = True
) -> Decontamination:
    """How a synthesis run decontaminates: against the benchmark programs found in ``data_dir``
    (None: the cache) under ``rule`` (None: the default), or not at all, as ``--no-decontam``
    records it. :class:`NoBenchmarkData` when there are none."""
    if not decontaminate:
        return Decontamination.skip("--no-decontam")  # as the command records it: the same bytes
    loaded = load_benchmark_programs(data_dir)
    if not loaded.checked:
        raise NoBenchmarkData(list(loaded.skipped))
    return Decontamination.against(loaded, rule or DEFAULT_RULE)


def synthesize(
    out: str | Path,
    *,
    n: int = 1000,
    seed: int = 0,
    generator: str = "offline",
    generator_options: Mapping[str, Any] | None = None,
    data_dir: str | Path | None = None,
    decontaminate: bool = True,
    decontam_rule: str | None = None,
    max_output_chars: int = 50,
    mutants: int = 2,
    workers: int | None = None,
    executor: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Summary:
    """Synthesize execution cases into ``out`` as ``codereasoner synth`` does (same defaults);
    ``decontaminate=False`` is ``--no-decontam``. Returns the run's summary."""
    _load_plugins()
    check_rule(decontam_rule)
    folder = None if data_dir is None else Path(data_dir)
    try:
        options = generators.given_options(generator, generator_options or {})
    except (generators.OptionNotTaken, generators.OptionMissing) as exc:
        raise BuildError(str(exc)) from exc
    config = SynthConfig(
        out=Path(out),
        n=n,
        seed=seed,
        generator=generator,
        generator_options=options,
        max_output_chars=max_output_chars,
        mutants=mutants,
        mutant_tries=max(2 * mutants, mutants),
        workers=workers,
        executor=executor,
    )
    plan = decontamination_plan(folder, decontam_rule, decontaminate=decontaminate)
    try:
        source = make_source(config)
        try:
            return run(config, progress, source=source, decontam=plan)
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()
    except SettingsChanged as exc:
        raise BuildError(f"{out}: holds a run with other settings ({exc})") from None
    except (OutputError, FolderBusy, SpecError, BackendError, SandboxUnavailable) as exc:
        raise BuildError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


@dataclass(frozen=True)
class CoreBuildPlan:
    """A core build checked before any pool opens: its settings, its output folder (new, or a
    build of the same settings to resume) and the problems read from its source."""

    out: Path
    settings: BuildSettings
    problems: SourceProblems


def plan_core_build(
    out: str | Path,
    *,
    source: str,
    data_dir: str | Path | None = None,
    variants: int = 4,
    probes: int = 4,
    seed: int = 0,
    candidates: int = 24,
    originals: bool = True,
    rewriter: str | None = None,
    rewriter_samples: int = 2,
    limit: int | None = None,
    workers: int | None = None,
) -> CoreBuildPlan:
    """The checks of :func:`build_core` (which ``codereasoner core build`` shares): SettingError
    for a setting that cannot be used, BuildError (raised from the cause, a
    :class:`~codereasoner.synth.writer.SettingsChanged` for a folder of other settings) for an
    output folder or a source that cannot be used."""
    check_at_least(1, workers=workers)
    folder = None if data_dir is None else Path(data_dir)
    settings = BuildSettings(
        source=source,
        variants=variants,
        probes=probes,
        seed=seed,
        candidates=candidates,
        originals=originals,
        rewriter=rewriter,
        rewriter_samples=rewriter_samples,
        limit=limit,
        data_dir=folder,
    )
    try:
        check_out(Path(out), settings)
        problems = read_problems(source, folder)
    except SettingsChanged as exc:
        raise BuildError(f"{out}: holds a build with other settings ({exc})") from exc
    except (DataUnavailable, OutputError, ValueError) as exc:
        raise BuildError(str(exc).splitlines()[0]) from exc
    if not problems.problems:
        left_out = "; ".join(f"{n} left out: {why}" for why, n in problems.skipped.items())
        raise SettingError("source", source, f"a usable program ({left_out or 'none read'})")
    return CoreBuildPlan(Path(out), settings, problems)


def build_core(
    out: str | Path,
    *,
    source: str,
    data_dir: str | Path | None = None,
    variants: int = 4,
    probes: int = 4,
    seed: int = 0,
    candidates: int = 24,
    originals: bool = True,
    rewriter: str | None = None,
    rewriter_samples: int = 2,
    limit: int | None = None,
    workers: int | None = None,
    isolation: str = "auto",
    executor: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> BuildSummary:
    """Build a CoRE-style benchmark into ``out`` as ``codereasoner core build`` does (same
    defaults; ``source`` as ``--from``, e.g. ``synth:PATH``)."""
    _load_plugins()
    plan = plan_core_build(
        out,
        source=source,
        data_dir=data_dir,
        variants=variants,
        probes=probes,
        seed=seed,
        candidates=candidates,
        originals=originals,
        rewriter=rewriter,
        rewriter_samples=rewriter_samples,
        limit=limit,
        workers=workers,
    )
    with contextlib.ExitStack() as stack:
        backend = None
        if rewriter is not None:
            try:
                backend = open_backend(rewriter, flag="rewriter")
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
