"""Score a benchmark's generations: verdicts per sample, pass@k, breakdowns, strict report."""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from codereasoner import benchmarks, tasks, values
from codereasoner.benchmarks import Benchmark, DataUnavailable
from codereasoner.evaluation.metrics import Counts, breakdown, item_counts, pass_table
from codereasoner.execution import Executor, Limits
from codereasoner.files import replacing
from codereasoner.models.base import cut_at_stop
from codereasoner.settings import SettingError, check_at_least
from codereasoner.tasks import (
    OFFICIAL_LIMITS,
    Answer,
    Extracted,
    Grading,
    Item,
    Reason,
    Score,
    run_plans,
)
from codereasoner.tasks.oracle import NoOracleAnswer
from codereasoner.tasks.plans import MAX_ANSWER_CHARS, Memo

# Why official and strict verdicts differ, by (official reason, strict reason).
DISAGREEMENT_NOTES = {
    ("correct", "not_a_literal"): "an expression, not a literal: upstream executes it and it "
    "evaluates to the right value",
    ("correct", "wrong_entry"): "upstream executes any expression that contains 'f('",
    ("error", "correct"): "a literal upstream cannot evaluate (JSON spelling true/false/null or "
    "a bare inf/nan name raises NameError)",
    ("syntax_error", "correct"): "parses as a literal alone but not spliced into "
    "'assert gold == ...' (e.g. an unparenthesised tuple becomes the assertion's message)",
    ("wrong_value", "correct"): "strict parsing reads the literal differently from upstream's "
    "splice (operator precedence)",
    ("copied", "not_a_literal"): "a copy of the question's call: skipped upstream (shrinking n), "
    "a failure here",
}


@dataclass
class Scored:
    """Every sample's verdict under one grading, and what it adds up to."""

    benchmark: Benchmark
    items: list[Item]
    grading: Grading
    scores: dict[str, list[Score]]
    copies: str = "official"
    counts: dict[str, Counts] = field(init=False)

    def __post_init__(self) -> None:
        policy = self.copies if self.grading is Grading.OFFICIAL else "fail"
        self.counts = {key: item_counts(value, policy) for key, value in self.scores.items()}

    @property
    def small_n(self) -> str:
        # Upstream's shrinking n can leave fewer than k samples; only then is n < k allowed.
        return (
            "upstream"
            if self.grading is Grading.OFFICIAL and self.copies == "official"
            else "error"
        )

    def pass_at(self, ks: Sequence[int]) -> dict[str, float]:
        return {
            key: 100 * value
            for key, value in pass_table(self.counts, ks, small_n=self.small_n).items()
        }

    def by_category(self, ks: Sequence[int]) -> dict[str, dict[str, float]]:
        categories = {item.id: self.benchmark.category(item) for item in self.items}
        table = breakdown(self.counts, categories, ks, small_n=self.small_n)
        return {
            name: {key: value if key == "items" else 100 * value for key, value in row.items()}
            for name, row in table.items()
        }

    def reasons(self) -> dict[str, int]:
        tally = Counter(score.reason.value for scores in self.scores.values() for score in scores)
        return dict(tally.most_common())


def default_ks(
    answers: Mapping[str, Sequence[Extracted]], wanted: Sequence[int] = (1, 5)
) -> list[int]:
    """The pass@k values of ``wanted`` that every item has enough samples for (at least 1)."""
    fewest = min((len(value) for value in answers.values()), default=1)
    return [k for k in wanted if k <= fewest] or [1]


def check_ks(ks: Sequence[int], answers: Mapping[str, Sequence[Extracted]]) -> None:
    """Every item needs at least k samples for pass@k (the estimator is undefined below)."""
    fewest = min(answers.items(), key=lambda pair: len(pair[1]))
    for k in ks:
        check_at_least(1, k=k)
        have = len(fewest[1])
        if have < k:
            raise SettingError(
                "k",
                k,
                f"at most {have} (pass@{k} needs at least {k} samples per item; {fewest[0]!r} "
                f"has {have}; without it, the pass@k the file supports are reported)",
            )


def score(
    benchmark: Benchmark,
    items: Sequence[Item],
    answers: Mapping[str, Sequence[Extracted]],
    pool: Executor | None,
    *,
    grading: Grading | str = Grading.OFFICIAL,
    copies: str = "official",
    limits: Limits = OFFICIAL_LIMITS,
    memo: Memo | None = None,
) -> Scored:
    """Grade every item's answers (all sandbox work batched through ``pool``).

    Pass the same ``memo`` to grade again (e.g. strictly) without re-running the same calls.
    """
    chosen = Grading(grading)
    plans = [tasks.get(item.task).plan(item, answers[item.id], chosen) for item in items]
    results = run_plans(pool, plans, limits, memo)
    scores = {item.id: result for item, result in zip(items, results, strict=True)}
    return Scored(benchmark, list(items), chosen, scores, copies)


