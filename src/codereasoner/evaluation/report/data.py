"""Read run stores (``RUN/run.sqlite``) into plain objects for reports.

Everything a report shows comes from here: each benchmark's stored report (the dict
``codereasoner score --json`` prints), its headline metrics, its per-category tables, and
example failures (prompt, completion, extracted answer, expected value, verdict).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codereasoner.evaluation.families import FAMILIES, load_report
from codereasoner.evaluation.reports import (
    ACCURACY_CONSISTENCY,
    FRACTION,
    INVARIANCE_TRANSPARENCY,
    PASS_AT_K,
    PERCENT,
    Breakdown,
    Metric,
    pass_keys,
)
from codereasoner.evaluation.runner import ORACLE
from codereasoner.evaluation.store import connect, store_path
from codereasoner.files import parse_json
from codereasoner.models.base import Sampling
from codereasoner.tasks import Item, Reason, Score

PASSK = PASS_AT_K
CORE = INVARIANCE_TRANSPARENCY
REVAL = ACCURACY_CONSISTENCY
OTHER = "other"
__all__ = [
    "CORE",
    "FRACTION",
    "PASSK",
    "PERCENT",
    "REVAL",
    "Breakdown",
    "Metric",
    "core_metrics",
    "pass_keys",
    "reval_metrics",
]


class ReportDataError(ValueError):
    """A run store that cannot be read; the message is one line naming the file and the fault."""


def core_metrics() -> tuple[str, ...]:
    """CoRE's metrics, in the order its report lists them, from its metric family."""
    names: tuple[str, ...] = FAMILIES[CORE].report_type.METRICS
    return names


def reval_metrics() -> tuple[tuple[str, str, str | None, str], ...]:
    """REval's metric rows ``(label, report key, inner key, unit)``, from its metric family."""
    rows: tuple[tuple[str, str, str | None, str], ...] = FAMILIES[REVAL].report_type.METRICS
    return rows


@dataclass(frozen=True)
class Failure:
    """One wrong (or skipped) sample, with everything needed to see why."""

    item_id: str
    sample: int
    category: str
    task: str
    prompt: str | None
    completion: str | None
    answer: str | None
    expected: str
    reason: str
    detail: str
    skipped: bool
    preamble: int = 0  # the prompt's first characters shared by every prompt of the benchmark

    @property
    def question(self) -> str | None:
        """The item's own part of the prompt: after the shared few-shot preamble."""
        return None if self.prompt is None else self.prompt[self.preamble :]


@dataclass(frozen=True)
class BenchmarkResult:
    """One benchmark of one run."""

    name: str
    kind: str
    report: dict[str, Any]
    metrics: tuple[Metric, ...]
    breakdowns: tuple[Breakdown, ...]
    failures: dict[str, tuple[Failure, ...]]  # per category, at most ``examples`` each
    failure_counts: dict[str, int]  # per category, all failures
    scored_samples: int
    verdicts: dict[str, tuple[Score, ...]] = field(default_factory=dict)  # of complete items
    items: dict[str, Item] = field(default_factory=dict)  # as stored: id, task, truth, metadata

    @property
    def item_count(self) -> int:
        """The items the run holds every sample's verdict of; else its report's own count."""
        return len(self.verdicts) or reported_items(self.report)

    @property
    def total_failures(self) -> int:
        return sum(self.failure_counts.values())

    def metric(self, name: str) -> Metric | None:
        return next((metric for metric in self.metrics if metric.name == name), None)


@dataclass(frozen=True)
class Run:
    """One evaluation run: its ``run`` row and its benchmarks (sorted by name)."""

    path: Path
    id: str
    model: str
    status: str
    message: str
    created: float
    updated: float
    config: dict[str, Any]
    benchmarks: dict[str, BenchmarkResult]

    @property
    def self_check(self) -> bool:
        """The oracle's run: a check of the toolkit, not a model score."""
        return self.model == ORACLE

    @property
    def folder(self) -> str:
        """The run directory's name (the store's parent's, when given the file)."""
        path = self.path.parent if self.path.suffix == ".sqlite" else self.path
        return path.resolve().name or str(path)


def load_runs(paths: Sequence[Path], examples: int = 3) -> list[Run]:
    """Read every run (a run directory or its ``run.sqlite``), keeping ``examples`` failures
    per benchmark and category; raises :class:`ReportDataError` with a one-line message."""
    if examples < 0:
        raise ReportDataError(f"--examples: expected 0 or more, got {examples}")
    return [load_run(Path(path), examples) for path in paths]


def load_run(path: Path, examples: int = 3) -> Run:
    """Read one run store; see :func:`load_runs`."""
    where = store_path(path)
    try:
        connection = connect(where, read_only=True)
    except (FileNotFoundError, ValueError) as exc:
        raise ReportDataError(str(exc)) from None
    except sqlite3.Error as exc:
        raise ReportDataError(f"{where}: not a readable run store ({exc})") from None
    try:
        return _read(connection, Path(path), where, examples)
    except sqlite3.Error as exc:
        raise ReportDataError(f"{where}: not a readable run store ({exc})") from None
    except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError) as exc:
        # a store is a file anyone can craft: a field of the wrong type is one line
        raise ReportDataError(
            f"{where}: unexpected content ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
        ) from None
    finally:
        connection.close()


