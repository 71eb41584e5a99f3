"""The ``codereasoner`` command line: one module per command group."""

from __future__ import annotations

import typer

from codereasoner.cli import (
    bench,
    demo,
    distill,
    doctor,
    evaluate,
    export,
    report,
    run,
    score,
    synth,
    trace,
    train,
)

app = typer.Typer(
    name="codereasoner",
    help="Measure and improve how language models reason about code execution.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
run.register(app)
demo.register(app)
doctor.register(app)
trace.register(app)
score.register(app)
bench.register(app)
report.register(app)
synth.register(app)
evaluate.register(app)
distill.register(app)
export.register(app)
train.register(app)


def main() -> None:
    app()
