"""The summary of a synthesis run, computed from its output files and settings (so a resumed
run's summary is the same as an uninterrupted one's): counts by stage, drop reasons, how
decontamination was done (rule, benchmarks checked and missing, or why it was skipped), methods
covered, the distributions of methods (originals and mutants), nesting depth, code lines, trace
length and output values (with the share of trivial outputs such as ``0`` or ``[]``), saved as
JSON and a plot."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codereasoner.files import parse_json, replacing, write_atomic

STAGES = ("parse", "static", "dedup", "decontam", "execution", "determinism", "mutation")

# Drops that are the design working, not a filter rejecting: a mutant that adds something new but
# is over the --mutants cap. The plot leaves them out so that the real rejections show.
BY_DESIGN_DROPS = ("mutation/not_selected",)

# Outputs that say little about the program (a model guessing them is often right by luck).
TRIVIAL_OUTPUTS = ("0", "1", "''", "[]", "{}", "()", "set()", "None", "False", "True")
TOP_OUTPUTS = 10


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
                yield parse_json(line)


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
    mutant_methods: Counter[str] = Counter()
    outputs: Counter[str] = Counter()
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
            mutant_methods[record["method"]] += 1
        else:
            originals += 1
        methods[record["method"]] += 1
        outputs[record["output"]] += 1
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
        "by_design_drops": {reason: reasons[reason] for reason in BY_DESIGN_DROPS},
        "methods": {
            "covered": len(known) - len(missing),
            "total": len(known),
            "missing": missing,
            "counts": dict(sorted(methods.items())),
        },
        "by_type": by_type(methods, mutant_methods),
        "outputs": output_summary(outputs),
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


def _share(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


def by_type(methods: Mapping[str, int], mutant_methods: Mapping[str, int]) -> dict[str, Any]:
    """Cases per method type (``str``, ``list``, ...), originals and mutants apart."""
    split: dict[str, dict[str, int]] = {}
    for name, count in sorted(methods.items()):
        row = split.setdefault(name.split(".")[0], {"originals": 0, "mutants": 0})
        mutants = mutant_methods.get(name, 0)
        row["originals"] += count - mutants
        row["mutants"] += mutants
    return split


def output_summary(outputs: Counter[str]) -> dict[str, Any]:
    """The output-value distribution: distinct values, the most common ones with their share,
    and how many outputs are trivial (:data:`TRIVIAL_OUTPUTS`)."""
    total = sum(outputs.values())
    trivial = {value: outputs[value] for value in TRIVIAL_OUTPUTS if outputs[value]}
    trivial_count = sum(trivial.values())
    return {
        "total": total,
        "distinct": len(outputs),
        "top": [
            {"value": value, "count": count, "share": _share(count, total)}
            for value, count in sorted(outputs.items(), key=lambda kv: (-kv[1], kv[0]))[
                :TOP_OUTPUTS
            ]
        ],
        "trivial": {
            "values": list(TRIVIAL_OUTPUTS),
            "count": trivial_count,
            "share": _share(trivial_count, total),
            "by_value": trivial,
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


BLUE, ORANGE, RED = "#4f81bd", "#f79646", "#c0504d"


def plot(data: Mapping[str, Any], path: Path) -> bool:
    """Six panels, each with axis labels and a count on every bar: cases per method type
    (originals and mutants), nesting depth, code lines, trace length, the most common outputs
    (with the trivial share) and the drop reasons (those by design left out, and said so)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return False
    figure, grid = plt.subplots(3, 2, figsize=(15, 13))
    axes = list(grid.flat)
    _types_panel(axes[0], data["by_type"])
    _bars(axes[1], data["depth"], "control nesting depth", ("depth", "cases"))
    code_lines = {str(k): v for k, v in data["distributions"]["code_lines"].items()}
    _bars(axes[2], code_lines, "code lines per case", ("lines of code", "cases"))
    steps = data["distributions"]["trace_steps"]
    _bars(axes[3], steps, "trace length", ("line steps traced", "cases"))
    _outputs_panel(axes[4], data["outputs"])
    _drops_panel(axes[5], data["drop_reasons"])
    kept = data["kept"]
    figure.suptitle(
        f"synth: {kept['total']:,} cases ({kept['originals']:,} originals, "
        f"{kept['mutants']:,} mutants) from {data['originals']['generated']:,} candidates; "
        f"{data['methods']['covered']}/{data['methods']['total']} methods",
        fontsize=14,
    )
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    with replacing(path) as temporary:
        figure.savefig(temporary, format="png", dpi=90, metadata={"Software": None})
    plt.close(figure)
    return True


def _label(axis: Any, title: str, x: str, y: str) -> None:
    axis.set_title(title, fontsize=12)
    axis.set_xlabel(x)
    axis.set_ylabel(y)


def _bars(axis: Any, counts: Mapping[str, int], title: str, names: tuple[str, str]) -> None:
    labels = list(counts)
    bars = axis.bar(labels, [counts[k] for k in labels], color=BLUE)
    axis.bar_label(bars, fmt="{:,.0f}", fontsize=8)
    axis.tick_params(axis="x", labelrotation=45 if len(labels) > 8 else 0)
    _label(axis, title, *names)


def _types_panel(axis: Any, split: Mapping[str, Mapping[str, int]]) -> None:
    types = list(split)
    positions = range(len(types))
    width = 0.4
    for offset, key, color in ((-width / 2, "originals", BLUE), (width / 2, "mutants", ORANGE)):
        values = [split[name][key] for name in types]
        bars = axis.bar([p + offset for p in positions], values, width, label=key, color=color)
        axis.bar_label(bars, fmt="{:,.0f}", fontsize=8)
    axis.set_xticks(list(positions), types, rotation=30, ha="right")
    axis.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
    _label(axis, "cases per method type: originals and mutants", "method type", "cases")


def _outputs_panel(axis: Any, outputs: Mapping[str, Any]) -> None:
    top = outputs["top"][::-1]
    labels = [_short(entry["value"]) for entry in top]
    bars = axis.barh(labels, [entry["count"] for entry in top], color=BLUE)
    axis.bar_label(bars, [f"{entry['count']:,} ({entry['share']:.1%})" for entry in top])
    trivial = outputs["trivial"]
    _label(
        axis,
        f"most common outputs ({outputs['distinct']:,} distinct of {outputs['total']:,}); "
        f"trivial outputs: {trivial['share']:.1%}",
        "cases",
        "output value",
    )
    axis.margins(x=0.25)


def _drops_panel(axis: Any, reasons: Mapping[str, int]) -> None:
    left_out = {reason: reasons[reason] for reason in BY_DESIGN_DROPS if reasons.get(reason)}
    shown = [(reason, count) for reason, count in reasons.items() if reason not in left_out][:10]
    shown.reverse()
    bars = axis.barh([reason for reason, _ in shown], [count for _, count in shown], color=RED)
    axis.bar_label(bars, fmt="{:,.0f}", fontsize=8)
    title = "drop reasons (top 10)"
    if left_out:
        by_design = ", ".join(f"{reason} ({count:,})" for reason, count in left_out.items())
        title += f"\nnot shown, by design: {by_design}"
    _label(axis, title, "candidates dropped", "stage/reason")
    axis.margins(x=0.15)


def _short(value: str, width: int = 24) -> str:
    return value if len(value) <= width else value[: width - 1] + "…"
