"""``evaluate(...)``: what ``codereasoner eval`` does, from Python (a notebook, a script).

    from codereasoner.evaluation import evaluate
    summary = evaluate("oracle", names, "runs/check", limit=20, data_dir="data")  # names: bench list
    summary.typed_reports()[names[0]].headline()   # e.g. {"pass@1": 100.0}

The same validation as the command (a :class:`RunError` naming the option), the same run store
and resume, the same ``results.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from codereasoner.evaluation.plugins import PluginError, load_plugins
from codereasoner.evaluation.run_settings import refused
from codereasoner.evaluation.runner import (
    Events,
    RunError,
    Runner,
    RunSettings,
    RunSummary,
    available,
    check_data_dir,
    default_run_dir,
)
from codereasoner.models import BACKENDS, BackendError, SpecError, load_backend, parse_spec
from codereasoner.models.base import Backend, Sampling, backend_identity
from codereasoner.models.registry import parse_options

__all__ = ["evaluate", "open_backend"]

# The server options eval passes to a backend, by the flag that sets them.
BACKEND_FLAGS = {"concurrency": "--concurrency", "timeout_s": "--request-timeout"}


def open_backend(
    model: str,
    concurrency: int | None = None,
    request_timeout: float | None = None,
    model_args: str | Mapping[str, Any] | None = None,
    *,
    flag: str = "--model",
) -> Backend:
    """The backend of a model spec with eval's server options and ``model_args`` (a mapping, or
    ``key=value,...`` text as ``--model-args`` takes); RunError naming the flag (``flag``: the
    one that gave the spec)."""
    if concurrency is not None and concurrency < 1:
        raise refused("concurrency", concurrency, "at least 1 request in flight")
    if request_timeout is not None and not request_timeout > 0:
        raise refused("request_timeout", request_timeout, "a positive number")
    options = {"concurrency": concurrency, "timeout_s": request_timeout}
    try:
        extra = parse_options(model_args) if isinstance(model_args, str) else dict(model_args or {})
    except SpecError as exc:
        raise RunError(f"--model-args: {exc}") from None
    try:
        kind = BACKENDS[parse_spec(model).kind]
        for option, value in options.items():
            if value is not None and option not in kind.options:
                takers = [name for name, b in BACKENDS.items() if option in b.options]
                raise RunError(
                    f"{BACKEND_FLAGS[option]}: applies to {', '.join(takers)} models only, "
                    f"not {kind.name}"
                )
            if value is not None and option in extra:
                raise RunError(f"{BACKEND_FLAGS[option]} and --model-args both set {option}")
        given = {key: value for key, value in options.items() if value is not None}
        return load_backend(model, **{**extra, **given})
    except (SpecError, BackendError) as exc:
        said = str(exc)  # "--model hf:x: why" where the backend named its spec
        named = said.startswith(f"{model}: ")
        raise RunError(f"{flag} {said}" if named else f"{flag}: {said}") from None


def evaluate(
    model: str | Backend,
    benchmarks: str | Sequence[str] | None = None,
    out: str | Path | None = None,
    *,
    n: int = 1,
    temperature: float = 0.0,
    top_p: float = 1.0,
    max_tokens: int | None = None,
    seed: int | None = None,
    style: str = "direct",
    extraction: str | None = None,
    grading: str = "official",
    chat: bool = False,
    limit: int | None = None,
    skip: int = 0,
    data_dir: str | Path | None = None,
    timeout: float | None = None,
    workers: int | None = None,
    isolation: str = "auto",
    executor: str | None = None,
    concurrency: int | None = None,
    request_timeout: float | None = None,
    model_args: str | Mapping[str, Any] | None = None,
    events: Events | None = None,
) -> RunSummary:
    """Run ``benchmarks`` (names, or one string of comma-separated names as ``--bench`` takes;
    default: every one whose data is found) through ``model`` (a spec string such as
    ``openai:NAME@URL`` or ``oracle``, or a backend) into the run store at ``out`` (default:
    ``runs/<model>-<hash of the settings>``), resuming what is there. A backend given as an
    object is left open (it is the caller's); one made from a spec string is closed at the end.

    Returns the run's :class:`RunSummary`; ``summary.typed_reports()`` gives each benchmark's
    typed report. Raises :class:`RunError` (one line naming the option) for bad settings, an
    unusable model or data, a run folder of another run, or a failure during the run.
    """
    try:
        load_plugins()
    except PluginError as exc:
        raise RunError(str(exc)) from None
    folder = None if data_dir is None else Path(data_dir)
    check_data_dir(folder)
    if isinstance(benchmarks, str):
        benchmarks = [name.strip() for name in benchmarks.split(",")]
    given = None if benchmarks is None else tuple(dict.fromkeys(n for n in benchmarks if n))
    names = given if given is not None else tuple(available(folder))
    if not names:
        found = "none given" if given is not None else f"no data in {folder or 'the cache'}"
        raise RunError(f"benchmarks: {found}; expected names from `codereasoner bench list`")
    settings = RunSettings(
        names,
        n=n,
        sampling=Sampling(temperature, top_p, max_tokens, seed=seed),
        style=style,
        extraction=extraction,
        grading=grading,
        chat=chat,
        limit=limit,
        skip=skip,
        data_dir=folder,
        timeout=timeout,
        workers=workers,
        isolation=isolation,
        executor=executor,
    )
    with ExitStack() as owned:
        if isinstance(model, str):
            backend = open_backend(model, concurrency, request_timeout, model_args)
            owned.callback(backend.close)  # only the backend opened here
        else:
            backend = model
        try:
            run_dir = (
                Path(out)
                if out is not None
                else default_run_dir(backend_identity(backend), settings)
            )
            with Runner(run_dir, backend, settings, events) as runner:
                runner.check_resumable()
                backend.preflight()
                return runner.run()
        except BackendError as exc:
            raise RunError(str(exc)) from None
