"""The self-check oracle's answers: a completion stating an item's ground truth.

``oracle_completion(item, style)`` writes what a perfect model would write after the item's
prompt in that style (the ``[THOUGHT]`` block of CoT styles included, the closing tag the
stop sequence cuts off included), so that prompt -> completion -> extraction -> grading is
exercised end to end. Every registered task kind is covered; a truth that cannot be written as
an answer (a gold value that does not parse, a state of a type with no literal) raises
:class:`NoOracleAnswer`, which the oracle reports instead of dropping the item.
"""

from __future__ import annotations

from codereasoner import values
from codereasoner.tasks.base import Item, Style
from codereasoner.tasks.state_answers import StatePrediction, parse_state

__all__ = ["THOUGHT", "NoOracleAnswer", "oracle_completion"]

THOUGHT = "The self-check oracle states the recorded ground truth."


class NoOracleAnswer(ValueError):
    """The item's truth cannot be stated as an answer of its task kind."""


def oracle_completion(item: Item, style: Style | str = Style.DIRECT) -> str:
    """The completion a perfect model would produce for ``item`` prompted in ``style``."""
    chosen = str(getattr(style, "value", style))
    writer = _WRITERS.get(item.task)
    if writer is None:
        raise NoOracleAnswer(f"{item.id}: no oracle for task kind {item.task!r}")
    return writer(item, chosen)


def _truth_text(item: Item) -> str:
    """The gold value as Python literal text (JSON truths rendered as Python)."""
    if item.truth_format == "python":
        try:
            item.truth_value()
        except ValueError as exc:
            raise NoOracleAnswer(f"{item.id}: the gold value does not parse ({exc})") from None
        return item.truth
    try:
        return values.render(item.truth_value())
    except (ValueError, TypeError) as exc:
        raise NoOracleAnswer(f"{item.id}: the gold value has no literal form ({exc})") from None


def _tagged(answer: str, style: str) -> str:
    """``[THOUGHT]``-style completion: the prompt ends with ``[ANSWER]`` (direct) or
    ``[THOUGHT]`` (CoT); the ``[/ANSWER]`` stop sequence ends the answer."""
    if style == Style.COT:
        return f"\n{THOUGHT}\n[/THOUGHT]\n[ANSWER]\n{answer}\n[/ANSWER]"
    return f"{answer}\n[/ANSWER]"


def _output(item: Item, style: str) -> str:
    truth = _truth_text(item)
    if style == Style.PHIND:  # the prompt ends with "assert f(...) =="
        return f" {truth} # done"
    return _tagged(f"assert {item.call} == {truth}", style)


def _input(item: Item, style: str) -> str:
    return _tagged(f"assert {item.call} == {_truth_text(item)}", style)


def _test_output(item: Item, style: str) -> str:
    return f"```python\nassert {item.call} == {_truth_text(item)}\n```"


def _coverage(item: Item, style: str) -> str:
    return _tagged("YES" if item.truth_value() else "NO", style)


def _state(item: Item, style: str) -> str:
    truth = item.truth_value()
    if truth is None:
        return _tagged("Nil", style)
    for kind, text in truth:  # type: ignore[attr-defined]
        if text is None:  # the trace recorded no readable value (an opaque object)
            continue
        answer = f"{text}; {kind}"
        parsed = parse_state(answer)
        if isinstance(parsed, StatePrediction) and parsed.type is not None:
            return _tagged(answer, style)
    kinds = ", ".join(str(kind) for kind, _ in truth)  # type: ignore[attr-defined]
    raise NoOracleAnswer(f"{item.id}: no expected state ({kinds}) has a value and a type that "
                         "read back as 'value; type'")  # fmt: skip


def _path(item: Item, style: str) -> str:
    lines = [int(line) for line in item.truth_value()]  # type: ignore[attr-defined]
    if -1 in lines:
        return _tagged("-1", style)
    code = item.program.split("\n")
    for number in lines:
        if 1 <= number <= len(code) and code[number - 1].strip():
            return _tagged(code[number - 1].strip(), style)
    raise NoOracleAnswer(f"{item.id}: expected lines {lines} hold no code")


def _reval_output(item: Item, style: str) -> str:
    return _tagged(item.truth, style)


def _core_preface(style: str) -> str:
    return "" if style == Style.DIRECT else f"{THOUGHT}\n\n"


def _core_output(item: Item, style: str) -> str:
    # Fenced so the ancestor's regex (``== X`` then a fence) finds it too.
    return f"{_core_preface(style)}```python\nassert {item.call} == {_truth_text(item)}\n```\n"


def _core_probe(item: Item, style: str) -> str:
    return f"{_core_preface(style)}Answer: {_truth_text(item)}\n"


_WRITERS = {
    "output_prediction": _output,
    "input_prediction": _input,
    "test_output_prediction": _test_output,
    "coverage": _coverage,
    "state": _state,
    "path": _path,
    "output": _reval_output,
    "core_output": _core_output,
    "core_probe": _core_probe,
}
