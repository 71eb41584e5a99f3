"""What a benchmark is: one keyword-declared record that every consumer reads.

The runner, ``score``, ``report``, ``bench`` and the oracle read these fields and nothing else:
no code outside the declarations tests a benchmark's name. See docs/architecture.md, "How to
add a benchmark".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

from codereasoner import tasks
from codereasoner.benchmarks.cache import DataUnavailable, FileStatus, Source, locate, status
from codereasoner.execution import Limits
from codereasoner.settings import SettingError
from codereasoner.tasks import OFFICIAL_LIMITS, Extraction, Item

MAX_ID_CHARS = 1_000  # an item id (run stores, reports and file names carry it)
MAX_FIELD_CHARS = 2_000_000  # an item's program, call or truth

__all__ = ["DIRECT_MAX_TOKENS", "REASONING_MAX_TOKENS", "Benchmark", "Clock", "Metrics", "Stops"]

# ``--max-tokens`` when not given. A direct answer (an assertion, a value, a call) fits in well
# under 192 tokens (CRUXEval's longest oracle answer is 110 SmolLM2 tokens); a model that never
# writes the stop tag then costs 192 tokens a row, not 1,024. Reasoning styles get 1,024.
DIRECT_MAX_TOKENS = MappingProxyType({"direct": 192, "phind": 192})
REASONING_MAX_TOKENS = 1024


FAMILY_NAME = re.compile(r"[a-z0-9][a-z0-9@._-]{0,63}")  # what a metric family may be called


class Metrics(StrEnum):
    """The built-in metric families: how verdicts are obtained and added up
    (``evaluation/families.py``). A plugin adds its own (a ``MetricFamily`` under a name of its
    own, entry point group ``codereasoner.metric_families``), and a benchmark names it."""

    PASS_AT_K = "pass@k"  # CRUXEval, LiveCodeBench: verdicts under --grading, pass@k
    ACCURACY_CONSISTENCY = "accuracy-consistency"  # REval: per question kind, IC
    INVARIANCE_TRANSPARENCY = "invariance-transparency"  # CoRE: I, Is, W, Ws, RCS, Cons


class Clock(StrEnum):
    """What ``--timeout`` limits: wall-clock time (CRUXEval, LiveCodeBench) or CPU time (REval,
    whose wall-clock limit is then ``2 * timeout + 1`` s)."""

    WALL = "wall"
    CPU = "cpu"


@dataclass(frozen=True)
class Stops:
    """Upstream stop sequences: ``raw`` for plain completion prompts, ``chat`` for chat prompts
    (None: the same as ``raw``), and per-style replacements that apply in both modes."""

    raw: tuple[str, ...] = ()
    chat: tuple[str, ...] | None = None
    styles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def get(self, style: str, chat: bool) -> tuple[str, ...]:
        if style in self.styles:
            return self.styles[style]
        return self.raw if not chat or self.chat is None else self.chat


def _looks_like_a_path(text: str) -> bool:
    """A one-word ``*.txt``: what ``system`` held when it named a template (now it is the text)."""
    stripped = text.strip()
    return stripped.endswith(".txt") and not any(char.isspace() for char in stripped)


@dataclass(frozen=True, kw_only=True)
class Benchmark:
    """One benchmark. ``tasks``: the task kinds (registry names, ``Item.task``) its items use;
    ``metrics``: the metric family that grades and reports it (:class:`Metrics`)."""

    name: str
    title: str
    description: str
    tasks: tuple[str, ...]
    dataset: str  # data folder name; shared by benchmarks reading the same files
    sources: tuple[Source, ...]
    parse: Callable[[Mapping[str, Path]], list[Item]]
    license: str
    upstream: str
    counts: Mapping[str, int]  # what the full upstream data holds
    breakdown: str  # the metadata key of per-category tables
    breakdown_note: str
    metric_note: str
    metrics: str = Metrics.PASS_AT_K  # a metric family's registered name
    stops: Stops = Stops()
    # --max-tokens by prompt style when not given (a style not named: REASONING_MAX_TOKENS)
    max_tokens: Mapping[str, int] = field(default_factory=lambda: DIRECT_MAX_TOKENS)
    system: str | None = None  # the system message, sent in chat mode only
    limits: Limits = OFFICIAL_LIMITS
    clock: Clock = Clock.WALL
    extraction: Extraction = Extraction.OFFICIAL  # the default
    extractions: tuple[Extraction, ...] = tuple(Extraction)  # the allowed
    # Metadata keys whose values ``--limit`` keeps together (empty: each item alone); items
    # lacking a key are their own group.
    group_by: tuple[str, ...] = ()
    # The benchmark's own prompts by style, each a template of the items' fields ("{code}"),
    # in place of its task kinds' templates; its styles are then these. Empty: the kinds'.
    prompts: Mapping[str, str] = field(default_factory=dict)
    # Synthesis decontaminates against it by default: its programs are shown to models. False
    # for data this project makes (generated benchmarks, synthesized cases) and for a view whose
    # programs another declaration of the same dataset already brings.
    decontaminate: bool = True

    def __post_init__(self) -> None:
        where = f"benchmark {self.name!r}"
        if not self.tasks:
            raise ValueError(f"{where}: declares no task kinds")
        if not isinstance(self.metrics, str) or not FAMILY_NAME.fullmatch(self.metrics):
            known = ", ".join(family.value for family in Metrics)
            raise ValueError(
                f"{where}: metrics {self.metrics!r}; expected a metric family's name, such as "
                f"{known}"
            )
        if self.system is not None and _looks_like_a_path(self.system):
            raise ValueError(
                f"{where}: system {self.system!r} looks like a template path; expected the "
                "message text (read it from your templates: Templates(package).text(name))"
            )
        if self.prompts and "direct" not in self.prompts:
            raise ValueError(f"{where}: prompts need a 'direct' template, the style every run has")
        for style, text in self.prompts.items():
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{where}: prompts[{style!r}] must be a non-empty template")
        if self.extraction not in self.extractions:
            raise ValueError(
                f"{where}: default extraction {self.extraction.value!r} is not "
                "among its allowed extractions"
            )

    # -- data -------------------------------------------------------------------------------

    def folder(self, data_dir: Path) -> Path:
        """The benchmark's own folder, given either it or the data root holding one folder per
        dataset (``cruxeval/``, ``reval/``, ...)."""
        data_dir = Path(data_dir)
        nested = data_dir / self.dataset
        return nested if nested.is_dir() else data_dir

    def load(
        self, data_dir: Path | None = None, *, download: bool = True, cache: Path | None = None
    ) -> list[Item]:
        """Items from ``data_dir`` (the data root or this benchmark's folder), else the cache."""
        folder = None if data_dir is None else self.folder(data_dir)
        paths = locate(
            self.dataset, self.sources, folder, download=download, cache=cache, benchmark=self.name
        )
        return self.checked(self.parse(paths))

    def checked(self, items: object) -> list[Item]:
        """``items`` as parsed, when they are items a run can take; DataUnavailable naming the
        first that is not (the same checks for a built-in benchmark and a plugin's)."""
        if not isinstance(items, list | tuple):
            raise DataUnavailable(
                f"{self.name}: its parser returned {type(items).__name__}, not a list of items"
            )
        seen: set[str] = set()
        for index, item in enumerate(items):
            where = f"{self.name}: item {index + 1}"
            if not isinstance(item, Item):
                raise DataUnavailable(f"{where}: expected an Item, got {type(item).__name__}")
            if not isinstance(item.id, str) or not item.id or len(item.id) > MAX_ID_CHARS:
                raise DataUnavailable(
                    f"{where}: field 'id' expected a text of 1 to {MAX_ID_CHARS} characters"
                )
            if item.id in seen:
                raise DataUnavailable(f"{where}: duplicate id {item.id[:80]!r}")
            seen.add(item.id)
            if item.task not in self.tasks:
                raise DataUnavailable(
                    f"{where} ({item.id[:80]!r}): task {str(item.task)[:40]!r} is not one of its "
                    f"task kinds ({', '.join(self.tasks)})"
                )
            for name in ("program", "call", "truth"):
                text = getattr(item, name)
                if not isinstance(text, str) or len(text) > MAX_FIELD_CHARS:
                    raise DataUnavailable(
                        f"{where} ({item.id[:80]!r}): field {name!r} expected a text of at most "
                        f"{MAX_FIELD_CHARS:,} characters"
                    )
        return list(items)

    def cache_status(self, cache: Path | None = None) -> list[FileStatus]:
        return status(self.dataset, self.sources, cache)

    # -- prompting and reading ------------------------------------------------------------------

    @property
    def styles(self) -> tuple[str, ...]:
        """The prompt styles every one of its task kinds supports, in the first kind's order
        (with prompts of its own, those of them)."""
        kinds = [tasks.get(name) for name in self.tasks]
        names = [[str(style) for style in kind.styles] for kind in kinds]
        shared = [style for style in names[0] if all(style in other for other in names[1:])]
        return tuple(style for style in shared if not self.prompts or style in self.prompts)

    def prompt(self, item: Item, style: str) -> str:
        """The prompt of ``item`` in ``style``: the benchmark's own template, else its kind's."""
        own = self.prompts.get(str(style))
        if own is None:
            return tasks.get(item.task).prompt(item, style)
        return own.format_map(dict(item.fields))

    def stop(self, style: str, chat: bool) -> tuple[str, ...]:
        return self.stops.get(str(style), chat)

    def max_tokens_for(self, style: str) -> int:
        """The completion length a style's answers need (``--max-tokens`` when not given)."""
        return self.max_tokens.get(str(style), REASONING_MAX_TOKENS)

    def system_message(self, chat: bool) -> str | None:
        return self.system.strip() if chat and self.system else None

    def choose_extraction(self, name: str | None) -> Extraction:
        """``name`` (None: the default); SettingError when unknown or not allowed here."""
        if name is None:
            return self.extraction
        try:
            chosen = Extraction(name)
        except ValueError:
            allowed = ", ".join(mode.value for mode in Extraction)
            raise SettingError("extraction", name, f"one of {allowed}") from None
        if chosen not in self.extractions:
            allowed = ", ".join(mode.value for mode in self.extractions)
            raise SettingError("extraction", name, f"one {self.name} allows: {allowed}")
        return chosen

    def choose_style(self, name: str) -> str:
        """``name`` when every task kind supports it; SettingError naming the supported ones."""
        if name not in self.styles:
            raise SettingError("style", name, f"one {self.name} supports: {', '.join(self.styles)}")
        return name

    # -- grading --------------------------------------------------------------------------------

    def limits_for(self, timeout: float | None) -> Limits:
        """The sandbox limits, with ``--timeout`` seconds on this benchmark's clock."""
        if timeout is None:
            return self.limits
        if timeout <= 0:
            raise SettingError("timeout", timeout, "a positive number of seconds")
        wall = 2 * timeout + 1 if self.clock is Clock.CPU else timeout
        return Limits(timeout_s=timeout, wall_timeout_s=wall, memory_mb=self.limits.memory_mb)

    def group(self, item: Item) -> str:
        """The key of the items ``--limit`` must keep together with ``item``."""
        if not self.group_by or any(key not in item.metadata for key in self.group_by):
            return item.id
        return "/".join(str(item.metadata[key]) for key in self.group_by)

    def category(self, item: Item) -> str:
        return str(item.metadata.get(self.breakdown, "?"))
