"""The summary of a synthesis run, computed from its output files and settings (so a resumed
run's summary is the same as an uninterrupted one's): counts by stage, drop reasons, how
decontamination was done (rule, benchmarks checked and missing, or why it was skipped), methods
covered, and the distributions of methods, nesting depth, code lines and trace length, saved as
JSON and a plot."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codereasoner.synth.writer import write_atomic

STAGES = ("parse", "static", "dedup", "decontam", "execution", "determinism", "mutation")


@dataclass
class Summary:
    """What a run produced. ``data`` is exactly what ``summary.json`` holds."""

    data: dict[str, Any]
    elapsed_s: float = 0.0
    paths: dict[str, str] = field(default_factory=dict)

    @property
    def kept(self) -> int:
        return int(self.data["kept"]["total"])


def _read(path: Path) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _stats(numbers: list[int]) -> dict[str, Any]:
    if not numbers:
        return {"count": 0}
    ordered = sorted(numbers)
    middle = ordered[len(ordered) // 2]
    return {
        "count": len(ordered),
        "min": ordered[0],
        "median": middle,
        "max": ordered[-1],
        "mean": round(sum(ordered) / len(ordered), 3),
        "p90": ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))],
    }


def catalog_methods() -> list[str]:
    """Names of every catalog method (``str.partition``, ``builtins.sorted``, ...)."""
    from codereasoner.synth.catalog import catalog

    return sorted({entry.qualname for entry in catalog()})


def compute(out_dir: Path, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The summary of the run in ``out_dir`` (see the module docstring)."""
    methods: Counter[str] = Counter()
    depth: Counter[int] = Counter()
    controls: Counter[str] = Counter()
    lines: list[int] = []
    steps: list[int] = []
    chars: list[int] = []
    originals = mutants = set_order_checked = 0
    for record in _read(out_dir / "cases.jsonl"):
        set_order_checked += bool(record["exec"].get("set_order_checked"))
        if record.get("mutation"):
            mutants += 1
        else:
            originals += 1
        methods[record["method"]] += 1
        depth[int(record["constraints"]["depth"])] += 1
        controls.update(record["constraints"]["control"])
        lines.append(record["code"].count("\n") + 1)
        chars.append(len(record["code"]))
        steps.append(int(record["exec"]["steps"]))
    by_stage: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    dropped_originals = 0
    for drop in _read(out_dir / "dropped.jsonl"):
        by_stage[drop["stage"]] += 1
        reasons[f"{drop['stage']}/{drop['reason']}"] += 1
        dropped_originals += not drop.get("parent")
    audit = Counter(str(match.get("benchmark", "?")) for match in _read(out_dir / "audit.jsonl"))
    known = catalog_methods()
    missing = [name for name in known if name not in methods]
    return {
        "settings": dict(settings),
        "originals": {
            "generated": int(settings["n"]),
            "kept": originals,
            "dropped": dropped_originals,
        },
        "kept": {"total": originals + mutants, "originals": originals, "mutants": mutants},
        "dropped_by_stage": {stage: by_stage[stage] for stage in STAGES if by_stage[stage]}
        | {stage: count for stage, count in sorted(by_stage.items()) if stage not in STAGES},
        "drop_reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        "methods": {
            "covered": len(known) - len(missing),
            "total": len(known),
            "missing": missing,
            "counts": dict(sorted(methods.items())),
        },
        "depth": {str(key): depth[key] for key in sorted(depth)},
        "control": dict(sorted(controls.items())),
        "code_lines": _stats(lines),
        "code_chars": _stats(chars),
        "trace_steps": _stats(steps),
        "decontam": decontam_summary(settings, reasons, audit),
        "set_order_checked": set_order_checked,
        "distributions": {
            "code_lines": dict(sorted(Counter(lines).items())),
            "trace_steps": _bucket(steps),
        },
    }


def decontam_summary(
    settings: Mapping[str, Any], reasons: Mapping[str, int], audit: Mapping[str, int]
) -> dict[str, Any]:
    """How the run was decontaminated: skipped (and why), or the rule, the benchmarks checked
    and those whose data was missing, the cases dropped per rule and the matches per benchmark."""
    skipped = settings.get("decontam_skipped")
    if skipped:
        return {"skipped": skipped, "checked": []}
    prefix = "decontam/"
    return {
        "skipped": None,
        "rule": settings.get("decontam_rule"),
        "checked": list(settings.get("decontam_checked", [])),
        "missing": list(settings.get("decontam_missing", [])),
        "programs": settings.get("decontam_programs"),
        "dropped": {
            key[len(prefix) :]: count
            for key, count in sorted(reasons.items())
            if key.startswith(prefix)
        },
        "matches": dict(sorted(audit.items())),
    }


def _bucket(numbers: list[int]) -> dict[str, int]:
    edges = (5, 10, 20, 50, 100, 200, 500, 1000, 10_000)
    counts: Counter[str] = Counter()
    for number in numbers:
        upper = next((edge for edge in edges if number <= edge), None)
        counts[f"<={upper}" if upper else f">{edges[-1]}"] += 1
    order = [f"<={edge}" for edge in edges] + [f">{edges[-1]}"]
    return {key: counts[key] for key in order if counts[key]}


def write_summary(out_dir: Path, settings: Mapping[str, Any]) -> Summary:
    """Compute the summary, write ``summary.json`` and ``summary.png``; return it."""
    data = compute(out_dir, settings)
    write_atomic(out_dir / "summary.json", json.dumps(data, indent=2) + "\n")
    paths = {"json": str(out_dir / "summary.json")}
    png = out_dir / "summary.png"
    if plot(data, png):
        paths["png"] = str(png)
    return Summary(data, paths=paths)


def plot(data: Mapping[str, Any], path: Path) -> bool:
    """Four panels: methods per type, depth, code lines, trace steps; plus drop reasons."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return False
    per_type: Counter[str] = Counter()
    for name, count in data["methods"]["counts"].items():
        per_type[name.split(".")[0]] += count
    panels = [
        ("cases per type (methods)", dict(sorted(per_type.items()))),
        ("control nesting depth", data["depth"]),
        ("code lines", {str(k): v for k, v in data["distributions"]["code_lines"].items()}),
        ("trace length (line steps)", data["distributions"]["trace_steps"]),
        ("drop reasons (top 10)", dict(list(data["drop_reasons"].items())[:10])),
    ]
    figure, axes = plt.subplots(len(panels), 1, figsize=(9, 3.2 * len(panels)))
    for axis, (title, counts) in zip(axes, panels, strict=True):
        labels = list(counts)
        if title.startswith("drop"):
            axis.barh(labels[::-1], [counts[k] for k in labels][::-1], color="#c0504d")
        else:
            axis.bar(labels, [counts[k] for k in labels], color="#4f81bd")
            axis.tick_params(axis="x", labelrotation=45 if len(labels) > 8 else 0)
        axis.set_title(title)
    kept = data["kept"]
    figure.suptitle(
        f"synth: {kept['total']} cases ({kept['originals']} originals, "
        f"{kept['mutants']} mutants); {data['methods']['covered']}/"
        f"{data['methods']['total']} methods"
    )
    figure.tight_layout(rect=(0, 0, 1, 0.985))
    tmp = path.with_name(path.name + ".tmp.png")
    figure.savefig(tmp, dpi=80, metadata={"Software": None})
    plt.close(figure)
    tmp.replace(path)
    return True
