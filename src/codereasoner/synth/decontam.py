"""Decontamination of generated cases against the evaluation benchmarks' programs.

Three rules (``docs/synth.md``; data-pipeline reference section 8):

``ngram10``
    DeepSeek-Coder's rule over Python tokens: the case shares a 10-token sequence with a benchmark
    program, input or output. Tokens come from :mod:`tokenize`, keeping names, operators,
    numbers and strings (comments, line breaks and indentation dropped). Two variants, chosen by
    ``rule`` (:data:`NGRAM_RULES`):

    ``literal`` (the default)
        the paper's rule as written: *any* shared 10-gram is contamination, including generic
        ones such as ``def f ( s ) : s = s .``.
    ``specific``
        a 10-gram counts only if it is *informative*: it holds a distinctive literal or two
        different distinctive names. A distinctive token is a name, number or string of at
        least three characters (quotes, sign and leading zeros aside) that is not a keyword or
        built-in and occurs in fewer than ``common_fraction`` (2%) of the benchmark programs.
        Idioms such as ``for i in range(len(nums)):`` (ten generic tokens) then do not count,
        since the generator draws on the same built-in methods as CRUXEval.
``short_exact``
    DeepSeek's clause for benchmark strings of 3 to 9 tokens (inputs and outputs, short
    programs): such a string occurring verbatim, as a token sequence, in the case. Under both
    ``rule`` values the string must be informative as above (``[1, 2]`` or ``1 , 3`` is not
    evidence of anything; taken literally the clause would drop about one generated case in
    six).
``near_duplicate``
    An AST-level near-duplicate pass: the code re-printed from its AST (formatting, comments and
    docstrings gone), the names it binds renamed ``v0, v1, ...`` in order of appearance
    (built-ins, keywords and attribute names kept), string and number literals replaced by
    placeholders, then Jaccard similarity of token 5-gram shingles, threshold 0.8. Prefix
    filtering over shingles ordered by rarity finds every pair above the threshold exactly while
    looking at a handful of posting lists per check (thousands of checks per second).

:func:`codereasoner.benchmarks.programs.load_benchmark_programs` reads the programs through the
benchmark loaders (synthesis sits above the benchmarks, so the caller loads them) and records
which benchmarks were checked and which were missing; :class:`BenchmarkIndex` answers
:meth:`~BenchmarkIndex.check`; :class:`Decontamination` is what a synthesis run is given: the
index and what it covers, or the explicit decision to skip (``--no-decontam``).
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import math
import re
import token
import tokenize
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from codereasoner.settings import SettingError
from codereasoner.synth.dedup import normalise

NGRAM: Final = 10
SHORT_MIN, SHORT_MAX = 3, 9
SHINGLE: Final = 5
NEAR_THRESHOLD: Final = 0.8
COMMON_FRACTION: Final = 0.02
MIN_DISTINCTIVE: Final = 3
# How the 10-gram rule decides (see the module docstring); the first is the default.
NGRAM_RULES: Final = ("literal", "specific")
DEFAULT_RULE: Final = NGRAM_RULES[0]


def check_rule(rule: str | None, setting: str = "decontam_rule") -> None:
    """A SettingError unless ``rule`` (None: the default) is one of :data:`NGRAM_RULES`."""
    if rule is not None and rule not in NGRAM_RULES:
        raise SettingError(setting, rule, " or ".join(NGRAM_RULES))


RULE_NAMES: Final = ("ngram10", "short_exact", "near_duplicate")

_KEPT_TYPES: Final = frozenset({token.NAME, token.OP, token.NUMBER, token.STRING})
_KEYWORDS: Final = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
_RESERVED: Final = _KEYWORDS | frozenset(dir(builtins))  # kept by the renaming
_STRING_PREFIX_CHARS: Final = frozenset("rRbBuUfF")
_UNPARSED_TOKEN: Final = re.compile(
    r"(?P<string>[rRbBuUfF]{0,2}(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\""
    r"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))"
    r"|(?P<number>(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?[jJ]?)"
    r"|(?P<name>\w+)"
    r"|(?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%&|^@=<>!:]=|[^\s\w])"
)


@dataclass(frozen=True)
class BenchmarkProgram:
    """One benchmark program and the short texts that go with it (call arguments, outputs)."""

    benchmark: str
    item_id: str
    code: str
    strings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Match:
    """A generated case matched a benchmark item under ``rule`` (``ngram10``, ``short_exact`` or
    ``near_duplicate``); ``detail`` shows the shared tokens or the similarity."""

    benchmark: str
    item_id: str
    rule: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "benchmark": self.benchmark,
            "item_id": self.item_id,
            "rule": self.rule,
            "detail": self.detail,
        }


# ---------------------------------------------------------------------------------------
# tokens
# ---------------------------------------------------------------------------------------


class Token(NamedTuple):
    type: int
    text: str


def python_tokens(text: str) -> list[Token]:
    """Names, operators, numbers and strings of ``text``; comments, line breaks and indentation
    are dropped. Text that does not tokenise to the end keeps the tokens read so far."""
    found: list[Token] = []
    try:
        for kind, string, *_ in tokenize.generate_tokens(io.StringIO(text).readline):
            if kind in _KEPT_TYPES:
                found.append(Token(kind, string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def near_view(code: str) -> list[str]:
    """The tokens the near-duplicate pass compares: the code re-printed from its AST (so
    formatting, comments, docstrings and redundant parentheses vanish) with the names it binds
    renamed ``v0, v1, ...`` and literals replaced by ``STR`` / ``NUM``. Code that does not
    parse falls back to renaming at the token level."""
    try:
        canonical, _ = normalise(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return normalised(python_tokens(code))
    # ast.unparse output is regular (no comments, no line continuations, names already
    # renamed), so a regular expression splits it much faster than tokenize.
    out: list[str] = []
    for match in _UNPARSED_TOKEN.finditer(canonical):
        kind = match.lastgroup
        out.append("STR" if kind == "string" else "NUM" if kind == "number" else match.group())
    return out


def normalised(tokens: Sequence[Token]) -> list[str]:
    """Tokens with the names a program chooses renamed ``v0, v1, ...`` by first appearance and
    literals replaced by ``STR`` / ``NUM``; keywords, built-ins and attribute names are kept."""
    names: dict[str, str] = {}
    out: list[str] = []
    previous = ""
    for tok in tokens:
        text = tok.text
        if tok.type == token.STRING:
            text = "STR"
        elif tok.type == token.NUMBER:
            text = "NUM"
        elif tok.type == token.NAME and previous != "." and text not in _RESERVED:
            text = names.setdefault(text, f"v{len(names)}")
        out.append(text)
        previous = tok.text
    return out


def _texts(tokens: Sequence[Token]) -> tuple[str, ...]:
    return tuple(tok.text for tok in tokens)


def _grams(items: Sequence[Any], n: int) -> Iterator[tuple[Any, ...]]:
    for start in range(len(items) - n + 1):
        yield tuple(items[start : start + n])


def _argument_tokens(tokens: list[Token]) -> list[Token]:
    """``name(args)`` -> the tokens of ``args``; anything else unchanged."""
    if len(tokens) >= 3 and tokens[1].text == "(" and tokens[-1].text == ")":
        return tokens[2:-1]
    return tokens


def _is_literal_token(tok: Token) -> bool:
    return tok.type in (token.STRING, token.NUMBER)


# ---------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedBenchmarks:
    """Programs of the benchmarks that could be read; unpacks as ``programs, checked``."""

    programs: list[BenchmarkProgram]
    checked: list[str]
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why

    def __iter__(self) -> Iterator[Any]:
        yield self.programs
        yield self.checked


# ---------------------------------------------------------------------------------------
# the index
# ---------------------------------------------------------------------------------------


class BenchmarkIndex:
    """Benchmark programs indexed for the three rules; :meth:`check` tests one case."""

    def __init__(
        self,
        programs: Iterable[BenchmarkProgram],
        *,
        ngram: int = NGRAM,
        shingle: int = SHINGLE,
        near_threshold: float = NEAR_THRESHOLD,
        common_fraction: float = COMMON_FRACTION,
        rule: str = DEFAULT_RULE,
    ) -> None:
        if not 0 < near_threshold <= 1:
            raise ValueError("near_threshold must be in (0, 1]")
        check_rule(rule)
        self.rule = rule
        self.programs = list(programs)
        self.ngram = ngram
        self.shingle = shingle
        self.near_threshold = near_threshold
        tokenised = [python_tokens(program.code) for program in self.programs]
        self.common = self._common_tokens(tokenised, common_fraction)
        # Every program holding a 10-gram / short string (most are held by one).
        self._grams: dict[tuple[str, ...], list[int]] = defaultdict(list)
        # Short strings by their first SHORT_MIN tokens: one lookup per position of a case.
        self._short: dict[tuple[str, ...], dict[tuple[str, ...], list[int]]] = defaultdict(dict)
        self._shingles: list[frozenset[int]] = []
        self._shingle_ids: dict[tuple[str, ...], int] = {}
        self._postings: dict[int, list[int]] = defaultdict(list)
        for number, (program, tokens) in enumerate(zip(self.programs, tokenised, strict=True)):
            self._index_exact(number, tokens, program.strings)
        self._index_shingles()

    def __len__(self) -> int:
        return len(self.programs)

    def digest(self) -> str:
        """SHA-256 of the indexed programs and their strings: a run's fingerprint of the
        benchmark data it was checked against, so a resume against other data is refused."""
        hasher = hashlib.sha256()
        for program in self.programs:
            for text in (program.benchmark, program.item_id, program.code, *program.strings):
                hasher.update(text.encode("utf-8", "surrogatepass"))
                hasher.update(b"\0")
            hasher.update(b"\1")
        return hasher.hexdigest()

    @property
    def benchmarks(self) -> list[str]:
        """The benchmarks with at least one indexed program, in first-seen order."""
        return list(dict.fromkeys(program.benchmark for program in self.programs))

    # -- building --------------------------------------------------------------------------

    @staticmethod
    def _common_tokens(tokenised: list[list[Token]], fraction: float) -> frozenset[str]:
        counts: Counter[str] = Counter()
        for tokens in tokenised:
            counts.update({tok.text for tok in tokens})
        limit = max(2, math.ceil(fraction * len(tokenised)))
        return frozenset(text for text, count in counts.items() if count >= limit)

    def distinctive(self, tok: Token) -> bool:
        """A name, number or string rare enough among the benchmark programs to be evidence:
        not a keyword, built-in or operator, not among the ``common`` tokens, and at least
        ``MIN_DISTINCTIVE`` characters long (strings without quotes, numbers without sign,
        leading zeros and point), so ``ch``, ``12`` and ``'ab'`` are never evidence."""
        text = tok.text
        if tok.type == token.OP or text in _RESERVED or text in self.common:
            return False
        if tok.type == token.STRING:
            text = text.lstrip("".join(_STRING_PREFIX_CHARS)).strip("'\"")
        elif tok.type == token.NUMBER:
            text = text.lstrip("-+0.").replace(".", "")
        return len(text) >= MIN_DISTINCTIVE

    def informative(self, tokens: Sequence[Token]) -> bool:
        """Evidence of copying: a distinctive literal, or two different distinctive names (one
        rare name such as ``numbers`` or ``res`` among generic tokens is a coincidence)."""
        names: set[str] = set()
        for tok in tokens:
            if self.distinctive(tok):
                if tok.type != token.NAME:
                    return True
                names.add(tok.text)
        return len(names) >= 2

    def _index_exact(self, number: int, tokens: list[Token], strings: Sequence[str]) -> None:
        texts = [tokens] + [_argument_tokens(python_tokens(text)) for text in strings]
        for sequence in texts:
            if SHORT_MIN <= len(sequence) <= SHORT_MAX:
                if self.informative(sequence):
                    key = _texts(sequence)
                    _add(self._short[key[:SHORT_MIN]].setdefault(key, []), number)
                continue
            literal = self.rule == "literal"
            for start in range(len(sequence) - self.ngram + 1):
                window = sequence[start : start + self.ngram]
                if literal or self.informative(window):
                    _add(self._grams[_texts(window)], number)

    def _index_shingles(self) -> None:
        raw = [set(_grams(near_view(program.code), self.shingle)) for program in self.programs]
        frequency: Counter[tuple[str, ...]] = Counter()
        for shingles in raw:
            frequency.update(shingles)
        # Global order: rarest first, ties by the shingle text (deterministic).
        ordered = sorted(frequency, key=lambda item: (frequency[item], item))
        self._shingle_ids = {shingle: rank for rank, shingle in enumerate(ordered)}
        for number, shingles in enumerate(raw):
            ids = sorted(self._shingle_ids[item] for item in shingles)
            self._shingles.append(frozenset(ids))
            for rank in ids[: _prefix_length(len(ids), self.near_threshold)]:
                self._postings[rank].append(number)

    # -- checking --------------------------------------------------------------------------

    def check(self, code: str, call: str = "") -> list[Match]:
        """Every benchmark item the case matches (one match per item and rule), ordered by
        rule then benchmark order. ``call`` (the case's call, optional) is checked by the exact
        rules as a separate text."""
        tokens = python_tokens(code)
        found: dict[tuple[int, str], Match] = {}
        streams = [tokens]
        if call:
            streams.append(python_tokens(call))
        for stream in streams:
            self._check_grams(stream, found)
            self._check_short(stream, found)
        self._check_near(code, found)
        order = {"ngram10": 0, "short_exact": 1, "near_duplicate": 2}
        return [found[key] for key in sorted(found, key=lambda key: (order[key[1]], key[0]))]

    def _match(
        self, found: dict[tuple[int, str], Match], number: int, rule: str, detail: str
    ) -> None:
        if (number, rule) not in found:
            program = self.programs[number]
            found[(number, rule)] = Match(program.benchmark, program.item_id, rule, detail)

    def _check_grams(self, tokens: list[Token], found: dict[tuple[int, str], Match]) -> None:
        if not self._grams:
            return
        texts = _texts(tokens)
        for start in range(len(texts) - self.ngram + 1):
            numbers = self._grams.get(texts[start : start + self.ngram])
            for number in numbers or ():
                self._match(found, number, "ngram10", " ".join(texts[start : start + self.ngram]))

    def _check_short(self, tokens: list[Token], found: dict[tuple[int, str], Match]) -> None:
        texts = _texts(tokens)
        for start in range(len(texts) - SHORT_MIN + 1):
            strings = self._short.get(texts[start : start + SHORT_MIN])
            if strings is None:
                continue
            for key, numbers in strings.items():
                if texts[start : start + len(key)] == key:
                    for number in numbers:
                        self._match(found, number, "short_exact", " ".join(key))

    def _check_near(self, code: str, found: dict[tuple[int, str], Match]) -> None:
        shingles = set(_grams(near_view(code), self.shingle))
        if not shingles:
            return
        known = sorted(self._shingle_ids[item] for item in shingles if item in self._shingle_ids)
        unknown = len(shingles) - len(known)
        # Unknown shingles occur in no benchmark program: they come first in the global order.
        probe = _prefix_length(len(shingles), self.near_threshold) - unknown
        if probe <= 0:
            return
        candidates: set[int] = set()
        for rank in known[:probe]:
            candidates.update(self._postings.get(rank, ()))
        mine = frozenset(known)
        for number in sorted(candidates):
            theirs = self._shingles[number]
            shared = len(mine & theirs)
            similarity = shared / (len(shingles) + len(theirs) - shared)
            if similarity >= self.near_threshold:
                self._match(found, number, "near_duplicate", f"jaccard {similarity:.2f}")


# ---------------------------------------------------------------------------------------
# what a run is given
# ---------------------------------------------------------------------------------------


class NoBenchmarkData(ValueError):
    """Decontamination was asked for but no benchmark's data was found."""


@dataclass(frozen=True)
class Decontamination:
    """How a synthesis run decontaminates: an index and the benchmarks it covers (``checked``)
    and those whose data was missing (``missing``: name -> why), or ``skipped`` (why nothing is
    checked, e.g. ``"--no-decontam"``). Build it with :meth:`against` or :meth:`skip`; the
    records, the summary and the resume fingerprint all say which it was."""

    index: BenchmarkIndex | None
    checked: tuple[str, ...] = ()
    missing: Mapping[str, str] = field(default_factory=dict)
    skipped: str | None = None

    def __post_init__(self) -> None:
        if (self.index is None) == (self.skipped is None):
            raise ValueError("Decontamination: give an index or a reason to skip, not both")
        if self.index is not None and not self.checked:
            raise NoBenchmarkData("no benchmark data to decontaminate against")

    @classmethod
    def against(cls, loaded: LoadedBenchmarks, rule: str = DEFAULT_RULE) -> Decontamination:
        """Check against what ``loaded`` holds; :class:`NoBenchmarkData` when it holds nothing."""
        if not loaded.checked:
            names = ", ".join(loaded.skipped) or "none asked for"
            raise NoBenchmarkData(f"no benchmark data found ({names})")
        index = BenchmarkIndex(loaded.programs, rule=rule)
        return cls(index, tuple(loaded.checked), dict(loaded.skipped))

    @classmethod
    def skip(cls, reason: str = "--no-decontam") -> Decontamination:
        """Nothing is checked, and every record says why."""
        return cls(None, skipped=reason)

    @property
    def rule(self) -> str | None:
        return self.index.rule if self.index is not None else None

    def check(self, code: str, call: str = "") -> list[Match]:
        return self.index.check(code, call) if self.index is not None else []

    def record(self) -> dict[str, Any]:
        """The ``decontam`` field of every case record of the run."""
        if self.skipped is not None:
            return {"checked": [], "skipped": self.skipped}
        return {
            "checked": list(self.checked),
            "missing": list(self.missing),
            "rule": self.rule,
            "rules": list(RULE_NAMES),
            "matches": 0,
        }

    def settings(self) -> dict[str, Any]:
        """What the output depends on (part of a run's resume fingerprint)."""
        if self.skipped is not None:
            return {"decontam_skipped": self.skipped, "decontam_checked": []}
        assert self.index is not None
        return {
            "decontam_skipped": None,
            "decontam_checked": list(self.checked),
            "decontam_missing": list(self.missing),
            "decontam_rule": self.rule,
            "decontam_programs": len(self.index),
            "decontam_sha256": self.index.digest(),
        }

    def describe(self) -> str:
        """One line for the terminal: what is checked, by which rule, and what is missing."""
        if self.skipped is not None:
            return f"decontamination: SKIPPED ({self.skipped}): no case is checked against any benchmark"
        assert self.index is not None
        text = (
            f"decontamination: {self.rule} 10-gram rule, short exact strings and near "
            f"duplicates against {', '.join(self.checked)} ({len(self.index):,} programs)"
        )
        if self.missing:
            text += f"; NOT checked (data missing): {', '.join(self.missing)}"
        return text


def _add(numbers: list[int], number: int) -> None:
    if not numbers or numbers[-1] != number:  # programs are indexed in order
        numbers.append(number)


def _prefix_length(size: int, threshold: float) -> int:
    """Prefix filtering: two sets with Jaccard >= threshold share an element among the first
    ``size - ceil(threshold * size) + 1`` elements of each, in any one global order."""
    return size - math.ceil(threshold * size - 1e-9) + 1 if size else 0
