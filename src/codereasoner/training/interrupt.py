"""SIGTERM (how SLURM and most schedulers stop a job) during training: finish the step, save a
checkpoint, stop. A re-run of the same command resumes from it.

The handler only sets a flag; the trainer's callback turns it into "save, then stop" at the end
of the current optimizer step, where a checkpoint is whole.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

from transformers import TrainerCallback

__all__ = ["StopOnSignal", "stopping_on_sigterm"]


class StopOnSignal(TrainerCallback):
    """Save a checkpoint and stop training at the end of the step a signal arrived in."""

    def __init__(self) -> None:
        self.signalled: int | None = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.signalled is not None:
            control.should_save = True
            control.should_training_stop = True
        return control


@contextlib.contextmanager
def stopping_on_sigterm(callback: StopOnSignal) -> Iterator[None]:
    """While inside, SIGTERM asks ``callback`` to stop after the step (a second one is not
    waited for: it interrupts at once, as Ctrl-C does)."""

    def asked(signum: int, frame: FrameType | None) -> None:
        if callback.signalled is not None:
            raise KeyboardInterrupt
        callback.signalled = signum

    previous = signal.signal(signal.SIGTERM, asked)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
