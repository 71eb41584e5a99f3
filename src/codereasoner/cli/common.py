"""Helpers shared by commands: one-line errors and result rendering."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from codereasoner.execution import (
    Call,
    CallSyntaxError,
    ExecResult,
    Pool,
    SandboxUnavailable,
    parse_call,
)

console = Console()
error_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one clear error line and exit non-zero."""
    error_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


# The program file and the call of `run` and `trace` (read with read_program_and_call).
ProgramFile = Annotated[Path, typer.Argument(help="Python source file defining the entry point.")]
CallText = Annotated[
    str,
    typer.Option("--call", "-c", help="The call, e.g. \"f(1, 'a')\"; arguments must be literals."),
]


def read_program_and_call(file: Path, call: str) -> tuple[str, Call]:
    """The program's source and the parsed call, or a one-line error and exit 2."""
    try:
        source = file.read_text()
    except OSError as exc:
        fail(f"{file}: cannot read the program ({exc.strerror or exc})")
    except UnicodeDecodeError:
        fail(f"{file}: expected UTF-8 Python source")
    try:
        return source, parse_call(call)
    except CallSyntaxError as exc:
        fail(f"--call {call!r}: {exc}")


def emit_report(report: dict, as_json: bool, show: Callable[[dict], None]) -> None:
    """Print a scoring report (JSON or tables); exit 1 if sandbox failures left it incomplete."""
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        show(report)
    if report["sandbox_errors"]:
        error_console.print(f"[yellow]warning:[/] {report['sandbox_errors']} samples hit sandbox "
                            "errors (infrastructure, not the answers); the scores are incomplete")  # fmt: skip
        raise typer.Exit(1)


@contextmanager
def open_pool(**options: object) -> Iterator[Pool]:
    """A sandbox pool for a command, with a live count of the calls run (on a terminal)."""
    try:
        pool = Pool(**options)  # type: ignore[arg-type]
    except SandboxUnavailable as exc:
        fail(f"sandbox unavailable: {exc}")
    except ValueError as exc:
        fail(str(exc))
    for warning in pool.warnings:
        error_console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    progress = Progress(
        SpinnerColumn(), TextColumn("running in the sandbox: {task.completed:,.0f} calls"),
        TimeElapsedColumn(), console=error_console, transient=True,
        disable=not error_console.is_terminal,
    )  # fmt: skip
    task = progress.add_task("sandbox", total=None)
    pool.on_batch = lambda calls: progress.advance(task, calls)
    with pool, progress:
        yield pool


STATUS_STYLE = {"ok": "green", "timeout": "yellow", "memory": "yellow", "output_limit": "yellow"}


def result_table(result: ExecResult, title: str) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    style = STATUS_STYLE.get(result.status.value, "red")
    table.add_row("status", f"[{style}]{result.status.value}[/]")
    if result.ok:
        table.add_row("value", result.value or "")
        table.add_row(
            "type", (result.value_type or "") + ("" if result.is_literal else " (not a literal)")
        )
    else:
        table.add_row(
            "exception", f"{result.exception_type or ''}: {result.exception_message or ''}"
        )
    if result.stdout:
        table.add_row("stdout", result.stdout + (" [truncated]" if result.stdout_truncated else ""))
    if result.stderr:
        table.add_row("stderr", result.stderr)
    table.add_row("resources", f"wall {result.wall_ms:.1f} ms, CPU {result.cpu_ms:.1f} ms, "
                  f"max RSS {result.max_rss_kb / 1024:.1f} MiB")  # fmt: skip
    return table
