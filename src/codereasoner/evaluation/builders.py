"""The Python API beside :func:`codereasoner.evaluation.evaluate` for the command that builds
data, :func:`synthesize` (``codereasoner synth``), and what every builder shares: it composes
what its command composes (sources, decontamination, sandbox pools, an optional model) and
raises :class:`~codereasoner.settings.SettingError` (a ValueError naming the setting, its value
and what was expected) for a setting that cannot be used and :class:`BuildError`, one line, for
anything else that stops the build; it resumes a folder of the same settings. A benchmark folder
that builds data (``families/core/api.py``: ``build_core``) raises the same two.

    from codereasoner.evaluation import synthesize
    cases = synthesize("runs/synth", n=400, data_dir="data")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from codereasoner.benchmarks.programs import load_benchmark_programs
from codereasoner.evaluation.plugins import PluginError, load_plugins
from codereasoner.execution import SandboxUnavailable
from codereasoner.models import BackendError, SpecError
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
    "NoBenchmarkData",
    "decontamination_plan",
    "load_builder_plugins",
    "synthesize",
]


class BuildError(ValueError):
    """A build that cannot run as asked (one line naming the setting)."""


def load_builder_plugins() -> None:
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
    load_builder_plugins()
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