def _read(connection: sqlite3.Connection, path: Path, where: Path, examples: int) -> Run:
    rows = connection.execute(
        "SELECT id, model, created, updated, config, status, message FROM run"
    ).fetchall()
    if len(rows) != 1:
        raise ReportDataError(f"{where}: table run holds {len(rows)} rows, expected 1")
    run_id, model, created, updated, config_text, status, message = rows[0]
    config = _json(config_text, f"{where}: run.config")
    if not isinstance(config, dict):
        raise ReportDataError(f"{where}: run.config: expected a JSON object")
    sampling = _sampling_key(config.get("sampling"))
    n = config.get("n")
    samples = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None
    reports = {}
    for name, text in connection.execute("SELECT benchmark, report FROM results ORDER BY 1"):
        report = _json(text, f"{where}: results.report of {name!r}")
        if not isinstance(report, dict):
            raise ReportDataError(f"{where}: results.report of {name!r}: expected a JSON object")
        reports[name] = report
    scored = dict(
        connection.execute(
            "SELECT benchmark, count(*) FROM scores WHERE sample < ? GROUP BY 1",
            (samples or 2**62,),
        )
    )
    benchmarks = {}
    for name in sorted(reports.keys() | scored.keys()):
        report = reports.get(name, {})
        keys = config.get("sampling_keys")
        exact = keys.get(name) if isinstance(keys, dict) else None
        key = exact if isinstance(exact, str) else sampling
        counts, failures = _failures(connection, name, model, key, samples, examples)
        items, verdicts = _verdicts(connection, name, samples)
        try:
            kind, metrics, breakdowns = _summarise(name, report)
        except (KeyError, TypeError, ValueError) as exc:
            raise ReportDataError(
                f"{where}: results.report of {name!r}: unexpected shape "
                f"({type(exc).__name__}: {exc})"
            ) from None
        benchmarks[name] = BenchmarkResult(
            name,
            kind,
            report,
            metrics,
            breakdowns,
            failures,
            counts,
            scored.get(name, 0),
            verdicts,
            items,
        )
    return Run(
        path,
        str(run_id),
        str(model),
        str(status),
        str(message),
        float(created),
        float(updated),
        config,
        benchmarks,
    )


def _json(text: str, what: str) -> Any:
    try:
        return parse_json(text)
    except (TypeError, json.JSONDecodeError) as exc:
        raise ReportDataError(f"{what}: not valid JSON ({exc})") from None


def _sampling_key(sampling: Any) -> str | None:
    """The completion cache's sampling key of the run (see ``Sampling.key``)."""
    if isinstance(sampling, str):
        return sampling
    if isinstance(sampling, dict):
        try:
            return Sampling(**{**sampling, "stop": tuple(sampling.get("stop", ()))}).key()
        except TypeError:
            return json.dumps(sampling, sort_keys=True, separators=(",", ":"))
    return None


_FAILURES = """
SELECT s.item_id, s.sample, s.answer, s.reason, s.detail, s.skipped,
       i.category, i.task, i.truth, i.prompt_hash
FROM scores s LEFT JOIN items i ON i.benchmark = s.benchmark AND i.item_id = s.item_id
WHERE s.benchmark = ? AND s.sample < ? AND (s.correct = 0 OR s.skipped = 1)
"""
# Prefer the run's own sampling key; any stored sampling of the same prompt and sample else.
_COMPLETION = """
SELECT text FROM completions WHERE model = ? AND prompt_hash = ? AND sample = ?
ORDER BY sampling != ?, sampling LIMIT 1
"""


_ITEMS = """
SELECT item_id, task, truth, metadata FROM items WHERE benchmark = ?
"""
_VERDICTS = """
SELECT item_id, sample, answer, correct, reason, detail, skipped FROM scores
WHERE benchmark = ? AND sample < ? ORDER BY item_id, sample
"""


def _verdicts(
    connection: sqlite3.Connection, benchmark: str, samples: int | None
) -> tuple[dict[str, Item], dict[str, tuple[Score, ...]]]:
    """The benchmark's stored items and the verdicts of those holding all ``samples``."""
    items = {}
    for item_id, task, truth, metadata in connection.execute(_ITEMS, (benchmark,)):
        try:
            meta = parse_json(metadata)
        except (TypeError, json.JSONDecodeError):
            meta = {}
        items[str(item_id)] = Item(
            str(item_id), benchmark, str(task), truth=str(truth), metadata=meta
        )
    found: dict[str, list[Score]] = {}
    for item_id, sample, answer, correct, reason, detail, skipped in connection.execute(
        _VERDICTS, (benchmark, samples or 2**62)
    ):
        verdict = Score(
            item_id, sample, answer, bool(correct), _reason(reason), detail, bool(skipped)
        )
        found.setdefault(str(item_id), []).append(verdict)
    wanted = samples or max((len(scores) for scores in found.values()), default=0)
    complete = {key: tuple(value) for key, value in found.items() if len(value) == wanted}
    return {key: items[key] for key in complete if key in items}, complete


