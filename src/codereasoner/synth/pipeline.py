"""The synthesis pipeline: candidates in, validated, deduplicated, decontaminated cases out.

For candidate indices ``0 .. n-1``, chunk by chunk::

    source (a generator of codereasoner.synth.generators: offline, or a teacher model)
      -> static filter -> dedup -> decontam -> mutants (pure) -> static filter + dedup per mutant
      -> traced sandbox run, seed 0 (an original and its mutants share a program; up to 16
         programs share a batch, see :mod:`codereasoner.synth.batching`)
      -> result filters -> second hash seed (every case still standing, untraced), next to
         the same program with its sets iterating in reverse (see synth/setorder.py)
      -> mutant selection (new output or coverage only, new coverage first) -> records

Everything before execution runs candidate by candidate in index order, and every random choice
is seeded from (seed, index), so the output depends only on the settings (the chunk size
among them), never on the worker count or interruptions. On resume the pre-execution stages of the finished candidates are
replayed (no execution) to rebuild the dedup state; see :mod:`codereasoner.synth.writer`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from codereasoner.execution import (
    Call,
    CallSyntaxError,
    ExecResult,
    Executor,
    Limits,
    TraceOptions,
    open_executor,
    parse_call,
)
from codereasoner.settings import check_at_least
from codereasoner.synth import generators
from codereasoner.synth.batching import Work, run_grouped
from codereasoner.synth.case import Candidate, Drop
from codereasoner.synth.decontam import BenchmarkIndex, Decontamination
from codereasoner.synth.dedup import Deduper
from codereasoner.synth.filters import (
    FilterConfig,
    check_determinism,
    check_result,
    check_set_order,
    check_static,
)
from codereasoner.synth.mutate import mutants as make_mutants
from codereasoner.synth.mutate import select_mutants
from codereasoner.synth.records import build_record, canonical_output, drop_line
from codereasoner.synth.setorder import perturbed
from codereasoner.synth.summary import Summary, write_summary
from codereasoner.synth.writer import RunWriter, dump_line, exclusive

HASH_SEEDS = (0, 1)
# Versions of the checks whose rules are not settings: a directory written by a version with
# other rules is not resumed into (its records would be judged differently).
MUTANT_SELECTION = "new-output-or-coverage/1"
SET_ORDER_CHECK = "reversed-sets/1"
# Offline cases are written by this project's code (MIT, like the project); cases written by a
# teacher model also fall under that model's terms of use, which the record names.
LICENSE = "MIT"
TEACHER_LICENSE = "MIT; the teacher model's terms of use also apply"


class CandidateSource(Protocol):
    """Where a run's candidates come from (a generator, see :mod:`codereasoner.synth.generators`):
    candidate ``i`` depends only on the settings and ``i``. A source may also have
    ``preflight()`` (called before the first candidate: an unreachable teacher is one error) and
    ``close()``; a ``teacher`` mapping, when it has one, goes into every record."""

    name: str

    def produce(self, indices: range) -> list[Candidate | Drop]:
        """The candidates (or parse drops) for ``indices``, in order."""
        ...

    def committed_lines(self) -> list[str]:
        """Lines for ``generations.jsonl`` produced since the last call (may be empty)."""
        ...


@dataclass(frozen=True)
class SynthConfig:
    """Settings of one run. ``n`` counts *original* candidates drawn from the generator; each
    kept original brings up to ``mutants`` kept mutants on top."""

    out: Path
    n: int
    seed: int = 0
    generator: str = "offline"  # a name in codereasoner.synth.generators.GENERATORS
    generator_options: Mapping[str, Any] = field(default_factory=dict)
    max_output_chars: int = 50
    mutants: int = 2
    mutant_tries: int = 4
    workers: int | None = None
    chunk_size: int = 256
    isolation: str = "auto"
    executor: str | None = None  # local, ray or ray:ADDRESS (default: $CODEREASONER_EXECUTOR)
    timeout_s: float = 1.0
    max_steps: int = 10_000

    def __post_init__(self) -> None:
        _check_counts(
            n=self.n,
            mutants=self.mutants,
            max_output_chars=self.max_output_chars,
            workers=self.workers,
        )
        check_at_least(self.mutants, "at least mutants", mutant_tries=self.mutant_tries)
        check_at_least(1, chunk_size=self.chunk_size)


def _check_counts(*, n: int, mutants: int, max_output_chars: int, workers: int | None) -> None:
    """A SettingError for the first of synth's counts that cannot be used."""
    check_at_least(1, "a positive number of candidates", n=n)
    check_at_least(0, "0 or more", mutants=mutants)
    check_at_least(1, max_output_chars=max_output_chars, workers=workers)


