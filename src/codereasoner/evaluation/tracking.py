"""``eval --log-to wandb|trackio``: a finished run's settings and headline numbers, logged to
the experiment tracker the user already has. Off by default; neither tracker is a dependency.

One tracker run per eval run, named after the run folder, in ``--log-project`` (default
``codereasoner``): its config is the run's config and model, its summary one number per
benchmark and metric (``cruxeval-o/pass@1``), with the item counts. The tracker's own settings
apply (``WANDB_MODE=offline``, ``WANDB_DIR``, ``TRACKIO_DIR``); its chatter is silenced unless
asked for (``WANDB_SILENT``). The run store stays the record: a tracker that fails is a warning,
never a failed run.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Mapping
from typing import Any

from codereasoner.evaluation.run_items import headline
from codereasoner.evaluation.run_summary import RunSummary
from codereasoner.extras import missing

TRACKERS = ("wandb", "trackio")
DEFAULT_PROJECT = "codereasoner"


class TrackerError(ValueError):
    """The tracker cannot be used; the message is one line naming ``--log-to``."""


def check_tracker(name: str | None) -> None:
    """Before the run: a known tracker that is installed (TrackerError otherwise)."""
    if name is None:
        return
    if name not in TRACKERS:
        raise TrackerError(f"--log-to {name!r}: expected one of {', '.join(TRACKERS)}")
    if missing(name):
        raise TrackerError(f"--log-to {name}: not installed (pip install {name})")


def tracked_values(summary: RunSummary) -> dict[str, float]:
    """``{"benchmark/metric": value}`` of every headline number, with ``benchmark/items``."""
    values: dict[str, float] = {}
    for benchmark, report in summary.reports.items():
        for metric, value in headline(benchmark, report).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                values[f"{benchmark}/{metric}"] = float(value)
        items = report.get("items")
        if isinstance(items, int):
            values[f"{benchmark}/items"] = float(items)
    return values


def log_run(
    name: str, project: str, summary: RunSummary, config: Mapping[str, Any]
) -> dict[str, float]:
    """Log one finished run to tracker ``name``; the values logged. Any failure of the tracker
    is a TrackerError (one line)."""
    values = tracked_values(summary)
    os.environ.setdefault("WANDB_SILENT", "true")
    chatter = io.StringIO()
    try:
        module: Any = __import__(name)
        with contextlib.redirect_stdout(chatter):
            run = module.init(
                project=project,
                name=summary.run_dir.name,
                config={**dict(config), "model": summary.model, "run_dir": str(summary.run_dir)},
            )
            run.log(values)
            if getattr(run, "summary", None) is not None:
                run.summary.update(values)
            run.finish() if hasattr(run, "finish") else module.finish()
    except Exception as exc:  # the tracker's own failure: the run itself is done and stored
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise TrackerError(f"--log-to {name}: could not log the run ({reason})") from None
    return values
