"""The types the synthesis stages pass along: constraints, candidate cases and drop decisions.

A candidate is one concise function plus one call with literal arguments. ``input_repr`` is the
argument list as CRUXEval writes it (``'abc,de', ','``), so the call is ``f(input_repr)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CONTROL = ("if", "for", "while")
EXTRAS = ("try", "comprehension", "break", "continue", "slicing")


@dataclass(frozen=True)
class Constraints:
    """What a case must use, recorded in every record for stratified sampling and ablations.

    ``control`` is the blueprint of nested control structures, outermost first (its length is
    the nesting depth); ``extras`` are further constructs the case must contain.
    """

    nested_calls: bool = False
    other_methods: bool = False
    control: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()

    @property
    def depth(self) -> int:
        return len(self.control)

    def to_dict(self) -> dict[str, Any]:
        return {
            "nested_calls": self.nested_calls,
            "other_methods": self.other_methods,
            "control": list(self.control),
            "depth": self.depth,
            "extras": list(self.extras),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Constraints:
        return cls(
            bool(data["nested_calls"]),
            bool(data["other_methods"]),
            tuple(data["control"]),
            tuple(data.get("extras", ())),
        )


@dataclass(frozen=True)
class Candidate:
    """A generated (or mutated) case before validation.

    ``method`` is the catalog entry the case exercises (``str.partition``, ``builtins.sorted``);
    ``generator`` names who wrote it (``offline``, ``llm:MODEL``); ``lineage`` is empty for an
    original and ``{"parent": ID, "ops": [...]}`` for a mutant.
    """

    id: str
    method: str
    code: str
    input_repr: str
    constraints: Constraints
    generator: str = "offline"
    entry_point: str = "f"
    lineage: Mapping[str, Any] = field(default_factory=dict)

    @property
    def call(self) -> str:
        return f"{self.entry_point}({self.input_repr})"


@dataclass(frozen=True)
class Drop:
    """Why a candidate was dropped: the stage (``static``, ``execution``, ``determinism``,
    ``dedup``, ``decontam``, ``parse``) and a short machine-readable reason, plus detail."""

    candidate_id: str
    stage: str
    reason: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.candidate_id,
            "stage": self.stage,
            "reason": self.reason,
            "detail": self.detail,
        }