def strict_report(official: Scored, strict: Scored, examples: int = 3) -> list[dict[str, Any]]:
    """Samples on which official and strict grading disagree, grouped by the pair of reasons."""
    groups: dict[tuple[str, str], list[tuple[Score, Score]]] = {}
    for item_id, verdicts in official.scores.items():
        for first, second in zip(verdicts, strict.scores[item_id], strict=True):
            if (first.correct and not first.skipped) != second.correct:
                key = (first.reason.value, second.reason.value)
                groups.setdefault(key, []).append((first, second))
    rows = []
    for (first_reason, second_reason), pairs in sorted(groups.items(), key=lambda g: -len(g[1])):
        rows.append(
            {
                "official": first_reason,
                "strict": second_reason,
                "count": len(pairs),
                "items": len({pair[0].item_id for pair in pairs}),
                "note": DISAGREEMENT_NOTES.get((first_reason, second_reason), ""),
                "examples": [
                    {
                        "id": a.item_id,
                        "sample": a.sample,
                        "answer": a.answer,
                        "official": a.detail,
                        "strict": b.detail,
                    }
                    for a, b in pairs[:examples]
                ],
            }
        )
    return rows


def sandbox_errors(scored: Scored) -> int:
    return sum(
        score.reason is Reason.SANDBOX_ERROR
        for scores in scored.scores.values()
        for score in scores
    )


# -- warnings about the file as a whole ------------------------------------------------------------

# Verdicts that mean the answer text could not be read as an answer at all.
PARSE_FAILURES = frozenset(
    {Reason.NO_ANSWER, Reason.SYNTAX_ERROR, Reason.NOT_LITERAL, Reason.ANSWER_TOO_LONG}
)
MOSTLY = 0.9  # the share of samples that makes a warning about the whole file


class Shape(StrEnum):
    """What an answer text looks like, told apart without running it."""

    CALL = "calls of the entry point"
    VALUE = "literal values"
    OTHER = "other text"


def answer_shape(item: Item, text: str) -> Shape:
    if len(text) > MAX_ANSWER_CHARS:  # refused by grading before any parsing, too
        return Shape.OTHER
    text = text.strip()
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Shape.OTHER
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name):
        return Shape.CALL if tree.func.id == item.entry else Shape.OTHER
    try:
        values.parse(text)
    except values.ValueParseError:
        return Shape.OTHER
    return Shape.VALUE


def expected_shape(benchmark: Benchmark, item: Item) -> Shape | None:
    """The shape of a perfect answer: the task kind's oracle, cut at the benchmark's stop
    sequences as a generator cuts it, then extracted as the benchmark extracts by default."""
    kind = tasks.get(item.task)
    style = benchmark.styles[0]
    try:
        oracle = kind.oracle(item, style)
    except NoOracleAnswer:
        return None
    text, _ = cut_at_stop(oracle, benchmark.stop(style, chat=False))
    extracted = kind.extract(item, text, style, benchmark.extraction)
    return answer_shape(item, extracted.text) if isinstance(extracted, Answer) else None


def shape_fit(
    benchmark: Benchmark, items: Sequence[Item], answers: Mapping[str, Sequence[Extracted]]
) -> tuple[float | None, Shape | None]:
    """The share of the read answers shaped as ``benchmark``'s perfect answers on the items of
    the same ids (None: no item to compare, or no telling shape such as a call or a value), and
    the commonest shape of the answers."""
    by_id = {item.id: item for item in items}
    fitting = total = 0
    shapes: Counter[Shape] = Counter()
    for item_id, samples in answers.items():
        item = by_id.get(item_id)
        wanted = None if item is None else expected_shape(benchmark, item)
        if item is None or wanted in (None, Shape.OTHER):
            continue
        for answer in samples:
            if isinstance(answer, Answer):
                shape = answer_shape(item, answer.text)
                shapes[shape] += 1
                fitting += shape is wanted
                total += 1
    commonest = shapes.most_common(1)[0][0] if shapes else None
    return (fitting / total if total else None), commonest


