"""REval state answers, official grading against upstream's rule side by side.

The reference is upstream's reading and comparison (docs/reval.md: the value ``eval``-ed where
``np``, ``datetime`` and ``locate`` are bound, the type found with ``pydoc.locate``, then
``_eq`` against the traced values), restated here as a program and run in the sandbox with the
truths as real objects (numpy arrays and scalars, bytearrays, classes). Official grading must
give its verdict on every benign answer kind below; strict grading keeps its own rule (parsed,
never evaluated), so it differs exactly where a value needs ``eval``.
"""

from __future__ import annotations

import json

import pytest

from codereasoner import tasks
from codereasoner.execution import Call, Limits, Pool, Program
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.tasks import Answer, Grading, Item, run_plans

pytest.importorskip("numpy")  # the sandbox imports the installed packages, numpy among them

LIMITS = Limits(timeout_s=10.0, wall_timeout_s=20.0, memory_mb=2048)
UPSTREAM = """
import inspect, re
from datetime import datetime
from pydoc import locate
import numpy as np


def read(resp):
    if resp.capitalize() == "Nil" or resp == "[Nil]":
        return "Nil"
    semicolon = resp.rfind(";")
    if semicolon == -1:
        return "ERROR"
    value, kind = resp[:semicolon].strip(), resp[semicolon + 1:].strip().lower()
    if value.capitalize() == "Nil":
        return "Nil"
    found = re.match(r"<class '(.*)'>", kind)
    if found:
        kind = found.group(1)
    found = re.match(r"(.*)\\[.*\\]", kind)
    if found:
        kind = found.group(1)
    kind = {"string": "str", "integer": "int"}.get(kind, kind)
    if "," in kind or "tuple" in kind:
        kind = "tuple"
    if kind == "str":
        try:
            return eval(value), str
        except Exception:
            return value, str
    if kind in ("numpy.ndarray", "np.ndarray"):
        try:
            return np.array(eval(value)), locate(kind)
        except Exception:
            return "ERROR"
    if value == "None" or kind == "NoneType":
        return None, type(None)
    try:
        located = locate(kind)
        if located is None:
            raise ValueError(kind)
        assert inspect.isclass(located)
        if located.__module__ == "builtins":
            found = eval(value)
        else:
            try:
                found = located(eval(value))
            except Exception:
                found = located(value)
        return found, located
    except Exception:
        return "ERROR"


def same(answer, actual):
    if answer == "ERROR":
        return False
    if answer == "Nil" or actual == "Nil":
        return answer == actual
    value, kind = answer
    if all(kind != type(a) for a in actual):
        return False
    if type(value) != kind:
        return False
    if kind == float:
        for a in actual:
            try:
                if abs(value - a) < 1e-6:
                    return True
            except Exception:
                continue
        return False
    try:
        return value in actual
    except ValueError:
        for a in actual:
            try:
                if isinstance(value, np.ndarray) and isinstance(a, np.ndarray):
                    if np.allclose(value, a):
                        return True
                elif value == a:
                    return True
            except Exception:
                continue
        return False


def upstream(resp, actual):
    return bool(same(read(resp), [eval(text) for text in actual]))
"""
# (truth: the traced values as (type name, plain text, the object upstream holds), answers)
CASES = [
    (("int", "0", "0"), ["0; int", "int(0); int", "-1 + 1; int", "0; builtins.int", "1; int",
                         "int(1); int", "x; int", "0; Integer", "True; int"]),
    (("list", "[]", "[]"), ["[]; list.", "[]; list", "list(()); list", "[]; tuple",
                            "[0]; list"]),
    (("str", "'l'", "'l'"), ["'l' + ''; str", "'l'; str", "l; str", "'m'; str",
                             "print('l'); str"]),
    (("bytearray", "b''", "bytearray()"), ["bytearray(); bytearray", "b''; bytearray",
                                           "bytearray(b'x'); bytearray"]),
    (("complex", "(4+6j)", "complex(4, 6)"), ["complex(4.0, 6.0); complex", "(4+6j); complex",
                                              "4+6j; complex", "complex(4, 5); complex"]),
    (("float", "2.0", "2.0"), ["2.0; float", "2; float", "float(2); float", "2.0000001; float",
                               "np.float64(2.0); float"]),
    (("numpy.float64", "2.0", "np.float64(2.0)"), ["np.float64(2.0); numpy.float64",
                                                   "'2.0'; numpy.float64",
                                                   "2.0; numpy.float64", "2.5; numpy.float64"]),
    (("numpy.ndarray", "[1, 2]", "np.array([1, 2])"), [
        "np.array([1, 2]); numpy.ndarray", "[1, 2]; numpy.ndarray",
        "[[1, 2], [1, 2]]; numpy.ndarray", "[1, 3]; numpy.ndarray", "[1, 2]; np.ndarray",
        "[1, 2, 3]; numpy.ndarray",
    ]),
    (("type", "int", "int"), ["type(0); type", "int; type", "str; type"]),
    (("NoneType", "None", "None"), ["None; NoneType", "Nil", "0; NoneType"]),
]  # fmt: skip


