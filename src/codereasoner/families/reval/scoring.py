"""Score REval generations: read them (our JSON Lines or REval's own logs), grade, add up.

Formats:

- JSON Lines, one sample per line: ``{"id": "DREval/0/0/17/coverage", "sample": 0,
  "completion": "..."}`` (raw model text, extracted with the item's kind's rules) or ``"answer"``
  (already extracted). Any subset of the four kinds may be given; every item of a given kind
  needs the same number of samples (repeats).
- REval logs (``model_generations/{task}@.../*.jsonl``): one line per program ``{"task_id",
  "generation": [{"input_idx", "results": [{"generated", ...}]}]}`` and a final metrics line. A
  file is one repeat of one kind (found from the results' keys); a directory is searched for
  such files, each kind's logs in name order being its repeats. ``generated`` is re-graded here;
  the log's own verdicts are kept for comparison.

Metrics are computed per repeat and averaged. No answer is dropped: unparsable ones are wrong.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codereasoner import tasks
from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.generations import GenerationsError
from codereasoner.execution import Executor, Limits
from codereasoner.families.reval.benchmark import KINDS, LIMITS
from codereasoner.families.reval.metrics import (
    accuracy,
    coverage_counts,
    incremental_consistency,
)
from codereasoner.files import read_text_bounded
from codereasoner.tasks import Answer, Extracted, Grading, Item, Reason, Score, run_plans
from codereasoner.tasks.plans import Memo

__all__ = [
    "KINDS",
    "LIMITS",
    "RevalScored",
    "read_reval_generations",
    "score_reval",
    "subset_hint",
    "subset_items",
]

Extract = Callable[[Item, str], Extracted]


@dataclass
class Generations:
    """Answers per item id (sample order) and, for REval logs, the logs' own verdicts."""

    format: str
    answers: dict[str, list[Extracted]]
    logged: dict[str, list[bool]] = field(default_factory=dict)


def read_reval_generations(path: Path, items: Sequence[Item], extract: Extract) -> Generations:
    """Read ``path`` (a JSON Lines file, an REval log, or a directory of logs)."""
    path = Path(path)
    if path.is_dir():
        return _complete(path, _logs(sorted(path.rglob("*.jsonl")), items, extract), items)
    try:
        text = read_text_bounded(path)
    except FileNotFoundError:
        raise GenerationsError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GenerationsError(f"{path}: cannot read ({exc})") from None
    first = next((line for line in text.split("\n") if line.strip()), "")
    if not first:
        raise GenerationsError(f"{path}: empty file; expected JSON Lines or an REval log")
    if '"generation"' in first and '"task_id"' in first:
        return _complete(path, _logs([path], items, extract), items)
    return _complete(path, Generations("jsonl", _jsonl(path, text, items, extract)), items)


