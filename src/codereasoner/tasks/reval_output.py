"""Output (REval OP): complete the test code by replacing ``??``; the answer is executed.

Official grading (benchmarks.md 4.5): ``ERROR`` becomes ``assert False``; a shorter answer gets
the question's first lines prepended; the penalty patterns fail it; otherwise it runs in the
sandbox (HumanEval: ``exec`` in the program's namespace; ClassEval: as a test method, every
``assert`` rewritten to ``self.assert``, after ``setUp``) and passes when nothing is raised.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from codereasoner.execution import Call, ExecResult, Program, Status
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.tasks import reval_extraction as rx
from codereasoner.tasks.base import Grading, Item, Reason, Score
from codereasoner.tasks.common import Grade, RevalKind
from codereasoner.tasks.plans import Job, verdict

__all__ = [
    "ANSWER_ENTRY",
    "PENALTIES",
    "SITE_PREAMBLE",
    "RevalOutput",
    "answer_program",
    "completed_answer",
    "penalized",
    "without_main_guard",
]

ANSWER_ENTRY = "__reval_answer__"
# The sandbox starts Python with -S; REval's ClassEval programs import numpy, gensim and bs4.
SITE_PREAMBLE = SITE_PACKAGES_PREAMBLE

PENALTIES = ("assertTrue(True)", "assertFalse(False)", "assert True", "assert False",
             "assert True == True", "assert False == False")  # fmt: skip
_REASONS = {
    Status.ERROR: Reason.ERROR, Status.TIMEOUT: Reason.TIMEOUT, Status.MEMORY: Reason.MEMORY,
    Status.OUTPUT_LIMIT: Reason.OUTPUT_LIMIT, Status.KILLED: Reason.KILLED,
    Status.SANDBOX_ERROR: Reason.SANDBOX_ERROR,
}  # fmt: skip
_SYNTAX = ("SyntaxError", "IndentationError", "TabError")


def completed_answer(answer: str, question: str) -> str:
    """``ERROR`` as ``assert False``; a short answer gets the question's first lines prepended."""
    if answer == "ERROR":
        answer = "assert False"
    asked, given = question.strip().split("\n"), answer.strip().split("\n")
    if len(given) >= len(asked):
        return answer
    return "\n".join(asked[: len(asked) - len(given)] + given)


def penalized(answer: str, question: str) -> str | None:
    """The penalty upstream applies, if any: a trivial assertion, or fewer asserts than asked."""
    for pattern in PENALTIES:
        if pattern in answer:
            return f"penalty: contains {pattern!r}"
    asked = question.count("assert")
    if asked and answer.count("assert") < asked:
        return f"penalty: {answer.count('assert')} asserts, the question has {asked}"
    return None


def without_main_guard(test_source: str) -> str:
    """The test file without top-level ``if __name__ == '__main__':`` blocks (upstream never ran
    them: its test code was executed in a module whose ``__name__`` is not ``__main__``)."""
    tree = ast.parse(test_source)
    lines = test_source.split("\n")
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            for number in range(node.lineno - 1, node.end_lineno or node.lineno):
                lines[number] = ""
    return "\n".join(lines)


def answer_program(row: Mapping[str, Any]) -> Program:
    """Runs an output answer: ``__reval_answer__(answer, test_class_name)``.

    HumanEval: ``exec`` of the answer in a copy of the program's namespace. ClassEval: upstream's
    ``create_from_answer`` (each line tab-indented outside triple-quoted strings, every
    ``assert`` replaced by ``self.assert``), then a new test object, ``setUp()`` and the method.
    """
    if row["test"] is None:
        epilogue = (
            f"def {ANSWER_ENTRY}(answer, test_class):\n"
            "    exec(compile(answer, '<answer>', 'exec'), dict(globals()))\n"
        )
    else:
        epilogue = f"{without_main_guard(row['test'])}\n\n{_ANSWER_METHOD}"
    return Program(row["code"], entry=ANSWER_ENTRY, preamble=SITE_PREAMBLE, epilogue=epilogue)


_ANSWER_METHOD = f'''
def {ANSWER_ENTRY}(answer, test_class):
    text = "def dreval_output_pred(self):"
    in_string = False
    for line in answer.split("\\n"):
        text += ("\\n" + line) if in_string else ("\\n\\t" + line)
        if "\'\'\'" in line or '"""' in line:
            in_string = not in_string
    text = text.replace("assert", "self.assert")
    space = {{}}
    exec(compile(text, "<answer>", "exec"), globals(), space)
    test = globals()[test_class]()
    test.setUp()
    space["dreval_output_pred"](test)
'''


@cache
def _program(code: str, test: str | None, entry: str) -> Program:
    return answer_program({"code": code, "test": test, "entry_point": entry})


class RevalOutput(RevalKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` for REval output questions."""

    name = "output"
    missing = "no test code"
    official = staticmethod(rx.output_official)
    robust = staticmethod(rx.output_robust)

    def grader(self, item: Item, grading: Grading) -> Grade:
        if grading is not Grading.OFFICIAL:
            raise ValueError("REval output answers are graded officially (by execution) only")
        question = str(item.metadata["output_pred"])
        program = _program(item.program, item.metadata.get("test"), item.entry)
        test_class = str(item.metadata.get("test_class", ""))

        def grade(sample: int, text: str) -> Score | Job:
            answer = completed_answer(text, question)
            penalty = penalized(answer, question)
            if penalty is not None:
                return verdict(item, sample, text, Reason.WRONG, penalty)
            call = Call(ANSWER_ENTRY, (answer, test_class))
            return Job(sample, program, call, _finish(item, sample, text), shared=True)

        return grade


def _finish(item: Item, sample: int, text: str) -> Callable[[ExecResult], Score]:
    def finish(result: ExecResult) -> Score:
        if result.ok:
            return verdict(item, sample, text, Reason.CORRECT)
        kind = result.exception_type or ""
        if kind == "AssertionError":
            reason = Reason.ASSERTION_FAILED
        elif kind in _SYNTAX:
            reason = Reason.SYNTAX_ERROR
        else:
            reason = _REASONS[result.status]
        return verdict(item, sample, text, reason, result.describe())

    return finish