def wrong_task_warning(
    benchmark: Benchmark,
    items: Sequence[Item],
    answers: Mapping[str, Sequence[Extracted]],
    siblings: Iterable[tuple[Benchmark, Sequence[Item]]],
) -> str | None:
    """A warning when the answers are shaped like another benchmark's (of the same data) rather
    than this one's: e.g. calls ``f(...)`` where values are expected. ``siblings`` (the other
    benchmarks with their items, such as :func:`same_data`) is read only when they do not fit."""
    fit, commonest = shape_fit(benchmark, items, answers)
    if fit is None or fit >= 1 - MOSTLY:
        return None
    for sibling, sibling_items in siblings:
        other_fit, _ = shape_fit(sibling, sibling_items, answers)
        if other_fit is not None and other_fit >= MOSTLY:
            return (
                f"{other_fit:.0%} of the answers look like {sibling.name} answers "
                f"({(commonest or Shape.OTHER).value}) and only {fit:.0%} like {benchmark.name} "
                f"answers: is this a {sibling.name} file? (score it with --bench {sibling.name})"
            )
    return None


def same_data(
    benchmark: Benchmark, data_dir: Path | None
) -> Iterator[tuple[Benchmark, list[Item]]]:
    """The other benchmarks of the same dataset and metric family, with their items where the
    data is at hand (never downloaded)."""
    for name in benchmarks.names():
        other = benchmarks.get(name)
        if other is benchmark or (other.dataset, other.metrics) != (
            benchmark.dataset,
            benchmark.metrics,
        ):
            continue
        try:
            yield other, other.load(data_dir, download=False)
        except DataUnavailable:
            continue


def stop_sequences(benchmark: Benchmark) -> list[str]:
    """Every stop sequence the benchmark declares (raw, chat and per style), each once."""
    declared = benchmark.stops
    found = [*declared.raw, *(declared.chat or ())]
    found += [stop for stops in declared.styles.values() for stop in stops]
    return list(dict.fromkeys(stop for stop in found if stop.strip()))


def parse_failure_warning(
    benchmark: Benchmark, scores: Mapping[str, Sequence[Score]], fmt: str
) -> str | None:
    """A warning with a hint when nearly every sample failed to parse (a file problem, not the
    model's answers): a stop sequence left in the answers, or the wrong extraction."""
    verdicts = [score for samples in scores.values() for score in samples]
    failed = [score for score in verdicts if score.reason in PARSE_FAILURES]
    if not verdicts or len(failed) < MOSTLY * len(verdicts):
        return None
    reason, count = Counter(score.reason.value for score in failed).most_common(1)[0]
    head = (
        f"{len(failed):,} of {len(verdicts):,} samples failed to parse "
        f"(commonest: {reason}, {count:,})"
    )
    return f"{head}: {_parse_hint(benchmark, failed, fmt)}"


def _parse_hint(benchmark: Benchmark, failed: Sequence[Score], fmt: str) -> str:
    texts = [score.answer or "" for score in failed]
    for stop in stop_sequences(benchmark):
        if sum(stop in text for text in texts) >= len(texts) / 2:
            return (
                f"the answers contain the stop sequence {stop!r}; cut completions at "
                f"{benchmark.name}'s stop sequences (generators stop before them) and score again"
            )
    if fmt == "official":
        return (
            "official-format answers must be extracted answers; give raw completions as JSON "
            "Lines 'completion' fields"
        )
    return "check --style and --extraction (e.g. --extraction robust) for these completions"


# -- per-sample results ---------------------------------------------------------------------------


def sample_results(
    items: Sequence[Item],
    scores: Mapping[str, Sequence[Score]],
    also: Mapping[str, Mapping[str, Sequence[Score]]] | None = None,
) -> Iterator[dict[str, Any]]:
    """One record per item and sample, in item order: the verdict under the chosen grading and,
    keyed by name, the verdicts of ``also`` (e.g. ``strict``)."""
    others = also or {}
    for item in items:
        for index, verdict in enumerate(scores.get(item.id, ())):
            record = {"id": item.id, "sample": index, "task": item.task}
            record |= {"answer": verdict.answer, **_verdict(verdict)}
            for name, other in others.items():
                record[name] = _verdict(other[item.id][index])
            yield record


def _verdict(score: Score) -> dict[str, Any]:
    return {
        "correct": score.correct and not score.skipped,
        "reason": score.reason.value,
        "detail": score.detail,
        "skipped": score.skipped,
    }


def write_results(path: Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write JSON Lines atomically (a crash leaves the old file or none); the number written."""
    count = 0
    with replacing(path) as temporary, temporary.open("w", encoding="utf-8") as stream:
        for record in records:
            stream.write(json.dumps(record) + "\n")
            count += 1
    return count
