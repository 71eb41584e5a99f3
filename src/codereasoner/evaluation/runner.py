"""The resumable evaluation runner: prompts -> completions -> verdicts -> reports, in a run store.

    settings = RunSettings(benchmarks=tuple(names), n=1)   # names: see `codereasoner bench list`
    with Runner(Path("runs/x"), OracleBackend(), settings) as runner:
        summary = runner.run()

Per benchmark: load the items (``limit``: a deterministic subset), build each prompt, ask the
backend only for the (prompt, sample) pairs missing from the completion cache (stored one
request per transaction as they arrive), extract and grade only the items whose verdicts are
missing (batched through one sandbox pool, stored a chunk per transaction), then compute the
report from the stored verdicts (the same dict ``codereasoner score --json`` prints). A run
killed at any point resumes where it stopped: nothing finished is redone or duplicated.

A resumed run must use the same model and settings (sampling, style, extraction, grading,
prompt mode, limit); it may add benchmarks and change ``n`` (a larger ``n`` reuses samples
0..n-1, asks only for the new ones and grades only the new ones; reports always cover samples
0..n-1). The model is its identity (:func:`codereasoner.models.base.model_identity`: the
model id without a server URL), so a server moved to another host or port resumes the run.
Every run, finished or failed, writes its summary to ``RUN_DIR/results.json`` (``status``
``done`` or ``failed`` with the ``message``).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from codereasoner import benchmarks, tasks
from codereasoner.evaluation.families import RunReport, family_of, load_report
from codereasoner.evaluation.reports import Report
from codereasoner.evaluation.run_checks import (
    Resolved,
    answer_warnings,
    greedy_samples_warning,
    limit_warning,
    self_check,
)
from codereasoner.evaluation.run_items import (
    available,
    headline,
    load_items,
    select_items,
    style_for,
)
from codereasoner.evaluation.run_settings import (
    FIXED,
    FORMAT,
    ORACLE,
    RESULTS_JSON,
    RUN_FILES,
    SCORE_CHUNK,
    SELF_CHECK,
    RunError,
    RunSettings,
    check_data_dir,
    check_out,
    check_settings,
    default_run_dir,
    differing_option,
    refused,
    run_file_at,
)
from codereasoner.evaluation.run_summary import Events, Quiet, RunSummary
from codereasoner.evaluation.store import (
    ItemRow,
    RunStore,
    StoreCorrupt,
    StoredCompletion,
    store_path,
)
from codereasoner.execution import (
    Executor,
    SandboxUnavailable,
    open_executor,
)
from codereasoner.files import foreign_entry, write_atomic
from codereasoner.models.base import (
    Backend,
    Completion,
    ReportsProgress,
    Request,
    backend_identity,
    model_identity,
)
from codereasoner.models.base import prompt_hash as hash_prompt
from codereasoner.synth.writer import FolderBusy, exclusive
from codereasoner.tasks import Extracted, Grading, Item, Score

__all__ = [
    "ORACLE",
    "SELF_CHECK",
    "RunError",
    "RunSettings",
    "RunSummary",
    "Runner",
    "available",
    "check_data_dir",
    "check_out",
    "check_settings",
    "default_run_dir",
    "headline",
    "load_items",
    "run_file_at",
    "select_items",
    "style_for",
]


# ---------------------------------------------------------------------------------------
# the runner
# ---------------------------------------------------------------------------------------


class Runner:
    """Runs benchmarks through a backend into the run store at ``run_dir`` (see the module)."""

    def __init__(
        self,
        run_dir: Path,
        backend: Backend,
        settings: RunSettings,
        events: Events | None = None,
        *,
        pool_factory: Callable[[], Executor] | None = None,
        lock: bool = True,
        companion_files: Collection[str] = (),
    ) -> None:
        """``pool_factory``: the sandbox pool to grade with (left open); default: a new one.
        ``lock``: hold ``run_dir``'s lock while running (False: the caller holds it).
        ``companion_files``: files a caller writes beside the run (a new run's folder may hold
        them, and nothing else but the run's own)."""
        check_settings(settings)
        check_data_dir(settings.data_dir)
        check_out(Path(run_dir))
        if settings.grading not in set(Grading):
            raise refused("grading", settings.grading, "official or strict")
        self.grading = Grading(settings.grading)
        self.run_dir = Path(run_dir)
        self.backend = backend
        self.identity = backend_identity(backend)  # the store's key for the model
        self.settings = settings
        self.events: Events = events or Quiet()
        self.pool_factory = pool_factory
        self.companion_files = tuple(companion_files)
        self._lock = contextlib.ExitStack()
        self._locking = lock
        self._locked = False
        self.interruption = "interrupted"  # the failure message of a KeyboardInterrupt
        self._pool: Executor | None = None
        self._pool_warned = False
        self.plans = [self._resolve(name) for name in settings.benchmarks]
        self._check_ids()
        self.store: RunStore | None = None
        self._config: dict[str, Any] = {}

    # -- set-up (no writes) -----------------------------------------------------------------

    def _resolve(self, name: str) -> Resolved:
        try:
            bench = benchmarks.get(name)
            family = family_of(bench)
            extraction = bench.choose_extraction(self.settings.extraction)
            limits = bench.limits_for(self.settings.timeout)
        except KeyError as exc:
            raise RunError(f"--bench: {exc.args[0]}") from None
        except ValueError as exc:  # a SettingError stays the cause: the CLI names its flag
            raise RunError(str(exc)) from exc
        style = style_for(bench, self.settings.style)
        found = load_items(bench, self.settings.data_dir)
        if self.settings.ids:
            wanted = set(self.settings.ids)
            items = [item for item in found if item.id in wanted]
        else:
            items = select_items(bench, found, self.settings.limit, self.settings.skip)
        chat = self.settings.chat
        given = self.settings.system
        system = bench.system_message(chat) if given is None else given
        prompts = {item.id: bench.prompt(item, style) for item in items}
        hashes = {key: hash_prompt(text, chat, system) for key, text in prompts.items()}
        asked = self.settings.sampling
        sampling = replace(
            asked,
            stop=(*bench.stop(style, chat), *asked.stop),
            max_tokens=asked.max_tokens or bench.max_tokens_for(style),
        )
        return Resolved(
            bench, family, items, style, extraction, limits, sampling, system, prompts, hashes
        )

    def _check_ids(self) -> None:
        """Every ``--ids`` id is an item of some benchmark of the run."""
        if not self.settings.ids:
            return
        empty = next((plan.bench.name for plan in self.plans if not plan.items), None)
        if empty is not None:
            raise RunError(
                f"--ids: none is an item of {empty}; name the benchmarks they belong to with "
                "--bench"
            )
        held = {item.id for plan in self.plans for item in plan.items}
        unknown = [item_id for item_id in self.settings.ids if item_id not in held]
        if unknown:
            names = ", ".join(plan.bench.name for plan in self.plans)
            raise RunError(
                f"--ids: {unknown[0][:80]!r} is no item of {names} ({len(unknown)} of "
                f"{len(self.settings.ids)} ids unknown)"
            )

    def check_resumable(self) -> None:
        """RunError when ``run_dir`` holds a run of another model or other settings, or files
        of another command."""
        if not RunStore.exists(self.run_dir):
            foreign = foreign_entry(self.run_dir, {*RUN_FILES, *self.companion_files})
            if foreign is not None:
                raise RunError(
                    f"--out {self.run_dir}: holds {foreign} but no run store; not a run folder "
                    "(another command's, or files of your own: choose an empty --out)"
                )
            return
        try:
            with RunStore(self.run_dir) as store:
                row = store.run()
        except (sqlite3.DatabaseError, ValueError) as exc:
            raise RunError(
                f"--out {self.run_dir}: {store_path(self.run_dir)} is not a readable run store "
                f"({exc}); choose another --out (or move the file away)"
            ) from None
        if row is None:
            return
        where = f"--out {self.run_dir}: holds a run of"
        if model_identity(row.model) != self.identity:  # an older store's row: the whole id
            raise RunError(
                f"{where} model {model_identity(row.model)!r}, not {self.identity!r} "
                "(choose another --out)"
            )
        mine = self.settings.config()
        for key in FIXED:
            if row.config.get(key) != mine.get(key):
                flag, stored, asked = differing_option(key, row.config.get(key), mine.get(key))
                raise RunError(
                    f"{where} {flag} {json.dumps(stored)}, this run asks {flag} "
                    f"{json.dumps(asked)} (choose another --out, or keep {flag})"
                )

    # -- the run ------------------------------------------------------------------------------

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None and self.pool_factory is None:  # a factory's pool is the caller's
            self._pool.close()
        self._pool = None
        if self.store is not None:
            self.store.close()
            self.store = None
        self._lock.close()
        self._locked = False

    def lock(self) -> None:
        """Take ``run_dir``'s lock (creating the folder), held until :meth:`close`; RunError at
        once while another process writes into it. :meth:`run` takes it when not held yet."""
        if self._locked:
            return
        try:
            self._lock.enter_context(exclusive(self.run_dir))
        except FolderBusy:
            raise RunError(
                f"--out {self.run_dir}: another run is writing into this folder; wait for it "
                "to end or choose another --out"
            ) from None
        except OSError as exc:
            raise RunError(
                f"--out {self.run_dir}: cannot create the run folder ({exc.strerror or exc})"
            ) from None
        self._locked = True

    def run(self) -> RunSummary:
        """Run every benchmark; marks the run ``done``, or ``failed`` with the message, and
        writes ``results.json`` either way (a failed one: ``status`` ``failed``, the message and
        the reports finished before). Refuses (RunError) while another process writes into
        ``run_dir``."""
        try:
            return self._run()
        except StoreCorrupt as exc:  # a store changed by hand: one line, as any refusal
            raise RunError(f"{exc}; choose another --out") from None

    def _run(self) -> RunSummary:
        if self._locking:
            self.lock()
        self.check_resumable()
        store = self.store = RunStore(self.run_dir, create=True)
        previous = store.run()
        config = self.settings.config()
        if previous is not None:
            order = benchmarks.names()
            union = set(_texts(previous.config.get("benchmarks"))) | set(config["benchmarks"])
            config["benchmarks"] = [name for name in order if name in union]
            config["reported_n"] = _mapping(previous.config.get("reported_n"), int)
            config["sampling_keys"] = _mapping(previous.config.get("sampling_keys"), str)
        config["model_id"] = self.backend.model_id  # the latest invocation's, URL included
        store.start_run(self.identity, config)
        self._config = config
        summary = RunSummary(self.run_dir, self.identity, {}, {}, {}, {})
        greedy = greedy_samples_warning(
            self.settings.n, self.settings.sampling, self.backend.model_id
        )
        if greedy is not None:
            self._warn(summary, greedy)
        for plan in self.plans:
            if plan.style != self.settings.style:
                styles = ", ".join(str(style) for style in plan.bench.styles)
                self._warn(
                    summary,
                    f"{plan.bench.name}: --style {self.settings.style} is not one of its prompt "
                    f"styles ({styles}); its prompts are {plan.style}",
                )
        try:
            for plan in self.plans:
                self._run_one(store, plan, summary)
            if self.backend.model_id == ORACLE:
                summary.self_check = {
                    plan.bench.name: self_check(store, plan, self.identity, self.settings.n)
                    for plan in self.plans
                }
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                message = self.interruption
            else:
                message = (" ".join(str(exc).split()) or type(exc).__name__)[:500]
            store.set_status("failed", message)
            self._write_results(replace(summary, status="failed", message=message))
            raise
        store.set_status("done")
        write_atomic(self.run_dir / RESULTS_JSON, summary.to_json() + "\n")
        return summary

    def _write_results(self, summary: RunSummary) -> None:
        """A failed run's ``results.json`` (so that it never shows an older run as current);
        a write error here leaves the run's own error to be raised."""
        with contextlib.suppress(OSError):
            write_atomic(self.run_dir / RESULTS_JSON, summary.to_json() + "\n")

    def _run_one(self, store: RunStore, plan: Resolved, summary: RunSummary) -> None:
        name = plan.bench.name
        chat = self.settings.chat
        store.record_prompts(
            (plan.hashes[i.id], plan.prompts[i.id], chat, plan.system) for i in plan.items
        )
        store.record_items(name, self._item_rows(plan))
        # The exact cache key (stop sequences differ per benchmark), recorded before generating
        # so that the report finds the completions of an interrupted run too.
        keys = self._config.setdefault("sampling_keys", {})
        if keys.get(name) != plan.sampling.key():
            keys[name] = plan.sampling.key()
            store.update_config(self._config)
        summary.generated[name], summary.cached[name] = self._generate(store, plan)
        warning = limit_warning(store, plan, self.identity, self.settings.n)
        if warning is not None:
            self._warn(summary, warning)
        started = time.perf_counter()
        graded = self._grade(store, plan)
        if self._pool is not None and not self._pool_warned:
            self._pool_warned = True  # said once, by the benchmark that opened the sandbox
            for pool_warning in self._pool.warnings:
                self._warn(summary, f"sandbox: {pool_warning}")
        summary.graded[name] = graded
        for answer_warning in answer_warnings(store, plan, self.settings.n, self.settings.data_dir):
            self._warn(summary, f"{name}: {answer_warning}")
        # a stored report that does not read as its family's (a store changed by hand) is no
        # report to keep: this one is computed again from the stored verdicts
        reports = {
            key: value
            for key, value in store.results().items()
            if load_report(key, value) is not None
        }
        reported = self._config.setdefault("reported_n", {})
        stored_n, n = int(reported.get(name, 0)), self.settings.n
        keep = stored_n > n and name in reports and not graded  # never a silent downgrade
        if keep:
            self._warn(
                summary,
                f"{name}: kept the stored report over {stored_n} samples per item; this run "
                f"asked for --n {n} and graded nothing new (its pass@1 is the stored one's)",
            )
        elif stored_n > n and name in reports:
            self._warn(
                summary,
                f"{name}: the stored report covered {stored_n} samples per item; it now covers "
                f"--n {n} (new items were graded with {n}); re-run with --n {stored_n} for the "
                "larger k again",
            )
        if not keep and (graded or name not in reports or reported.get(name) != n):
            reports[name] = self._report(store, plan, time.perf_counter() - started).to_dict()
            store.record_result(name, reports[name])
            reported[name] = self.settings.n  # the samples the stored report covers
            store.update_config(self._config)
        summary.reports[name] = reports[name]

    def _item_rows(self, plan: Resolved) -> Iterable[ItemRow]:
        for item in plan.items:
            metadata = json.dumps(dict(item.metadata), default=str)
            category = plan.bench.category(item)
            yield ItemRow(item.id, item.task, plan.hashes[item.id], item.truth, category, metadata)

    def _generate(self, store: RunStore, plan: Resolved) -> tuple[int, int]:
        """Ask for the missing (prompt, sample) pairs; store each request's answer at once."""
        model, key, n = self.identity, plan.sampling.key(), self.settings.n
        cached = store.cached_samples(model, key, n)
        wanted: dict[str, tuple[Item, tuple[int, ...]]] = {}
        for item in plan.items:
            digest = plan.hashes[item.id]
            have = cached.get(digest, set())
            missing = tuple(s for s in range(n) if s not in have)
            if missing and digest not in wanted:
                wanted[digest] = (item, missing)
        hits = sum(len(cached.get(digest, ())) for digest in set(plan.hashes.values()))
        requests = [
            Request(
                plan.prompts[item.id],
                missing,
                plan.sampling,
                self.settings.chat,
                plan.system,
                item,
                plan.bench.name,
                plan.style,
            )
            for item, missing in wanted.values()
        ]
        digests = list(wanted)
        name = plan.bench.name
        self.events.start(name, "generate", len(requests))

        def on_result(index: int, completions: list[Completion]) -> None:
            store.record_completions(model, digests[index], key, completions)
            self.events.advance(name, "generate")

        if requests:
            with self._watching(name):
                self.backend.generate(requests, on_result)
        return sum(len(r.samples) for r in requests), hits

    @contextlib.contextmanager
    def _watching(self, name: str) -> Iterator[None]:
        """While inside, a backend that reports where it is inside a batch tells the events."""
        note = getattr(self.events, "note", None)
        backend = self.backend
        if note is None or not isinstance(backend, ReportsProgress):
            yield
            return
        backend.watch(lambda progress: note(name, "generate", progress.describe()))
        try:
            yield
        finally:
            backend.watch(None)

    def _warn(self, summary: RunSummary, warning: str) -> None:
        """One warning line: in results.json and on the terminal."""
        summary.warnings.append(warning)
        warn = getattr(self.events, "warn", None)
        if warn is not None:
            warn(warning)

    def _grade(self, store: RunStore, plan: Resolved) -> int:
        """Extract and grade the samples without a stored verdict (only those: a larger ``n``
        grades only the new samples); returns how many."""
        name, n = plan.bench.name, self.settings.n
        done = store.scored_samples(name, n)
        missing = {
            item.id: [s for s in range(n) if s not in done.get(item.id, set())]
            for item in plan.items
        }
        todo = [item for item in plan.items if missing[item.id]]
        self.events.start(name, "grade", len(todo))
        if not todo:
            return 0
        texts = store.completions(
            self.identity, plan.sampling.key(), {plan.hashes[item.id] for item in todo}, n
        )
        graded = 0
        for start in range(0, len(todo), SCORE_CHUNK):
            chunk = todo[start : start + SCORE_CHUNK]
            answers = {
                item.id: self._answers(plan, item, missing[item.id], texts) for item in chunk
            }
            scores = self._score(plan, chunk, answers)
            # The family numbers each item's verdicts 0..; they are the samples in `missing`.
            verdicts = [
                replace(verdict, sample=missing[item.id][position])
                for item in chunk
                for position, verdict in enumerate(scores[item.id])
            ]
            store.record_scores(name, verdicts)
            graded += len(verdicts)
            self.events.advance(name, "grade", len(chunk))
        return graded

    def _answers(
        self,
        plan: Resolved,
        item: Item,
        samples: list[int],
        texts: dict[tuple[str, int], StoredCompletion],
    ) -> list[Extracted]:
        found = [texts.get((plan.hashes[item.id], sample)) for sample in samples]
        if any(text is None for text in found):
            raise RunError(
                f"{plan.bench.name}: item {item.id}: the backend returned no completion "
                "for some samples"
            )
        return [self._extract(plan, item, text.text) for text in found if text is not None]

    def _extract(self, plan: Resolved, item: Item, text: str) -> Extracted:
        return tasks.get(item.task).extract(item, text, plan.style, plan.extraction)

    def _score(
        self, plan: Resolved, items: list[Item], answers: dict[str, list[Extracted]]
    ) -> dict[str, list[Score]]:
        return plan.family.grade(
            plan.bench, items, answers, self._open_pool, self.grading, plan.limits
        )

    def _open_pool(self) -> Executor:
        if self._pool is None:
            try:
                if self.pool_factory is not None:
                    self._pool = self.pool_factory()
                else:
                    self._pool = open_executor(
                        self.settings.executor,
                        self.settings.workers,
                        isolation=self.settings.isolation,
                        grading=True,
                    )
            except (SandboxUnavailable, ValueError) as exc:
                raise RunError(f"sandbox unavailable: {exc}") from None
        return self._pool

    def _report(self, store: RunStore, plan: Resolved, elapsed: float) -> Report:
        bench, n = plan.bench, self.settings.n
        scores = store.scores(bench.name, n)
        incomplete = [i.id for i in plan.items if len(scores.get(i.id, ())) != n]
        if incomplete:
            raise RunError(
                f"{bench.name}: {len(incomplete)} items lack verdicts (first: {incomplete[0]!r})"
            )
        mine = {item.id: scores[item.id] for item in plan.items}
        run = RunReport(
            str(store.path), FORMAT, plan.style, plan.extraction, self.grading, n, elapsed
        )
        return plan.family.report(bench, plan.items, mine, run)


def _texts(found: object) -> list[str]:
    """A stored list of names, its names only (a store is a file anyone can change)."""
    return [name for name in found if isinstance(name, str)] if isinstance(found, list) else []


def _mapping(found: object, kind: type) -> dict[str, Any]:
    """A stored mapping of names, the entries of the expected type only."""
    if not isinstance(found, dict):
        return {}
    return {
        key: value for key, value in found.items()
        if isinstance(key, str) and isinstance(value, kind) and not isinstance(value, bool)
    }  # fmt: skip
