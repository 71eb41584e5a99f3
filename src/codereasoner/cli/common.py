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
import logging
import math
import re
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated, NoReturn, cast

import typer
import typer.core
from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer import _click  # typer's own click, which its commands and parameters are built on

from codereasoner.cli.progress import LineProgress
from codereasoner.evaluation.terminal import console as console
from codereasoner.evaluation.terminal import error_console as error_console
from codereasoner.evaluation.terminal import print_plain as print_plain
from codereasoner.evaluation.terminal import safe_cell as safe_cell
from codereasoner.evaluation.terminal import safe_markup as safe_markup
from codereasoner.evaluation.terminal import safe_text as safe_text
from codereasoner.execution import (
    Call,
    CallSyntaxError,
    ExecResult,
    Executor,
    Limits,
    SandboxUnavailable,
    open_executor,
    parse_call,
)
from codereasoner.execution.executor import EXECUTOR_HELP
from codereasoner.execution.executor import check_executor as check_executor_spec
from codereasoner.settings import SettingError

# No emoji codes: a file name such as "x:smile:.py" is shown as typed, like markup in it.

DATA_DIR_OPTION = typer.Option(
    "--data-dir",
    help="Benchmark data: the data root (one folder per dataset: cruxeval/, livecodebench/, "
    "reval/, core/) or the benchmark's own folder (default: the download cache).",
)


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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be: work in flight unwinds the same way."""


@contextmanager
def interruptible(out: Path) -> Iterator[None]:
    """While inside, SIGTERM (how SLURM and most schedulers stop a job) interrupts as Ctrl-C
    does; either ends the command with one line saying how to resume into ``out`` (exit 143 or
    130). What was written incrementally stays."""

    def terminated(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    except KeyboardInterrupt as exc:
        by = " by SIGTERM" if isinstance(exc, Terminated) else ""
        code = 143 if isinstance(exc, Terminated) else 130
        fail(f"interrupted{by} (re-run the same command with --out {out} to resume)", code)
    finally:
        signal.signal(signal.SIGTERM, previous)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one clear error line and exit non-zero. The message is shown as typed: paths,
    answers and exception texts in it are never read as markup (``[/x]``) or escapes."""
    error_console.print(
        f"[bold red]error:[/] {safe_markup(message)}", highlight=False, soft_wrap=True
    )
    raise typer.Exit(code)


# Metavars as click writes them (``--call TEXT``, ``FILE``, ``RUN...``), not typer's type names
# (``<str>``, ``<list[Path]>``, ``{file}``), by the type typer would show.
_METAVARS = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "path": "PATH", "file": "FILE"}


def _metavar(param: typer.core.TyperOption, ctx: _click.Context) -> str:
    label = param.display_type(ctx).strip("<>")
    label = label.removeprefix("list[").removesuffix("]")
    return _METAVARS.get(label.lower(), re.sub(r"\W+", "_", label).strip("_").upper() or "VALUE")


def _argument_name(param: _click.Parameter) -> str:
    name = param.metavar or (param.name or "").upper()
    return name + ("..." if param.nargs != 1 else "")


def _is_argument(param: _click.Parameter) -> bool:
    return param.param_type_name == "argument"


