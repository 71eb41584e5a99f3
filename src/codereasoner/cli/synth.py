"""``codereasoner synth``: build a training set of concise execution cases (docs/synth.md)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from codereasoner.cli.common import console, error_console, fail
from codereasoner.synth import generators

if TYPE_CHECKING:
    from codereasoner.synth.decontam import Decontamination, LoadedBenchmarks


def register(app: typer.Typer) -> None:
    app.command("synth")(with_generator_options(synth_command))


def _generator_help() -> str:
    """``--generator``'s help, from the registry."""
    parts = []
    for kind in generators.GENERATORS.values():
        needs = [option.flag for option in kind.options if option.required]
        parts.append(
            kind.name + f" ({kind.summary}" + (f"; needs {', '.join(needs)})" if needs else ")")
        )
    return "The candidate generator: " + ", ".join(parts) + "."


def with_generator_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with one more option per option the generators declare (in the registry),
    after ``--seed``; their values reach ``command`` as keyword arguments (its ``**options``)."""
    signature = inspect.signature(command, eval_str=True)
    fixed = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    taken = {p.name for p in fixed}
    added = []
    for option in generators.all_options():
        if option.name in taken:
            raise ValueError(f"generator option {option.name} clashes with a synth option")
        takers = " or ".join(generators.takers(option.name))
        help_text = f"{option.help} Only for --generator {takers}."
        added.append(
            inspect.Parameter(
                option.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=typer.Option(None, option.flag, help=help_text),
                annotation=option.value_type | None,
            )
        )
    after = [p.name for p in fixed].index("seed") + 1
    parameters = [*fixed[:after], *added, *fixed[after:]]
    # typer reads the parameters from the signature and calls command(**values)
    cast(Any, command).__signature__ = signature.replace(parameters=parameters)
    return command


def synth_command(
    out: Annotated[
        Path,
        typer.Option(help="Output directory (resumed when it holds a run with the same settings)."),
    ],
    generator: Annotated[str, typer.Option(help=_generator_help())] = "offline",
    n: Annotated[
        int,
        typer.Option(
            help="Original candidates to draw from the generator; each "
            "kept one adds up to --mutants mutants."
        ),
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Seed: the same seed gives byte-identical output.")] = 0,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Benchmark data for decontamination: the data root (one folder per dataset: "
            "cruxeval/, livecodebench/, reval/, core/) or one benchmark's own folder (e.g. "
            "data/cruxeval: the benchmarks whose files are there are checked, the others are "
            "named). Default: the download cache, see 'codereasoner bench fetch'."
        ),
    ] = None,
    no_decontam: Annotated[
        bool,
        typer.Option(
            "--no-decontam",
            help="Build without decontamination (said on the terminal, in summary.json and in "
            "every record). Without it, synth refuses to run when no benchmark data is found.",
        ),
    ] = False,
    decontam_rule: Annotated[
        str | None,
        typer.Option(
            help="The 10-gram rule: literal (the paper's: any shared token 10-gram; default) "
            "or specific (only 10-grams holding distinctive tokens)."
        ),
    ] = None,
    max_output_chars: Annotated[
        int, typer.Option(help="Drop outputs whose canonical literal is longer than this.")
    ] = 50,
    mutants: Annotated[int, typer.Option(help="Mutants kept per original at most.")] = 2,
    workers: Annotated[
        int | None, typer.Option(help="Sandbox workers per pool (default: CPU count).")
    ] = None,
    chunk_size: Annotated[int, typer.Option(hidden=True)] = 256,
    **generator_options: Any,
) -> None:
    """Generate, validate, deduplicate and decontaminate execution cases into OUT."""
    from codereasoner.benchmarks.cache import cache_root
    from codereasoner.benchmarks.programs import load_benchmark_programs
    from codereasoner.execution import SandboxUnavailable
    from codereasoner.models import BackendError, SpecError
    from codereasoner.synth.decontam import DEFAULT_RULE, NGRAM_RULES, Decontamination
    from codereasoner.synth.pipeline import SynthConfig, make_source, run
    from codereasoner.synth.writer import OutputError

    given = check_generator(generator, generator_options)
    if n < 1:
        fail(f"--n {n}: expected a positive number of candidates")
    if mutants < 0:
        fail(f"--mutants {mutants}: expected 0 or more")
    if max_output_chars < 1:
        fail(f"--max-output-chars {max_output_chars}: expected a positive number")
    if workers is not None and workers < 1:
        fail(f"--workers {workers}: expected a positive number")
    if data_dir is not None and not data_dir.is_dir():
        fail(f"--data-dir {data_dir}: not a directory")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: exists and is not a directory")
    if decontam_rule is not None and decontam_rule not in NGRAM_RULES:
        fail(f"--decontam-rule {decontam_rule!r}: expected {' or '.join(NGRAM_RULES)}")
    if no_decontam and (data_dir is not None or decontam_rule is not None):
        conflict = "--data-dir" if data_dir is not None else "--decontam-rule"
        fail(f"--no-decontam and {conflict} contradict each other: give one of them")
    config = SynthConfig(
        out=out,
        n=n,
        seed=seed,
        generator=generator,
        generator_options=given,
        max_output_chars=max_output_chars,
        mutants=mutants,
        mutant_tries=max(2 * mutants, mutants),
        workers=workers,
        chunk_size=chunk_size,
    )
    progress = Progress(
        TextColumn("synth"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("candidates"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=error_console,
        disable=not error_console.is_terminal,
    )
    task = progress.add_task("synth", total=n)
    source = None
    try:
        source = make_source(config)  # a bad option (a model spec) is reported first
        loaded: LoadedBenchmarks | None = None
        if no_decontam:
            decontam = Decontamination.skip("--no-decontam")
        else:
            loaded = load_benchmark_programs(data_dir)
            if not loaded.checked:
                where = str(data_dir) if data_dir is not None else f"the cache {cache_root()}"
                fail(
                    f"no benchmark data to decontaminate against in {where} (none of "
                    f"{', '.join(loaded.skipped)}): pass --data-dir DIR, fetch it with "
                    "'codereasoner bench fetch NAME', or pass --no-decontam to build without "
                    "decontamination"
                )
            decontam = Decontamination.against(loaded, decontam_rule or DEFAULT_RULE)
        # said before the run starts, so a long run's terminal states it from the beginning
        announce(decontam, data_dir)
        preflight = getattr(source, "preflight", None)
        if preflight is not None:
            preflight()  # an unreachable teacher is one line, not n parse drops
        with progress:
            summary = run(
                config,
                lambda done, total: progress.update(task, completed=done),
                source=source,
                decontam=decontam,
            )
    except (OutputError, SpecError, BackendError, SandboxUnavailable, ValueError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()
    show_summary(summary.data, summary.elapsed_s, out)


def check_generator(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options given for generator ``name`` (those not None), after one-line errors for an
    unknown generator, an option it does not take and a required one missing."""
    if name not in generators.GENERATORS:
        fail(f"--generator {name!r}: expected {' or '.join(generators.names())}")
    kind = generators.GENERATORS[name]
    given = {key: value for key, value in options.items() if value is not None}
    for key in given:
        if kind.option(key) is None:
            flag = "--" + key.replace("_", "-")
            fail(f"{flag} applies to --generator {' or '.join(generators.takers(key))} only")
    for option in kind.missing(given):
        example = f" (e.g. {option.example})" if option.example else ""
        fail(f"--generator {name} needs {option.flag}{example}")
    return given


