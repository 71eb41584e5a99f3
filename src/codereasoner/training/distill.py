"""Teacher chains of thought by rejection sampling over synthesized cases (CodeReasoner §3.2).

    settings = DistillSettings(cases=Path("runs/synth"), k=4)
    with Distiller(Path("runs/distill"), backend, settings) as distiller:
        summary = distiller.run()

The cases become forward, backward and probe items (:mod:`codereasoner.training.cases`;
``probe``: ``probes_per_case`` questions about intermediate states of the call, from our trace)
of the cases benchmark (:mod:`codereasoner.families.cases`; for the run, a variant with these
directions, hints and probes stands in the registry) and run through the evaluation runner:
``k`` teacher samples per item, each stored in ``OUT/run.sqlite`` as it arrives (without a
reasoning model's hidden thinking: :mod:`codereasoner.models.thinking`) and verified by its task
kind (a literal compared in the parent; a literal call run in the sandbox; a probe's
answer matched against its traced truth). A killed run resumes without asking the teacher
again. From the stored verdicts, ``OUT/distilled.jsonl`` keeps, per item, the shortest verified
chain, with ``n_tried`` and every rejected sample's verdict and reason, and the case's probed
values (``probes``: the process reward's column, from our trace of the call);
``OUT/distill_summary.json`` and ``distill_summary.png`` give acceptance by direction, method,
control depth, probe kind and rejection reason. Both are rewritten whole (atomically) from the
store, so a resumed run writes the same bytes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codereasoner import benchmarks
from codereasoner.benchmarks import Benchmark
from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.benchmarks.case_files import cases_file, cases_folder
from codereasoner.evaluation.run_settings import refused
from codereasoner.evaluation.runner import Events, RunError, Runner, RunSettings
from codereasoner.evaluation.store import RunStore, StoredCompletion
from codereasoner.execution import Executor, SandboxUnavailable, open_executor
from codereasoner.families.cases.benchmark import CASES
from codereasoner.families.cases.reasoning import ReasoningStyle
from codereasoner.files import parse_json, write_atomic
from codereasoner.models.base import Backend, Sampling
from codereasoner.models.thinking import WithoutThinking, visible_text
from codereasoner.synth.writer import FolderBusy, exclusive
from codereasoner.tasks import Item, Reason, Score
from codereasoner.training.cases import (
    BENCHMARK,
    DIRECTIONS,
    PROBE,
    case_items,
    check_directions,
    draw_probes,
    read_cases,
    trace_cases,
    trace_hints,
)
from codereasoner.training.process import probed_values
from codereasoner.training.summary import write_summary

__all__ = ["DISTILLED", "DistillSettings", "DistillSummary", "Distiller", "cases_folder"]

DISTILLED = "distilled.jsonl"
SETTINGS = "distill.json"  # what the folder's run distils: a resumed run must match it
# What distil writes beside its run store.
OWN_FILES = (DISTILLED, SETTINGS, "distill_summary.json", "distill_summary.png")
HINTS = ("trace",)


@dataclass(frozen=True)
class DistillSettings:
    cases: Path  # a synthesis folder holding cases.jsonl, or the file itself
    k: int = 4
    directions: tuple[str, ...] = ("forward", "backward")
    style: str = ReasoningStyle.REASONING
    hint: str | None = None  # "trace": the teacher also sees our trace of the call
    probes_per_case: int = 2  # probe items per case (direction "probe")
    sampling: Sampling = field(default_factory=lambda: Sampling(temperature=0.7, max_tokens=4096))
    chat: bool = True
    limit: int | None = None
    timeout: float | None = None
    workers: int | None = None
    isolation: str = "auto"
    executor: str | None = None  # local, ray or ray:ADDRESS (default: $CODEREASONER_EXECUTOR)

    def fixed(self) -> dict[str, Any]:
        """What a resumed run must repeat (the runner checks sampling and prompts itself)."""
        # keyword form: these are the settings' field names
        fixed: dict[str, Any] = dict(
            cases=str(cases_file(self.cases).resolve()),
            directions=list(self.directions),
            hint=self.hint,
        )
        if PROBE in self.directions:  # runs without probes keep the folders they made before
            fixed["probes_per_case"] = self.probes_per_case
        return fixed


@dataclass
class DistillSummary:
    out: Path
    teacher: str
    items: int
    accepted: int
    generated: int
    cached: int
    tables: dict[str, Any]
    self_check: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "teacher": self.teacher,
            "items": self.items,
            "accepted": self.accepted,
            "generated": self.generated,
            "cached": self.cached,
            "self_check": self.self_check,
            **self.tables,
        }


def _truncated(score: Score) -> Score:
    detail = "cut at --max-tokens" + ("; its answer was right" if score.correct else "")
    return replace(score, correct=False, reason=Reason.TRUNCATED, detail=detail)


class Distiller:
    """Distils into ``out`` (see the module); ``pool`` is the caller's when given."""

    def __init__(
        self,
        out: Path,
        backend: Backend,
        settings: DistillSettings,
        events: Events | None = None,
        *,
        pool: Executor | None = None,
    ) -> None:
        if settings.k < 1:
            raise refused("k", settings.k, "at least 1 sample per item")
        if settings.hint is not None and settings.hint not in HINTS:
            raise refused("hint", settings.hint, " or ".join(HINTS))
        if settings.probes_per_case < 1:
            raise refused("probes_per_case", settings.probes_per_case, "at least 1")
        if settings.style not in tuple(ReasoningStyle):
            names = ", ".join(style.value for style in ReasoningStyle)
            raise refused("style", settings.style, f"one of {names}")
        self.out = Path(out)
        self.backend = backend
        self.settings = settings
        self.events = events
        self.folder = cases_folder(settings.cases)
        self.cases_path = cases_file(settings.cases)
        try:
            self.cases = read_cases(self.cases_path)
        except DataUnavailable as exc:
            raise RunError(str(exc)) from None
        if not self.cases:
            raise RunError(f"{self.cases_path}: no cases")
        try:
            check_directions(settings.directions)
        except ValueError as exc:
            raise RunError(str(exc)) from None
        self._lock = contextlib.ExitStack()
        self._declared = contextlib.ExitStack()  # the run's benchmark, in the registry
        self._own_pool = pool is None
        self._pool = pool
        self._runner: Runner | None = None
        self._probed: dict[str, list[dict[str, Any]]] = {}  # case id -> its process column

    def __enter__(self) -> Distiller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._runner = None
        self._declared.close()
        if self._pool is not None and self._own_pool:
            self._pool.close()
        self._pool = None
        self._lock.close()

    def pool(self) -> Executor:
        if self._pool is None:
            try:
                self._pool = open_executor(
                    self.settings.executor,
                    self.settings.workers,
                    isolation=self.settings.isolation,
                    grading=True,
                )
            except (SandboxUnavailable, ValueError) as exc:
                raise RunError(f"sandbox unavailable: {exc}") from None
        return self._pool

    def check_resumable(self) -> None:
        path = self.out / SETTINGS
        if not path.exists():
            return
        try:
            stored = parse_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunError(f"{path}: unreadable ({exc}); choose another --out") from None
        for key, value in self.settings.fixed().items():
            if stored.get(key) != value:
                raise RunError(
                    f"{self.out}: distils {key}={json.dumps(stored.get(key))}, this "
                    f"run asks {key}={json.dumps(value)} (choose another --out)"
                )

    def _declare(self) -> Benchmark:
        """The cases benchmark over this run's cases, directions, hints and probes; also each
        case's probed values, for the records."""
        settings = self.settings
        traces = trace_cases(self.pool(), self.cases)
        hints = trace_hints(self.pool(), self.cases, traces) if settings.hint == "trace" else None
        asked, probes = draw_probes(self.cases, traces, settings.probes_per_case)
        by_id = {case.id: case for case in self.cases}
        self._probed = {
            case_id: [
                entry.to_dict()
                for entry in probed_values(
                    traces[case_id], found, code=by_id[case_id].code, call=by_id[case_id].call
                )
            ]
            for case_id, found in probes.items()
        }
        items = case_items(self.cases, settings.directions, hints, asked)
        return replace(
            CASES,
            tasks=tuple(DIRECTIONS[direction] for direction in settings.directions),
            parse=lambda paths: items,
            upstream=str(self.folder),
            counts={"items": len(items)},
            metric_note="pass@k x 100 of the teacher's samples",
        )

    def prepare(self) -> Runner:
        """Declare the items and check the folder's run against these settings (RunError),
        writing nothing; :meth:`run` does it when not done yet."""
        self.check_resumable()
        if self._runner is not None:
            return self._runner
        self._declared.enter_context(benchmarks.standing_in(self._declare()))
        settings = self.settings
        run = RunSettings(
            benchmarks=(BENCHMARK,),
            n=settings.k,
            sampling=settings.sampling,
            style=settings.style,
            grading="strict",
            chat=settings.chat,
            limit=settings.limit,
            data_dir=self.cases_path,
            timeout=settings.timeout,
            workers=settings.workers,
            isolation=settings.isolation,
        )
        # A thinking teacher's hidden thinking is neither verified nor kept: only its chain.
        teacher = WithoutThinking(self.backend)
        runner = Runner(
            self.out,
            teacher,
            run,
            self.events,
            pool_factory=self.pool,
            lock=False,
            companion_files=OWN_FILES,
        )
        runner.check_resumable()
        self._runner = runner
        return runner

    def run(self) -> DistillSummary:
        """Distil (see the module); RunError while another process writes into ``out``."""
        runner = self.prepare()
        settings = self.settings
        try:
            self._lock.enter_context(exclusive(self.out))  # held until close()
        except FolderBusy as exc:
            raise RunError(str(exc)) from None
        write_atomic(self.out / SETTINGS, json.dumps(settings.fixed(), indent=2) + "\n")
        with runner:
            result = runner.run()
        plan = runner.plans[0]
        with RunStore(self.out) as store:
            scores = store.scores(BENCHMARK, settings.k)
            texts = store.completions(
                self.backend.model_id, plan.sampling.key(), set(plan.hashes.values()), settings.k
            )
        records = [
            distilled_record(
                item,
                plan.prompts[item.id],
                scores[item.id],
                [texts[(plan.hashes[item.id], s)] for s in range(settings.k)],
                settings.style,
                self.backend.model_id,
                probes=self._probed.get(item.metadata["case_id"], []),
            )
            for item in plan.items
        ]
        write_atomic(self.out / DISTILLED, "".join(json.dumps(r) + "\n" for r in records))
        tables = write_summary(self.out, records)
        return DistillSummary(
            out=self.out,
            teacher=self.backend.model_id,
            items=len(records),
            accepted=sum(record["verified"] for record in records),
            generated=result.generated.get(BENCHMARK, 0),
            cached=result.cached.get(BENCHMARK, 0),
            tables=tables,
            self_check=None if result.self_check is None else result.self_check[BENCHMARK],
        )


