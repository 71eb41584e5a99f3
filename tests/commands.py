"""The command line as a user runs it: ``python -m codereasoner ...`` in a process of its own
(where signals, exit codes of a killed process and a fresh interpreter are the point), or
:func:`invoke`, the same entry point in this process (no interpreter start-up and no imports
again: for what a command prints, writes and exits with)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner


def run_codereasoner(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``codereasoner ARGS`` with captured text output; ``env`` adds to this environment."""
    return subprocess.run(
        [sys.executable, "-m", "codereasoner", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
    )


@dataclass(frozen=True)
class Ran:
    """What a command did, shaped as :class:`subprocess.CompletedProcess` is."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def invoke(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> Ran:
    """``codereasoner ARGS`` in this process through the console script's own entry point
    (plugins, one-line usage errors), with stdin, stdout and stderr of its own and ``env``
    added to the environment for the call. An exception escaping the command is printed to its
    stderr as a traceback with exit status 1, as the interpreter does in a process of its own,
    so that a test asserting there is none can still fail."""
    from codereasoner.cli.application import run_main

    argv = [str(arg) for arg in args]
    with CliRunner().isolation(env=env) as (out, err, _), _inside(cwd):
        try:
            run_main(argv)
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    return Ran(argv, code, stdout.decode(errors="replace"), stderr.decode(errors="replace"))


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # as the interpreter prints a SystemExit message
    return 1


@contextlib.contextmanager
def _inside(folder: Path | None) -> Iterator[None]:
    if folder is None:
        yield
        return
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def one_error_line(stderr: str, *, other_lines: bool = False) -> str:
    """The one ``error:`` line a refused command printed, with no traceback; with
    ``other_lines``, lines that are no error (progress bars) may come before it."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr[-3000:]
    assert other_lines or lines == errors, stderr[-3000:]
    return errors[0]
