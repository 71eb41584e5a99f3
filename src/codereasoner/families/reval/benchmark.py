"""REval (Chen et al., ICSE 2025): coverage, state, path and output questions on DREval data.

154 programs (85 HumanEval-style functions, 69 ClassEval-style classes), 690 (program, input)
pairs with one output question each, and 3,152 line questions, each asked as coverage, state and
path: 10,146 items. Ground truth is not stored upstream; it is computed here by our tracer in the
sandbox (``reval_truth`` documents how REval's state, next-line and coverage definitions map onto
our after-line steps) and cached in ``<cache>/reval/truth-*.json``, keyed by the data files'
sha256, the sandbox Python version and :data:`TRUTH_VERSION`.

Item ids: ``DREval/0/1/17/coverage`` (program, input index, line, kind) and ``DREval/0/1/output``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from codereasoner.benchmarks.cache import DataUnavailable, Source, cache_root, sha256_file
from codereasoner.benchmarks.records import read_jsonl
from codereasoner.benchmarks.spec import Benchmark, Clock, Metrics, Stops
from codereasoner.execution import (
    Executor,
    Limits,
    Pool,
    SandboxUnavailable,
    plan_isolation,
    sandboxed,
)
from codereasoner.families.reval import programs as reval_programs
from codereasoner.families.reval import truth as reval_truth
from codereasoner.families.reval import vars as reval_vars
from codereasoner.families.reval.items import build_items
from codereasoner.families.reval.programs import case_program, test_classes
from codereasoner.families.reval.truth import GT_LIMITS, Pair, PairTruth, TruthError
from codereasoner.families.reval.truth import compute_truth as _compute
from codereasoner.files import parse_json, write_atomic
from codereasoner.tasks import Extraction, Item

__all__ = [
    "BENCHMARKS",
    "DATA",
    "KINDS",
    "LIMITS",
    "TASKS",
    "TRUTH_VERSION",
    "UPSTREAM",
    "case_program",
    "ground_truth",
    "load",
    "read_pairs",
    "truth_path",
]

COMMIT = "2f148b913deb4ae0e0ce41f0245ef35054ede8d6"
UPSTREAM = f"https://github.com/r-eval/REval/tree/{COMMIT}"
_RAW = f"https://raw.githubusercontent.com/r-eval/REval/{COMMIT}/data"
# Pinned to the copy in shared/data/reval (copied from upstream at COMMIT, see its NOTICE.md).
DATA = Source(
    "DREval_data.jsonl",
    f"{_RAW}/DREval_data.jsonl",
    sha256="b8e72ef344cd575b220363e7a361e892ef2bdfcee1cab79f702d60e255844965",
)
TASKS = Source(
    "DREval_tasks.jsonl",
    f"{_RAW}/DREval_tasks.jsonl",
    sha256="a4fea071a4e3108ae00cc8a6a586505bff4237244b2dc8433b22303948fe7fa5",
)
KINDS = ("coverage", "state", "path", "output")
# Upstream limits CPU time (10 s per program run); the wall-clock limit only catches sleepers.
LIMITS = Limits(timeout_s=10.0, wall_timeout_s=20.0, memory_mb=2048)
TRUTH_VERSION = 1
_DATA_FIELDS: dict[str, type | tuple[type, ...]] = {
    "task_id": str,
    "entry_point": str,
    "code": str,
    "inputs": list,
    "outputs": list,
    "test": (str, type(None)),
}
_TASK_FIELDS: dict[str, type | tuple[type, ...]] = {"task_id": str, "idx": int, "tasks": list}


def load(
    paths: Mapping[str, Path],
    benchmark: str = "reval",
    *,
    pool: Executor | None = None,
    cache: Path | None = None,
) -> list[Item]:
    """Items of all four kinds (coverage, state, path, then output), ground truth included."""
    pairs = read_pairs(paths)
    truths = ground_truth(paths, pairs, pool=pool, cache=cache)
    return build_items(pairs, truths, benchmark)


def read_pairs(paths: Mapping[str, Path]) -> list[Pair]:
    """The validated (program, input) pairs in task-file order."""
    data_path, task_path = paths[DATA.filename], paths[TASKS.filename]
    rows = read_jsonl(data_path, _DATA_FIELDS)
    for row in rows:
        _check_row(data_path, row)
    pairs: list[Pair] = []
    seen: dict[int, int] = {}
    for record in read_jsonl(task_path, _TASK_FIELDS):
        where = f"{task_path}:{record['_line']}"
        idx = record["idx"]
        if not 0 <= idx < len(rows):
            raise DataUnavailable(
                f"{where}: field 'idx' is {idx}, but {data_path} has {len(rows)} programs"
            )
        if idx in seen:
            raise DataUnavailable(f"{where}: duplicate idx {idx} (first on line {seen[idx]})")
        seen[idx] = record["_line"]
        row = rows[idx]
        if record["task_id"] != row["task_id"]:
            raise DataUnavailable(
                f"{where}: field 'task_id' is {record['task_id']!r}, but "
                f"program {idx} is {row['task_id']!r}"
            )
        pairs.extend(_pairs(where, row, record["tasks"]))
    return pairs


def _check_row(path: Path, row: dict[str, Any]) -> None:
    where = f"{path}:{row['_line']}"
    for index, case in enumerate(row["inputs"]):
        if not isinstance(case, str):
            raise DataUnavailable(f"{where}: field 'inputs[{index}]' must be str")
        if row["test"] is None and not case.rstrip().endswith(",)"):
            raise DataUnavailable(
                f"{where}: field 'inputs[{index}]' must be an argument tuple ending in ',)'"
            )
    if row["test"] is not None:
        try:
            found = test_classes(row["test"], row["entry_point"])
        except (SyntaxError, ValueError) as exc:
            raise DataUnavailable(f"{where}: field 'test': {exc}") from None
        if len(found) < len(row["inputs"]):
            raise DataUnavailable(
                f"{where}: field 'test' has {len(found)} test classes for "
                f"{len(row['inputs'])} inputs"
            )


def _pairs(where: str, row: dict[str, Any], tasks: list[Any]) -> list[Pair]:
    lines = len(row["code"].split("\n"))
    found = []
    for number, task in enumerate(tasks):
        field = f"tasks[{number}]"
        if not isinstance(task, dict):
            raise DataUnavailable(f"{where}: field {field!r} must be an object")
        input_idx = _typed(where, task, field, "input_idx", int)
        if not 0 <= input_idx < len(row["inputs"]):
            raise DataUnavailable(
                f"{where}: field '{field}.input_idx' is {input_idx}; "
                f"{row['task_id']} has {len(row['inputs'])} inputs"
            )
        output_pred = _typed(where, task, field, "output_pred", str)
        questions: list[tuple[int, str]] = []
        for k, question in enumerate(_typed(where, task, field, "task", list)):
            inner = f"{field}.task[{k}]"
            if not isinstance(question, dict):
                raise DataUnavailable(f"{where}: field {inner!r} must be an object")
            lineno = _typed(where, question, inner, "lineno", int)
            var = _typed(where, question, inner, "var", str)
            if not 1 <= lineno <= lines:
                raise DataUnavailable(
                    f"{where}: field '{inner}.lineno' is {lineno}; the code has {lines} lines"
                )
            if any(lineno == line for line, _ in questions):
                raise DataUnavailable(
                    f"{where}: field '{inner}.lineno': line {lineno} is asked twice for one input"
                )
            questions.append((lineno, var))
        found.append(Pair(row, input_idx, tuple(questions), output_pred))
    return found


def _typed(where: str, record: dict[str, Any], field: str, name: str, kind: type) -> Any:
    value = record.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        got = "missing" if name not in record else type(value).__name__
        raise DataUnavailable(f"{where}: field '{field}.{name}' must be {kind.__name__}, got {got}")
    return value


def truth_path(paths: Mapping[str, Path], python: str, cache: Path | None = None) -> Path:
    """Where the ground truth of these data files under this sandbox Python is cached."""
    digest = hashlib.sha256()
    for source in (DATA, TASKS):
        digest.update(sha256_file(paths[source.filename]).encode())
    digest.update(f"{python}/{TRUTH_VERSION}".encode())
    for module in (reval_programs, reval_truth, reval_vars):  # any change to how truth is computed
        digest.update(Path(module.__file__ or "").read_bytes())
    folder = Path(sandboxed.__file__ or "").parent
    tracer = [folder / f"{name}.py" for name in sandboxed.TRACER_MODULES]
    for file in [*tracer, folder / "_tracecore.c"]:
        if file.exists():
            digest.update(file.read_bytes())
    return (cache or cache_root()) / "reval" / f"truth-{digest.hexdigest()[:20]}-py{python}.json"


def ground_truth(
    paths: Mapping[str, Path],
    pairs: Sequence[Pair],
    *,
    pool: Executor | None = None,
    cache: Path | None = None,
) -> dict[str, PairTruth]:
    """Every pair's ground truth, from the cache or traced now (then cached)."""
    try:
        python = pool.plan.python_version if pool is not None else plan_isolation().python_version
    except SandboxUnavailable as exc:
        raise DataUnavailable(f"REval ground truth needs the sandbox: {exc}") from None
    target = truth_path(paths, python, cache)
    cached = _read_cache(target)
    if cached is not None and all(pair.key in cached for pair in pairs):
        return {pair.key: cached[pair.key] for pair in pairs}
    try:
        if pool is not None:
            truths = _compute(pairs, pool)
        else:
            with Pool(limits=GT_LIMITS) as own:
                truths = _compute(pairs, own)
    except TruthError as exc:
        raise DataUnavailable(
            f"REval ground truth: {exc}; the sandbox needs the Debian packages "
            "that 'make system-deps' installs"
        ) from None
    except SandboxUnavailable as exc:
        raise DataUnavailable(f"REval ground truth needs the sandbox: {exc}") from None
    _write_cache(target, {**(cached or {}), **truths})
    return truths


