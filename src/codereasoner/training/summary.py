"""What a distillation kept: acceptance by direction, method (and its type), control depth and
rejection reason; with probe records, by probe kind and dimension too.

``write_summary(out, records)`` writes ``distill_summary.json`` and ``distill_summary.png``
(atomically) from the records of ``distilled.jsonl`` and returns the tables.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from codereasoner.files import replacing, write_atomic

__all__ = ["acceptance", "write_summary"]

Record = Mapping[str, Any]


def acceptance(
    records: Sequence[Record], key: Callable[[Record], str]
) -> dict[str, dict[str, float]]:
    """Per value of ``key``: items, accepted items and the accepted percentage."""
    totals: Counter[str] = Counter(key(record) for record in records)
    kept: Counter[str] = Counter(key(record) for record in records if record["verified"])
    return {
        name: {
            "items": totals[name],
            "accepted": kept[name],
            "percent": round(100 * kept[name] / totals[name], 2),
        }
        for name in sorted(totals)
    }


def tables(records: Sequence[Record]) -> dict[str, Any]:
    reasons = Counter(entry["reason"] for record in records for entry in record["rejected"])
    found: dict[str, Any] = {
        "by_direction": acceptance(records, lambda record: str(record["direction"])),
        "by_method": acceptance(records, lambda record: str(record["method"])),
        "by_type": acceptance(records, lambda record: str(record["method"]).split(".")[0]),
        "by_depth": acceptance(records, lambda record: str(record["depth"])),
        "rejections": dict(sorted(reasons.items(), key=lambda pair: (-pair[1], pair[0]))),
        "samples": sum(int(record["n_tried"]) for record in records),
    }
    probes = [record for record in records if "probe" in record]
    if probes:
        found["by_probe_kind"] = acceptance(probes, lambda record: str(record["probe"]["kind"]))
        found["by_dimension"] = by_dimension(probes)
    return found


def by_dimension(records: Sequence[Record]) -> dict[str, dict[str, float]]:
    """Acceptance per CoRE dimension of the probe records (a probe counts in each of its)."""
    spread = [
        {"verified": record["verified"], "dimension": dimension}
        for record in records
        for dimension in record["probe"]["dimensions"]
    ]
    return acceptance(spread, lambda record: str(record["dimension"]))


def write_summary(out: Path, records: Sequence[Record]) -> dict[str, Any]:
    found = tables(records)
    write_atomic(out / "distill_summary.json", json.dumps(found, indent=2) + "\n")
    _plot(found, out / "distill_summary.png")
    return found


def _plot(found: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("accepted % by direction", {k: v["percent"] for k, v in found["by_direction"].items()}),
        ("accepted % by control depth", {k: v["percent"] for k, v in found["by_depth"].items()}),
        ("accepted % by method type", {k: v["percent"] for k, v in found["by_type"].items()}),
        ("rejected samples by reason", found["rejections"]),
    ]
    if "by_probe_kind" in found:
        kinds = {k: v["percent"] for k, v in found["by_probe_kind"].items()}
        panels.insert(1, ("accepted % by probe kind", kinds))
    figure, axes = plt.subplots(len(panels), 1, figsize=(7, 2.6 * len(panels)))
    for axis, (title, counts) in zip(axes, panels, strict=True):
        labels = list(counts) or ["(none)"]
        axis.bar(labels, [counts.get(label, 0) for label in labels], color="#4f81bd")
        axis.set_title(title)
    figure.tight_layout()
    with replacing(path) as temporary:
        figure.savefig(temporary, format="png", dpi=80, metadata={"Software": None})
    plt.close(figure)
