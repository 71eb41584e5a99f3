"""``codereasoner run``: run one call of a program in the sandbox.

The result is re-checked against the limits the call ran under (``ExecResult.checked``); all text
from the sandbox reaches the terminal through ``safe_text`` and JSON through ``dump_json``.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from codereasoner.cli.common import (
    CallText,
    IsolationFlag,
    ProgramFile,
    checked_limits,
    console,
    dump_json,
    fail,
    json_flag,
    open_pool,
    read_program_and_call,
    result_table,
    safe_cell,
    safe_markup,
)
from codereasoner.execution import Program
from codereasoner.execution.determinism import nondeterministic_calls, observable

HASH_SEEDS = range(2**32)  # the values PYTHONHASHSEED takes


def _parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        fail(f"--seeds: expected comma-separated integers such as 0,1, got {text!r}")
    if not seeds:
        fail("--seeds: give at least one integer")
    for seed in seeds:
        if seed not in HASH_SEEDS:
            fail(f"--seeds {seed}: expected integers from 0 to {HASH_SEEDS.stop - 1}")
    return seeds


def run_command(
    file: ProgramFile,
    call: CallText,
    timeout: Annotated[float, typer.Option(help="CPU-time limit per call, seconds.")] = 2.0,
    memory_mb: Annotated[int, typer.Option(help="Memory budget per call, MiB.")] = 512,
    seeds: Annotated[
        str, typer.Option(help="PYTHONHASHSEED values; several (e.g. 0,1) check determinism.")
    ] = "0",
    isolation: IsolationFlag = "auto",
    as_json: Annotated[bool, json_flag("the result")] = False,
) -> None:
    """Run one call of FILE's program in the sandbox; print value, status and resource use."""
    source, parsed = read_program_and_call(file, call)
    limits = checked_limits(timeout_s=timeout, memory_mb=memory_mb)
    seed_list = _parse_seeds(seeds)
    program = Program(source, entry=parsed.entry)
    outcomes = {}
    for seed in seed_list:
        with open_pool(
            workers=1, limits=limits, hash_seed=seed, isolation=isolation, show_progress=False
        ) as pool:
            outcomes[seed] = pool.run(program, parsed)
            isolation_text = pool.isolation
            sandbox_python = pool.plan.python_version
    first = outcomes[seed_list[0]]
    unstable = bool(nondeterministic_calls({seed: [result] for seed, result in outcomes.items()}))
    if as_json:
        payload = {
            "call": parsed.render(),
            "result": first.to_dict(),
            "isolation": isolation_text,
            "sandbox_python": sandbox_python,
            "seeds": seed_list,
            "deterministic": not unstable,
            "by_seed": {str(seed): list(observable(result)) for seed, result in outcomes.items()},
        }
        typer.echo(dump_json(payload, indent=2))
    else:
        console.print(result_table(first, f"{safe_markup(file)}: {safe_markup(parsed.render())}"))
        console.print(
            f"[dim]sandbox: {safe_markup(isolation_text)}; Python {safe_markup(sandbox_python)}; "
            f"PYTHONHASHSEED={seed_list[0]}[/]"
        )
        if len(seed_list) > 1:
            verdict = "[red]differs between hash seeds[/]" if unstable else "[green]identical[/]"
            console.print(f"outcome under seeds {', '.join(map(str, seed_list))}: {verdict}")
            if unstable:
                for seed, result in outcomes.items():
                    console.print(Text(f"  seed {seed}: "), safe_cell(result.describe()), sep="")
    if not first.ok or unstable:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