def _read_cache(path: Path) -> dict[str, PairTruth] | None:
    try:
        data = parse_json(path.read_text())
        return {key: PairTruth.from_json(value) for key, value in data["pairs"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(path: Path, truths: Mapping[str, PairTruth]) -> None:
    """Best effort: an unwritable cache only costs a recomputation next time."""
    body = {"version": TRUTH_VERSION, "pairs": {k: v.to_json() for k, v in truths.items()}}
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps(body))


BENCHMARKS = (
    Benchmark(
        name="reval",
        title="REval",
        description="coverage, state, path and output questions on one run of a program "
        "(DREval data)",
        tasks=KINDS,
        dataset="reval",
        sources=(DATA, TASKS),
        parse=lambda paths: load(paths, benchmark="reval"),
        license="no LICENSE upstream; sources HumanEval (MIT) and ClassEval (MIT)",
        upstream=UPSTREAM,
        counts={"items": 10146, "programs": 154, "pairs": 690, "line_questions": 3152},
        breakdown="source",
        breakdown_note="humaneval or classeval, the origin of the program",
        metric_note="accuracy per task (coverage also precision/recall/F1) and Incremental "
        "Consistency; upstream: 1 sample per question at T=0.8, mean of 5 repeats",
        metrics=Metrics.ACCURACY_CONSISTENCY,
        stops=Stops(raw=("[/ANSWER]",)),
        limits=LIMITS,
        clock=Clock.CPU,
        extractions=(Extraction.OFFICIAL, Extraction.ROBUST, Extraction.ANSWER_TAG),
        group_by=("task_id", "input_idx"),
    ),
)
BENCHMARK = BENCHMARKS[0]  # registered by name in codereasoner.benchmarks
