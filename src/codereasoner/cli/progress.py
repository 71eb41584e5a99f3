"""Progress that is seen everywhere: live bars on a terminal, periodic lines elsewhere.

Off a terminal (CI logs, SLURM output files, a pipe) Rich draws nothing, so a long command would
be silent until it ends. :class:`LineProgress` then writes one plain line per task to stderr at
most every ``CODEREASONER_PROGRESS_SECONDS`` (default 10) while it advances, and one when it
completes if it printed any before (work shorter than the interval prints nothing; an interval
of 0 prints every event, the start included)::

    cruxeval-o generate: 120/800 (15%) 42s
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from rich.console import Console
from rich.progress import Progress, ProgressColumn, TaskID

INTERVAL_ENV = "CODEREASONER_PROGRESS_SECONDS"


def report_interval() -> float:
    """Seconds between two progress lines off a terminal (the environment may set it)."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, "10"))
    except ValueError:
        return 10.0
    return value if value >= 0 else 10.0


class LineProgress(Progress):
    """A Rich ``Progress`` that, when its console is not a terminal, prints progress lines: on
    advances, and from a timer for the newest unfinished task (work that is slow to advance,
    such as a batch of long requests, is not silent either)."""

    def __init__(self, *columns: str | ProgressColumn, console: Console, **options: Any) -> None:
        self._lines = not console.is_terminal
        super().__init__(*columns, console=console, disable=self._lines, **options)
        self._interval = report_interval()
        self._last: dict[TaskID, float] = {}
        self._finished: set[TaskID] = set()
        self._reported: set[TaskID] = set()  # tasks with a line printed
        self._started_at: dict[TaskID, float] = {}
        self._stopping = threading.Event()
        self._ticker: threading.Thread | None = None

    def start(self) -> None:
        super().start()
        if self._lines and self._interval > 0 and self._ticker is None:
            self._stopping.clear()
            self._ticker = threading.Thread(target=self._tick, name="progress-lines", daemon=True)
            self._ticker.start()

    def stop(self) -> None:
        if self._ticker is not None:
            self._stopping.set()
            self._ticker.join()
            self._ticker = None
        super().stop()

    def _tick(self) -> None:
        while not self._stopping.wait(self._interval / 2):
            with self._lock:
                current = [task for task in self._tasks if task not in self._finished]
                if current:
                    self._maybe_emit(current[-1])

    def add_task(self, description: str, *args: Any, **kwargs: Any) -> TaskID:
        task_id = super().add_task(description, *args, **kwargs)
        if self._lines:
            now = time.monotonic()
            self._started_at[task_id] = now
            self._last[task_id] = now
            if self._interval == 0:  # every event, the start included
                self._emit(task_id, "started")
            if self._tasks[task_id].total == 0:
                self._finished.add(task_id)  # nothing to do: no line, and none from the timer
        return task_id

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._maybe_emit(task_id)

    def update(self, task_id: TaskID, *args: Any, **kwargs: Any) -> None:
        super().update(task_id, *args, **kwargs)
        self._maybe_emit(task_id)

    def _maybe_emit(self, task_id: TaskID) -> None:
        if not self._lines or task_id in self._finished:
            return
        task = self._tasks[task_id]
        if task.total is not None and task.completed >= task.total:
            self._finished.add(task_id)
            if task_id in self._reported or self._interval == 0:
                self._emit(task_id, "done")
            return
        now = time.monotonic()
        if now - self._last.get(task_id, 0.0) >= self._interval:
            self._last[task_id] = now
            self._reported.add(task_id)
            self._emit(task_id, "")

    def _emit(self, task_id: TaskID, state: str) -> None:
        task = self._tasks[task_id]
        name = " ".join(task.description.split()) or "progress"
        if task.total:
            count = f"{task.completed:,.0f}/{task.total:,.0f} ({100 * task.completed / task.total:.0f}%)"
        else:  # no count for a wait (a task added with wait=True)
            count = "" if task.fields.get("wait") else f"{task.completed:,.0f}"
        elapsed = time.monotonic() - self._started_at.get(task_id, time.monotonic())
        note = str(task.fields.get("note") or "")
        words = [f"{name}:", *([count] if count else []), f"{elapsed:.0f}s"]
        words += [state] if state else []
        if note and not state:  # where the work inside the current step is
            words.append(f"({note})")
        # Plain text, never markup: descriptions may hold file names.
        self.console.print(" ".join(words), markup=False, highlight=False, soft_wrap=True)
