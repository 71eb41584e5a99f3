"""Evaluation: runs (``evaluate``), reading generations, grading them, and the metrics.

A run, as ``codereasoner eval`` does it (resumable; see docs/evaluation.md)::

    from codereasoner.evaluation import evaluate
    summary = evaluate("oracle", names, "runs/check", limit=20, data_dir=data_dir)  # bench list
    summary.typed_reports()[names[0]].headline()   # e.g. {"pass@1": 100.0}

Building data, as ``codereasoner synth`` and ``codereasoner core build`` do it (resumable)::

    from codereasoner.evaluation import synthesize
    from codereasoner.families.core.api import BuildSettings, build_core
    summary = synthesize("runs/synth", n=400, data_dir=data_dir)
    built = build_core("runs/core-gen", BuildSettings(source=f"synth:{path}", limit=30))

Grading a generations file, as ``codereasoner score`` does it::

    from codereasoner import benchmarks, tasks
    from codereasoner.evaluation import read_generations, score
    from codereasoner.execution import Pool
    from codereasoner.tasks import OFFICIAL_LIMITS

    bench = benchmarks.get(name)         # any pass@k benchmark, see `codereasoner bench list`
    items = bench.load(data_dir)
    extract = lambda item, text: tasks.get(item.task).extract(item, text)
    _, answers = read_generations(path, items, extract)
    with Pool(limits=OFFICIAL_LIMITS) as pool:
        scored = score(bench, items, answers, pool)
    scored.pass_at([1, 5])      # {"pass@1": 34.2125, "pass@5": 40.2867}, percent
"""

from codereasoner.evaluation.api import evaluate
from codereasoner.evaluation.builders import BuildError, synthesize
from codereasoner.evaluation.generations import GenerationsError, read_generations
from codereasoner.evaluation.metrics import (
    Counts,
    accuracy,
    breakdown,
    item_counts,
    mean_pass_at_k,
    pass_at_k,
    pass_table,
)
from codereasoner.evaluation.runner import RunError, RunSummary
from codereasoner.evaluation.scoring import Scored, check_ks, sandbox_errors, score, strict_report

__all__ = [
    "BuildError",
    "Counts",
    "GenerationsError",
    "RunError",
    "RunSummary",
    "Scored",
    "accuracy",
    "breakdown",
    "check_ks",
    "evaluate",
    "item_counts",
    "mean_pass_at_k",
    "pass_at_k",
    "pass_table",
    "read_generations",
    "sandbox_errors",
    "score",
    "strict_report",
    "synthesize",
]
