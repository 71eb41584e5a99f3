"""Helpers shared by commands: one-line errors, result rendering and untrusted text.

Everything a sandboxed program produces (its stdout and stderr, exception texts, values, type
and frame names, trace contents) is untrusted: before it reaches a terminal it goes through
:func:`safe_text`, which makes control characters visible (``\\x1b``, ``\\r``, ``\\u202e``, ...)
so that no ANSI or OSC escape sequence, carriage return or bidi override takes effect, and is
shown as plain :class:`rich.text.Text` (``safe_cell``), never parsed as markup, so that ``[/]`` or
``:emoji:`` in it is shown as typed. JSON output goes through :func:`dump_json`
(ASCII-escaped, never ``NaN`` or ``Infinity``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn, cast

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from codereasoner.execution import (
    Call,
    CallSyntaxError,
    ExecResult,
    Pool,
    SandboxUnavailable,
    parse_call,
)

console = Console()

DATA_DIR_OPTION = typer.Option(
    "--data-dir",
    help="Benchmark data: the data root (one folder per dataset: cruxeval/, livecodebench/, "
    "reval/, core/) or the benchmark's own folder (default: the download cache).",
)
error_console = Console(stderr=True)

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), bidi controls, lone
# surrogates (which cannot even be encoded for the terminal).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: object) -> str:
    """Untrusted text made safe for a terminal: control characters shown as escapes."""
    return _UNSAFE.sub(_visible, text if type(text) is str else str(text))


def safe_markup(text: object) -> str:
    """:func:`safe_text`, escaped for Rich markup (for text the user typed, such as a file name;
    prefer :func:`safe_cell` for text from the sandbox, which leaves ``:emoji:`` codes as typed)."""
    return escape(safe_text(text))


def safe_cell(text: object, style: str = "") -> Text:
    """:func:`safe_text` as a Rich ``Text``: no markup, no emoji codes, no highlighting."""
    return Text(safe_text(text), style=style)


def _finite(value: object) -> object:
    if type(value) is float and not math.isfinite(value):
        return None
    if type(value) is dict:
        return {key: _finite(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return [_finite(item) for item in cast("Sequence[object]", value)]
    return value


def dump_json(payload: object, indent: int | None = None) -> str:
    """JSON text for output: ASCII only (escapes every control character and lone surrogate),
    non-finite floats written as null, so the output is always valid JSON."""
    return json.dumps(_finite(payload), indent=indent, allow_nan=False, default=str)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one clear error line and exit non-zero. The message is shown as typed: paths,
    answers and exception texts in it are never read as markup (``[/x]``) or escapes."""
    error_console.print(
        f"[bold red]error:[/] {safe_markup(message)}", highlight=False, soft_wrap=True
    )
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
        error_console.print(
            f"[yellow]warning:[/] {report['sandbox_errors']} samples hit sandbox "
            "errors (infrastructure, not the answers); the scores are incomplete"
        )
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
        SpinnerColumn(),
        TextColumn("running in the sandbox: {task.completed:,.0f} calls"),
        TimeElapsedColumn(),
        console=error_console,
        transient=True,
        disable=not error_console.is_terminal,
    )
    task = progress.add_task("sandbox", total=None)
    pool.on_batch = lambda calls: progress.advance(task, calls)
    with pool, progress:
        yield pool


STATUS_STYLE = {"ok": "green", "timeout": "yellow", "memory": "yellow", "output_limit": "yellow"}


def result_table(result: ExecResult, title: str) -> Table:
    """The result of a call as a table; every text from the sandbox goes through safe_text."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    style = STATUS_STYLE.get(result.status.value, "red")
    table.add_row("status", safe_cell(result.status.value, style))
    if result.ok:
        table.add_row("value", safe_cell(result.value or ""))
        table.add_row(
            "type",
            safe_cell(
                (result.value_type or "") + ("" if result.is_literal else " (not a literal)")
            ),
        )
    else:
        table.add_row(
            "exception",
            safe_cell(f"{result.exception_type or ''}: {result.exception_message or ''}"),
        )
    if result.stdout:
        table.add_row(
            "stdout", safe_cell(result.stdout + (" [truncated]" if result.stdout_truncated else ""))
        )
    if result.stderr:
        table.add_row("stderr", safe_cell(result.stderr))
    table.add_row(
        "resources",
        f"wall {result.wall_ms:.1f} ms, CPU {result.cpu_ms:.1f} ms, "
        f"max RSS {result.max_rss_kb / 1024:.1f} MiB",
    )
    return table
