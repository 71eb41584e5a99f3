"""Official grading against upstream's own rule, side by side, on benign answers whose values
are equal to the truth without being plain literals (and near misses that are not equal).

The reference is what upstream executes, run literally (in the sandbox, as a whole program):
CRUXEval and LiveCodeBench code execution run ``{program}\\nassert {truth} == {answer}`` with the
installed packages importable; LiveCodeBench test output evaluates the answer where ``json``
is imported and compares it with the JSON gold. Reaching the end of that program is upstream's
"passed". Official grading must give the same verdict on every answer here; the adversarial
answers it deliberately refuses are in ``DEVIATIONS`` and docs/evaluation.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from codereasoner import tasks
from codereasoner.execution import Call, Limits, Pool, Program, Status
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.families.livecodebench import benchmark as livecodebench
from codereasoner.families.livecodebench.test_output import TestOutputPrediction
from codereasoner.tasks import Answer, Item, Reason, run_plans

LIMITS = Limits(timeout_s=3.0, wall_timeout_s=3.0, memory_mb=1024)
IMPORTS = (
    "from collections import OrderedDict, defaultdict, Counter, UserList, UserString, UserDict, "
    "ChainMap, deque, namedtuple\nfrom fractions import Fraction\nfrom decimal import Decimal\n"
    "from enum import IntEnum\nimport numpy as np\nimport types, array\n"
)
PROGRAM = (
    "def f(x):\n    return x\n\nclass S(str):\n    pass\n\nclass Loud(int):\n    pass\n\n"
    "Pair = namedtuple('Pair', 'a b')\n\nclass Color(IntEnum):\n    RED = 1\n"
)

# (truth, answer): benign values; upstream's verdict decides what ours must be.
OUTPUT_CASES = [
    ("{'a': 1}", "OrderedDict(a=1)"),
    ("{'a': 1, 'b': 2}", "OrderedDict([('b', 2), ('a', 1)])"),
    ("{1: [2]}", "defaultdict(list, {1: [2]})"),
    ("{'a': 2, 'b': 1}", "Counter('aab')"),
    ("{'a': 0}", "Counter()"),
    ("2", "Fraction(2)"),
    ("0.5", "Fraction(1, 2)"),
    ("0.3333333333333333", "Fraction(1, 3)"),
    ("1", "Decimal(1)"),
    ("0.5", "Decimal('0.5')"),
    ("0.1", "Decimal('0.1')"),
    ("[1, 2]", "UserList([1, 2])"),
    ("'ab'", "UserString('ab')"),
    ("{'k': 1}", "UserDict(k=1)"),
    ("{'k': 1}", "ChainMap({'k': 1})"),
    ("'ab'", "S('ab')"),
    ("3", "Loud(3)"),
    ("(1, 2)", "Pair(1, 2)"),
    ("1", "Color.RED"),
    ("20", "np.int64(20)"),
    ("True", "np.bool_(True)"),
    ("1.5", "np.float64(1.5)"),
    ("'x'", "np.str_('x')"),
    ("[1]", "deque([1])"),
    ("[{'a': 1}]", "[OrderedDict(a=1)]"),
    ("({1, 2}, 'a')", "(frozenset({1, 2}), S('a'))"),
    ("[]", "dir()"),
    ("{}", "locals()"),
    ("[2, 6]", "[2, 6]\nx = 1"),
    ("[2, 6]", "[2, 6], 'message'"),
    ("[2, 6]", "[2, 6] == [2, 6]"),
    ("[2, 6]", "[2, 6] and object()"),  # a condition is only tested for truth
    ("[3, 4]", "(a := [3])\na.append(4)"),  # the value is the one the assertion saw
    ("[2, 6]", "[2, 6]\n@staticmethod\ndef g():\n    pass"),  # decorators run too
    ("[2, 6]", "[2, 6]\n@undefined_name\ndef g():\n    pass"),
    ("3", "(1 +\r2)"),  # a lone carriage return is a line break to the tokenizer
    ("3", "3\r\nx = 1"),
    ("{'a': 1}", "types.MappingProxyType({'a': 1})"),
    ("{'a': 1}", "types.MappingProxyType({'a': 2})"),
    ("b'ab'", "bytearray(b'ab')"),
    ("[b'']", "[bytearray()]"),
    ("'ab'", "bytearray(b'ab')"),
    ("b'ab'", "memoryview(b'ab')"),
    ("b'\\x01\\x00\\x00\\x00'", "memoryview(array.array('i', [1]))"),
    ("[1]", "memoryview(array.array('i', [1]))"),
]
# Upstream passes these only because the answer's own code says so: always-equal objects and
# shapes whose verdict does not depend on the truth.
DEVIATIONS = {
    "type('Eq', (), {'__eq__': lambda self, other: True})()": Reason.NON_LITERAL_VALUE,
    "[0] or True": Reason.UNSUPPORTED_ASSERTION,
    "0 if False else 1": Reason.UNSUPPORTED_ASSERTION,
    "[0] <= [1]": Reason.UNSUPPORTED_ASSERTION,
}


def upstream_passes(pool: Pool, program: str, truth: str, answer: str) -> bool:
    """Upstream's rule run literally: the program, then the assertion; the end reached."""
    source = f"{program}\nassert {truth} == {answer}\n\ndef reached():\n    return 1\n"
    result = pool.run(Program(source, "reached", preamble=SITE_PACKAGES_PREAMBLE), Call("reached"))
    assert result.status is not Status.SANDBOX_ERROR, result.describe()
    return result.ok