@dataclass
class Prepared:
    """An original that passed the pre-execution stages, with its surviving mutants."""

    case: Candidate
    call: Call
    mutants: list[tuple[Candidate, Call]]


@dataclass
class ChunkOutput:
    cases: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    audit: list[str] = field(default_factory=list)


Progress = Callable[[int, int], None]


def _rng(seed: int, index: int, purpose: str) -> random.Random:
    # str seeds go through sha512: the same on every run and every PYTHONHASHSEED
    return random.Random(f"{purpose}:{seed}:{index}")


class Pipeline:
    """One run's stages and their state. Use :func:`run` unless you supply your own pools."""

    def __init__(
        self,
        config: SynthConfig,
        source: CandidateSource,
        decontam: Decontamination,
        python: str = "unknown",
    ) -> None:
        self.config = config
        self.python = python
        self.source = source
        self.teacher: Mapping[str, Any] | None = getattr(source, "teacher", None)
        self.filters = FilterConfig(max_output_chars=config.max_output_chars)
        self.deduper = Deduper()
        self.decontam = decontam
        self.limits = Limits(timeout_s=config.timeout_s, memory_mb=256)
        self.decontam_record = decontam.record()
        self.trace_options = TraceOptions(max_steps=config.max_steps)

    # -- before execution (also replayed on resume) --------------------------------------------

    def prepare(self, index: int, item: Candidate | Drop, out: ChunkOutput) -> Prepared | None:
        """Static filter, dedup and decontam of one original, then of its mutants (pure)."""
        if isinstance(item, Drop):
            out.dropped.append(drop_line(item))
            return None
        call = self._admit(item, out, item.code)
        if call is None:
            return None
        rng = _rng(self.config.seed, index, "mutate")
        kept: list[tuple[Candidate, Call]] = []
        if self.config.mutants:
            for mutant in make_mutants(item, rng, self.config.mutant_tries):
                # a mutant shares its parent's (checked) code: decontaminate its call only
                mutant_call = self._admit(mutant, out, "")
                if mutant_call is not None:
                    kept.append((mutant, mutant_call))
        return Prepared(item, call, kept)

    def _admit(self, candidate: Candidate, out: ChunkOutput, code: str) -> Call | None:
        """The parsed call when the candidate passes static, dedup and decontam; else a drop."""
        drop = check_static(candidate, self.filters)
        call: Call | None = None
        if drop is None:
            try:
                call = parse_call(candidate.call)
            except CallSyntaxError as exc:  # check_static parses it too; kept as a backstop
                drop = Drop(candidate.id, "static", "input_not_literal", str(exc))
        if drop is None:
            drop = self.deduper.check(candidate)
        if drop is None:
            matches = self.decontam.check(code, candidate.call)
            if matches:
                items = ", ".join(f"{m.benchmark}:{m.item_id}" for m in matches[:5])
                drop = Drop(candidate.id, "decontam", matches[0].rule, items)
                out.audit.extend(
                    dump_line({"id": candidate.id, **match.to_dict()}) for match in matches
                )
        if drop is not None:
            out.dropped.append(drop_line(drop, candidate))
            return None
        return call

    # -- execution ------------------------------------------------------------------------------

    def validate(
        self, prepared: list[Prepared], pools: tuple[Executor, Executor], out: ChunkOutput
    ) -> None:
        """Run, filter, check the second hash seed, select mutants, and write records."""
        first, second = pools
        traced = run_grouped(
            first,
            [
                Work(p.case.code, p.case.entry_point, [p.call] + [call for _, call in p.mutants])
                for p in prepared
            ],
            self.limits,
            self.trace_options,
        )
        standing: list[list[tuple[Candidate, Call, ExecResult]]] = []
        offsets: list[int] = []
        for item, (results, offset) in zip(prepared, traced, strict=True):
            members = [(item.case, item.call), *item.mutants]
            alive = []
            for (candidate, call), result in zip(members, results, strict=True):
                drop = check_result(candidate, result, self.filters)
                if drop is None:
                    alive.append((candidate, call, result))
                else:
                    self._drop(drop, candidate, out)
            standing.append(alive)
            offsets.append(offset)
        # The second seed: each program as written, then (after all of them, so the plain
        # programs share forks as they always did) those that can see a set, rewritten so that
        # their sets iterate in reverse; both in the same pool, under the same seed.
        work = [
            Work(item.case.code, item.case.entry_point, [call for _, call, _ in alive])
            for item, alive in zip(prepared, standing, strict=True)
        ]
        reversed_at: list[int | None] = []
        for item, alive in zip(prepared, standing, strict=True):
            calls = [call for _, call, _ in alive]
            code = perturbed(item.case.code, item.case.entry_point, calls) if calls else None
            reversed_at.append(len(work) if code is not None else None)
            if code is not None:
                work.append(Work(code, item.case.entry_point, calls))
        rerun = run_grouped(second, work, self.limits)
        for number, (item, alive, offset) in enumerate(
            zip(prepared, standing, offsets, strict=True)
        ):
            again = rerun[number][0]
            position = reversed_at[number]
            flipped = rerun[position][0] if position is not None else [None] * len(alive)
            stable = []
            for (candidate, _call, result), other, turned in zip(
                alive, again, flipped, strict=True
            ):
                drop = check_determinism(candidate, result, other)
                if drop is None and turned is not None:
                    drop = check_set_order(candidate, other, turned)
                if drop is None:
                    stable.append((candidate, result))
                else:
                    self._drop(drop, candidate, out)
            self._emit(item, stable, offset, out, position is not None)

    def _emit(
        self,
        item: Prepared,
        stable: list[tuple[Candidate, ExecResult]],
        offset: int,
        out: ChunkOutput,
        set_order_checked: bool,
    ) -> None:
        by_id = {candidate.id: (candidate, result) for candidate, result in stable}
        parent = by_id.pop(item.case.id, None)
        if parent is None:
            for candidate, _ in by_id.values():
                out.dropped.append(
                    drop_line(
                        Drop(candidate.id, "mutation", "parent_dropped", item.case.id), candidate
                    )
                )
            return
        summaries = {cid: trace_summary(result, offset) for cid, (_, result) in by_id.items()}
        outputs = {cid: canonical_output(result) for cid, (_, result) in by_id.items()}
        parent_summary = trace_summary(parent[1], offset)
        parent_output = canonical_output(parent[1])
        scored = [
            (candidate, outputs[cid], summaries[cid]["lines_covered"], summaries[cid]["branches"])
            for cid, (candidate, _) in by_id.items()
        ]
        selection = select_mutants(
            (parent_output, parent_summary["lines_covered"], parent_summary["branches"]),
            scored,
            self.config.mutants,
        )
        chosen = {candidate.id for candidate in selection.kept}
        redundant = {candidate.id for candidate in selection.redundant}
        out.cases.append(self._record(parent[0], parent[1], parent_summary, set_order_checked))
        for cid, (candidate, result) in by_id.items():  # generation order
            if cid in chosen:
                out.cases.append(self._record(candidate, result, summaries[cid], set_order_checked))
            elif cid in redundant:
                reason = "no output, line or branch that its parent and kept mutants lack"
                self._drop(Drop(cid, "mutation", "redundant", reason), candidate, out)
            else:
                reason = f"{self.config.mutants} mutants kept, new coverage first"
                self._drop(Drop(cid, "mutation", "not_selected", reason), candidate, out)

    def _record(
        self,
        candidate: Candidate,
        result: ExecResult,
        trace: Mapping[str, Any],
        set_order_checked: bool,
    ) -> str:
        record = build_record(
            candidate,
            result,
            trace,
            self.python,
            HASH_SEEDS,
            self.decontam_record,
            LICENSE if self.teacher is None else TEACHER_LICENSE,
            self.teacher,
            set_order_checked=set_order_checked,
        )
        return dump_line(record)

    def _drop(self, drop: Drop, candidate: Candidate, out: ChunkOutput) -> None:
        out.dropped.append(drop_line(drop, candidate))


