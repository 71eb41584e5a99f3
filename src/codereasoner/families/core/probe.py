"""CoRE intermediate-state probes: a question about one implementation run on one input.

CoRE publishes no probe prompt: the ``probe_*.txt`` templates of this folder are project-written
(docs/benchmark-rules.md, "CoRE: prompts"), one per CoRE style, and show only the code, the call
and the question. Answers are located like output answers (:func:`extract_answer`) and matched
by a fixed rule (the paper gives none), that of :mod:`codereasoner.tasks.literal_answers`. Descriptive parts of a question are never graded.

Both gradings use this matcher. :func:`check_trace` compares a gold with our tracer's record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codereasoner import values
from codereasoner.families.core.output import (
    CoreKind,
    CoreStyle,
    core_style,
    extract_core,
    oracle_preface,
)
from codereasoner.tasks.base import Extracted, Extraction, Grading, Item
from codereasoner.tasks.common import Grade
from codereasoner.tasks.literal_answers import grade_probe
from codereasoner.tasks.oracle import truth_text
from codereasoner.trace import ExecutionTrace

PROBE_TASK = "core_probe"


class CoreProbe(CoreKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for CoRE probes."""

    name = PROBE_TASK
    template_prefix = "probe"  # project-written (CoRE publishes none), beside CoRE's own templates

    def extract(
        self,
        item: Item,
        text: str,
        style: CoreStyle | str = CoreStyle.DIRECT,
        mode: Extraction | str = Extraction.ROBUST,
    ) -> Extracted:
        """The project rule under every mode but answer-tag (the ancestor has no probes)."""
        core_style(style)
        return extract_core(text, Extraction(mode))

    def oracle(self, item: Item, style: CoreStyle | str = CoreStyle.DIRECT) -> str:
        return f"{oracle_preface(style)}Answer: {truth_text(item)}\n"

    def grader(self, item: Item, grading: Grading) -> Grade:
        return lambda sample, text: grade_probe(item, sample, text)


# ---------------------------------------------------------------------------------------
# ground truth against our tracer
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceCheck:
    """``distance``: line events between the probe's target step and the nearest step where
    every gold part is observed (0: the target itself); None when none within the window."""

    item_id: str
    distance: int | None
    target_line: int | None  # our line of the target step, minus 1 (CoRE's numbering)


_SUBSCRIPT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\[\s*(-?\d+|[A-Za-z_]\w*)\s*\]")
_MISSING = object()


def _element(state: dict[str, object], container: str, index: str) -> object:
    """``state[container][index]`` (index: an int literal or a variable), else _MISSING."""
    value = state.get(container, _MISSING)
    key = int(index) if index.lstrip("-").isdecimal() else state.get(index, _MISSING)
    if type(key) is not int:
        return _MISSING
    if type(value) in (list, tuple, str) and -len(value) <= key < len(value):  # type: ignore[arg-type]
        return value[key]  # type: ignore[index]
    return value[key] if type(value) is dict and key in value else _MISSING


def _observations(
    trace: ExecutionTrace, names: set[str], subscripts: list[tuple[str, str]]
) -> list[list[tuple[str, object]]]:
    """Per step: (variable, value) of its frame before and after it, ``name[i]`` elements the
    question mentions, and ("", condition outcome), ("", returned value)."""
    cache: dict[str, object] = {}

    def read(text: str) -> object:
        if text not in cache:
            try:
                cache[text] = values.parse(text)
            except values.ValueParseError:
                cache[text] = _MISSING
        return cache[text]

    texts: dict[int, dict[str, str | None]] = {}
    seen: list[list[tuple[str, object]]] = []
    for step in trace.steps:
        state = texts.get(step.fid)
        if state is None or step.args is not None:
            state = texts[step.fid] = dict(step.args or {})
        snapshots = [dict(state)]
        state.update(step.changes)
        snapshots.append(dict(state))
        here: list[tuple[str, object]] = [("", step.cond)] if step.cond is not None else []
        here += [("", read(step.ret))] if step.ret is not None else []
        for snapshot in snapshots:
            known = {name: read(text) for name, text in snapshot.items() if text is not None}
            here += [(name, value) for name, value in known.items() if not names or name in names]
            here += [
                (container, _element(known, container, index)) for container, index in subscripts
            ]
        seen.append([(name, value) for name, value in here if value is not _MISSING])
    return seen


def check_trace(item: Item, trace: ExecutionTrace, window: int = 3) -> TraceCheck:
    """Whether the gold is what our tracer records at the probe's target step (±``window``).

    A part named like a traced variable must be that variable's value; other parts (a
    condition, an expression) may be any observed value, restricted to the variables the
    question names when it names any (elements ``name[i]`` it names count as ``name``).
    Steps are line events counted from 1, as CoRE's; its step k shows the state after the line
    that ran before our k-th event, so both steps are the target.
    """
    event = int(item.metadata["target_step_index"]) - 1
    line = trace.steps[event].line - 1 if 0 <= event < len(trace.steps) else None
    gold = item.truth_value()
    parts = gold if item.metadata.get("multi_part") and type(gold) is dict else {"": gold}
    traced = {name for step in trace.steps for name in (*step.changes, *(step.args or {}))}
    question = str(item.fields.get("question", ""))
    mentioned = {name for name in traced if _mentions(question, name)}
    subscripts = [(name, index) for name, index in _SUBSCRIPT.findall(question) if name in traced]
    seen = _observations(trace, mentioned | (set(parts) & traced), subscripts)
    for distance in range(window + 1):
        # CoRE's step k is our k-th line event and the line that ran just before it
        steps = range(max(0, event - 1 - distance), min(len(seen), event + distance + 1))
        pool = [pair for index in steps for pair in seen[index]]
        if all(_observed(str(name), value, pool, traced) for name, value in parts.items()):
            return TraceCheck(item.id, distance, line)
    return TraceCheck(item.id, None, line)


def _mentions(question: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", question) is not None


def _observed(name: str, value: object, pool: list[tuple[str, object]], traced: set[str]) -> bool:
    named = name in traced
    return any(
        (not named or seen == name) and values.equal(value, item, "lenient") for seen, item in pool
    )


KIND = CoreProbe()