def _item(index: int, kind: str, text: str) -> Item:
    return Item(
        f"DREval/0/0/{index}/state",
        "reval",
        "state",
        program="def f():\n    return 0\n",
        call="f()",
        truth=json.dumps([[kind, text]]),
        truth_format="json",
    )


@pytest.fixture(scope="module")
def verdicts(pool: Pool) -> list[tuple[str, str, bool, bool, bool]]:
    """``(truth, answer, upstream, official, strict)`` for every case."""
    task = tasks.get("state")
    rows = []
    program = Program(UPSTREAM, "upstream", preamble=SITE_PACKAGES_PREAMBLE)
    for index, ((kind, text, held), answers) in enumerate(CASES):
        item = _item(index, kind, text)
        scored = {
            grading: run_plans(
                pool, [task.plan(item, [Answer(a) for a in answers], grading)], LIMITS
            )[0]
            for grading in (Grading.OFFICIAL, Grading.STRICT)
        }
        for position, answer in enumerate(answers):
            result = pool.run(program, Call("upstream", (answer, [held])), LIMITS)
            assert result.ok, result.describe()
            upstream = result.parsed_value()
            official = scored[Grading.OFFICIAL][position].correct
            strict = scored[Grading.STRICT][position].correct
            rows.append((f"{text}; {kind}", answer, upstream, official, strict))
    return rows


def test_official_state_verdicts_are_upstreams(
    verdicts: list[tuple[str, str, bool, bool, bool]],
) -> None:
    differ = [(truth, answer, up) for truth, answer, up, ours, _ in verdicts if up != ours]
    assert differ == []
    assert {up for _, _, up, _, _ in verdicts} == {True, False}


def test_strict_state_grading_differs_only_where_eval_is_needed(
    verdicts: list[tuple[str, str, bool, bool, bool]],
) -> None:
    strict_only = {answer for _, answer, up, _, strict in verdicts if strict and not up}
    upstream_only = {answer for _, answer, up, _, strict in verdicts if up and not strict}
    assert strict_only <= {"print('l'); str"}  # upstream's eval prints and yields None
    assert {"int(0); int", "-1 + 1; int", "[]; list.", "0; builtins.int"} <= upstream_only


def test_a_value_for_a_nil_truth_is_wrong_without_a_sandbox_reading(pool: Pool) -> None:
    """Nil (the variable does not exist there) takes only Nil; upstream's reading of a value
    then cannot matter (a real model's answers crashed the official reading here)."""
    item = Item("DREval/0/0/9/state", "reval", "state", program="def f():\n    return 0\n",
                call="f()", truth="null", truth_format="json")  # fmt: skip
    answers = ["int(0); int", "0; int", "Nil", "x; builtins.int"]
    task = tasks.get("state")
    scores = run_plans(pool, [task.plan(item, [Answer(a) for a in answers], Grading.OFFICIAL)])
    assert [score.correct for score in scores[0]] == [False, False, True, False]