def item(truth: str, index: int) -> Item:
    return Item(
        f"sample_{index}",
        "cruxeval-o",
        "output_prediction",
        program=IMPORTS + PROGRAM,
        call="f(0)",
        truth=truth,
    )


@pytest.fixture(scope="module")
def graded(pool: Pool) -> list[tuple[str, str, bool, bool, Reason]]:
    cases = [*OUTPUT_CASES, *(("[0]", answer) for answer in DEVIATIONS)]
    task = tasks.get("output_prediction")
    items = [item(truth, index) for index, (truth, _) in enumerate(cases)]
    plans = [task.plan(it, [Answer(answer)]) for it, (_, answer) in zip(items, cases, strict=True)]
    scores = [s[0] for s in run_plans(pool, plans, LIMITS)]
    return [
        (
            truth,
            answer,
            upstream_passes(pool, IMPORTS + PROGRAM, truth, answer),
            s.correct,
            s.reason,
        )
        for (truth, answer), s in zip(cases, scores, strict=True)
    ]


def test_benign_equal_values_get_upstreams_verdict(
    graded: list[tuple[str, str, bool, bool, Reason]],
) -> None:
    benign = [row for row in graded if row[1] not in DEVIATIONS]
    assert len(benign) == len(OUTPUT_CASES)
    differ = [(t, a, up, ours, r.value) for t, a, up, ours, r in benign if up != ours]
    assert differ == []
    # the side-by-side has both outcomes, so it can tell a grader that says yes to everything
    assert {up for _, _, up, _, _ in benign} == {True, False}


def test_adversarial_answers_that_upstream_passes_are_refused_with_a_reason(
    graded: list[tuple[str, str, bool, bool, Reason]],
) -> None:
    rows = {answer: (up, ours, reason) for _, answer, up, ours, reason in graded}
    for answer, reason in DEVIATIONS.items():
        assert rows[answer] == (True, False, reason), answer


def test_input_prediction_calls_returning_equal_values(pool: Pool) -> None:
    program = IMPORTS + "def f(kind):\n    return OrderedDict(a=1) if kind else Fraction(1, 3)\n"
    task = tasks.get("input_prediction")
    answers = ["f(1)", "f(0)", "f(kind=1)", "f(*[1])"]
    truth = "{'a': 1}"
    it = Item("i", "cruxeval-i", "input_prediction", program=program, truth=truth, call="f(1)")
    scores = run_plans(pool, [task.plan(it, [Answer(a) for a in answers])], LIMITS)[0]
    upstream = [upstream_passes(pool, program, truth, answer) for answer in answers]
    assert [s.correct for s in scores] == upstream == [True, False, True, True]


def test_livecodebench_execution_answers_with_numpy_and_counters(pool: Pool) -> None:
    base = lcb_items(livecodebench.load_execution, "lcb-execution")[1]  # extremes(a=[4, 9, 2])
    task = tasks.get(base.task)
    answers = ["(np.int64(2), 9)", "tuple(pd.Series([2, 9]))", "(2, 9.0)", "(np.int64(3), 9)"]
    plans = [task.plan(base, [Answer(answer)]) for answer in answers]
    scores = [s[0] for s in run_plans(pool, plans, LIMITS)]
    upstream = [upstream_passes(pool, base.program, base.truth, answer) for answer in answers]
    assert [s.correct for s in scores] == upstream == [True, True, True, False]
    counter = replace(base, id="c", call="g()", truth="{'a': 3}", entry="g")
    score = run_plans(pool, [task.plan(counter, [Answer("Counter({'a': 3})")])], LIMITS)
    assert score[0][0].correct
    assert upstream_passes(pool, base.program, "{'a': 3}", "Counter({'a': 3})")


def test_livecodebench_test_output_answers_see_json(pool: Pool) -> None:
    items = lcb_items(livecodebench.load_test_output, "lcb-test-output")
    double = {it.id: it for it in items}["2001_0"]
    task = tasks.get(double.task)
    assert isinstance(task, TestOutputPrediction)
    texts = [
        "assert doubleIt([1, 2, 3]) == json.loads('[2, 4, 6]')",
        "assert doubleIt([1, 2, 3]) == json.loads('[2, 4, 7]')",
        "assert doubleIt([1, 2, 3]) == list(np.array([2, 4, 6]))",
    ]
    plans = [task.plan(double, [task.extract(double, text)]) for text in texts]
    got = [s[0].correct for s in run_plans(pool, plans, LIMITS)]
    assert got == [True, False, False]  # upstream's grader has json, not numpy, imported


def lcb_items(load: Callable[..., list[Item]], benchmark: str) -> list[Item]:
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "livecodebench"
    paths = {name: folder / name for name in ("execution-v2.jsonl", "test_generation.jsonl")}
    return load(paths, benchmark=benchmark)
