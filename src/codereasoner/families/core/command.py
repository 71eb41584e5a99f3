"""``codereasoner core build``: a fresh CoRE-style benchmark from any pool of programs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from codereasoner.cli.common import (
    DATA_DIR_OPTION,
    ExecutorFlag,
    IsolationFlag,
    check_executor,
    check_folder,
    console,
    dump_json,
    error_console,
    fail,
    flag_message,
    interruptible,
    json_flag,
    open_pool,
    safe_markup,
)
from codereasoner.cli.progress import LineProgress

core_app = typer.Typer(
    help="Build CoRE-style benchmarks: verified equivalent implementations and exact probes.",
    no_args_is_help=True,
)

SOURCE_HELP = (
    "Where the programs come from: core, cruxeval, reval (or any benchmark name), read from "
    "--data-dir or the cache, or synth:DIR (a 'codereasoner synth' output folder)."
)
# build.json's setting names by the flag that sets them (for a resume with other settings)
SETTING_FLAGS = {
    "source": "--from",
    "variants": "--variants",
    "probes": "--probes",
    "seed": "--seed",
    "candidates": "--candidates",
    "originals": "--originals/--no-originals",
    "rewriter": "--rewriter",
    "rewriter_samples": "--rewriter-samples",
    "source_sha256": "the programs read (--from, --data-dir): sha256",
    "added_rewrites": "the rewrites installed packages add",
}


@core_app.command("build")
def build_command(
    source: Annotated[str, typer.Option("--from", help=SOURCE_HELP)],
    out: Annotated[Path, typer.Option("--out", help="The benchmark folder to write.")],
    data_dir: Annotated[Path | None, DATA_DIR_OPTION] = None,
    variants: Annotated[int, typer.Option(help="Verified rewrites per problem.")] = 4,
    probes: Annotated[int, typer.Option(help="Probes per implementation.")] = 4,
    seed: Annotated[int, typer.Option(help="Seed of the rewrites, mutants and probes.")] = 0,
    candidates: Annotated[
        int, typer.Option(help="Tests per problem before minimisation (given calls first).")
    ] = 24,
    originals: Annotated[
        bool, typer.Option(help="Keep the given implementations beside the rewrites.")
    ] = True,
    rewriter: Annotated[
        str | None,
        typer.Option(
            help="A model spec (as eval's --model) that also writes rewrites; each is checked "
            "in the sandbox like the AST rewrites (kind llm)."
        ),
    ] = None,
    rewriter_samples: Annotated[
        int, typer.Option(help="LLM rewrites asked per given implementation.")
    ] = 2,
    limit: Annotated[
        int | None,
        typer.Option(help="Build the first N problems only (a larger N later adds the next)."),
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Sandbox workers (default: cores).")] = None,
    isolation: IsolationFlag = "auto",
    executor: ExecutorFlag = None,
    as_json: Annotated[bool, json_flag("the summary")] = False,
) -> None:
    """Build a CoRE-style benchmark into OUT (resumable): rewrites checked equivalent in the
    sandbox, minimised tests, probes from exact traces. Evaluate it with
    'codereasoner eval --bench core-gen --data-dir OUT'."""
    from codereasoner.evaluation.builders import BuildError
    from codereasoner.families.core.api import plan_core_build
    from codereasoner.families.core.build import (
        HASH_SEEDS,
        BuildSettings,
        OutputError,
        SettingsChanged,
        build,
    )
    from codereasoner.models import BackendError
    from codereasoner.settings import SettingError
    from codereasoner.synth.writer import FolderBusy

    if data_dir is not None and not data_dir.is_dir():
        fail(f"--data-dir {data_dir}: not a directory")
    check_executor(executor)
    check_folder("--out", out)
    if rewriter is not None:
        from codereasoner.models import SpecError, parse_spec

        try:
            parse_spec(rewriter)
        except SpecError as exc:
            fail(f"--rewriter: {str(exc).splitlines()[0]}")
    try:
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
            data_dir=data_dir,
        )
        plan = plan_core_build(out, settings, workers=workers)
    except SettingError as exc:
        fail(flag_message(exc))
    except BuildError as exc:
        cause = exc.__cause__
        fail(
            _settings_message(cause.changed, out)
            if isinstance(cause, SettingsChanged)
            else str(exc)
        )
    progress = LineProgress(
        TextColumn("core build"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("problems {task.fields[last]}"),
        TimeElapsedColumn(),
        console=error_console,
    )
    backend = None
    if rewriter is not None:
        from codereasoner.evaluation.api import open_backend
        from codereasoner.evaluation.runner import RunError

        try:
            backend = open_backend(rewriter, flag="--rewriter")
        except RunError as exc:
            fail(flag_message(exc))
    started = time.monotonic()
    try:
        with (
            interruptible(out),
            open_pool(
                show_progress=False,
                executor=executor,
                workers=workers,
                isolation=isolation,
                hash_seed=HASH_SEEDS[0],
            ) as pool,
            open_pool(
                show_progress=False,
                executor=executor,
                workers=1,
                isolation=isolation,
                hash_seed=HASH_SEEDS[1],
            ) as other,
            progress,
        ):
            total = min(len(plan.problems.problems), limit or len(plan.problems.problems))
            task = progress.add_task("core build problems", total=total, last="")
            summary = build(
                plan.settings,
                plan.out,
                (pool, other),
                lambda done, _, last: progress.update(task, completed=done, last=last),
                problems=plan.problems,
                rewriter=backend,
            )
    except SettingsChanged as exc:
        fail(_settings_message(exc.changed, out))
    except (FolderBusy, OutputError) as exc:
        fail(str(exc).splitlines()[0])
    except BackendError as exc:
        fail(f"--rewriter: {str(exc).splitlines()[0]}")
    finally:
        if backend is not None:
            backend.close()
    seconds = round(time.monotonic() - started, 1)
    if as_json:
        typer.echo(dump_json(summary.data | {"seconds": seconds}, indent=2))
    else:
        show(summary.data, out)
        console.print(f"took {seconds} s", highlight=False)


def _settings_message(changed: dict[str, tuple[Any, Any]], out: Path) -> str:
    parts = [
        f"{SETTING_FLAGS.get(key, key)}: {there!r} there, {now!r} now"
        for key, (there, now) in changed.items()
    ]
    return (
        f"--out {out} holds a build with other settings ({'; '.join(parts)}); "
        "repeat them to resume, or choose another --out"
    )


def show(data: dict[str, Any], out: Path) -> None:
    """The summary as tables: problems, implementations by rewrite kind, probes."""
    problems, impls, tests, probes = (
        data["problems"],
        data["implementations"],
        data["tests"],
        data["probes"],
    )
    console.print(
        f"built {problems['built']} of {problems['chosen']} problems into "
        f"{safe_markup(out)}: {impls['total']} implementations ({impls['given']} given, "
        f"{impls['rewrites']} rewrites), {data['output_items']} output items, "
        f"{probes['total']} probes",
        highlight=False,
    )
    _table("problems left out", problems["skipped"])
    _table("rewrite kinds (in kept rewrites)", impls["rewrite_kinds"])
    _table("rewrites rejected", impls["rejections"])
    _table("probe kinds", probes["kinds"])
    _table("probe dimensions", probes["dimensions"])
    kept, before = tests["kept_per_problem"], tests["candidates_per_problem"]
    console.print(
        f"tests per problem: {before['mean']} candidates -> {kept['mean']} kept (coverage "
        f"set cover); probes per implementation: min {probes['per_implementation']['min']}, "
        f"median {probes['per_implementation']['median']}",
        highlight=False,
    )
    if problems["fewer_rewrites_than_asked"]:
        console.print(
            f"[yellow]{len(problems['fewer_rewrites_than_asked'])} problems have fewer "
            f"rewrites than asked[/]: {safe_markup(', '.join(problems['fewer_rewrites_than_asked'][:10]))}",
            highlight=False,
        )
    console.print(
        f"evaluate: codereasoner eval --model MODEL --bench core-gen --data-dir {safe_markup(out)}",
        highlight=False,
        soft_wrap=True,
    )


def _table(title: str, rows: dict[str, int]) -> None:
    if not rows:
        return
    table = Table(title=title, title_justify="left")
    table.add_column("name")
    table.add_column("count", justify="right")
    for name, count in rows.items():
        table.add_row(safe_markup(name), str(count))
    console.print(table)


def register(app: typer.Typer) -> None:
    from codereasoner.families.core.programs import BUILD_COMMAND

    app.add_typer(core_app, name=BUILD_COMMAND)
