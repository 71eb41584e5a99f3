"""``codereasoner doctor``: what isolation this machine gives, checked by running probes."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from codereasoner.cli.common import console, open_pool
from codereasoner.execution import Program, Status, parse_call

# Each probe tries one thing the sandbox must stop; "contained" is what a safe sandbox returns.
PROBES: list[tuple[str, str]] = [
    ("read /etc/shadow", "def f():\n    return open('/etc/shadow').read()[:1]"),
    ("write a file", "def f():\n    open('/tmp/codereasoner-doctor', 'w').write('x')"),
    ("open a socket", "import socket\ndef f():\n    return socket.socket() and 1"),
    ("start a process", "import os\ndef f():\n    return os.fork()"),
    (
        "run a shell command",
        "import subprocess\ndef f():\n    return subprocess.run(['true']).returncode",
    ),
    ("list the host's home", "import os\ndef f():\n    return os.listdir('/root') or None"),
]


def doctor_command(
    isolation: Annotated[str, typer.Option(help="auto, bubblewrap or fallback.")] = "auto",
) -> None:
    """Show the sandbox's isolation on this machine and check it with live probes."""
    with open_pool(workers=1, isolation=isolation) as pool:
        info = pool.worker_info
        console.print(f"isolation: [bold]{escape(pool.isolation)}[/]")
        uid = (
            info["uid"] if pool.plan.mode == "bubblewrap" or info["uid"] != 0 else "65534 (dropped)"
        )
        console.print(
            f"sandbox interpreter: {escape(pool.plan.python)} (Python {info['python']}), "
            f"uid {uid}, seccomp {'on' if info['seccomp'] else 'off'}"
        )
        engine = {"c": "C fast path", "python": "pure Python (the C fast path is not built)"}
        console.print(f"tracer: {engine.get(str(info.get('tracer_engine')), 'not preloaded')}")
        if pool.plan.hidden_paths:
            console.print(f"hidden directories: {escape(', '.join(pool.plan.hidden_paths))}")
        table = Table(title="probes", title_justify="left")
        for column in ("attempt", "outcome", "verdict"):
            table.add_column(column)
        leaks = 0
        for name, source in PROBES:
            result = pool.run(Program(source), parse_call("f()"))
            contained = result.status is not Status.OK or result.value == "None"
            leaks += not contained
            verdict = "[green]contained[/]" if contained else "[red]NOT contained[/]"
            table.add_row(name, escape(result.describe()[:80]), verdict)
        console.print(table)
    if leaks:
        console.print(f"[red]{leaks} probe(s) were not contained[/]")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor_command)
