"""The offline generator: concise, varied programs for each catalog method, no model needed.

``OfflineGenerator(seed).generate(index)`` composes one ``def f(...)`` around the method under a
sampled blueprint (:mod:`codereasoner.synth.constraints`): the control structures nest in the
blueprint's order with the method call innermost, the extras are present, another call wraps or
feeds the method's call when ``nested_calls`` is set (and no call is nested otherwise), and
other catalog methods are called exactly when ``other_methods`` is set. Inputs are literals made
from the method's argument kinds (:mod:`.offline_values`). Everything is drawn from a
``random.Random`` seeded by a SHA-256 of (seed, index), so a case does not depend on the process,
the hash seed or the other indices.

The code avoids what would raise or never end: methods that need an element to be present run
inside a loop over a snapshot of the receiver or a ``while`` guarded by the receiver, every
``while`` has a counter that is incremented first, and mutated receivers are iterated through a
copy. Sets hold integers only, so their iteration order does not depend on the hash seed.

One case is written in steps, each in its own module: the receiver and the parameters
(:mod:`.offline_draft`), the layout decided before any line is written (:mod:`.offline_layout`),
the control structures (:mod:`.offline_control`), the call and the statement that keeps its
result (:mod:`.offline_leaf`), and the return (:mod:`.offline_result`).
"""

from __future__ import annotations

import hashlib
import random
import re
from bisect import bisect
from itertools import accumulate
from typing import TYPE_CHECKING

from codereasoner.synth.case import Candidate, Constraints, Drop
from codereasoner.synth.catalog import Method, catalog
from codereasoner.synth.constraints import sample_constraints
from codereasoner.synth.generators.offline_control import write_level
from codereasoner.synth.generators.offline_draft import Draft
from codereasoner.synth.generators.offline_layout import plan_layout
from codereasoner.synth.generators.offline_result import ensure_other, write_return

if TYPE_CHECKING:
    from codereasoner.synth.generators import GeneratorSettings

GENERATOR = "offline"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def case_random(seed: int, index: int, stream: str = "case") -> random.Random:
    """A ``random.Random`` for one case, from SHA-256 (never Python's salted ``hash()``)."""
    digest = hashlib.sha256(f"codereasoner-offline:{seed}:{index}:{stream}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def write_case(rng: random.Random, method: Method, constraints: Constraints) -> tuple[str, str]:
    """One function for ``method`` under ``constraints``, and the text of its inputs."""
    draft = Draft(rng, method, constraints)
    draft.make_receiver()
    plan_layout(draft)
    draft.make_args()
    body = write_level(draft, 0, 1, [draft.receiver_var] if draft.receiver_var else [])
    ensure_other(draft)
    lines = draft.lines + body + write_return(draft, body)
    # a name inside a string literal keeps its parameter: harmless
    used = set(IDENTIFIER.findall("\n".join(lines)))
    params = [(name, text) for name, text in draft.params if name in used]
    code = [f"def f({', '.join(name for name, _ in params)}):", *lines]
    return "\n".join(code), ", ".join(text for _, text in params)


class OfflineGenerator:
    """Programmatic candidates, deterministic on (seed, index).

    The first ``len(catalog())`` indices go through every catalog method once (in an order
    shuffled by the seed); later indices draw methods by catalog weight.
    """

    name = GENERATOR

    def __init__(
        self, seed: int = 0, max_depth: int = 3, methods: tuple[Method, ...] | None = None
    ) -> None:
        self.seed = seed
        self.max_depth = max_depth
        self.methods = methods if methods is not None else catalog()
        if not self.methods:
            raise ValueError("the offline generator needs at least one catalog method")
        order = list(range(len(self.methods)))
        random.Random(f"codereasoner-offline-order:{seed}").shuffle(order)
        self._order = order
        self._cumulative = list(accumulate(method.weight for method in self.methods))

    def method_for(self, index: int) -> Method:
        """The method of case ``index``: every method once for the first indices, then by
        weight."""
        if index < 0:
            raise ValueError(f"index must be >= 0, got {index}")
        if index < len(self.methods):
            return self.methods[self._order[index]]
        rng = case_random(self.seed, index, "method")
        point = rng.random() * self._cumulative[-1]
        return self.methods[min(bisect(self._cumulative, point), len(self.methods) - 1)]

    def generate(self, index: int) -> Candidate:
        """Candidate ``index``: one function and its literal arguments."""
        method = self.method_for(index)
        rng = case_random(self.seed, index)
        constraints = sample_constraints(rng, self.max_depth)
        code, input_repr = write_case(rng, method, constraints)
        return Candidate(
            id=f"off-{self.seed}-{index}",
            method=method.qualname,
            code=code,
            input_repr=input_repr,
            constraints=constraints,
            generator=GENERATOR,
        )


class OfflineSource:
    """Candidates from the programmatic generator: ``generate(i)`` for each index."""

    def __init__(self, generator: OfflineGenerator) -> None:
        self.generator = generator
        self.name = GENERATOR

    def produce(self, indices: range) -> list[Candidate | Drop]:
        return [self.generator.generate(index) for index in indices]

    def committed_lines(self) -> list[str]:
        return []


def build_source(settings: GeneratorSettings) -> OfflineSource:
    """The offline generator's candidate source (the registry's entry point)."""
    return OfflineSource(OfflineGenerator(settings.seed))
