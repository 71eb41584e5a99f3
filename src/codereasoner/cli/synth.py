"""``codereasoner synth``: build a training set of concise execution cases (docs/synth.md)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from codereasoner.cli.common import (
    ExecutorFlag,
    check_executor,
    check_folder,
    console,
    dump_json,
    error_console,
    fail,
    flag_message,
    flag_of,
    interruptible,
    safe_markup,
)
from codereasoner.cli.progress import LineProgress
from codereasoner.synth import generators

if TYPE_CHECKING:
    from codereasoner.synth.decontam import Decontamination


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
    executor: ExecutorFlag = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print what was written as JSON: the files, counts, drops, outputs and "
            "decontamination (summary.json's facts).",
        ),
    ] = False,
    chunk_size: Annotated[int, typer.Option(hidden=True)] = 256,
    **generator_options: Any,
) -> None:
    """Generate, validate, deduplicate and decontaminate execution cases into OUT."""
    from codereasoner.benchmarks.cache import cache_root
    from codereasoner.evaluation.builders import NoBenchmarkData, decontamination_plan
    from codereasoner.execution import SandboxUnavailable
    from codereasoner.models import BackendError, SpecError
    from codereasoner.settings import SettingError
    from codereasoner.synth.decontam import check_rule
    from codereasoner.synth.pipeline import SynthConfig, make_source, run
    from codereasoner.synth.writer import OutputError, SettingsChanged

    given = check_generator(generator, generator_options)
    try:  # the configuration checks its own settings
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
            executor=executor,
            chunk_size=chunk_size,
        )
        check_rule(decontam_rule)
    except SettingError as exc:
        fail(flag_message(exc))
    check_executor(executor)
    if data_dir is not None and not data_dir.is_dir():
        fail(f"--data-dir {data_dir}: not a directory")
    check_folder("--out", out)
    if no_decontam and (data_dir is not None or decontam_rule is not None):
        conflict = "--data-dir" if data_dir is not None else "--decontam-rule"
        fail(f"--no-decontam and {conflict} contradict each other: give one of them")
    progress = LineProgress(
        TextColumn("synth"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("candidates"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=error_console,
    )
    source = None
    try:
        source = make_source(config)  # a bad option (a model spec) is reported first
        try:
            decontam = decontamination_plan(data_dir, decontam_rule, decontaminate=not no_decontam)
        except NoBenchmarkData as exc:
            where = str(data_dir) if data_dir is not None else f"the cache {cache_root()}"
            fail(
                f"no benchmark data to decontaminate against in {where} (none of "
                f"{', '.join(exc.skipped)}): pass --data-dir DIR, fetch it with "
                "'codereasoner bench fetch NAME', or pass --no-decontam to build without "
                "decontamination"
            )
        # said before the run starts, so a long run's terminal states it from the beginning
        announce(decontam, data_dir)
        preflight = getattr(source, "preflight", None)
        if preflight is not None:
            preflight()  # an unreachable teacher is one line, not n parse drops
        with interruptible(out), progress:
            # added now, so nothing is said to have started before the checks above passed
            task = progress.add_task("synth candidates", total=n)
            summary = run(
                config,
                lambda done, total: progress.update(task, completed=done),
                source=source,
                decontam=decontam,
            )
    except SettingsChanged as exc:
        fail(settings_message(exc.changed, out))
    except (OutputError, SpecError, BackendError, SandboxUnavailable, ValueError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()
    if as_json:
        typer.echo(dump_json(json_summary(summary.data, summary.elapsed_s, out), indent=2))
    else:
        show_summary(summary.data, summary.elapsed_s, out)


# A run's settings (state.json's names, synth.pipeline.settings_of) by the flag that sets them.
SETTING_FLAGS = {
    "generator": "--generator",
    "n": "--n",
    "seed": "--seed",
    "max_output_chars": "--max-output-chars",
    "mutants": "--mutants",
    "chunk_size": "--chunk-size",
    "decontam_skipped": "--no-decontam",
    "decontam_rule": "--decontam-rule",
}
# What --data-dir (or the cache) decides: the benchmarks checked and missing, their programs.
DATA_SETTINGS = {
    "decontam_checked": "benchmarks checked",
    "decontam_missing": "benchmarks missing",
    "decontam_programs": "benchmark programs",
    "decontam_sha256": "the programs' SHA-256",
}
# Settings no flag sets: this version of codereasoner (or the sandbox's Python) decides them.
FIXED_SETTINGS = {
    "mutant_tries": "the mutants tried per original",
    "timeout_s": "the sandbox time limit",
    "max_steps": "the trace step cap",
    "hash_seeds": "the hash seeds",
    "set_order_check": "the set-order check",
    "mutant_selection": "the mutant selection",
    "python": "the sandbox's Python",
}


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return repr(value)


def settings_message(changed: dict[str, tuple[Any, Any]], out: Path) -> str:
    """The error for an --out holding a run with other settings, each named by its flag:
    ``--decontam-rule: 'literal' there, 'specific' now``."""
    changed = dict(changed)
    if "decontam_skipped" in changed:  # the rest of the decontamination follows from it
        changed = {
            k: v for k, v in changed.items() if k == "decontam_skipped" or k[:9] != "decontam_"
        }
    if "mutants" in changed:  # derived from --mutants
        changed.pop("mutant_tries", None)
    parts = []
    for key, (there, now) in changed.items():
        if key == "decontam_skipped":
            parts.append(
                f"--no-decontam: {'given' if there else 'not given'} there, "
                f"{'given' if now else 'not given'} now"
            )
        elif key in SETTING_FLAGS:
            parts.append(f"{SETTING_FLAGS[key]}: {_shown(there)} there, {_shown(now)} now")
        elif key in FIXED_SETTINGS:
            parts.append(
                f"{FIXED_SETTINGS[key]} (set by codereasoner): {_shown(there)} there, "
                f"{_shown(now)} now"
            )
        elif key not in DATA_SETTINGS:
            parts.append(f"{key}: {_shown(there)} there, {_shown(now)} now")
    data = [key for key in DATA_SETTINGS if key in changed]
    if data:
        shown = [key for key in data if key != "decontam_sha256"] or data
        parts.append(
            "the benchmark data (--data-dir or the cache): "
            + "; ".join(
                f"{DATA_SETTINGS[key]} {_shown(changed[key][0])} there, {_shown(changed[key][1])} now"
                if key != "decontam_sha256"
                else "other program texts"
                for key in shown
            )
        )
    return (
        f"--out {out}: holds a run with other settings ({'; '.join(parts)}); "
        "use another --out or the same settings to resume"
    )


OUTPUT_FILES = ("cases.jsonl", "dropped.jsonl", "audit.jsonl", "summary.json", "summary.png")


def json_summary(data: dict, elapsed_s: float, out: Path) -> dict[str, Any]:
    """What ``synth --json`` prints: the files written and ``summary.json``'s facts but the
    settings and the distributions (both are in ``summary.json``)."""
    files = {name: str(out / name) for name in OUTPUT_FILES if (out / name).exists()}
    facts = {key: value for key, value in data.items() if key not in ("settings", "distributions")}
    return {"out": str(out), "files": files, "elapsed_s": round(elapsed_s, 3)} | facts


def check_generator(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options given for generator ``name`` (those not None), after one-line errors for an
    unknown generator, an option it does not take and a required one missing."""
    from codereasoner.settings import SettingError

    try:
        return generators.given_options(name, options)
    except SettingError as exc:
        fail(flag_message(exc))
    except generators.OptionNotTaken as exc:
        fail(f"{flag_of(exc.option)} applies to --generator {' or '.join(exc.takers)} only")
    except generators.OptionMissing as exc:
        example = f" (e.g. {exc.option.example})" if exc.option.example else ""
        fail(f"--generator {exc.generator} needs {exc.option.flag}{example}")


