"""Attacks on official grading: answers that try to forge a verdict instead of earning one.

A program can write well-formed result lines to its own result pipe, so nothing it reports may
decide a verdict on its own: verdicts are comparisons, made in the parent, of the truth (which
never enters the sandbox) with the values the answer evaluates to. Each attack is graded wrong
with a reason that is not the infrastructure's, and the harness keeps grading right answers.
"""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from codereasoner import benchmarks, tasks
from codereasoner.execution import Limits, Pool
from codereasoner.tasks import (
    Answer,
    Grading,
    Item,
    Reason,
    run_plans,
)
from tests.commands import run_codereasoner as cli

CRUX = Path(__file__).resolve().parents[1] / "fixtures" / "cruxeval"
LIMITS = Limits(timeout_s=1.0, wall_timeout_s=2.0, memory_mb=512)


def forge(line: str) -> str:
    """An expression writing ``line`` to every descriptor a result pipe could be on."""
    data = (line + "\n").encode()
    return (
        f"[__import__('ctypes').CDLL(None).write(k, {data!r}, {len(data)}) for k in range(3, 64)]"
    )


OK_TRUE = forge('{"i": 0, "status": "ok", "value": "True", "literal": true}')
OK_PLAIN = forge('{"i": 0, "status": "ok", "value": "([2, 6], ())", "literal": true}')
INFRA = forge('{"i": 0, "status": "sandbox_error", "exc_type": "X", "exc_message": "blame us"}')
# Each answer is wrong for every fixture item (no item's output is 0, 7 or 'zz').
FORGERIES = {
    "message forges a passing line": f"0, {OK_TRUE}",
    "message forges the hook's shape": f"0, {OK_PLAIN}",
    "chained ==": f"0 == {OK_TRUE}",
    "chained == after the forgery": f"{OK_TRUE} == 0",
    "and shape": f"0 and {OK_TRUE}",
    "and shape, forgery first": f"{OK_TRUE} and 0",
    "or shape": f"0 or {OK_TRUE}",
    "if/else shape": f"0 if {OK_TRUE} else 1",
    "a statement after the assertion": f"7\n{OK_TRUE}",
    "a statement that exits": "7\nimport os; os._exit(0)",
    "claims an infrastructure failure (message)": f"0, {INFRA}",
    "claims an infrastructure failure (evaluated)": f"{INFRA} and 'zz'",
    "claims an infrastructure failure (chained)": f"'zz' == {INFRA}",
    "module scope: dir()": "dir()",
    "module scope: locals()": "locals()",
    "always-equal object": "type('E', (), {'__eq__': lambda s, o: True, '__hash__': None})()",
    "str subclass that is always equal": (
        "type('S', (str,), {'__eq__': lambda s, o: True, '__hash__': str.__hash__})('zz')"
    ),
}


@pytest.fixture(scope="module")
def items() -> list[Item]:
    return benchmarks.get("cruxeval-o").load(CRUX)


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forged_output_verdicts_are_wrong(pool: Pool, items: list[Item], name: str) -> None:
    task = tasks.get("output_prediction")
    plans = [task.plan(item, [Answer(FORGERIES[name]), Answer(item.truth)]) for item in items]
    for item, (forged, honest) in zip(items, run_plans(pool, plans, LIMITS), strict=True):
        assert not forged.correct, (item.id, forged)
        assert forged.reason is not Reason.SANDBOX_ERROR, (item.id, forged)
        assert honest.correct, (item.id, honest)  # the harness keeps grading right answers


def test_forged_input_verdicts_are_wrong(pool: Pool) -> None:
    items = benchmarks.get("cruxeval-i").load(CRUX)
    task = tasks.get("input_prediction")
    answers = [
        f"f(0), {OK_TRUE}",
        f"f(0) == {OK_TRUE}",
        f"f(0) and {OK_TRUE}",
        f"f({OK_TRUE})",
        f"f(0) or {INFRA}",
    ]
    plans = [task.plan(item, [Answer(a) for a in answers]) for item in items]
    for item, scores in zip(items, run_plans(pool, plans, LIMITS), strict=True):
        for score in scores:
            assert not score.correct and score.reason is not Reason.SANDBOX_ERROR, (item.id, score)
    honest = run_plans(pool, [task.plan(items[0], [Answer(items[0].call)])], LIMITS)[0][0]
    assert honest.correct


