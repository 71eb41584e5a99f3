"""``codereasoner core build``: a fresh CoRE-style benchmark from any pool of programs.

    settings = BuildSettings(source="core", data_dir=Path("/work/shared/data"))
    with Pool(hash_seed=HASH_SEEDS[0]) as pool, Pool(1, hash_seed=HASH_SEEDS[1]) as other:
        summary = build(settings, Path("runs/core-gen"), (pool, other))

For each problem of the source (:mod:`codereasoner.families.core.sources`):

1. **tests**: the problem's calls plus type-aware mutants of them; a test is kept when every
   given implementation returns the same literal on it in the sandbox;
2. **implementations**: the given ones plus verified rewrites (:func:`programs.make_variants`:
   equivalent in the sandbox on the tests and on further mutants, past CoRE's Jaccard and
   cyclomatic-complexity filters, with the entry point the CoRE loader finds);
3. **test minimisation**: every implementation is traced on every test, and the fewest tests
   reaching the same line and branch coverage across the implementations are kept
   (:func:`programs.minimal_tests`, greedy set cover, as CoRE);
4. **probes**: for each implementation, exact intermediate-state questions from our trace of one
   test (:func:`programs.probes_for`).

Nothing kept may depend on the hash seed (set iteration order of strings): the second pool runs
with another one, and a test whose outputs differ under it, an implementation whose outputs
differ, or a probed run whose trace differs, is left out.

The folder then holds ``core_io.json`` and ``core_qa.json`` in CoRE's format (the CoRE loader
reads them unchanged: the ``core-gen`` benchmark, ``--data-dir`` this folder), our richer fields
beside CoRE's, and ``summary.json``. Problems are built one at a time and appended to
``problems.jsonl`` (flushed and fsynced), so a killed build resumes with the next problem; each
problem's randomness comes from the seed and its id alone, so a resumed build writes the same
bytes as an uninterrupted one (no timing is recorded in the files). The benchmark files and the
summary are rewritten whole, atomically, from ``problems.jsonl`` at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codereasoner import values
from codereasoner.execution import (
    Batch,
    Call,
    ExecResult,
    Executor,
    Limits,
    Program,
    TraceOptions,
    parse_call,
)
from codereasoner.families.core.build_files import (
    FORMAT,
    io_records,
    json_list,
    qa_records,
    summary_data,
)
from codereasoner.families.core.programs import PREAMBLE, entry_point
from codereasoner.families.core.sources import SourceProblem, SourceProblems, read_problems
from codereasoner.files import foreign_entry, open_no_follow, parse_json, write_atomic
from codereasoner.models.base import Backend
from codereasoner.programs.equivalence import cyclomatic_complexity, mutated_calls
from codereasoner.programs.llm_rewrite import llm_candidates
from codereasoner.programs.minimise import coverage_features, minimal_tests
from codereasoner.programs.probes import probes_for
from codereasoner.programs.rewrites import added_rewrites
from codereasoner.programs.variants import make_variants
from codereasoner.settings import check_at_least
from codereasoner.synth.pipeline import HASH_SEEDS
from codereasoner.synth.writer import (
    LOCK_FILE,
    OutputError,
    SettingsChanged,
    dump_line,
    exclusive,
    settings_changes,
)
from codereasoner.trace import ExecutionTrace, trace_batches

__all__ = [
    "HASH_SEEDS",
    "IO_FILE",
    "PROBLEMS_FILE",
    "QA_FILE",
    "SUMMARY_FILE",
    "BuildSettings",
    "BuildSummary",
    "OutputError",
    "SettingsChanged",
    "build",
    "check_out",
]

IO_FILE = "core_io.json"
QA_FILE = "core_qa.json"
PROBLEMS_FILE = "problems.jsonl"
SETTINGS_FILE = "build.json"
SOURCE_DIGEST = "source_sha256"  # build.json: the programs and calls the build read
ADDED_REWRITES = "added_rewrites"  # build.json: rewrite kinds installed packages add
SUMMARY_FILE = "summary.json"
# CoRE's programs run in milliseconds; a mutated input that loops forever costs this once per
# implementation (its calls are then left out)
BUILD_LIMITS = Limits(timeout_s=0.5, wall_timeout_s=1.0, memory_mb=512)
TRACE = TraceOptions(max_steps=2_000)  # CoRE's probes target steps 1-297
MAX_TRUTH_CHARS = 300  # an output longer than this makes a poor question; the test is dropped
FILTERS = frozenset({"jaccard", "complexity", "no_change", "duplicate", "invalid"})
# rewrites drawn beyond --variants, round by round, while too few can be asked --probes about
REWRITE_ROUNDS = (2, 6, 12)


@dataclass(frozen=True)
class BuildSettings:
    """Everything that changes what a build writes (a resumed build must repeat them)."""

    source: str
    variants: int = 4  # verified rewrites wanted per problem
    probes: int = 4  # probes wanted per implementation
    seed: int = 0
    candidates: int = 24  # tests per problem before minimisation (given calls first)
    originals: bool = True  # keep the given implementations beside the rewrites
    rewriter: str | None = None  # a model spec: LLM rewrites, checked like the AST rewrites
    rewriter_samples: int = 2  # LLM rewrites asked per given implementation
    # the first N problems only; a later build with a larger limit adds the next ones
    limit: int | None = field(default=None, compare=False)
    data_dir: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check_at_least(
            1,
            variants=self.variants,
            probes=self.probes,
            candidates=self.candidates,
            limit=self.limit,
            rewriter_samples=self.rewriter_samples,
        )

    def fixed(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("data_dir")
        data.pop("limit")
        added = added_rewrites()
        if added:  # an installed package's rewrites are drawn too: a resume must have them
            data[ADDED_REWRITES] = added
        return data


@dataclass
class BuildSummary:
    """What a build wrote, and what it left out and why (``summary.json``)."""

    data: dict[str, Any]
    out: Path

    @property
    def problems(self) -> int:
        return int(self.data["problems"]["built"])


Progress = Callable[[int, int, str], None]  # (done, total, problem id)


def build(
    settings: BuildSettings,
    out: Path,
    pools: tuple[Executor, Executor],
    progress: Progress | None = None,
    *,
    problems: SourceProblems | None = None,
    rewriter: Backend | None = None,
) -> BuildSummary:
    """Build (or resume building) the benchmark of ``settings`` into ``out``. ``pools``: two
    pools with different hash seeds (the second only checks); ``rewriter``: the backend of
    ``settings.rewriter`` (the caller opens and closes it)."""
    if pools[0].hash_seed == pools[1].hash_seed:
        raise ValueError("the two pools must run with different hash seeds")
    if (rewriter is None) != (settings.rewriter is None):
        raise ValueError("a rewriter backend goes with settings.rewriter, and only with it")
    source = problems if problems is not None else read_problems(settings.source, settings.data_dir)
    chosen = source.problems[: settings.limit] if settings.limit else source.problems
    with exclusive(out):
        store = _Store(out, settings.fixed() | {SOURCE_DIGEST: source_digest(source)})
        done = store.done()
        for number, problem in enumerate(chosen, start=1):
            if problem.id not in done:
                record = build_problem(problem, settings, pools, rewriter)
                store.append(record)
                done[problem.id] = record
            if progress is not None:
                progress(number, len(chosen), problem.id)
        records = [done[problem.id] for problem in chosen]
        summary = summary_data(settings, source, records)
        write_atomic(out / IO_FILE, json_list(io_records(records)))
        write_atomic(out / QA_FILE, json_list(qa_records(records)))
        write_atomic(out / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return BuildSummary(summary, out)


# ---------------------------------------------------------------------------------------
# one problem
# ---------------------------------------------------------------------------------------


def build_problem(
    problem: SourceProblem,
    settings: BuildSettings,
    pools: tuple[Executor, Executor],
    rewriter: Backend | None = None,
) -> dict[str, Any]:
    """The problem's record for ``problems.jsonl``: ``status`` built or skipped (``reason``)."""
    pool, other = pools
    rng = random.Random(f"{settings.seed}:{problem.id}")
    record: dict[str, Any] = {"problem": problem.id, "origin": problem.origin}
    given = [parse_call(text) for text in problem.calls]
    per_call = max(3, -(-2 * settings.candidates // len(given)))
    candidates = _dedup(given + mutated_calls(problem.implementations[0], given, rng, per_call))
    dropped: Counter[str] = Counter()
    traceable = _short_traces(problem, candidates[: settings.candidates * 2], pool, dropped)
    tests, outputs = _agreed_tests(problem, traceable, pools, dropped)
    tests, outputs = tests[: settings.candidates], outputs[: settings.candidates]
    record["tests_dropped"] = dict(dropped)
    if not tests:
        return record | {"status": "skipped", "reason": "no test on which the programs agree"}

    def keeps_entry(source: str) -> str | None:
        return None if entry_point(source) == problem.entry else "entry_point"

    implementations: list[dict[str, Any]] = [
        {"code": code, "rewrites": [], "from": index, "origin": "given"}
        for index, code in enumerate(problem.implementations)
        if settings.originals
    ]
    record |= {"entry": problem.entry, "candidate_tests": len(tests)}
    traces = _probed(implementations, problem.entry, tests, outputs, pools, settings, rng)
    rejected: Counter[str] = Counter()
    tried = 0
    asked = (
        []
        if rewriter is None
        else llm_candidates(rewriter, problem.implementations, settings.rewriter_samples)
    )
    for wanted in REWRITE_ROUNDS:
        search = make_variants(
            list(problem.implementations),
            problem.entry,
            tests,
            pool,
            rng,
            wanted=settings.variants + wanted,
            preamble=PREAMBLE,
            limits=BUILD_LIMITS,
            check=keeps_entry,
            candidates=asked,
        )
        asked = []  # the model's rewrites are tried in the first round only
        rejected.update(search.rejected)
        tried += search.tried
        known = {impl["code"] for impl in implementations}
        new = [
            {
                "code": v.source,
                "rewrites": list(v.kinds),
                "from": v.original,
                "origin": "rewrite",
                "jaccard": round(v.jaccard, 4),
            }
            for v in search.variants
            if v.source not in known
        ]
        traces += _probed(new, problem.entry, tests, outputs, pools, settings, rng)
        implementations += new
        enough = _enough(implementations, settings.probes, rewrites=True) >= settings.variants
        if enough or not search.variants:  # more rounds help only rewrites too short to probe
            break
    record |= {"variant_rejections": dict(sorted(rejected.items())), "variants_tried": tried}
    if not any(impl["rewrites"] for impl in implementations):
        filtered = set(rejected) <= FILTERS
        reason = "no rewrite passed CoRE's filters" if filtered else "no verified rewrite"
        return record | {"status": "skipped", "reason": reason}
    kept = _enough_probes(implementations, settings)
    left = [impl for i, impl in enumerate(implementations) if i not in kept]
    short = sum(len(impl["probes"]["items"]) < settings.probes for impl in left)
    record["implementations_dropped"] = {
        "fewer probes than asked": short,
        "spare": len(left) - short,
    }
    chosen = _minimal([traces[index] for index in kept])
    unstable = _seed_dependent(
        [implementations[i] for i in kept],
        problem.entry,
        [tests[i] for i in chosen],
        [outputs[i] for i in chosen],
        other,
    )
    if unstable:
        record["implementations_dropped"]["depends on the hash seed"] = len(unstable)
        kept = [i for n, i in enumerate(kept) if n not in unstable]
        chosen = _minimal([traces[index] for index in kept])
    return record | {
        "status": "built",
        "tests": [_arguments(tests[index]) for index in chosen],
        "outputs": [outputs[index] for index in chosen],
        "implementations": [implementations[index] for index in kept],
    }


def _seed_dependent(
    implementations: Sequence[Mapping[str, Any]],
    entry: str,
    tests: Sequence[Call],
    outputs: Sequence[str],
    other: Executor,
) -> set[int]:
    """Positions of the implementations returning another value under the other hash seed."""
    batches = [
        Batch(Program(str(impl["code"]), entry, preamble=PREAMBLE), list(tests), BUILD_LIMITS)
        for impl in implementations
    ]
    return {
        n
        for n, results in enumerate(other.run_all(batches))
        if [result.value for result in results] != list(outputs)
    }


def _enough(implementations: Sequence[Mapping[str, Any]], probes: int, rewrites: bool) -> int:
    return sum(
        1
        for impl in implementations
        if bool(impl["rewrites"]) is rewrites and len(impl["probes"]["items"]) >= probes
    )


def _probed(
    implementations: list[dict[str, Any]],
    entry: str,
    tests: Sequence[Call],
    outputs: Sequence[str],
    pools: tuple[Executor, Executor],
    settings: BuildSettings,
    rng: random.Random,
) -> list[list[ExecutionTrace | None]]:
    """Trace ``implementations`` on every test and add their probes and complexity to them."""
    traces = _traces(implementations, entry, tests, pools[0]) if implementations else []
    for implementation, row in zip(implementations, traces, strict=True):
        implementation["complexity"] = cyclomatic_complexity(implementation["code"])

        def stable(
            index: int,
            code: str = implementation["code"],
            row: Sequence[ExecutionTrace | None] = row,
        ) -> bool:
            (again,) = _traces([{"code": code}], entry, [tests[index]], pools[1])
            first = row[index]
            return again[0] is not None and first is not None and again[0].steps == first.steps

        probed, items = _probes(implementation["code"], row, settings, rng, stable)
        implementation["probes"] = {
            "input": None if probed is None else _arguments(tests[probed]),
            "output": None if probed is None else outputs[probed],
            "items": items,
        }
    return traces


def _minimal(traces: Sequence[Sequence[ExecutionTrace | None]]) -> list[int]:
    coverage = [
        [frozenset() if trace is None else coverage_features(trace) for trace in row]
        for row in traces
    ]
    return minimal_tests(coverage) or [0]


def _enough_probes(
    implementations: Sequence[Mapping[str, Any]], settings: BuildSettings
) -> list[int]:
    """Indexes of the implementations to keep: those with ``settings.probes`` probes (a given
    one too short to ask about is left out), at most ``settings.variants`` rewrites, and
    rewrites with fewer probes only where too few have enough."""
    enough = [len(impl["probes"]["items"]) >= settings.probes for impl in implementations]
    given = [i for i, impl in enumerate(implementations) if not impl["rewrites"] and enough[i]]
    rewrites = [i for i, impl in enumerate(implementations) if impl["rewrites"]]
    full = [i for i in rewrites if enough[i]]
    short = [i for i in rewrites if not enough[i]]
    return sorted(given + (full + short)[: settings.variants])


def _dedup(calls: Sequence[Call]) -> list[Call]:
    seen: dict[str, Call] = {}
    for call in calls:
        seen.setdefault(call.render(), call)
    return list(seen.values())


def _agreed_tests(
    problem: SourceProblem,
    calls: Sequence[Call],
    pools: tuple[Executor, Executor],
    dropped: Counter[str],
) -> tuple[list[Call], list[str]]:
    """The calls on which every given implementation returns one short literal, the same under
    both hash seeds, with it."""
    batches = [
        Batch(Program(code, problem.entry, preamble=PREAMBLE), list(calls), BUILD_LIMITS)
        for code in problem.implementations
    ]
    results = pools[0].run_all(batches)
    again = pools[1].run_all(batches)
    tests: list[Call] = []
    outputs: list[str] = []
    for index, call in enumerate(calls):
        outcomes: list[ExecResult] = [row[index] for row in results]
        reason = _unusable(outcomes)
        if reason is None and any(row[index].value != outcomes[0].value for row in again):
            reason = "depends on the hash seed"
        if reason is None:
            tests.append(call)
            outputs.append(str(outcomes[0].value))
        else:
            dropped[reason] += 1
    return tests, outputs


def _short_traces(
    problem: SourceProblem, calls: Sequence[Call], pool: Executor, dropped: Counter[str]
) -> list[Call]:
    """The calls whose trace fits :data:`TRACE`'s step cap (a longer run makes questions no
    one should be asked, and tracing it costs the build). Checked first: a long loop stops at
    the cap, whatever the machine's load, where an untraced run could meet the time limit."""
    (row,) = _traces([{"code": problem.implementations[0]}], problem.entry, calls, pool)
    for trace in row:
        if trace is None or trace.partial:
            dropped["hit a limit" if trace is None else "trace too long"] += 1
    return [call for call, trace in zip(calls, row, strict=True) if trace and not trace.partial]


def _unusable(outcomes: Sequence[ExecResult]) -> str | None:
    first = outcomes[0]
    if not all(result.ok and result.is_literal for result in outcomes):
        return "no literal result"
    if any(result.value != first.value for result in outcomes):
        return "implementations disagree"
    if len(first.value or "") > MAX_TRUTH_CHARS:
        return "output too long"
    return None


def _traces(
    implementations: Sequence[Mapping[str, Any]], entry: str, tests: Sequence[Call], pool: Executor
) -> list[list[ExecutionTrace | None]]:
    work = [
        (Program(str(impl["code"]), entry, preamble=PREAMBLE), list(tests))
        for impl in implementations
    ]
    traced = trace_batches(pool, work, TRACE, BUILD_LIMITS)
    return [[call.trace for call in row] for row in traced]


def _probes(
    code: str,
    traces: Sequence[ExecutionTrace | None],
    settings: BuildSettings,
    rng: random.Random,
    stable: Callable[[int], bool],
) -> tuple[int | None, list[dict[str, Any]]]:
    """The test whose run is probed and its probes: the longest complete trace first, until one
    gives ``settings.probes``; else the one that gave the most (CoRE's probes, too, are about
    one run of their own). A run is probed only when ``stable`` says its trace is the same
    under the other hash seed."""
    best: tuple[int | None, list[Any]] = (None, [])
    usable = [i for i, t in enumerate(traces) if t is not None and t.steps and not t.partial]
    for index in sorted(usable, key=lambda i: (-len(traces[i] or ()), i)):
        trace = traces[index]
        assert trace is not None
        found = probes_for(code, trace, frame=_entry_frame(trace), limit=settings.probes, rng=rng)
        if len(found) <= len(best[1]) or not stable(index):
            continue
        best = (index, found)
        if len(found) >= settings.probes:
            break
    return best[0], [probe.to_dict() for probe in best[1]]


def _entry_frame(trace: ExecutionTrace) -> str:
    return next((step.frame for step in trace.steps if step.fid == 0), "")


def _arguments(call: Call) -> str:
    """CoRE's ``input``: the comma-separated literal arguments."""
    return ", ".join(values.render(argument) for argument in call.args)


# ---------------------------------------------------------------------------------------
# the store: problems.jsonl, appended problem by problem
# ---------------------------------------------------------------------------------------


def source_digest(source: SourceProblems) -> str:
    """The sha256 of the programs and calls read: a resume must read the same ones."""
    data = [[p.id, p.entry, list(p.implementations), list(p.calls)] for p in source.problems]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()


def check_out(out: Path, settings: BuildSettings) -> None:
    """OutputError or SettingsChanged when ``out`` cannot take this build (checked before any
    work, the programs read excepted; nothing is written)."""
    _Store.check(out, json.loads(json.dumps(settings.fixed())), ignore=(SOURCE_DIGEST,))


class _Store:
    """``problems.jsonl`` plus ``build.json`` (the settings); a torn last line from a killed
    build is cut off on resume, and other settings are refused (:class:`SettingsChanged`)."""

    def __init__(self, out: Path, settings: Mapping[str, Any]) -> None:
        self.out = out
        self.path = out / PROBLEMS_FILE
        self.settings = json.loads(json.dumps(dict(settings)))
        if not self.check(out, self.settings):
            write_atomic(
                out / SETTINGS_FILE,
                json.dumps({"format": FORMAT, "settings": self.settings}) + "\n",
            )

    @staticmethod
    def check(out: Path, settings: Mapping[str, Any], ignore: Sequence[str] = ()) -> bool:
        """Whether ``out`` holds a build of ``settings`` (False: none yet); raises when it
        holds another build or files of something else."""
        if out.exists() and not out.is_dir():
            raise OutputError(f"{out}: exists and is not a directory")
        saved = out / SETTINGS_FILE
        if not os.path.lexists(saved):
            # a new build's folder holds nothing yet (its lock aside): CoRE's own data files
            # there are someone else's, not a build to resume
            foreign = foreign_entry(out, {LOCK_FILE})
            if foreign is not None:
                raise OutputError(
                    f"{out}: holds {foreign} but no {SETTINGS_FILE}; not a core build folder "
                    "(another command's, or files of your own: choose an empty --out)"
                )
            return False
        try:
            stored = parse_json(saved.read_text(encoding="utf-8"))["settings"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OutputError(f"{saved}: unreadable build settings ({exc})") from None
        changed = settings_changes(stored, settings, ignore)
        if changed:
            raise SettingsChanged(out, changed)
        return True

    def done(self) -> dict[str, dict[str, Any]]:
        """The problems already built, by id; cuts a torn tail."""
        if not os.path.lexists(self.path):
            open_no_follow(self.path, "ab").close()
            return {}
        with open_no_follow(self.path, "rb") as handle:
            data = handle.read()
        good, found = 0, {}
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                record = parse_json(line)
            except ValueError:
                break
            found[str(record["problem"])] = record
            good += len(line)
        if good < len(data):
            with open_no_follow(self.path, "r+b") as handle:
                handle.truncate(good)
        return found

    def append(self, record: Mapping[str, Any]) -> None:
        with open_no_follow(self.path, "a", encoding="ascii") as handle:
            handle.write(dump_line(record))
            handle.flush()
            os.fsync(handle.fileno())
