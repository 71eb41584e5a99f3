"""Question phrasing for probes: only what a model sees in the listing and the call.

A line is named by its 1-based number and its stripped code; an iteration by its loop variable's
value when that value names it uniquely, else by its ordinal; an inner loop's iteration also
names the enclosing iterations. Never a trace step.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Iteration",
    "after_loop_question",
    "call_return_question",
    "condition_question",
    "count_question",
    "ordinal",
    "return_question",
    "value_question",
]


@dataclass(frozen=True)
class Iteration:
    """One loop level of a probe's context: the loop's header and how to name the iteration."""

    line: int
    code: str
    number: int  # 1-based iteration of this loop (counts restart when the loop is entered anew)
    name: str | None = None  # a loop variable whose value names the iteration uniquely
    value: str | None = None  # that variable's value in the iteration (canonical literal)


Context = tuple[Iteration, ...]  # outermost first


def ordinal(number: int) -> str:
    if number % 100 in (11, 12, 13):
        return f"{number}th"
    return f"{number}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th') }"


def _line(line: int, code: str) -> str:
    return f"line {line} (`{code}`)"


def _iteration(level: Iteration) -> str:
    loop = f"the loop on {_line(level.line, level.code)}"
    if level.name is not None and level.value is not None:
        return f"the iteration of {loop} where `{level.name}` is {level.value}"
    return f"the {ordinal(level.number)} iteration of {loop}"


def _within(context: Context) -> str:
    """`` in <innermost iteration>, within <next outer one>...``; empty outside loops."""
    if not context:
        return ""
    return " in " + ", within ".join(_iteration(level) for level in reversed(context))


def _repeat(repeat: int | None, lead: str = "") -> str:
    return "" if repeat is None else f"{lead} for the {ordinal(repeat)} time"


def value_question(
    name: str, line: int, code: str, context: Context, repeat: int | None = None
) -> str:
    """The value of ``name`` right after ``line`` runs in ``context`` (its ``repeat``-th run
    there, when it runs more than once)."""
    return (
        f"What is the value of `{name}` right after {_line(line, code)} runs"
        f"{_repeat(repeat)}{_within(context)}?"
    )


def condition_question(line: int, code: str, context: Context, repeat: int | None = None) -> str:
    return (
        f"Does the condition on {_line(line, code)} evaluate to True or False"
        f"{_repeat(repeat, ' when tested')}{_within(context)}? Answer True or False."
    )


def after_loop_question(name: str, line: int, code: str, context: Context) -> str:
    return (
        f"What is the value of `{name}` right after the loop on {_line(line, code)} "
        f"finishes{_within(context)}?"
    )


def count_question(line: int, code: str, context: Context) -> str:
    return (
        f"How many times does the body of the loop on {_line(line, code)} start"
        f"{_within(context)}? Count every iteration that enters the body, including one that "
        "leaves it early."
    )


def return_question(line: int, code: str) -> str:
    return f"What value does {_line(line, code)} return?"


def call_return_question(function: str, call: int) -> str:
    return (
        f"What value does the {ordinal(call)} call of `{function}` return (counting its calls "
        "in the order they start)?"
    )