class PlainHelpCommand(typer.core.TyperCommand):
    """A command whose help writes values as click does: ``--n INTEGER``, ``--call TEXT``, and
    arguments by name, ``FILE`` (required) or ``[OVERRIDES]...`` (optional). Installed on every
    command by :func:`plain_help`."""

    def collect_usage_pieces(self, ctx: _click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if _is_argument(param) and not getattr(param, "hidden", False):
                name = param.metavar or (param.name or "").upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            if (
                isinstance(param, typer.core.TyperOption)
                and param.metavar is None
                and not (param.is_flag or param.count)
            ):
                param.metavar = _metavar(param, ctx)
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if _is_argument(param):
                arguments.append((_argument_name(param), record[1]))
            else:
                options.append(record)
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


def plain_help(app: typer.Typer) -> None:
    """Give every command of ``app`` and of its groups :class:`PlainHelpCommand`'s help (call it
    once every command is registered)."""
    for info in app.registered_commands:
        if info.cls in (None, typer.core.TyperCommand):
            info.cls = PlainHelpCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            plain_help(group.typer_instance)


def _not_a_folder(paths: Sequence[Path]) -> Path | None:
    """The first of ``paths`` that exists (or is a dangling link), when it is not a folder: the
    file that stops the first of them from being (or becoming) a folder."""
    for candidate in paths:
        if candidate.exists():
            return None if candidate.is_dir() else candidate
        if candidate.is_symlink():  # a dangling link: mkdir would fail on it
            return candidate
    return None


def _refuse_file_in_the_way(flag: str, path: Path, paths: Sequence[Path]) -> None:
    blocker = _not_a_folder(paths)
    if blocker is not None:
        given = f"{flag} {path}" if flag else str(path)
        fail(f"{given}: {'' if blocker == path else f'{blocker} '}is a file, not a folder")


def check_parents(flag: str, path: Path) -> None:
    """One error line when a file stands where one of ``path``'s parent folders is or would be
    created (``flag``: the flag that gave it, or "" for an argument):
    ``--out afile/x.jsonl: afile is a file, not a folder``."""
    _refuse_file_in_the_way(flag, path, path.parents)


def check_folder(flag: str, path: Path) -> None:
    """:func:`check_parents`, and ``path`` itself a folder if it exists:
    ``--out afile: is a file, not a folder``."""
    _refuse_file_in_the_way(flag, path, (path, *path.parents))


def check_file(flag: str, path: Path) -> None:
    """:func:`check_parents`, and ``path`` not a folder: a file can be written there."""
    check_parents(flag, path)
    if path.is_dir():
        fail(f"{flag} {path}: is a folder; expected a file name")


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
        typer.echo(dump_json(report, indent=2))
    else:
        show(report)
    if report.get("sandbox_errors"):
        error_console.print(
            f"[yellow]warning:[/] {report['sandbox_errors']} samples hit sandbox "
            "errors (infrastructure, not the answers); the scores are incomplete"
        )
        raise typer.Exit(1)


# Settings whose flag is not their name in dashes (``timeout_s`` is set by ``--timeout``).
FLAG_NAMES = {"timeout_s": "--timeout", "source": "--from"}


def flag_of(setting: str) -> str:
    """The flag that sets ``setting``: ``max_output_chars`` -> ``--max-output-chars``."""
    return FLAG_NAMES.get(setting) or "--" + setting.replace("_", "-")


def flag_message(exc: BaseException) -> str:
    """An error in the user's words: a :class:`SettingError`, or an error raised from one,
    names the flag that sets the setting (``--timeout 0.0: expected a positive number``);
    anything else is its text."""
    setting = exc if isinstance(exc, SettingError) else exc.__cause__
    if isinstance(setting, SettingError):
        return setting.named(flag_of(setting.setting))
    return str(exc)


def checked_limits(**settings: float) -> Limits:
    """``Limits(**settings)``, or one error line naming the flag (``--timeout``, not ``timeout_s``)."""
    try:
        return Limits(**settings)  # type: ignore[arg-type]
    except ValueError as exc:
        fail(flag_message(exc))


IsolationFlag = Annotated[str, typer.Option(help="auto, bubblewrap or fallback.")]
"""``--isolation``: the sandbox's isolation, for every command that runs programs."""


def json_flag(what: str) -> object:
    """``--json``: print ``what`` as JSON (one declaration, each command's own noun)."""
    return typer.Option("--json", help=f"Print {what} as JSON.")


ExecutorFlag = Annotated[
    str | None, typer.Option("--executor", help=EXECUTOR_HELP, show_default=False)
]


def check_executor(value: str | None) -> None:
    """A one-line error for an --executor (or $CODEREASONER_EXECUTOR) no pool can use."""
    try:
        check_executor_spec(value)
    except ValueError as exc:
        fail(flag_message(exc))
    except SandboxUnavailable as exc:
        fail(f"sandbox unavailable: {exc}")


@contextmanager
def open_pool(
    *, show_progress: bool = True, executor: str | None = None, **options: object
) -> Iterator[Executor]:
    """A sandbox pool for a command (on ``executor``: see :func:`open_executor`), with a count
    of the calls run: live on a terminal, periodic lines on stderr elsewhere
    (``show_progress=False`` for a command that runs a call or two)."""
    try:
        pool = open_executor(executor, **options)  # type: ignore[arg-type]
    except SandboxUnavailable as exc:
        fail(f"sandbox unavailable: {exc}")
    except ValueError as exc:
        fail(flag_message(exc))
    for warning in pool.warnings:
        error_console.print(
            f"[yellow]warning:[/] {safe_markup(warning)}", highlight=False, soft_wrap=True
        )
    with pool:
        if not show_progress:
            yield pool
            return
        progress = LineProgress(
            SpinnerColumn(),
            TextColumn("running in the sandbox: {task.completed:,.0f} calls"),
            TimeElapsedColumn(),
            console=error_console,
            transient=True,
        )
        task = progress.add_task("sandbox calls", total=None)
        pool.on_batch = lambda calls: progress.advance(task, calls)
        with progress:
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


class WarningLines(logging.Handler):
    """The package's log records (a backend's note, a server failing for a while) as lines on
    stderr, escaped: their text may be a server's or a model's."""

    def emit(self, record: logging.LogRecord) -> None:
        label = "[yellow]warning:[/]" if record.levelno >= logging.WARNING else "note:"
        text = safe_markup(record.getMessage())
        error_console.print(f"{label} {text}", highlight=False, soft_wrap=True)


PACKAGE_LOGGER = "codereasoner"


def show_package_logs() -> Callable[[], None]:
    """Print the package's log records of level INFO and up as :class:`WarningLines` (once,
    however often it is called); returns what undoes it. Every command does it, so that no
    record reaches Python's last-resort handler, which prints text unescaped."""
    logger = logging.getLogger(PACKAGE_LOGGER)
    if any(isinstance(handler, WarningLines) for handler in logger.handlers):
        return lambda: None
    handler, level = WarningLines(logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def undo() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)

    return undo
