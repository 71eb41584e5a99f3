"""The ``codereasoner`` command line: one module per command group, registered on one Typer app
(:mod:`codereasoner.cli.application`), imported when a command runs: ``codereasoner --version``
answers without it.

Help is plain text (``rich_markup_mode=None``): brackets in it, such as
``pip install 'codereasoner[vllm]'`` or ``{id: [answers]}``, are shown as typed, and options and
arguments show click-style metavars (``--n INTEGER``, ``FILE``), never ``<bool>`` or ``<str>``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from codereasoner.cli.version import package_version

__all__ = ["app", "main", "package_version"]


def main(args: Sequence[str] | None = None) -> None:
    """The console script (see :func:`codereasoner.cli.application.run_main`)."""
    given = list(sys.argv[1:] if args is None else args)
    if given == ["--version"]:
        print(f"codereasoner {package_version()}")
        sys.exit(0)
    from codereasoner.cli.application import run_main

    run_main(args)


def __getattr__(name: str) -> Any:
    if name == "app":  # the Typer app, for CliRunner and embedding
        from codereasoner.cli.application import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