def distilled_record(
    item: Item,
    prompt: str,
    scores: Sequence[Score],
    samples: Sequence[StoredCompletion],
    style: str,
    teacher: str,
    *,
    probes: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """One item's line of ``distilled.jsonl``: its shortest verified chain (fewest characters,
    then the earliest sample), or none, and the verdict of every rejected sample. A chain the
    token limit cut is rejected (``truncated``) even when its answer is right: it would teach
    an unfinished chain. A probe record also holds its ``question``, ``truth`` and ``probe``
    (kind, dimensions, line, name, difficulty features); ``output`` is the case's output in
    every record. ``probes``: the case's probed values (the process reward's column). A chain
    is the teacher's visible text: a reasoning model's thinking is never kept."""
    completions = [visible_text(sample.text) for sample in samples]
    cut = {sample.sample for sample in samples if sample.finish_reason == "length"}
    verdicts = [_truncated(score) if score.sample in cut else score for score in scores]
    verified = [score for score in verdicts if score.correct]
    best = min(verified, key=lambda s: (len(completions[s.sample]), s.sample), default=None)
    scores = verdicts
    meta = item.metadata
    record = {
        "id": item.id,
        "case_id": meta["case_id"],
        "direction": meta["direction"],
        "style": str(style),
        "method": meta["method"],
        "depth": meta["depth"],
        "control": [] if meta["control"] == "none" else meta["control"].split("+"),
        "code": item.program,
        "entry_point": item.entry,
        "call": item.call,
        "input": meta["input"],
        "output": meta.get("output", item.truth),
        "prompt": prompt,
        "hint": item.fields.get("hint"),
        "verified": best is not None,
        "n_tried": len(scores),
        "kept": None
        if best is None
        else {"sample": best.sample, "completion": completions[best.sample], "answer": best.answer},
        "rejected": [
            {"sample": s.sample, "reason": s.reason.value, "detail": s.detail, "answer": s.answer}
            for s in scores
            if not s.correct
        ],
        "teacher": teacher,
        "license": meta["license"],
    }
    if meta["direction"] == PROBE:
        record.update(question=item.fields["question"], truth=item.truth, probe=meta["probe"])
    record["probes"] = [dict(entry) for entry in probes]
    return record
