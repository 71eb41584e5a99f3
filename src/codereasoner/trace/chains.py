"""Concise chains of thought written from an exact trace: what a trace teacher says.

    chain = to_chain(trace, source=code, call="f([1, 2])")                 # input -> output
    chain = to_chain(trace, source=code, call="f([1, 2])", backward=True)  # output -> input
    control = to_chain(corrupted(trace, random.Random("seed")), source=code, call=...)

A forward chain states the call, then each line of the entry function that changes a local
(with the new values) or tests a condition (with its outcome), in order, each with its line
number, its code and the loop iteration it ran in, then the returned value::

    Call f(xs=[1, 2, 3]).
    line 2 `total = 0`: total = 0
    line 3 `for x in xs:` (iteration 1): x = 1
    line 4 `total += x` (iteration 1): total = 1
    ... 1 more iteration of the loop at line 3 ...
    line 3 `for x in xs:` (iteration 3): x = 3
    line 4 `total += x` (iteration 3): total = 6
    line 5 `return total`: returns 6
    So the call returns 6.

Long loops keep their first two and last iterations. A backward chain starts from the value
the call must return and walks the same lines from the last to the first, ending at the
arguments that produce it. Only the entry function's own lines are stated (a helper's work
shows as the value it returns into a local).

:func:`corrupted` is the control: the same trace with every stated local value perturbed
(another value of the same type) and every condition flipped, so its chain keeps the format and
the call but not the truth; a trace with no such value gets its returned value perturbed
instead. Deterministic given the ``rng``.
"""

from __future__ import annotations

import random
from dataclasses import replace

from codereasoner import values
from codereasoner.trace.model import ExecutionTrace, Step
from codereasoner.trace.render import hidden_ranges

__all__ = ["CODE_CHARS", "corrupted", "to_chain"]

CODE_CHARS = 60  # a quoted line of code is cut beyond this
_FIRST, _LAST = 2, 1  # iterations kept at the start and the end of a long loop


def _iteration(step: Step) -> str:
    return f" (iteration {step.iteration_label})" if step.loops else ""


def _quoted(step: Step, code: list[str]) -> str:
    if not 0 < step.line <= len(code):
        return ""
    text = code[step.line - 1].strip()
    return f" `{text if len(text) <= CODE_CHARS else text[: CODE_CHARS - 1] + '…'}`"


def _stated(step: Step, code: list[str], returned: str | None) -> str | None:
    """The chain's line for a step of the entry frame; None for a step that changes nothing."""
    head = f"line {step.line}{_quoted(step, code)}{_iteration(step)}: "
    if step.changes:
        shown = [f"{name} = {text}" for name, text in step.changes.items() if text is not None]
        gone = [f"{name} is deleted" for name, text in step.changes.items() if text is None]
        return head + ", ".join(shown + gone)
    if step.cond is not None:
        return head + f"the condition is {step.cond}"
    if step.exc is not None:
        return head + f"raises {step.exc}"
    if step.ret is not None or returned is not None:
        return head + f"returns {step.ret if step.ret is not None else returned}"
    return None


def _lines(trace: ExecutionTrace, code: list[str]) -> list[str]:
    steps = tuple(step for step in trace.steps if step.fid == 0)
    hidden = hidden_ranges(steps, _FIRST, _LAST)
    last = len(steps) - 1
    lines: list[str] = []
    index = 0
    while index < len(steps):
        found = hidden.get(index)
        if found is not None:
            end, instance, left_out = found
            noun = "iteration" if left_out == 1 else "iterations"
            lines.append(f"... {left_out} more {noun} of the loop at line {instance.line} ...")
            index = end
            continue
        returned = trace.return_value if index == last and trace.exception is None else None
        line = _stated(steps[index], code, returned)
        if line is not None:
            lines.append(line)
        index += 1
    return lines


def to_chain(trace: ExecutionTrace, *, source: str, call: str, backward: bool = False) -> str:
    """The chain for ``trace`` of ``call`` (see the module); ``backward``: output -> input."""
    code = source.splitlines()
    lines = _lines(trace, code)
    returned = trace.return_value
    if not backward:
        return "\n".join([f"Call {call}.", *lines, f"So the call returns {returned}."])
    return "\n".join(
        [
            f"The call must return {returned}. Working back from the last line to the first:",
            *reversed(lines),
            f"So the arguments are those of {call}.",
        ]
    )


def corrupted(trace: ExecutionTrace, rng: random.Random) -> ExecutionTrace:
    """``trace`` with every local value its entry frame's steps state perturbed and every
    condition flipped (arguments kept); its returned value perturbed when nothing else is."""
    steps: list[Step] = []
    changed = False
    for step in trace.steps:
        if step.fid != 0 or (not step.changes and step.cond is None):
            steps.append(step)
            continue
        changes = {name: _perturbed(text, rng) for name, text in step.changes.items()}
        cond = None if step.cond is None else not step.cond
        changed = changed or changes != dict(step.changes) or cond is not None
        steps.append(replace(step, changes=changes, cond=cond))
    result = replace(trace, steps=tuple(steps))
    if not changed and trace.return_value is not None:
        return replace(result, return_value=_perturbed(trace.return_value, rng))
    return result


def _perturbed(text: str | None, rng: random.Random) -> str | None:
    """Another literal of the same type as ``text`` (``text`` itself when it is no literal)."""
    if text is None:
        return None
    try:
        value = values.parse(text)
    except values.ValueParseError:
        return text
    for _ in range(8):
        other = _other(value, rng)
        if not values.equal(other, value, "exact"):
            return values.render(other)
    return text


def _other(value: object, rng: random.Random) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice((-3, -2, -1, 1, 2, 3))
    if isinstance(value, float):
        return round(value + rng.choice((-1.5, -1.0, -0.5, 0.5, 1.0, 1.5)), 6)
    if isinstance(value, str):
        if not value:
            return rng.choice("abcxyz")
        index = rng.randrange(len(value))
        letter = rng.choice([c for c in "abcdexyz0123" if c != value[index]])
        return value[:index] + letter + value[index + 1 :]
    if isinstance(value, list | tuple):
        items = list(value)
        if not items:
            items = [0]
        elif rng.random() < 0.3 and len(items) > 1:
            items.pop(rng.randrange(len(items)))
        else:
            index = rng.randrange(len(items))
            items[index] = _other(items[index], rng)
        return type(value)(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        if not value:
            return {"a": 0}
        key = rng.choice(list(value))
        return {**value, key: _other(value[key], rng)}
    if isinstance(value, set | frozenset):
        return {*value, _other(next(iter(value)), rng) if value else 0}
    if value is None:
        return 0
    return value
