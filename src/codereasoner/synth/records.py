"""The JSONL records a synthesis run writes: one per kept case, one per drop.

A case record (docs/synth.md; field order is fixed)::

    {"id", "method", "constraints", "generator", "code", "entry_point", "input", "call",
     "output", "output_type", "exec": {"python", "hashseed_stable", "hash_seeds",
     "set_order_checked", "steps", "lines_covered", "branches"}, "mutation", "decontam",
     "filters", "provenance", "license"}

``filters.passed`` names the stages the case went through: ``decontam`` only when it was really
checked (a run with ``--no-decontam`` says ``"decontam": {"checked": [], "skipped":
"--no-decontam"}`` instead), ``mutation`` for mutants. ``exec.set_order_checked`` is true when
the program could see a set and was run again with its sets iterating in reverse (same outcome).

``input`` is the argument text (CRUXEval style), ``output`` the canonical literal of the return
value (:func:`codereasoner.values.render`); both read back with ``codereasoner.values.parse``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codereasoner import values
from codereasoner.execution import ExecResult
from codereasoner.synth.case import Candidate, Drop
from codereasoner.synth.writer import dump_line

PASSED = ("static", "dedup", "decontam", "execution", "determinism")
PROJECT = "codereasoner"


def canonical_output(result: ExecResult) -> str:
    """The call's return value as a canonical literal (re-rendered in the parent)."""
    return values.render(result.parsed_value())


def build_record(
    candidate: Candidate,
    result: ExecResult,
    trace: Mapping[str, Any],
    python: str,
    hash_seeds: Sequence[int],
    decontam: Mapping[str, Any],
    license_name: str,
    teacher: Mapping[str, Any] | None = None,
    *,
    set_order_checked: bool = False,
) -> dict[str, Any]:
    """The record of a kept case; ``trace`` is :func:`~codereasoner.synth.pipeline.trace_summary`,
    ``decontam`` the run's :meth:`~codereasoner.synth.decontam.Decontamination.record`."""
    lineage = dict(candidate.lineage) if candidate.lineage else None
    passed = [stage for stage in PASSED if stage != "decontam" or not decontam.get("skipped")]
    return {
        "id": candidate.id,
        "method": candidate.method,
        "constraints": candidate.constraints.to_dict(),
        "generator": candidate.generator,
        "code": candidate.code,
        "entry_point": candidate.entry_point,
        "input": candidate.input_repr,
        "call": candidate.call,
        "output": canonical_output(result),
        "output_type": result.value_type,
        "exec": {
            "python": python,
            "hashseed_stable": True,
            "hash_seeds": list(hash_seeds),
            "set_order_checked": set_order_checked,
            "steps": trace["steps"],
            "lines_covered": trace["lines_covered"],
            "branches": trace["branches"],
        },
        "mutation": lineage,
        "decontam": dict(decontam),
        "filters": {"passed": passed + (["mutation"] if lineage else [])},
        "provenance": {
            "project": PROJECT,
            "generator": candidate.generator,
            "parent": lineage.get("parent") if lineage else None,
            **({"teacher": dict(teacher)} if teacher else {}),
        },
        "license": license_name,
    }


def drop_line(drop: Drop, candidate: Candidate | None = None) -> str:
    """One ``dropped.jsonl`` line: the drop plus, when known, the method and the parent."""
    record: dict[str, Any] = drop.to_dict()
    if candidate is not None:
        record["method"] = candidate.method
        record["parent"] = (candidate.lineage or {}).get("parent")
    return dump_line(record)
