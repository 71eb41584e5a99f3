"""The ``codereasoner`` application: every command group registered on one Typer app.

Help is plain text (``rich_markup_mode=None``): brackets in it, such as
``pip install 'codereasoner[vllm]'`` or ``{id: [answers]}``, are shown as typed, and options and
arguments show click-style metavars (``--n INTEGER``, ``FILE``), never ``<bool>`` or ``<str>``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Annotated, NoReturn

import typer

from codereasoner.cli import (
    bench,
    demo,
    distill,
    doctor,
    evaluate,
    export,
    export_generations,
    report,
    run,
    score,
    synth,
    trace,
    train,
)
from codereasoner.cli.common import error_console, plain_help, safe_markup, show_package_logs
from codereasoner.cli.version import package_version
from codereasoner.evaluation.plugins import PluginError, load_plugins
from codereasoner.registry import Registry, builtin_registrations

app = typer.Typer(
    name="codereasoner",
    help="Measure and improve how language models reason about code execution.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 100},
)
run.register(app)
demo.register(app)
doctor.register(app)
trace.register(app)
score.register(app)
bench.register(app)
report.register(app)
synth.register(app)
# a benchmark folder's own command group (``families/core``: ``core build``), declared in its
# family.json
family_commands = Registry[Callable[[typer.Typer], None]]("command")
for _name, _target in builtin_registrations("commands"):
    family_commands.register_lazy(_name, _target)
for _name in family_commands:
    family_commands[_name](app)
evaluate.register(app)
distill.register(app)
export.register(app)
export_generations.register(app)
train.register(app)
plain_help(app)


def _print_version(requested: bool) -> None:
    if requested:
        typer.echo(f"codereasoner {package_version()}")
        raise typer.Exit()


@app.callback()
def _options(
    context: typer.Context,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Options before the command (``--version``)."""
    # every command prints the package's log records escaped (a server's error text among them)
    context.call_on_close(show_package_logs())


def run_main(args: Sequence[str] | None = None) -> None:
    """The console script: click's usage errors (a bad value, an unknown option, a missing
    argument) become one error line naming the flag, like every other error."""
    try:
        load_plugins()
    except PluginError as exc:
        error_console.print(
            f"[bold red]error:[/] {safe_markup(str(exc))}", highlight=False, soft_wrap=True
        )
        sys.exit(2)
    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="codereasoner", standalone_mode=False)
    except typer.Abort:
        error_console.print("aborted", markup=False, highlight=False)
        sys.exit(1)
    except typer.TyperException as exc:  # click's ClickException, vendored by typer
        show_usage_error(exc)
    sys.exit(code if isinstance(code, int) else 0)


def show_usage_error(exc: typer.TyperException) -> NoReturn:
    """One line for a usage error (with where to find the command's help); help itself when
    the command was called without arguments."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        exc.show()  # type: ignore[attr-defined]
        sys.exit(getattr(exc, "exit_code", 2))
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    context = getattr(exc, "ctx", None)
    where = f" (see {context.command_path} --help)" if context is not None else ""
    line = " ".join(f"{message}{where}".split())
    error_console.print(f"[bold red]error:[/] {safe_markup(line)}", highlight=False, soft_wrap=True)
    sys.exit(getattr(exc, "exit_code", 2))
