"""The command line as a user runs it: ``python -m codereasoner ...`` in a process of its own
(where signals, exit codes and a fresh interpreter are the point)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


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
