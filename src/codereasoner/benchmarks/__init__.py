"""The benchmark registry: name -> task kind, loader, data sources, license and expected counts.

from codereasoner import benchmarks
bench = benchmarks.get("cruxeval-o")
items = bench.load(data_dir)        # or from the cache, downloading on first use
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from codereasoner.benchmarks import core, cruxeval, livecodebench, reval
from codereasoner.benchmarks.cache import DataUnavailable, FileStatus, Source, locate, status
from codereasoner.tasks import (
    InputPrediction,
    Item,
    OutputPrediction,
    TaskKind,
    TestOutputPrediction,
)
from codereasoner.tasks.core_output import OUTPUT_TASK, CoreOutput
from codereasoner.tasks.core_probe import PROBE_TASK, CoreProbe, CoreTasks
from codereasoner.tasks.reval_tasks import RevalTasks

__all__ = ["REGISTRY", "Benchmark", "DataUnavailable", "get", "names"]


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    description: str
    task: TaskKind
    dataset: str  # cache folder; shared by benchmarks reading the same files
    sources: tuple[Source, ...]
    parse: Callable[[Mapping[str, Path]], list[Item]]
    license: str
    upstream: str
    counts: Mapping[str, int]  # what the full upstream data holds
    breakdown: str  # the metadata key of per-category tables
    breakdown_note: str
    metric_note: str

    def load(
        self, data_dir: Path | None = None, *, download: bool = True, cache: Path | None = None
    ) -> list[Item]:
        """Items from ``data_dir`` (files named as in ``sources``), else from the cache."""
        return self.parse(
            locate(self.dataset, self.sources, data_dir, download=download, cache=cache)
        )

    def cache_status(self, cache: Path | None = None) -> list[FileStatus]:
        return status(self.dataset, self.sources, cache)


_CRUX_LICENSE = "MIT (c) 2023 Meta"
_LCB_LICENSE = "code MIT (c) 2024 LiveCodeBench; HF datasets 'cc' (variant unspecified)"
_CRUX_BREAKDOWN = ("type of the gold output (project-defined: the data carries no method or "
                   "category field)")  # fmt: skip
_CRUX_METRIC = "pass@k x 100, unbiased estimator; upstream: pass@1 at T=0.2, pass@5 at T=0.8, n=10"
_CORE_LICENSE = ("no LICENSE file (treat as all rights reserved; ask the authors); problems from "
                 "HumanEval (MIT) and LiveCodeBench ('cc')")  # fmt: skip
_CORE_BREAKDOWN = "per problem: CoRE scores problems, then averages them"
_CORE_METRIC = ("I, Is, W, Ws, RCS x 100 and Cons (both definitions), per-problem means, mean of "
                "runs (upstream: 3); on the 60-problem release, not the paper's 91")  # fmt: skip

REGISTRY: dict[str, Benchmark] = {
    bench.name: bench
    for bench in (
        Benchmark(
            "cruxeval-o",
            "CRUXEval-O",
            "predict the value f(input) returns",
            OutputPrediction("cruxeval"),
            "cruxeval",
            (cruxeval.SOURCE,),
            partial(cruxeval.load, task="output_prediction", benchmark="cruxeval-o"),
            _CRUX_LICENSE,
            cruxeval.UPSTREAM,
            {"items": 800},
            "output_type",
            _CRUX_BREAKDOWN,
            _CRUX_METRIC,
        ),
        Benchmark(
            "cruxeval-i",
            "CRUXEval-I",
            "find an input for which f returns the given output",
            InputPrediction(),
            "cruxeval",
            (cruxeval.SOURCE,),
            partial(cruxeval.load, task="input_prediction", benchmark="cruxeval-i"),
            _CRUX_LICENSE,
            cruxeval.UPSTREAM,
            {"items": 800},
            "output_type",
            _CRUX_BREAKDOWN,
            _CRUX_METRIC,
        ),
        Benchmark(
            "lcb-execution",
            "LiveCodeBench code execution",
            "predict the value a LeetCode-style function call returns",
            OutputPrediction("livecodebench"),
            "livecodebench",
            (livecodebench.EXECUTION,),
            partial(livecodebench.load_execution, benchmark="lcb-execution"),
            _LCB_LICENSE,
            livecodebench.UPSTREAM,
            {"items": 479, "questions": 92},
            "difficulty",
            "difficulty field of the data",
            "pass@1 x 100; upstream: n=10, T=0.2",
        ),
        Benchmark(
            "lcb-test-output",
            "LiveCodeBench test output prediction",
            "predict a test's output from the problem statement and signature (no code)",
            TestOutputPrediction(),
            "livecodebench",
            (livecodebench.TEST_GENERATION,),
            partial(livecodebench.load_test_output, benchmark="lcb-test-output"),
            _LCB_LICENSE,
            livecodebench.UPSTREAM,
            {"items": 442, "questions": 182},
            "difficulty",
            "difficulty field of the data",
            "pass@1, pass@5 reported x 100 here (upstream prints a fraction); n=10, T=0.2",
        ),
        Benchmark(
            "reval",
            "REval",
            "coverage, state, path and output questions on one run of a program (DREval data)",
            RevalTasks(),
            "reval",
            (reval.DATA, reval.TASKS),
            partial(reval.load, benchmark="reval"),
            "no LICENSE upstream; sources HumanEval (MIT) and ClassEval (MIT)",
            reval.UPSTREAM,
            {"items": 10146, "programs": 154, "pairs": 690, "line_questions": 3152},
            "source",
            "humaneval or classeval, the origin of the program",
            "accuracy per task (coverage also precision/recall/F1) and Incremental Consistency; "
            "upstream: 1 sample per question at T=0.8, mean of 5 repeats",
        ),
        Benchmark(
            "core",
            "CoRE",
            "output prediction over equivalent implementations and intermediate-state probes of the same 60 problems",
            CoreTasks(),
            "core",
            (core.IO, core.QA),
            partial(core.load, benchmark="core", kinds=(OUTPUT_TASK, PROBE_TASK)),
            _CORE_LICENSE,
            core.UPSTREAM,
            {"items": 2216, "outputs": 1978, "probes": 243, "graded_probes": 238, "problems": 60},
            "problem",
            _CORE_BREAKDOWN,
            _CORE_METRIC,
        ),
        Benchmark(
            "core-output",
            "CoRE output prediction",
            "predict f(x) for each of several functionally equivalent implementations",
            CoreOutput(),
            "core",
            (core.IO,),
            partial(core.load, benchmark="core-output", kinds=(OUTPUT_TASK,)),
            _CORE_LICENSE,
            core.UPSTREAM,
            {"items": 1978, "implementations": 255, "problems": 60},
            "problem",
            _CORE_BREAKDOWN,
            _CORE_METRIC,
        ),
        Benchmark(
            "core-probe",
            "CoRE intermediate-state probes",
            "answer a question about an intermediate state of one run",
            CoreProbe(),
            "core",
            (core.QA,),
            partial(core.load, benchmark="core-probe", kinds=(PROBE_TASK,)),
            _CORE_LICENSE,
            core.UPSTREAM,
            {"items": 238, "probes": 243, "graded_probes": 238, "problems": 60},
            "problem",
            _CORE_BREAKDOWN,
            _CORE_METRIC,
        ),
    )
}


def names() -> list[str]:
    return list(REGISTRY)


def get(name: str) -> Benchmark:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(
            f"unknown benchmark {name!r}; expected one of {', '.join(REGISTRY)}"
        ) from None
