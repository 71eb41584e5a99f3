"""Held-out methods: synthesized cases split by the catalog method they exercise.

A model that trains on cases of ``str.partition`` and is tested on other cases of
``str.partition`` is tested on what it saw. Splitting by method instead keeps whole methods
out of training: each catalog method (``str.rfind``, ``builtins.sorted``, a case record's
``method``) falls in ``train``, ``validation`` or ``test`` by a hash of the seed and its name,
so a method's share never depends on which other methods a synthesis drew, and the same seed
always splits the same way.

    split = MethodSplit(seed=0)                      # 70 / 15 / 15 percent of the methods
    split.of("str.rfind")                            # "train", "validation" or "test"
    codereasoner export --from runs/distill --format trl-sft --methods train --out sft.jsonl

``export --methods NAME`` keeps the records of that share's methods and records the split
beside its output (:func:`write_manifest`: every method seen and its share, the seed and the
percentages), so the evaluation can take the held-out cases of the same split
(:func:`split_cases`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codereasoner.benchmarks.case_files import Case
from codereasoner.files import write_atomic
from codereasoner.training.export import DistilledRecord, ExportError

__all__ = ["DEFAULT_PERCENT", "SPLITS", "MethodSplit", "manifest_path", "split_cases"]

SPLITS = ("train", "validation", "test")
DEFAULT_PERCENT = (70, 15, 15)
MANIFEST_SUFFIX = ".methods.json"


@dataclass(frozen=True)
class MethodSplit:
    """Each method's share by a hash of ``seed`` and its name; ``percent`` of train,
    validation and test (whole numbers adding up to 100)."""

    seed: int = 0
    percent: tuple[int, int, int] = DEFAULT_PERCENT

    def __post_init__(self) -> None:
        if len(self.percent) != len(SPLITS) or sum(self.percent) != 100:
            raise ExportError(
                f"--method-split {','.join(map(str, self.percent))}: expected three whole "
                "percentages (train, validation, test) adding up to 100"
            )
        if any(share < 0 for share in self.percent):
            raise ExportError("--method-split: a percentage cannot be negative")

    def of(self, method: str) -> str:
        """The share ``method`` falls in."""
        digest = hashlib.sha256(f"method-split:{self.seed}:{method}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") % 100
        bound = 0
        for name, share in zip(SPLITS, self.percent, strict=True):
            bound += share
            if point < bound:
                return name
        return SPLITS[-1]

    def selector(self, share: str) -> MethodFilter:
        if share not in SPLITS:
            raise ExportError(f"--methods {share!r}: expected one of {', '.join(SPLITS)}")
        return MethodFilter(self, share)

    def to_dict(self, methods: Iterable[str]) -> dict[str, Any]:
        chosen = sorted(set(methods))
        return {
            "seed": self.seed,
            "percent": dict(zip(SPLITS, self.percent, strict=True)),
            "methods": {name: [m for m in chosen if self.of(m) == name] for name in SPLITS},
        }


@dataclass(frozen=True)
class MethodFilter:
    """A record filter (export's ``select``): the records of one share's methods."""

    split: MethodSplit
    share: str

    def __call__(self, records: Sequence[DistilledRecord]) -> tuple[list[DistilledRecord], str]:
        unknown = next((record for record in records if not record.method), None)
        if unknown is not None:
            raise ExportError(
                f"--methods: record {unknown.id!r} has no 'method' (distil it again: its cases "
                "name the method they exercise)"
            )
        kept = [record for record in records if self.split.of(record.method) == self.share]
        methods = {record.method for record in records}
        mine = {record.method for record in kept}
        clause = (
            f"kept the {self.share} methods ({len(mine)} of {len(methods)} methods, "
            f"{len(kept)} of {len(records)} records; split seed {self.split.seed})"
        )
        return kept, clause


def manifest_path(out: Path) -> Path:
    """Where an export records its split: beside ``out``."""
    return out.with_name(out.name + MANIFEST_SUFFIX)


def write_manifest(out: Path, split: MethodSplit, share: str, methods: Iterable[str]) -> Path:
    path = manifest_path(out)
    record = {"kept": share, **split.to_dict(methods)}
    write_atomic(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return path


def split_cases(cases: Iterable[Case], split: MethodSplit, share: str) -> list[Case]:
    """The cases of one share's methods, in order."""
    if share not in SPLITS:
        raise ExportError(f"expected a share among {', '.join(SPLITS)}, got {share!r}")
    return [case for case in cases if split.of(case.method) == share]