def test_the_quoted_forgery_scores_zero_through_score(tmp_path: Path, items: list[Item]) -> None:
    """The attack that gave official pass@1 100.00 under every CRUXEval-O id."""
    generations = tmp_path / "forged.json"
    generations.write_text(json.dumps({item.id: [f"0, {OK_TRUE}"] for item in items}))
    done = cli(
        "score",
        "--bench",
        "cruxeval-o",
        "--generations",
        generations,
        "--data-dir",
        CRUX,
        "--k",
        "1",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["pass@1"] == 0.0
    assert "sandbox" not in done.stderr.lower()


def test_a_20_mb_answer_is_refused_quickly_with_a_reason(tmp_path: Path, items: list[Item]) -> None:
    huge = "[" + "0, " * 7_000_000 + "]"
    generations = tmp_path / "huge.json"
    generations.write_text(json.dumps({item.id: [huge] for item in items}))
    started = children_cpu()
    done = cli(
        "score",
        "--bench",
        "cruxeval-o",
        "--generations",
        generations,
        "--data-dir",
        CRUX,
        "--k",
        "1",
        "--strict-report",
    )
    spent = children_cpu() - started
    assert done.returncode == 0, done.stderr
    assert "answer_too_long" in done.stdout
    # A guard against quadratic work (this ran past 600 s before), on the command's CPU time,
    # not a speed figure: a few seconds here, measured in docs/performance.md.
    assert spent < 60, spent


def children_cpu() -> float:
    """CPU seconds the finished child processes of this one have used."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def test_forged_reval_output_verdicts_are_wrong(
    pool: Pool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """REval output answers are test code that upstream executes and passes when nothing is
    raised: a program could forge that, so only the question's code runs, with the holes' values."""
    from codereasoner.families.reval import benchmark as reval

    fixtures = CRUX.parent / "reval"
    paths = {name: fixtures / name for name in (reval.DATA.filename, reval.TASKS.filename)}
    loaded = reval.load(paths, pool=pool, cache=tmp_path_factory.mktemp("cache"))
    items = {item.id: item for item in loaded}
    human, classeval = items["DREval/1/0/output"], items["DREval/2/0/output"]
    task = tasks.get(human.task)
    forged_line = '{"i": 0, "status": "ok", "value": "None", "literal": true}'
    # claims the first phase recorded 12 for the hole (the truth is 11)
    forged_record = '{"i": 0, "status": "ok", "value": "{0: [[\'v\', 12]]}", "literal": true}'
    via_builtins = "re.enum.bltns.exec(\"__import__('os').write(5, b'x')\")"
    attacks = [
        (
            human,
            [
                f"assert total([1, 2]) == {forge(forged_line)}",
                f"{forge(forged_line)}\nassert total([1, 2]) == 12",
                f"assert total([1, 2]) == 12, {forge(forged_line)}",
                "import os\nassert total([1, 2]) == 12",
                "assert total([1, 2]) == 12 or os._exit(0)",
                f"assert total([1, 2]) == {forge(forged_record)}",
                f"assert total([1, 2]) == ({forge(forged_line)}, 12)[1]",
                f"assert total([1, 2]) == {via_builtins}",
                "assert total([1, 2]) == (__import__('os')._exit(0), 12)[1]",
            ],
        ),
        (
            classeval,
            [
                f"assertEqual(self.counter.add(5), {forge(forged_line)})\n"
                "assertEqual(self.counter.add(2), 17)",
                "assertEqual(self.counter.add(5), 15)\nassertEqual(self.counter.add(2), 18)\n"
                f"{forge(forged_line)}",
            ],
        ),
    ]
    for item, answers in attacks:
        plan = task.plan(item, [Answer(answer) for answer in answers])
        for score in run_plans(pool, [plan], LIMITS)[0]:
            assert not score.correct and score.reason is not Reason.SANDBOX_ERROR, score
    honest = task.plan(human, [Answer("assert total([1, 2]) == 11")])
    assert run_plans(pool, [honest], LIMITS)[0][0].correct


def test_a_copied_reval_call_passes_officially_and_fails_strictly(
    pool: Pool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``assert g(X) == g(X)`` states no value: upstream's execution passes it, so official
    grading keeps parity (docs/evaluation.md lists it); strict grading wants literal holes."""
    from codereasoner.families.reval import benchmark as reval

    fixtures = CRUX.parent / "reval"
    paths = {name: fixtures / name for name in (reval.DATA.filename, reval.TASKS.filename)}
    loaded = reval.load(paths, pool=pool, cache=tmp_path_factory.mktemp("cache"))
    items = {item.id: item for item in loaded}
    human, classeval = items["DREval/1/0/output"], items["DREval/2/0/output"]
    copies = [
        (human, ["assert total([1, 2]) == total([1, 2])", "assert total([1, 2]) == total([2, 1])"]),
        (
            classeval,
            ["assertEqual(self.counter.add(5), 15)\nassertEqual(self.counter.add(2), 15 + 2)"],
        ),
    ]
    task = tasks.get(human.task)
    for item, answers in copies:
        plan = task.plan(item, [Answer(answer) for answer in answers], Grading.OFFICIAL)
        assert all(score.correct for score in run_plans(pool, [plan], LIMITS)[0])
        plan = task.plan(item, [Answer(answer) for answer in answers], Grading.STRICT)
        strict = run_plans(pool, [plan], LIMITS)[0]
        assert [score.reason for score in strict] == [Reason.NOT_LITERAL] * len(answers)
    literal = task.plan(human, [Answer("assert total([1, 2]) == 11")], Grading.STRICT)
    assert run_plans(pool, [literal], LIMITS)[0][0].correct
