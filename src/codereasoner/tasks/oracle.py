"""The self-check oracle's answers: a completion stating an item's ground truth.

:func:`codereasoner.models.oracle.oracle_completion` writes what a perfect model would write
after the item's prompt in that style (the ``[THOUGHT]`` block of CoT styles included, the closing tag the
stop sequence cuts off included), so that prompt -> completion -> extraction -> grading is
exercised end to end. Each task kind writes its own (``TaskKind.oracle``, beside its
``extract``); this module holds what they share. A truth that cannot be written as an answer (a
gold value that does not parse, a state of a type with no literal) raises
:class:`NoOracleAnswer`, which the oracle reports instead of dropping the item.
"""

from __future__ import annotations

from codereasoner import values
from codereasoner.tasks.base import Item, Style

__all__ = ["THOUGHT", "NoOracleAnswer", "style_name", "tagged", "truth_text"]

THOUGHT = "The self-check oracle states the recorded ground truth."


class NoOracleAnswer(ValueError):
    """The item's truth cannot be stated as an answer of its task kind."""


def style_name(style: Style | str) -> str:
    """The style as a plain string (``Style.COT`` -> ``"cot"``); not validated: the oracle
    answers whatever it is asked."""
    return str(getattr(style, "value", style))


def truth_text(item: Item) -> str:
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


def tagged(answer: str, style: str) -> str:
    """``[THOUGHT]``-style completion: the prompt ends with ``[ANSWER]`` (direct) or
    ``[THOUGHT]`` (CoT); the ``[/ANSWER]`` stop sequence ends the answer."""
    if style == Style.COT:
        return f"\n{THOUGHT}\n[/THOUGHT]\n[ANSWER]\n{answer}\n[/ANSWER]"
    return f"{answer}\n[/ANSWER]"