def _reason(text: str) -> Reason:
    try:
        return Reason(text)
    except ValueError:
        return Reason.WRONG


def reported_items(report: Mapping[str, Any]) -> int:
    """The items a stored report counts (0 when its count is of another shape)."""
    items = report.get("items")
    if isinstance(items, dict):
        return sum(value for value in items.values() if isinstance(value, int))
    return items if isinstance(items, int) else 0


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key reading digit runs as numbers ('sample_2' before 'sample_10')."""
    return tuple(
        # isdecimal, not isdigit: "²" is a digit that int() does not read
        (0, int(part)) if part.isdecimal() else (1, part)
        for part in re.split(r"(\d+)", text)
        if part
    )


_PROMPTS = """
SELECT DISTINCT p.text FROM items i JOIN prompts p ON p.hash = i.prompt_hash
WHERE i.benchmark = ?
"""


def _preamble(connection: sqlite3.Connection, benchmark: str) -> int:
    """The length of the lines every prompt of the benchmark starts with (its few-shot
    examples and instructions); 0 with fewer than two distinct prompts."""
    prompts = [text for (text,) in connection.execute(_PROMPTS, (benchmark,))]
    if len(prompts) < 2:
        return 0
    first, last = min(prompts), max(prompts)  # the prefix they share, every prompt shares
    length = next(
        (i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first)
    )
    return first.rfind("\n", 0, length) + 1


def _failures(
    connection: sqlite3.Connection,
    benchmark: str,
    model: str,
    sampling: str | None,
    samples: int | None,
    keep: int,
) -> tuple[dict[str, int], dict[str, tuple[Failure, ...]]]:
    """Failures per category (all counted, the first ``keep`` in item order kept)."""
    counts: dict[str, int] = {}
    kept: dict[str, list[Failure]] = {}
    rows = connection.execute(_FAILURES, (benchmark, samples or 2**62)).fetchall()
    preamble = _preamble(connection, benchmark) if rows and keep else 0
    rows.sort(key=lambda row: (natural_key(str(row[6])), natural_key(str(row[0])), row[1]))
    for row in rows:
        item_id, sample, answer, reason, detail, skipped, category, task, truth, prompt_hash = row
        category = "?" if category is None else str(category)
        counts[category] = counts.get(category, 0) + 1
        chosen = kept.setdefault(category, [])
        if len(chosen) >= keep:
            continue
        prompt = completion = None
        if prompt_hash is not None:
            found = connection.execute(
                "SELECT text FROM prompts WHERE hash = ?", (prompt_hash,)
            ).fetchone()
            prompt = found[0] if found else None
            found = connection.execute(
                _COMPLETION, (model, prompt_hash, sample, sampling or "")
            ).fetchone()
            completion = found[0] if found else None
        chosen.append(
            Failure(
                str(item_id),
                int(sample),
                category,
                task or "",
                prompt,
                completion,
                answer,
                truth or "",
                str(reason),
                str(detail),
                bool(skipped),
                preamble if prompt is not None and len(prompt) > preamble else 0,
            )
        )
    return counts, {name: tuple(rows) for name, rows in kept.items()}


def _summarise(
    name: str, report: dict[str, Any]
) -> tuple[str, tuple[Metric, ...], tuple[Breakdown, ...]]:
    """The report's family, its headline metrics and its per-category tables."""
    typed = load_report(name, report)
    if typed is None:
        return OTHER, (), ()
    return typed.kind, typed.metrics(), typed.breakdowns()


def short_model(model: str) -> str:
    """A model's name without its backend, server URL or folders: ``openai:qwen@http://host/v1``
    and ``vllm:/models/qwen`` are both ``qwen``."""
    name = re.sub(r"^[a-z][\w-]*:(?!//)", "", model)
    before, _, after = name.rpartition("@")
    name = before if "://" in after else name
    return name.rstrip("/").rsplit("/", 1)[-1] or model


def run_labels(runs: Sequence[Run]) -> list[str]:
    """A short, unique label per run: the model's short name (:func:`short_model`), with the
    run's folder where names repeat."""
    names = [short_model(run.model) for run in runs]
    labels = [
        name if names.count(name) == 1 else f"{name} ({run.folder})"
        for name, run in zip(names, runs, strict=True)
    ]
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return unique


def benchmark_names(runs: Sequence[Run]) -> list[str]:
    """Every benchmark any run holds, sorted."""
    return sorted({name for run in runs for name in run.benchmarks})


def metric_names(runs: Sequence[Run], benchmark: str) -> list[str]:
    """The benchmark's metric names across runs, in first-seen order."""
    names: list[str] = []
    for run in runs:
        result = run.benchmarks.get(benchmark)
        for metric in result.metrics if result else ():
            if metric.name not in names:
                names.append(metric.name)
    return names