def announce(decontam: Decontamination, data_dir: Path | None = None) -> None:
    """One line on stderr: how this run decontaminates; then, for the benchmarks that could not
    be checked, one line naming them when ``data_dir`` is one benchmark's folder, else one line
    each saying why."""
    style = "bold yellow" if decontam.skipped or decontam.missing else "bold"
    error_console.print(
        f"[{style}]{escape(decontam.describe())}[/]", highlight=False, soft_wrap=True
    )
    if not decontam.missing:
        return
    if data_dir is not None and is_benchmark_folder(data_dir):
        names = ", ".join(decontam.missing)
        error_console.print(
            f"  not found in {escape(str(data_dir))}: {escape(names)} (it holds one "
            "benchmark's files; give the data root to check the others)",
            highlight=False,
            soft_wrap=True,
        )
        return
    for name, why in decontam.missing.items():
        error_console.print(f"  {escape(name)}: {escape(why)}", highlight=False, soft_wrap=True)


def is_benchmark_folder(data_dir: Path) -> bool:
    """Whether ``data_dir`` is one benchmark's own folder rather than the data root: it holds
    no folder named after a benchmark's dataset. Only the terminal's wording depends on it: the
    benchmarks read either form themselves (``Benchmark.load``)."""
    from codereasoner import benchmarks

    datasets = {benchmarks.get(name).dataset for name in benchmarks.names()}
    return not any((data_dir / dataset).is_dir() for dataset in datasets)


def decontam_line(data: dict) -> str:
    """How the run was decontaminated, from ``summary.json``."""
    info = data.get("decontam") or {}
    if info.get("skipped"):
        return f"SKIPPED ({info['skipped']})"
    text = f"{info.get('rule')} rule; checked {', '.join(info.get('checked', [])) or 'nothing'}"
    if info.get("missing"):
        text += f"; NOT checked (data missing): {', '.join(info['missing'])}"
    return text


def show_summary(data: dict, elapsed_s: float, out: Path) -> None:
    """The final table: counts by stage, top drop reasons, methods covered."""
    kept, originals = data["kept"], data["originals"]
    table = Table(title=escape(f"synth: {out}"), title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("count", justify="right")
    table.add_row("originals generated", f"{originals['generated']:,}")
    table.add_row("originals kept", f"{kept['originals']:,}")
    table.add_row("mutants kept", f"{kept['mutants']:,}")
    table.add_row("cases written", f"[green]{kept['total']:,}[/]")
    for stage, count in data["dropped_by_stage"].items():
        table.add_row(f"dropped at {stage}", f"{count:,}")
    methods = data["methods"]
    table.add_row("methods covered", f"{methods['covered']}/{methods['total']}")
    table.add_row("time", f"{elapsed_s:.1f} s")
    console.print(table)
    reasons = Table(title="top drop reasons", title_justify="left")
    reasons.add_column("stage/reason")
    reasons.add_column("count", justify="right")
    for reason, count in list(data["drop_reasons"].items())[:8]:
        reasons.add_row(escape(reason), f"{count:,}")
    console.print(reasons)
    console.print(
        f"decontamination: {escape(decontam_line(data))}", highlight=False, soft_wrap=True
    )
    if methods["missing"]:
        shown = ", ".join(methods["missing"][:10])
        more = f" (+{len(methods['missing']) - 10} more)" if len(methods["missing"]) > 10 else ""
        console.print(f"methods not covered: {escape(shown)}{more}", highlight=False)
    console.print(
        f"wrote {escape(str(out))}/cases.jsonl, dropped.jsonl, audit.jsonl, "
        "summary.json, summary.png",
        highlight=False,
    )
