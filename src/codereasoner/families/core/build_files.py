"""CoRE's files from a build's problem records (``core_io.json``, ``core_qa.json``, in the
format CoRE's loader reads) and the build's summary."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from codereasoner import values
from codereasoner.families.core.sources import SourceProblems

if TYPE_CHECKING:
    from codereasoner.families.core.build import BuildSettings


FORMAT = "codereasoner-core-build/1"
PROBE_MODEL = "codereasoner-trace"  # core_qa's model_used: the probe's author is our tracer


# ---------------------------------------------------------------------------------------
# CoRE's files
# ---------------------------------------------------------------------------------------


def json_list(records: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(list(records), indent=1, ensure_ascii=True) + "\n"


def _model(implementation: Mapping[str, Any]) -> str:
    kinds = implementation["rewrites"]
    return "given" if not kinds else "rewrite:" + "+".join(kinds)


def _built(records: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    return (record for record in records if record["status"] == "built")


def io_records(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``core_io.json``: one record per (implementation, kept test), CoRE's five fields first."""
    rows = []
    for record in _built(records):
        number = 0
        for index, implementation in enumerate(record["implementations"]):
            for test, (arguments, output) in enumerate(
                zip(record["tests"], record["outputs"], strict=True)
            ):
                rows.append(
                    {
                        "id": f"{record['problem']}_{number}",
                        "input": arguments,
                        "output": output,
                        "code": implementation["code"],
                        "model_used": _model(implementation),
                        "problem": record["problem"],
                        "origin": record["origin"],
                        "implementation": index,
                        "test": test,
                        "rewrites": implementation["rewrites"],
                        "derived_from_given": implementation["from"],
                        "jaccard_to_given": implementation.get("jaccard"),
                        "cyclomatic_complexity": implementation["complexity"],
                    }
                )
                number += 1
    return rows


def qa_records(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``core_qa.json``: CoRE's 13 fields per probe, then ours (``probe``: kind, dimensions,
    1-based line, difficulty features, locator)."""
    rows = []
    for record in _built(records):
        for index, implementation in enumerate(record["implementations"]):
            probes = implementation["probes"]
            arguments, output = probes["input"], probes["output"]
            for probe in probes["items"]:
                truth = values.parse(probe["truth"])
                rows.append(
                    {
                        "id": f"Gen/{record['problem']}_{index}",
                        "source_code": implementation["code"],
                        "input": arguments,
                        "output": output,
                        "meta_data": {
                            "func_name": record["entry"],
                            "model_name": _model(implementation),
                            "cyc_comlexity": implementation["complexity"],  # sic, CoRE's key
                        },
                        "model_used": PROBE_MODEL,
                        "question": probe["question"],
                        "ground_truth": probe["truth"],
                        "answer_type": type(truth).__name__,
                        "complexity_type": " + ".join(probe["dimensions"]),
                        "target_step_index": probe["step"] + 1,
                        "target_line_number": probe["line"] - 1,  # CoRE's is 0-based
                        "reasoning": None,
                        "probe": probe,
                        "problem": record["problem"],
                        "implementation": index,
                        "rewrites": implementation["rewrites"],
                    }
                )
    return rows


# ---------------------------------------------------------------------------------------
# the summary
# ---------------------------------------------------------------------------------------


def _spread(numbers: Sequence[int]) -> dict[str, float]:
    if not numbers:
        return {"min": 0, "median": 0, "max": 0, "mean": 0}
    return {
        "min": min(numbers),
        "median": statistics.median(numbers),
        "max": max(numbers),
        "mean": round(statistics.fmean(numbers), 2),
    }


def summary_data(
    settings: BuildSettings, source: SourceProblems, records: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    built = list(_built(records))
    skipped = Counter(str(r["reason"]) for r in records if r["status"] != "built")
    implementations = [impl for r in built for impl in r["implementations"]]
    rewrites = [impl for impl in implementations if impl["rewrites"]]
    probes = [p for impl in implementations for p in impl["probes"]["items"]]
    rejections: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    left_out: Counter[str] = Counter()
    for record in records:
        rejections.update(record.get("variant_rejections", {}))
        dropped.update(record.get("tests_dropped", {}))
        left_out.update(record.get("implementations_dropped", {}))
    short = [
        r["problem"]
        for r in built
        if sum(1 for impl in r["implementations"] if impl["rewrites"]) < settings.variants
    ]
    thin = sum(1 for impl in implementations if len(impl["probes"]["items"]) < settings.probes)
    return {
        "format": FORMAT,
        "settings": settings.fixed(),
        "problems": {
            "source": len(source.problems),
            "chosen": len(records),
            "built": len(built),
            "skipped": dict(sorted(skipped.items())),
            "fewer_rewrites_than_asked": short,
        },
        "source_skipped": dict(sorted(source.skipped.items())),
        "source_notes": source.notes,
        "implementations": {
            "total": len(implementations),
            "given": len(implementations) - len(rewrites),
            "rewrites": len(rewrites),
            "rewrites_per_problem": _spread(
                [sum(1 for i in r["implementations"] if i["rewrites"]) for r in built]
            ),
            "rewrite_kinds": _count(kind for impl in rewrites for kind in impl["rewrites"]),
            "rejections": dict(sorted(rejections.items())),
            "left_out": dict(sorted(left_out.items())),
        },
        "tests": {
            "candidates_per_problem": _spread([int(r["candidate_tests"]) for r in built]),
            "kept_per_problem": _spread([len(r["tests"]) for r in built]),
            "dropped": dict(sorted(dropped.items())),
        },
        "probes": {
            "total": len(probes),
            "per_implementation": _spread(
                [len(impl["probes"]["items"]) for impl in implementations]
            ),
            "implementations_with_fewer_than_asked": thin,
            "kinds": _count(p["kind"] for p in probes),
            "dimensions": _count(d for p in probes for d in p["dimensions"]),
        },
        "output_items": sum(len(r["tests"]) * len(r["implementations"]) for r in built),
    }


def _count(names: Iterator[str] | Any) -> dict[str, int]:
    return dict(sorted(Counter(names).items(), key=lambda pair: (-pair[1], pair[0])))
