"""``codereasoner trace``: trace one call in the sandbox and show every step."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from codereasoner.cli.common import (
    CallText,
    ProgramFile,
    console,
    fail,
    open_pool,
    read_program_and_call,
)
from codereasoner.execution import Limits, Program, TraceOptions
from codereasoner.trace import ExecutionTrace, to_json, to_text, trace_call


def _code_cell(lines: list[str], number: int) -> Text:
    text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
    cell = Syntax(text, "python", theme="ansi_dark").highlight(text)
    cell.rstrip()
    return cell


def _changes_cell(values: dict[str, str | None]) -> Text:
    cell = Text()
    for index, (name, value) in enumerate(values.items()):
        if index:
            cell.append(", ")
        cell.append(name, style="bold cyan")
        cell.append(" = ")
        cell.append("<deleted>" if value is None else value, style="yellow")
    return cell


def steps_table(trace: ExecutionTrace, source: str) -> Table:
    lines = source.splitlines()
    table = Table(title_justify="left", expand=False)
    for column in ("#", "line", "frame", "loop", "code", "changed"):
        table.add_column(column, overflow="fold")
    for index, step in enumerate(trace.steps):
        changes = dict(step.args or {})
        changes.update(step.changes)
        loop = ", ".join(f"L{line}#{iteration}" for line, iteration in step.loops)
        code = _code_cell(lines, step.line)
        if step.cond is not None:
            code.append(f"  → {step.cond}", style="green" if step.cond else "red")
        table.add_row(str(index), str(step.line), escape(step.frame), loop, code,
                      _changes_cell(changes))  # fmt: skip
    return table


def trace_command(
    file: ProgramFile,
    call: CallText,
    as_json: Annotated[bool, typer.Option("--json", help="Print the trace as JSON.")] = False,
    as_text: Annotated[
        bool, typer.Option("--text", help="Print the compact text form used in prompts.")
    ] = False,
    max_steps: Annotated[int, typer.Option(help="Stop tracing after this many steps.")] = 10_000,
    max_value_chars: Annotated[int, typer.Option(help="Longest rendered value.")] = 200,
    timeout: Annotated[float, typer.Option(help="CPU-time limit, seconds.")] = 5.0,
    isolation: Annotated[str, typer.Option(help="auto, bubblewrap or fallback.")] = "auto",
) -> None:
    """Trace one call of FILE's program in the sandbox: lines, loop iterations, values, branches."""
    source, parsed = read_program_and_call(file, call)
    try:
        options = TraceOptions(max_steps=max_steps, max_value_chars=max_value_chars)
        limits = Limits(timeout_s=timeout)
    except ValueError as exc:
        fail(str(exc))
    with open_pool(workers=1, limits=limits, isolation=isolation) as pool:
        traced = trace_call(pool, Program(source, entry=parsed.entry), parsed, options)
    if traced.trace is None:
        fail(f"no trace: the call ended with {traced.result.describe()}", code=1)
    trace = traced.trace
    if as_json:
        typer.echo(to_json(trace))
    elif as_text:
        typer.echo(to_text(trace, source=source))
    else:
        console.print(steps_table(trace, source))
        if trace.partial:
            console.print(f"[yellow]trace incomplete: {escape(str(trace.partial_reason))}[/]")
        outcome = (f"raises {trace.exception.type}: {trace.exception.message}" if trace.exception
                   else f"returns {trace.return_value}")  # fmt: skip
        console.print(f"{escape(parsed.render())} {escape(outcome)}  "
                      f"[dim]({len(trace)} steps, lines covered: "
                      f"{', '.join(map(str, sorted(trace.coverage())))})[/]")  # fmt: skip
    if not traced.result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("trace")(trace_command)
