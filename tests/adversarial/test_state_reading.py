"""REval's official state grading reads an answer by ``eval`` in the sandbox: that reading is
an attack surface. Each answer is read in a process of its own (a patched module never reaches
the next sample), in a namespace of its own (it cannot rebind the reading's own functions), and
what comes back is compared in the parent by total functions: a number past any float, or any
reading that cannot be compared, is a wrong verdict with a reason, never a crash of the run."""

from __future__ import annotations

import json

import pytest

from codereasoner import tasks
from codereasoner.execution import Limits, Pool
from codereasoner.tasks import Answer, Grading, Item, Reason, run_plans

pytest.importorskip("numpy")

LIMITS = Limits(timeout_s=10.0, wall_timeout_s=20.0, memory_mb=2048)


def item(kind: str, text: str, index: int = 0) -> Item:
    return Item(
        f"DREval/0/0/{index}/state", "reval", "state", program="def f():\n    return 0\n",
        call="f()", truth=json.dumps([[kind, text]]), truth_format="json",
    )  # fmt: skip


def grade(pool: Pool, target: Item, answers: list[str]) -> list[tuple[bool, Reason, str]]:
    plan = tasks.get("state").plan(target, [Answer(a) for a in answers], Grading.OFFICIAL)
    (scores,) = run_plans(pool, [plan], LIMITS)
    return [(score.correct, score.reason, score.detail) for score in scores]


def test_numbers_past_any_float_are_a_wrong_verdict_not_a_crash(pool: Pool) -> None:
    answers = ["[10**400, 1, 1, 1]; numpy.ndarray", "10**400; float", "[1, 1, 1, 1]; numpy.ndarray"]
    verdicts = grade(pool, item("numpy.ndarray", "[1.0, 1.0, 1.0, 1.0]"), answers)
    assert [right for right, _, _ in verdicts] == [False, False, True]
    assert all(reason in (Reason.WRONG, Reason.CORRECT) for _, reason, _ in verdicts)
    floats = grade(pool, item("float", "1.0"), ["10**400; float", "-10**400; float", "1.0; float"])
    assert [right for right, _, _ in floats] == [False, False, True]


def test_an_answer_cannot_rebind_the_reading(pool: Pool) -> None:
    """The answer's ``globals()`` is a copy of the bound names: defining the reading's own
    functions there changes nothing the reading reports."""
    forge = (
        "exec(\"def __reval_plain__(v, top=True): return ('value', 5)\\n"
        "def __reval_read__(v, k): return 5, int\", globals()) or 'x'; str"
    )
    ((right, _, _),) = grade(pool, item("int", "5"), [forge])
    assert right is False  # read as the str it is, not the int 5 the forged functions claim


def test_one_samples_patch_never_reaches_the_next_sample(pool: Pool) -> None:
    """A sample that makes ``numpy.array`` return the expected array must not turn the next
    sample's wrong array right."""
    patch = (
        "__import__('numpy').__setattr__('array', lambda *a, **k: "
        "__import__('numpy').asarray([5])) or 'x'; str"
    )
    wrong = "[0]; numpy.ndarray"
    verdicts = grade(pool, item("numpy.ndarray", "[5]"), [patch, wrong, "[5]; numpy.ndarray"])
    assert [right for right, _, _ in verdicts] == [False, False, True]
