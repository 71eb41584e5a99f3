"""``codereasoner distill``: teacher chains of thought over synthesized cases, kept when verified."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from codereasoner.cli.common import (
    ExecutorFlag,
    IsolationFlag,
    check_executor,
    console,
    dump_json,
    error_console,
    fail,
    flag_message,
    interruptible,
    json_flag,
    safe_markup,
)
from codereasoner.cli.evaluate import Bars
from codereasoner.evaluation.runner import ORACLE, SELF_CHECK, RunError
from codereasoner.models import BackendError, Sampling, SpecError, load_backend, spec_help
from codereasoner.training.distill import Distiller, DistillSettings, DistillSummary


def distill_command(
    teacher: Annotated[
        str, typer.Option("--teacher", help=f"Teacher model spec: {spec_help(summaries=True)}.")
    ],
    cases: Annotated[
        Path,
        typer.Option(
            help="A 'codereasoner synth' output folder (its cases.jsonl), or a file of cases."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Output folder; the same --out resumes.")],
    k: Annotated[int, typer.Option("--k", help="Teacher samples per case and direction.")] = 4,
    directions: Annotated[
        str,
        typer.Option(
            help="Comma-separated: forward (input -> output), backward (output -> input), "
            "probe (questions about intermediate states of the call, from our trace)."
        ),
    ] = "forward,backward",
    probes_per_case: Annotated[
        int, typer.Option(help="Probe items per case (direction probe).")
    ] = 2,
    style: Annotated[
        str,
        typer.Option(help="reasoning (<Reasoning> then <Answer>) or direct (the answer only)."),
    ] = "reasoning",
    hint: Annotated[
        str | None,
        typer.Option(help="trace: the teacher also sees our exact trace of the call."),
    ] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.7,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling.")] = 1.0,
    max_tokens: Annotated[
        int,
        typer.Option(
            help="Most tokens per reply; a thinking teacher's thinking counts too (QwQ: 32768)."
        ),
    ] = 4096,
    seed: Annotated[
        int | None, typer.Option(help="Sampling seed (sample i uses seed + i).")
    ] = None,
    chat: Annotated[
        bool, typer.Option("--chat/--raw", help="Chat messages, or raw completion prompts.")
    ] = True,
    limit: Annotated[
        int | None, typer.Option(help="About N items, whole cases, a fixed subset.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Requests in flight (server backends).")
    ] = None,
    request_timeout: Annotated[
        float | None, typer.Option(help="Seconds per request (server backends).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(help="Seconds per sandboxed verification (default 3).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Sandbox workers (default: one per core).")
    ] = None,
    isolation: IsolationFlag = "auto",
    executor: ExecutorFlag = None,
    as_json: Annotated[bool, json_flag("the summary")] = False,
) -> None:
    """Distil chains of thought from a teacher by rejection sampling (docs/training.md).

    Every teacher sample and verdict is stored in OUT/run.sqlite as it arrives; re-running
    with the same --out asks the teacher only for what is missing (after a kill -9 too).
    OUT/distilled.jsonl keeps the shortest verified chain per case and direction (per probe for
    direction probe).
    """
    check_executor(executor)
    try:
        backend = load_backend(teacher, concurrency=concurrency, timeout_s=request_timeout)
    except (SpecError, BackendError) as exc:
        fail(f"--teacher: {exc}")
    sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
    settings = DistillSettings(
        cases=cases,
        k=k,
        directions=tuple(part.strip() for part in directions.split(",") if part.strip()),
        style=style,
        hint=hint,
        probes_per_case=probes_per_case,
        sampling=sampling,
        chat=chat,
        limit=limit,
        timeout=timeout,
        workers=workers,
        isolation=isolation,
        executor=executor,
    )
    try:
        distiller = Distiller(out, backend, settings, bars := Bars())
        distiller.check_resumable()
    except RunError as exc:
        fail(flag_message(exc))
    try:
        backend.preflight()
    except BackendError as exc:
        fail(f"--teacher {teacher}: {exc}")
    try:
        with distiller:
            try:
                distiller.prepare()  # settings this --out cannot take: nothing to resume
            except RunError as exc:
                fail(flag_message(exc))
            with interruptible(out), bars.progress:
                summary = distiller.run()
    except (RunError, BackendError) as exc:
        fail(f"{flag_message(exc)} (re-run with the same --out to resume)")
    finally:
        backend.close()
    if as_json:
        typer.echo(dump_json(summary.to_dict(), indent=2))
    else:
        _print(summary)
    check = summary.self_check
    if check is not None and not check["passed"]:
        error_console.print(
            "[red]self-check failed:[/] the oracle's answers were not all "
            "verified (see --json: self_check)"
        )
        raise typer.Exit(1)


def _print(summary: DistillSummary) -> None:
    if summary.teacher == ORACLE:
        console.print(f"[bold yellow]{SELF_CHECK}[/]", highlight=False)
    console.print(
        safe_markup(
            f"{summary.teacher}: {summary.accepted} of {summary.items} items kept a verified "
            f"chain; {summary.generated} samples generated now, {summary.cached} cached"
        ),
        highlight=False,
    )
    tables = (
        ("direction", "by_direction"),
        ("control depth", "by_depth"),
        ("method type", "by_type"),
        ("probe kind", "by_probe_kind"),
        ("dimension", "by_dimension"),
    )
    for title, key in tables:
        if key in summary.tables:
            _table(title, summary.tables[key])
    reasons = summary.tables["rejections"]
    text = ", ".join(f"{name} {count}" for name, count in reasons.items()) or "none"
    console.print(f"rejected samples: {safe_markup(text)}", highlight=False)
    console.print(
        safe_markup(f"{summary.out}/distilled.jsonl, distill_summary.json, distill_summary.png"),
        highlight=False,
    )


def _table(title: str, rows: dict[str, Any]) -> None:
    table = Table(title=f"acceptance by {title}", title_justify="left")
    for column in (title, "items", "accepted", "%"):
        table.add_column(column, justify="left" if column == title else "right")
    for name, row in rows.items():
        table.add_row(
            safe_markup(name), str(row["items"]), str(row["accepted"]), f"{row['percent']:.1f}"
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("distill")(distill_command)