def trace_summary(result: ExecResult, offset: int = 0) -> dict[str, Any]:
    """Lines covered, branches taken (``[line, "T"|"F"]`` per ``if``/``while`` test outcome)
    and the number of line steps, read from the tracer's wire form; traced line ``n`` is the
    program's line ``n - offset`` (see :func:`~codereasoner.synth.batching.run_grouped`)."""
    steps = (result.trace or {}).get("steps") or ()
    lines = sorted({int(step["line"]) - offset for step in steps})
    branches = sorted(
        {
            (int(step["line"]) - offset, "T" if step["cond"] else "F")
            for step in steps
            if step.get("cond") is not None
        }
    )
    return {
        "steps": len(steps),
        "lines_covered": lines,
        "branches": [list(branch) for branch in branches],
    }


def settings_of(
    config: SynthConfig, source: CandidateSource, decontam: Decontamination, python: str
) -> dict[str, Any]:
    """What the output depends on; a resume with other settings is refused."""
    return {
        "generator": source.name,
        "n": config.n,
        "seed": config.seed,
        "max_output_chars": config.max_output_chars,
        "mutants": config.mutants,
        "mutant_tries": config.mutant_tries,
        "timeout_s": config.timeout_s,
        "max_steps": config.max_steps,
        # Chunks decide which programs share a fork in the second hash-seed run.
        "chunk_size": config.chunk_size,
        "hash_seeds": list(HASH_SEEDS),
        "set_order_check": SET_ORDER_CHECK,
        "mutant_selection": MUTANT_SELECTION,
        # what was checked, against which data, by which rule (or why nothing was)
        **decontam.settings(),
        "python": python,
    }


