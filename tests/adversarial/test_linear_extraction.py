"""Extraction of model text is linear: inputs that made a backtracking pattern quadratic (tens of
seconds for one answer) are handled in a fraction of a second of CPU time."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from codereasoner.families.reval.extraction import state_robust
from codereasoner.synth.generators.llm import ReplyError, parse_reply
from codereasoner.tasks.extraction import robust_value


def _reply(text: str) -> object:
    try:
        return parse_reply(text)
    except ReplyError as exc:
        return exc


CASES: dict[str, tuple[Callable[[str], object], str]] = {
    "answer line, spaces then a word": (robust_value, "answer: " + " " * 40_000 + "x"),
    "answer label, spaces": (robust_value, "answer" + " " * 40_000 + "="),
    "reval nil, spaces": (state_robust, " " * 40_000 + "x"),
    "reval type, spaces": (state_robust, "1;" + " " * 40_000 + ";"),
    "reval type, spaces and backticks": (state_robust, "1;" + " `" * 20_000 + "!"),
    "teacher reply, unclosed think tags": (_reply, "<think>" * 40_000),
}


@pytest.mark.parametrize("name", CASES)
def test_hostile_text_is_extracted_in_linear_time(name: str) -> None:
    extract, text = CASES[name]
    started = time.process_time()
    extract(text)
    assert time.process_time() - started < 1.0  # quadratic: 10 to 400 s


def test_the_linear_patterns_keep_their_answers() -> None:
    assert state_robust("[Nil]") == "Nil" and state_robust("**nil**.") == "Nil"
    assert state_robust("  `nil`  ") == "Nil" and state_robust("nils") is None
    assert state_robust("[1]; `list`") == "[1]; list"
    assert state_robust("x; <class 'int'>") == "x; <class 'int'>"
    assert state_robust("null;   ``  Optional[int]") == "None; Optional[int]"
    assert robust_value("Final answer: `[1, 2]` **") == "[1, 2]"
    assert robust_value("Output = 3  \t") == "3"
    reply = parse_reply("<think>draft</think>```python\ndef f(x):\n    return x\n```\n[CALL] f(1)")
    assert not isinstance(reply, ReplyError)
