"""What a training run shows while it runs: a JSONL log, a plot and a progress bar.

GRPO's curves are CodeReasoner's Figure 6: mean reward, the share of clipped (over-long)
responses, mean response length and accuracy by direction; SFT's are the loss and learning rate.
With an ``eval_dataset``, the evaluations are drawn with them (``eval_reward`` beside the
reward, ``eval_loss`` beside the loss).

- ``OUTPUT_DIR/train_curves.jsonl``: one line per logging step (every value the trainer logged)
  and one per evaluation (its ``eval_*`` values).
  It is rewritten from the trainer's restored log history when a run resumes, so a resumed run
  holds each step once;
- ``OUTPUT_DIR/train_curves.png``: the panels, redrawn at every checkpoint and at the end;
- the progress bar's suffix shows the latest figures (in place of transformers' dict dumps).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import ProgressCallback, TrainerCallback

from codereasoner.families.cases.benchmark import DIRECTIONS
from codereasoner.files import replacing, write_atomic

__all__ = ["CURVES_JSONL", "CURVES_PNG", "PANELS", "CurvesCallback", "MetricsProgress"]

CURVES_JSONL = "train_curves.jsonl"
CURVES_PNG = "train_curves.png"
ACCURACY = "code_reasoning/accuracy/"


@dataclass(frozen=True)
class Panel:
    title: str
    keys: tuple[str, ...]  # logged names drawn in this panel (those present)


PANELS = (
    Panel("mean reward", ("reward", "eval_reward")),
    Panel("clipped (over-long) responses", ("completions/clipped_ratio",)),
    Panel("mean response length (tokens)", ("completions/mean_length",)),
    Panel("accuracy by direction", tuple(ACCURACY + d for d in DIRECTIONS)),
    Panel("loss", ("loss", "eval_loss")),
    Panel("learning rate", ("learning_rate",)),
)
# The progress bar's suffix: logged name -> short label.
SHOWN = {
    "loss": "loss",
    "reward": "reward",
    "completions/clipped_ratio": "clipped",
    "completions/mean_length": "len",
    ACCURACY + "forward": "acc_fwd",
    ACCURACY + "backward": "acc_bwd",
    ACCURACY + "probe": "acc_probe",
    "eval_reward": "eval_reward",
    "eval_loss": "eval_loss",
}


def _logged_entries(history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The log history's training and evaluation logs (not the final summary)."""
    return [dict(entry) for entry in history if "step" in entry and "train_runtime" not in entry]


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not (isinstance(value, float) and math.isnan(value))


class CurvesCallback(TrainerCallback):
    """Writes ``train_curves.jsonl`` and ``train_curves.png`` into ``output_dir`` (rank 0)."""

    def __init__(self, output_dir: Path) -> None:
        self.jsonl = output_dir / CURVES_JSONL
        self.png = output_dir / CURVES_PNG

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        # The history restored from a checkpoint: earlier lines past it are redone, so dropped.
        entries = _logged_entries(state.log_history)
        self.jsonl.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.jsonl, "".join(json.dumps(e) + "\n" for e in entries))

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kw: Any
    ) -> None:
        if not state.is_world_process_zero or not logs or "train_runtime" in logs:
            return
        entry = {"step": state.global_step, "epoch": state.epoch, **logs}
        with self.jsonl.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.draw()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.draw()

    def draw(self) -> Path | None:
        """Redraw the PNG from the JSONL; None when nothing was logged yet."""
        entries = read_curves(self.jsonl)
        if not entries:
            return None
        return plot_curves(entries, self.png)


def read_curves(path: Path) -> list[dict[str, Any]]:
    """The JSONL's entries (a line cut by a kill is skipped)."""
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return entries


def plot_curves(entries: Sequence[Mapping[str, Any]], out: Path) -> Path:
    """Draw the panels that have data, one row of up to three, written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in PANELS if any(_finite(e.get(k)) for e in entries for k in p.keys)]
    columns = min(3, max(len(panels), 1))
    rows = max(1, math.ceil(len(panels) / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.0 * rows), squeeze=False)
    for axis, panel in zip(axes.flat, panels, strict=False):
        for key in panel.keys:
            points = [(e["step"], e[key]) for e in entries if _finite(e.get(key))]
            if points:
                steps, values = zip(*points, strict=True)
                axis.plot(steps, values, marker=".", label=key.rsplit("/", 1)[-1])
        axis.set_title(panel.title, fontsize=10)
        axis.set_xlabel("step")
        if len(panel.keys) > 1:
            axis.legend(fontsize=8)
    for axis in list(axes.flat)[len(panels) :]:
        axis.axis("off")
    figure.tight_layout()
    with replacing(out) as temporary:
        figure.savefig(temporary, format="png", dpi=100)
    plt.close(figure)
    return out


class MetricsProgress(ProgressCallback):
    """transformers' progress bar, with the latest figures as its suffix instead of dict dumps
    (an evaluation's beside the training step's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.latest: dict[str, str] = {}  # label -> the latest value shown

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kw: Any
    ) -> None:
        bar = getattr(self, "training_bar", None)
        if not state.is_world_process_zero or bar is None or not logs:
            return
        shown = {
            label: f"{logs[key]:.3g}" for key, label in SHOWN.items() if _finite(logs.get(key))
        }
        if shown:
            self.latest.update(shown)
            order = [label for label in SHOWN.values() if label in self.latest]
            bar.set_postfix({label: self.latest[label] for label in order}, refresh=False)