def announce(decontam: Decontamination, data_dir: Path | None = None) -> None:
    """One line on stderr: how this run decontaminates; then, for the benchmarks that could not
    be checked, one line naming them when ``data_dir`` is one benchmark's folder, else one line
    each saying why."""
    style = "bold yellow" if decontam.skipped or decontam.missing else "bold"
    error_console.print(
        f"[{style}]{safe_markup(decontam.describe())}[/]", highlight=False, soft_wrap=True
    )
    if not decontam.missing:
        return
    if data_dir is not None and is_benchmark_folder(data_dir):
        names = ", ".join(decontam.missing)
        error_console.print(
            f"  not found in {safe_markup(data_dir)}: {safe_markup(names)} (it holds one "
            "benchmark's files; give the data root to check the others)",
            highlight=False,
            soft_wrap=True,
        )
        return
    for name, why in decontam.missing.items():
        error_console.print(
            f"  {safe_markup(name)}: {safe_markup(why)}", highlight=False, soft_wrap=True
        )


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
    """The final tables (counts by stage, outputs, top drop reasons), then decontamination,
    the methods not covered and the files written."""
    console.print(counts_table(data, elapsed_s, out))
    console.print(reasons_table(data))
    console.print(
        f"decontamination: {safe_markup(decontam_line(data))}", highlight=False, soft_wrap=True
    )
    missing = data["methods"]["missing"]
    if missing:
        more = f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""
        console.print(
            f"methods not covered: {safe_markup(', '.join(missing[:10]))}{more}", highlight=False
        )
    console.print(
        f"wrote {safe_markup(out)}/{', '.join(OUTPUT_FILES)}", highlight=False, soft_wrap=True
    )


def counts_table(data: dict, elapsed_s: float, out: Path) -> Table:
    """Candidates, cases kept, drops by stage, outputs, methods covered and time."""
    kept, originals = data["kept"], data["originals"]
    table = Table(title=f"synth: {safe_markup(out)}", title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("count", justify="right")
    table.add_row("originals generated", f"{originals['generated']:,}")
    table.add_row("originals kept", f"{kept['originals']:,}")
    table.add_row("mutants kept", f"{kept['mutants']:,}")
    table.add_row("cases written", f"[green]{kept['total']:,}[/]")
    for stage, count in data["dropped_by_stage"].items():
        table.add_row(f"dropped at {stage}", f"{count:,}")
    for reason, count in data.get("by_design_drops", {}).items():
        table.add_row(f"  of which {reason} (by design)", f"{count:,}")
    outputs = data.get("outputs")
    if outputs:
        table.add_row("distinct outputs", f"{outputs['distinct']:,}")
        table.add_row(
            "trivial outputs (0, [], '', None, ...)", f"{outputs['trivial']['share']:.1%}"
        )
    methods = data["methods"]
    table.add_row("methods covered", f"{methods['covered']}/{methods['total']}")
    table.add_row("time", f"{elapsed_s:.1f} s")
    return table


def reasons_table(data: dict) -> Table:
    """The eight most common drop reasons, those by design marked."""
    table = Table(title="top drop reasons", title_justify="left")
    table.add_column("stage/reason")
    table.add_column("count", justify="right")
    by_design = data.get("by_design_drops", {})
    for reason, count in list(data["drop_reasons"].items())[:8]:
        note = " (by design)" if reason in by_design else ""
        table.add_row(safe_markup(reason + note), f"{count:,}")
    return table
