"""``codereasoner doctor``: what isolation this machine gives, checked by running probes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer
from rich.table import Table

from codereasoner.cli.common import (
    IsolationFlag,
    console,
    dump_json,
    open_pool,
    safe_cell,
    safe_markup,
)
from codereasoner.execution import Executor, Program, Status, parse_call

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

TRACER_ENGINES = {"c": "C fast path", "python": "pure Python (the C fast path is not built)"}


@dataclass(frozen=True)
class Probe:
    attempt: str
    outcome: str
    contained: bool


def run_probes(pool: Executor) -> list[Probe]:
    """Every probe's outcome; one is contained when it failed or achieved nothing."""
    probes = []
    for name, source in PROBES:
        result = pool.run(Program(source), parse_call("f()"))
        contained = result.status is not Status.OK or result.value == "None"
        probes.append(Probe(name, result.describe()[:80], contained))
    return probes


def sandbox_facts(pool: Executor) -> dict[str, object]:
    """What the sandbox is: isolation, interpreter, uid, seccomp, tracer, hidden folders."""
    info = pool.worker_info
    dropped = pool.plan.mode != "bubblewrap" and info["uid"] == 0
    return {
        "isolation": pool.isolation,
        "mode": pool.plan.mode,
        "sandbox_interpreter": pool.plan.python,
        "python": info["python"],
        "uid": "65534 (dropped)" if dropped else info["uid"],
        "seccomp": bool(info["seccomp"]),
        "tracer": TRACER_ENGINES.get(str(info.get("tracer_engine")), "not preloaded"),
        "hidden_paths": list(pool.plan.hidden_paths),
    }


def show_doctor(facts: dict[str, object], probes: list[Probe]) -> None:
    console.print(f"isolation: [bold]{safe_markup(facts['isolation'])}[/]")
    console.print(
        f"sandbox interpreter: {safe_markup(facts['sandbox_interpreter'])} "
        f"(Python {safe_markup(facts['python'])}), uid {safe_markup(facts['uid'])}, "
        f"seccomp {'on' if facts['seccomp'] else 'off'}"
    )
    console.print(f"tracer: {safe_markup(facts['tracer'])}")
    hidden = facts["hidden_paths"]
    if isinstance(hidden, list) and hidden:
        console.print(f"hidden directories: {safe_markup(', '.join(hidden))}")
    table = Table(title="probes", title_justify="left")
    for column in ("attempt", "outcome", "verdict"):
        table.add_column(column)
    for probe in probes:
        verdict = "[green]contained[/]" if probe.contained else "[red]NOT contained[/]"
        table.add_row(probe.attempt, safe_cell(probe.outcome), verdict)
    console.print(table)


def doctor_command(
    isolation: IsolationFlag = "auto",
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the sandbox's facts and the probes' outcomes as JSON."),
    ] = False,
) -> None:
    """Show the sandbox's isolation on this machine and check it with live probes.

    Exits 1 when a probe was not contained."""
    with open_pool(workers=1, isolation=isolation, show_progress=False) as pool:
        facts = sandbox_facts(pool)
        probes = run_probes(pool)
    leaks = sum(not probe.contained for probe in probes)
    if as_json:
        payload = facts | {"probes": [vars(probe) for probe in probes], "not_contained": leaks}
        typer.echo(dump_json(payload, indent=2))
    else:
        show_doctor(facts, probes)
        if leaks:
            console.print(f"[red]{leaks} probe(s) were not contained[/]")
    if leaks:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor_command)
