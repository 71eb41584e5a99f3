"""``codereasoner trace``: trace one call in the sandbox and show every step.

Traces arrive checked (``trace_call`` re-applies the caps and the schema in the parent). Every
text in them (values, names, exception messages) and the call's stdout/stderr is untrusted and
reaches the terminal through ``safe_text`` as plain ``Text``; ``--json`` goes through
``dump_json``. A call whose trace was capped is reported as stopped, not as returning.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from codereasoner.cli.common import (
    CallText,
    ProgramFile,
    console,
    dump_json,
    fail,
    open_pool,
    read_program_and_call,
    safe_cell,
    safe_text,
)
from codereasoner.execution import ExecResult, Limits, Program, TraceOptions
from codereasoner.trace import ExecutionTrace, to_text, trace_call


def _code_cell(lines: list[str], number: int) -> Text:
    text = safe_text(lines[number - 1].strip()) if 0 < number <= len(lines) else ""
    cell = Syntax(text, "python", theme="ansi_dark").highlight(text)
    cell.rstrip()
    return cell


def _changes_cell(values: dict[str, str | None]) -> Text:
    cell = Text()
    for index, (name, value) in enumerate(values.items()):
        if index:
            cell.append(", ")
        cell.append(safe_text(name), style="bold cyan")
        cell.append(" = ")
        cell.append("<deleted>" if value is None else safe_text(value), style="yellow")
    return cell


def steps_table(trace: ExecutionTrace, source: str) -> Table:
    lines = source.splitlines()
    table = Table(title_justify="left", expand=False)
    for column in ("#", "line", "frame", "loop", "code", "changed"):
        table.add_column(column, overflow="fold")
    for index, step in enumerate(trace.steps):
        changes: dict[str, str | None] = dict(step.args or {})
        changes.update(step.changes)
        loop = ", ".join(f"L{line}#{iteration}" for line, iteration in step.loops)
        code = _code_cell(lines, step.line)
        if step.cond is not None:
            code.append(f"  → {step.cond}", style="green" if step.cond else "red")
        table.add_row(
            str(index), str(step.line), safe_cell(step.frame), loop, code, _changes_cell(changes)
        )
    return table


def outcome_text(trace: ExecutionTrace, result: ExecResult) -> str:
    """How the call ended, as the trace and the result tell it (untrusted: pass to safe_text)."""
    if trace.exception is not None:
        return f"raises {trace.exception.type}: {trace.exception.message}".rstrip(": ")
    if trace.return_value is not None:
        return f"returns {trace.return_value}"
    if trace.partial:
        why = f"trace stopped early ({trace.partial_reason})"
        return f"did not finish: {why if result.ok else result.describe()}"
    return f"ended without a return value: {result.describe()}"


def _print_output(result: ExecResult) -> None:
    for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text:
            truncated = " (truncated)" if name == "stdout" and result.stdout_truncated else ""
            console.print(Text(f"{name}{truncated}:", style="bold"))
            console.print(safe_cell(text.rstrip("\n")))


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
        typer.echo(dump_json(trace.to_dict()))
    elif as_text:
        typer.echo(safe_text(to_text(trace, source=source)))
    else:
        console.print(steps_table(trace, source))
        _print_output(traced.result)
        if trace.partial:
            console.print(safe_cell(f"trace incomplete: {trace.partial_reason}", "yellow"))
        covered = ", ".join(map(str, sorted(trace.coverage())))
        console.print(
            safe_cell(f"{parsed.render()} {outcome_text(trace, traced.result)}"),
            Text(f"  ({len(trace)} steps, lines covered: {covered})", style="dim"),
            sep="",
        )
    if not traced.result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("trace")(trace_command)
