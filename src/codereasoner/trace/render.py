"""Compact renderings of an execution trace for prompts and chain-of-thought grounding.

``to_text`` writes one line per step, indented by call depth::

    call f(xs=[1, 2, 3])
    L2  total = 0  -> total = 0
    L3 [iter 1]  for x in xs:  -> x = 1
    L4 [iter 1]  if x > 1:  (cond: False)
      ... 17 more iterations of the loop at line 3 ...
    L6  return total
    return 5

Loops with many iterations are shortened to their first ``first_iterations`` and last
``last_iterations`` iterations plus one summary line. ``[iter 2.3]`` means iteration 2 of the
outer loop and 3 of the inner one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from codereasoner.trace.model import ExecutionTrace, Step

__all__ = ["to_json", "to_text"]

_INDENT = "  "


@dataclass
class _Instance:
    """One run of a loop in one frame instance: where each iteration starts in the trace."""

    fid: int
    line: int
    depth: int
    starts: list[int]
    end: int  # one past the last step belonging to the run


def _loop_instances(steps: tuple[Step, ...]) -> list[_Instance]:
    instances: list[_Instance] = []
    open_: dict[tuple[int, int], _Instance] = {}  # (fid, loop line) -> running instance
    last_iteration: dict[tuple[int, int], int] = {}
    for index, step in enumerate(steps):
        for key, running in list(open_.items()):
            if running.depth > step.depth or (running.depth == step.depth and key[0] != step.fid):
                del open_[key]  # its frame returned or was suspended
            elif running.depth < step.depth:
                running.end = index + 1  # a callee's step, inside the current iteration
        current = {line for line, _ in step.loops}
        for key in [key for key in open_ if key[0] == step.fid and key[1] not in current]:
            del open_[key]
        for line, count in step.loops:
            key = (step.fid, line)
            instance = open_.get(key)
            if instance is not None and count < last_iteration[key]:
                del open_[key]  # restarted: a new run of the same loop
                instance = None
            if instance is None:
                instance = open_[key] = _Instance(step.fid, line, step.depth, [index], index + 1)
                instances.append(instance)
            elif count > last_iteration[key]:
                instance.starts.append(index)
            last_iteration[key] = count
            instance.end = index + 1
    return instances


def hidden_ranges(
    steps: tuple[Step, ...], first: int, last: int
) -> dict[int, tuple[int, _Instance, int]]:
    """Loop runs of more than ``first + last`` iterations, shortened: start index -> (end
    index, loop instance, number of iterations left out)."""
    hidden: dict[int, tuple[int, _Instance, int]] = {}
    for instance in _loop_instances(steps):
        count = len(instance.starts)
        if count <= first + last or first < 0 or last < 0:
            continue
        start = instance.starts[first]
        end = instance.starts[count - last] if last else instance.end
        if start < end and (start not in hidden or hidden[start][0] < end):
            hidden[start] = (end, instance, count - first - last)
    return hidden


def _mapping(values: dict[str, str | None], sep: str = " = ") -> str:
    return ", ".join(
        f"{name}{sep}{'<deleted>' if text is None else text}" for name, text in values.items()
    )


def _step_line(step: Step, code: list[str] | None) -> str:
    parts = [f"L{step.line}"]
    if step.loops:
        parts[0] += f" [iter {step.iteration_label}]"
    if code is not None and 0 < step.line <= len(code):
        parts.append(code[step.line - 1].strip())
    if step.changes:
        parts.append("-> " + _mapping(dict(step.changes)))
    if step.cond is not None:
        parts.append(f"(cond: {step.cond})")
    if step.exc is not None:
        parts.append(f"(raises {step.exc})")
    return "  ".join(parts)


def to_text(
    trace: ExecutionTrace,
    *,
    source: str | None = None,
    first_iterations: int = 2,
    last_iterations: int = 1,
    max_chars: int | None = None,
) -> str:
    """Render ``trace`` as compact text, one line per step (see the module docstring)."""
    steps = trace.steps
    code = source.splitlines() if source is not None else None
    hidden = hidden_ranges(steps, first_iterations, last_iterations)
    lines: list[str] = []
    # "return"/"yield" lines wait until the frame's later callees have been shown.
    pending: list[tuple[int, str]] = []

    def flush(depth: int) -> None:
        while pending and pending[-1][0] >= depth:
            lines.append(pending.pop()[1])

    index = 0
    while index < len(steps):
        found = hidden.get(index)
        if found is not None:
            end, instance, left_out = found
            flush(instance.depth + 1)
            noun = "iteration" if left_out == 1 else "iterations"
            lines.append(
                f"{_INDENT * instance.depth}... {left_out} more {noun} of the loop at line "
                f"{instance.line} ..."
            )
            index = end
            continue
        step = steps[index]
        flush(step.depth)
        indent = _INDENT * step.depth
        if step.args is not None:
            lines.append(f"{indent}call {step.frame}({_mapping(dict(step.args), '=')})")
        lines.append(indent + _step_line(step, code))
        if step.yielded is not None:
            pending.append((step.depth, f"{indent}yield {step.yielded}"))
        if step.ret is not None and step.depth > 0:
            pending.append((step.depth, f"{indent}return {step.ret}"))
        index += 1
    flush(0)
    if trace.partial:
        lines.append(f"(trace incomplete: {trace.partial_reason})")
    if trace.exception is not None:
        lines.append(f"raises {trace.exception.type}: {trace.exception.message}".rstrip(": "))
    elif trace.return_value is not None:
        lines.append(f"return {trace.return_value}")
    text = "\n".join(lines)
    if max_chars is not None and len(text) > max_chars:
        marker = "\n... (trace truncated)"
        keep = max_chars - len(marker)
        if keep <= 0:
            return text[: max(0, max_chars)]
        cut = text.rfind("\n", 0, keep + 1)
        text = text[: cut if cut > 0 else keep] + marker
    return text


def to_json(trace: ExecutionTrace) -> str:
    """The wire form as JSON text (``ExecutionTrace.from_wire(json.loads(...))`` round-trips)."""
    return json.dumps(trace.to_dict(), ensure_ascii=False)