def _record(where: str, line: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise GenerationsError(f"{where}: invalid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise GenerationsError(f"{where}: expected a JSON object")
    return record


def _jsonl(
    path: Path, text: str, items: Sequence[Item], extract: Extract
) -> dict[str, list[Extracted]]:
    by_id = {item.id: item for item in items}
    found: dict[str, dict[int, Extracted]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        record = _record(where, line)
        item_id, sample = record.get("id"), record.get("sample")
        if not isinstance(item_id, str):
            raise GenerationsError(f"{where}: field 'id' must be a string")
        if item_id not in by_id:
            raise GenerationsError(
                f"{where}: field 'id': unknown REval item {item_id!r} (ids "
                "look like 'DREval/0/0/17/coverage')"
            )
        if not isinstance(sample, int) or isinstance(sample, bool) or sample < 0:
            raise GenerationsError(f"{where}: field 'sample' must be an integer >= 0")
        if sample in found.setdefault(item_id, {}):
            raise GenerationsError(f"{where}: duplicate sample {sample} of {item_id!r}")
        has_completion, has_answer = "completion" in record, "answer" in record
        if has_completion == has_answer:
            raise GenerationsError(f"{where}: give exactly one of 'completion' and 'answer'")
        name = "completion" if has_completion else "answer"
        value = record[name]
        if not isinstance(value, str):
            raise GenerationsError(f"{where}: field {name!r} must be a string")
        found[item_id][sample] = extract(by_id[item_id], value) if has_completion else Answer(value)
    answers = {}
    for item_id, samples in found.items():
        if sorted(samples) != list(range(len(samples))):
            missing = min(set(range(len(samples))) - set(samples))
            raise GenerationsError(f"{path}: {item_id!r}: sample {missing} is missing")
        answers[item_id] = [samples[index] for index in range(len(samples))]
    return answers


def _log_kind(where: str, results: list[Any]) -> str | None:
    for result in results:
        if not isinstance(result, dict) or not isinstance(result.get("generated"), str):
            raise GenerationsError(f"{where}: each result needs a string 'generated'")
        if "pass" in result:
            return "output"
        if "eq" in result:
            return "state"
        if "expected" in result:
            return "coverage" if isinstance(result["expected"], bool) else "path"
    return None


def _logs(files: Sequence[Path], items: Sequence[Item], extract: Extract) -> Generations:
    index: dict[tuple[str, int, str], list[Item]] = {}
    for item in items:
        key = (str(item.metadata["task_id"]), int(item.metadata["input_idx"]), item.task)
        index.setdefault(key, []).append(item)
    out = Generations("reval-log", {})
    for path in files:
        try:
            text = read_text_bounded(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise GenerationsError(f"{path}: cannot read ({exc})") from None
        lines = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
        records = [(n, _record(f"{path}:{n}", line)) for n, line in lines]
        records = [(n, r) for n, r in records if "task_id" in r]  # the last line holds metrics
        if not records:
            continue
        for number, record in records:
            where = f"{path}:{number}"
            generation = record.get("generation")
            if not isinstance(generation, list):
                raise GenerationsError(f"{where}: field 'generation' must be a list")
            for position, entry in enumerate(generation):
                inner = f"{where}: field 'generation[{position}]'"
                if not isinstance(entry, dict) or not isinstance(entry.get("results"), list):
                    raise GenerationsError(f"{inner} needs 'input_idx' and a 'results' list")
                kind = _log_kind(inner, entry["results"])
                input_idx = entry.get("input_idx")
                if not isinstance(input_idx, int) or isinstance(input_idx, bool):
                    raise GenerationsError(f"{inner}: field 'input_idx' must be an integer")
                if kind is None:
                    continue
                key = (str(record["task_id"]), input_idx, kind)
                targets = index.get(key)
                if targets is None or len(targets) != len(entry["results"]):
                    raise GenerationsError(
                        f"{inner}: {len(entry['results'])} {kind} results "
                        f"for {key[0]} input {key[1]}, expected "
                        f"{len(targets or [])}"
                    )
                for item, result in zip(targets, entry["results"], strict=True):
                    out.answers.setdefault(item.id, []).append(extract(item, result["generated"]))
                    out.logged.setdefault(item.id, []).append(_logged(kind, result))
    return out


def _logged(kind: str, result: Mapping[str, Any]) -> bool:
    if kind == "coverage":
        return result.get("response") == result.get("expected")
    if kind == "path":
        expected = result.get("expected") or []
        return any(line in expected for line in result.get("response") or [])
    return bool(result.get("eq" if kind == "state" else "pass"))


def _complete(path: Path, found: Generations, items: Sequence[Item]) -> Generations:
    present = {item.task for item in items if item.id in found.answers}
    if not present:
        raise GenerationsError(f"{path}: no REval generations found")
    for kind in KINDS:
        if kind not in present:
            continue
        mine = [item for item in items if item.task == kind]
        missing = [item.id for item in mine if item.id not in found.answers]
        if missing:
            raise GenerationsError(
                f"{path}: {len(missing)} of {len(mine)} {kind} items have no "
                f"generations (first: {missing[0]!r})"
            )
        counts = Counter(len(found.answers[item.id]) for item in mine)
        if len(counts) > 1:
            raise GenerationsError(
                f"{path}: {kind} items have different numbers of samples "
                f"({', '.join(map(str, sorted(counts)))})"
            )
    return found


@dataclass
class RevalScored:
    """Every sample's verdict and the REval metrics per repeat, then averaged."""

    items: list[Item]
    scores: dict[str, list[Score]]

    def kinds(self) -> list[str]:
        return [
            kind for kind in KINDS if any(i.task == kind for i in self.items if i.id in self.scores)
        ]

    def repeats(self, kind: str) -> int:
        return next(
            len(self.scores[i.id]) for i in self.items if i.task == kind and i.id in self.scores
        )

    def metrics(self, repeat: int, items: Sequence[Item] | None = None) -> dict[str, Any]:
        # ``items`` empty: no item (an empty group has no metrics, never all items' metrics)
        chosen = [i for i in (self.items if items is None else items) if i.id in self.scores]
        by_kind = {kind: [i for i in chosen if i.task == kind] for kind in self.kinds()}
        out: dict[str, Any] = {}
        for kind, group in by_kind.items():
            if repeat >= self.repeats(kind) or not group:
                continue
            flags = [self.scores[i.id][repeat].correct for i in group]
            if kind == "coverage":
                truths = [bool(i.truth_value()) for i in group]
                out[kind] = coverage_counts(zip(truths, flags, strict=True)).to_dict()
            else:
                out[kind] = accuracy(flags)
        if len(out) == len(KINDS):
            out["avg_acc"] = sum(
                out["coverage"]["acc"] if k == "coverage" else out[k] for k in KINDS
            ) / len(KINDS)
            out["consistency"] = incremental_consistency(self._rows(by_kind, repeat))
        return out

    def _rows(
        self, by_kind: Mapping[str, list[Item]], repeat: int
    ) -> list[tuple[bool, bool, bool, bool]]:
        outputs = {self._pair(i): self.scores[i.id][repeat].correct for i in by_kind["output"]}
        right = {
            kind: {
                (self._pair(i), i.metadata["lineno"]): self.scores[i.id][repeat].correct
                for i in by_kind[kind]
            }
            for kind in ("coverage", "state", "path")
        }
        return [
            (right["coverage"][key], right["state"][key], right["path"][key], outputs[key[0]])
            for key in right["coverage"]
        ]

    @staticmethod
    def _pair(item: Item) -> tuple[str, int]:
        return str(item.metadata["task_id"]), int(item.metadata["input_idx"])

    def mean_metrics(self, items: Sequence[Item] | None = None) -> dict[str, Any]:
        """The metrics of each repeat, averaged."""
        count = max(self.repeats(kind) for kind in self.kinds())
        runs = [self.metrics(r, items) for r in range(count)]
        return _mean(runs)

    def reasons(self) -> dict[str, dict[str, int]]:
        tally: dict[str, Counter[str]] = {}
        for item in self.items:
            for score in self.scores.get(item.id, []):
                tally.setdefault(item.task, Counter())[score.reason.value] += 1
        return {kind: dict(counter.most_common()) for kind, counter in tally.items()}

    def sandbox_errors(self) -> int:
        return sum(s.reason is Reason.SANDBOX_ERROR for ss in self.scores.values() for s in ss)


def _mean(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in runs[0] if runs else ():
        present = [run[key] for run in runs if key in run]
        if isinstance(present[0], dict):
            out[key] = {name: sum(p[name] for p in present) / len(present) for name in present[0]}
        else:
            out[key] = sum(present) / len(present)
    return out


def score_reval(
    items: Sequence[Item],
    answers: Mapping[str, Sequence[Extracted]],
    pool: Executor | None,
    limits: Limits = LIMITS,
    grading: Grading = Grading.OFFICIAL,
    memo: Memo | None = None,
) -> RevalScored:
    """Grade every answered item; output answers run in ``pool`` (batched per program).
    ``grading``: strict refuses output answers whose holes are not literals."""
    chosen = [item for item in items if item.id in answers]
    plans = [tasks.get(item.task).plan(item, answers[item.id], grading) for item in chosen]
    results = run_plans(pool, plans, limits, memo)
    return RevalScored(list(items), {i.id: r for i, r in zip(chosen, results, strict=True)})


def subset_items(bench: Benchmark, path: Path, items: list[Item]) -> list[Item]:
    """The items of every group the file names (JSON Lines ids, or the logs' programs and
    inputs): a first, lenient look; reading the file proper reports what is wrong with it."""
    by_id = {item.id: item for item in items}
    by_pair = {_pair(item): bench.group(item) for item in items}
    groups: set[str] = set()
    for file in sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]:
        try:
            lines = read_text_bounded(file).split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        for line in filter(str.strip, lines):
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(record, dict):
                continue
            item_id, generation = record.get("id"), record.get("generation")
            if isinstance(item_id, str) and item_id in by_id:
                groups.add(bench.group(by_id[item_id]))
            for entry in generation if isinstance(generation, list) else []:
                index = entry.get("input_idx") if isinstance(entry, dict) else None
                pair = (str(record.get("task_id")), index)
                if isinstance(index, int) and pair in by_pair:
                    groups.add(by_pair[pair])
    return [item for item in items if bench.group(item) in groups]


def subset_hint(bench: Benchmark, path: Path, items: list[Item], extract: Extract) -> str:
    """The hint for a file refused for lacking items that ``--subset`` would score."""
    try:
        read_reval_generations(path, subset_items(bench, path, items), extract)
    except GenerationsError:
        return ""
    return "; score only the items the file has with --subset"


def _pair(item: Item) -> tuple[str, object]:
    """How REval's logs name an item's program and input."""
    return str(item.metadata.get("task_id")), item.metadata.get("input_idx")