def open_pool(config: SynthConfig, hash_seed: int) -> Executor:
    """A pool for the pipeline. Generated cases cannot import anything, so the warm workers
    preload only the sandbox-side tracer: a child that imports it itself compiles it on every
    fork (traced batches about 3x slower), and a smaller worker forks faster."""
    return open_executor(
        config.executor,
        config.workers,
        hash_seed=hash_seed,
        isolation=config.isolation,
        preload=("tracer",),
    )


def make_source(config: SynthConfig) -> CandidateSource:
    """The candidate source of ``config.generator``, built from the generator registry with
    ``config.generator_options``; ValueError for an unknown generator, a missing required
    option or one the generator does not take."""
    kind = generators.get(config.generator)
    settings = generators.GeneratorSettings(config.seed, config.out, config.generator_options)
    return kind.build(settings)


def _chunks(start: int, stop: int, size: int) -> Iterator[range]:
    # chunk boundaries are aligned on multiples of size, whatever the resume point
    position = start
    while position < stop:
        end = min(stop, (position // size + 1) * size)
        yield range(position, end)
        position = end


def run(
    config: SynthConfig,
    progress: Progress | None = None,
    pools: tuple[Executor, Executor] | None = None,
    *,
    source: CandidateSource | None = None,
    decontam: Decontamination | tuple[BenchmarkIndex, Sequence[str]] | None = None,
) -> Summary:
    """Run (or resume) a synthesis run into ``config.out``; returns its summary.

    ``pools``: a pool under hash seed 0 and one under another seed (opened here if not given);
    ``source``: the candidates (default: :func:`make_source`, closed at the end; a source
    given here is the caller's to close);
    ``decontam`` (required): a :class:`~codereasoner.synth.decontam.Decontamination`, built with
    ``Decontamination.against(load_benchmark_programs(...))`` or ``Decontamination.skip(why)``
    (an ``(index, checked)`` pair is accepted too: the default benchmarks it lacks are recorded
    as missing, and an empty one as skipped).
    Raises :class:`~codereasoner.synth.writer.OutputError` when ``out`` holds another run and
    :class:`ValueError` without ``decontam``.
    """
    plan = as_decontamination(decontam)
    started = time.monotonic()
    out = config.out
    with ExitStack() as stack:
        stack.enter_context(exclusive(out))  # FolderBusy while another run writes there
        if source is None:
            source = make_source(config)
            if hasattr(source, "close"):
                stack.callback(source.close)
        if pools is None:
            pools = (
                stack.enter_context(open_pool(config, HASH_SEEDS[0])),
                stack.enter_context(open_pool(config, HASH_SEEDS[1])),
            )
        python = str(pools[0].worker_info.get("python", "unknown"))
        writer = RunWriter(out, settings_of(config, source, plan, python))
        pipeline = Pipeline(config, source, plan, python)
        if progress:
            progress(writer.done, config.n)
        if writer.done < config.n:
            _replay(pipeline, writer.done)
        # Chunk k is validated on a thread (mostly waiting on the sandbox) while this thread
        # prepares chunk k+1; chunks are still committed one by one, in order.
        pending: tuple[Future[None], range, ChunkOutput, list[str]] | None = None

        def commit(job: tuple[Future[None], range, ChunkOutput, list[str]]) -> None:
            future, indices, chunk, generations = job
            future.result()
            files = {
                "cases.jsonl": chunk.cases,
                "dropped.jsonl": chunk.dropped,
                "audit.jsonl": chunk.audit,
                "generations.jsonl": generations,
            }
            writer.commit(indices.stop, files)
            if progress:
                progress(indices.stop, config.n)

        executor = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="synth"))
        for indices in _chunks(writer.done, config.n, config.chunk_size):
            chunk = ChunkOutput()
            items = zip(indices, source.produce(indices), strict=True)
            generations = source.committed_lines()
            prepared = [p for i, item in items if (p := pipeline.prepare(i, item, chunk))]
            if pending is not None:
                commit(pending)
            future = executor.submit(pipeline.validate, prepared, pools, chunk)
            pending = (future, indices, chunk, generations)
        if pending is not None:
            commit(pending)
        elapsed = float(writer.extra.get("elapsed_s", 0.0)) + time.monotonic() - started
        summary = write_summary(out, writer.settings)
        writer.finish(elapsed_s=round(elapsed, 3))
        summary.elapsed_s = elapsed
        return summary


def as_decontamination(
    decontam: Decontamination | tuple[BenchmarkIndex, Sequence[str]] | None,
) -> Decontamination:
    """A :class:`Decontamination` from what :func:`run` was given; never a silent skip."""
    if decontam is None:
        raise ValueError(
            "synthesis needs a decontamination decision: Decontamination.against(loaded "
            "benchmarks) or Decontamination.skip(reason)"
        )
    if isinstance(decontam, Decontamination):
        return decontam
    index, checked = decontam
    if not checked:
        return Decontamination.skip("no benchmark data given")
    return Decontamination(index, tuple(checked), {})  # what was left out, its caller knows


def _replay(pipeline: Pipeline, done: int) -> None:
    """Rebuild the dedup state of the first ``done`` candidates (pre-execution stages only)."""
    for indices in _chunks(0, done, pipeline.config.chunk_size):
        scratch = ChunkOutput()
        for index, item in zip(indices, pipeline.source.produce(indices), strict=True):
            pipeline.prepare(index, item, scratch)
