"""CRUXEval (Gu et al. 2024): 800 functions ``f``; CRUXEval-O predicts ``f(input)``, CRUXEval-I
finds an input giving ``output``. Both tasks use the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from codereasoner import values
from codereasoner.benchmarks.cache import DataUnavailable, Source
from codereasoner.benchmarks.records import read_jsonl, unique_ids
from codereasoner.benchmarks.spec import Benchmark, Stops
from codereasoner.families.cruxeval import TEMPLATES
from codereasoner.tasks import Item

COMMIT = "190faf16d175b5847b0af05d937872b1fb395942"
UPSTREAM = f"https://github.com/facebookresearch/cruxeval/tree/{COMMIT}"
SOURCE = Source(
    "cruxeval.jsonl",
    f"https://raw.githubusercontent.com/facebookresearch/cruxeval/{COMMIT}/data/cruxeval.jsonl",
    sha256="8368b81047dc5014e4caf5a2f97604eff7644e0ecd7415e3ceeb184bbc2e0c96",
)
FIELDS = {"code": str, "input": str, "output": str, "id": str}


def load(paths: Mapping[str, Path], task: str, benchmark: str) -> list[Item]:
    """Items in file order (``sample_0`` ... ``sample_799`` upstream)."""
    path = paths[SOURCE.filename]
    rows = read_jsonl(path, FIELDS)
    unique_ids(path, rows, "id")
    items = []
    for row in rows:
        try:
            output_type = values.type_name(values.parse(row["output"]))
        except values.ValueParseError as exc:
            raise DataUnavailable(
                f"{path}:{row['_line']}: field 'output' is not a literal ({exc})"
            ) from None
        items.append(
            Item(
                id=row["id"],
                benchmark=benchmark,
                task=task,
                program=row["code"],
                entry="f",
                call=f"f({row['input']})",
                truth=row["output"],
                fields={"code": row["code"], "input": row["input"], "output": row["output"]},
                metadata={"output_type": output_type},
            )
        )
    return items


def _declare(name: str, title: str, description: str, task: str) -> Benchmark:
    return Benchmark(
        name=name,
        title=title,
        description=description,
        tasks=(task,),
        dataset="cruxeval",
        sources=(SOURCE,),
        parse=lambda paths: load(paths, task=task, benchmark=name),
        license="MIT (c) 2023 Meta",
        upstream=UPSTREAM,
        counts={"items": 800},
        breakdown="output_type",
        breakdown_note="type of the gold output (project-defined: the data carries no method "
        "or category field)",
        metric_note="pass@k x 100, unbiased estimator; upstream: pass@1 at T=0.2, pass@5 at "
        "T=0.8, n=10",
        stops=Stops(raw=("[/ANSWER]",), styles={"phind": ("# done",)}),
        system=TEMPLATES.text("system_openai.txt"),
    )


OUTPUT = _declare(
    "cruxeval-o", "CRUXEval-O", "predict the value f(input) returns", "output_prediction"
)
INPUT = replace(
    _declare(
        "cruxeval-i",
        "CRUXEval-I",
        "find an input for which f returns the given output",
        "input_prediction",
    ),
    decontaminate=False,  # its programs are CRUXEval-O's: decontamination reads them there
)
BENCHMARKS = (OUTPUT, INPUT)
