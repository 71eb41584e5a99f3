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
    IsolationFlag,
    ProgramFile,
    checked_limits,
    console,
    dump_json,
    fail,
    flag_message,
    open_pool,
    read_program_and_call,
    safe_cell,
    safe_text,
)
from codereasoner.execution import ExecResult, Program, TraceOptions
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


# Why a trace stopped early, in the user's words, by the tracer's ``partial_reason``.
CAP_REASONS = {
    "max_steps": "stopped at the --max-steps cap",
    "max_trace_chars": "stopped at the trace's size cap",
    "tracer_removed": "the program removed the tracer",
}


def partial_text(trace: ExecutionTrace) -> str:
    """Why ``trace`` is incomplete, e.g. "stopped at the --max-steps cap of 20 steps"."""
    reason = trace.partial_reason or "unknown"
    text = CAP_REASONS.get(reason, f"stopped early ({reason})")
    if reason == "max_steps":
        text += f" of {len(trace):,} steps"
    return text


def outcome_text(trace: ExecutionTrace, result: ExecResult) -> str:
    """How the call ended, as the trace and the result tell it (untrusted: pass to safe_text).
    A capped call never returned, so it has no return value to show."""
    if trace.exception is not None:
        return f"raises {trace.exception.type}: {trace.exception.message}".rstrip(": ")
    if trace.return_value is not None:
        return f"returns {trace.return_value}"
    if trace.partial:
        capped = result.ok or trace.partial_reason in CAP_REASONS
        why = partial_text(trace) if capped else result.describe()
        return f"did not finish: {why}; no return value"
    return f"ended without a return value: {result.describe()}"


def output_fields(result: ExecResult) -> dict[str, object]:
    """The call's printed output, for ``--json`` (untrusted: dump_json escapes it)."""
    return {
        "stdout": result.stdout,
        "stdout_truncated": result.stdout_truncated,
        "stderr": result.stderr,
    }


def _print_output(result: ExecResult) -> None:
    for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text:
            truncated = " (truncated)" if name == "stdout" and result.stdout_truncated else ""
            console.print(Text(f"{name}{truncated}:", style="bold"))
            console.print(safe_cell(text.rstrip("\n")))


def trace_command(
    file: ProgramFile,
    call: CallText,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the trace as JSON, with the call's stdout and stderr."),
    ] = False,
    as_text: Annotated[
        bool, typer.Option("--text", help="Print the compact text form used in prompts.")
    ] = False,
    max_steps: Annotated[int, typer.Option(help="Stop tracing after this many steps.")] = 10_000,
    max_value_chars: Annotated[int, typer.Option(help="Longest rendered value.")] = 200,
    timeout: Annotated[float, typer.Option(help="CPU-time limit, seconds.")] = 5.0,
    isolation: IsolationFlag = "auto",
) -> None:
    """Trace one call of FILE's program in the sandbox: lines, loop iterations, values, branches."""
    source, parsed = read_program_and_call(file, call)
    try:
        options = TraceOptions(max_steps=max_steps, max_value_chars=max_value_chars)
    except ValueError as exc:
        fail(flag_message(exc))
    limits = checked_limits(timeout_s=timeout)
    with open_pool(workers=1, limits=limits, isolation=isolation, show_progress=False) as pool:
        traced = trace_call(pool, Program(source, entry=parsed.entry), parsed, options)
    if traced.trace is None:
        fail(f"no trace: the call ended with {traced.result.describe()}", code=1)
    trace = traced.trace
    if as_json:
        typer.echo(dump_json(trace.to_dict() | output_fields(traced.result)))
    elif as_text:
        typer.echo(safe_text(to_text(trace, source=source)))
    else:
        console.print(steps_table(trace, source))
        _print_output(traced.result)
        if trace.partial:
            # in words, then the name --json gives the reason (its "partial_reason")
            reason = trace.partial_reason or "unknown"
            console.print(
                safe_cell(
                    f"trace incomplete: {partial_text(trace)} (--json: partial_reason {reason})",
                    "yellow",
                )
            )
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
