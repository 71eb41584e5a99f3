"""Output (REval OP): complete the test code by replacing ``??``; the answer is executed.

Official grading (docs/benchmark-rules.md, "Output."): ``ERROR`` becomes ``assert False``; a shorter answer gets
the question's first lines prepended; the penalty patterns fail it; otherwise it runs in the
sandbox (HumanEval: ``exec`` in the program's namespace; ClassEval: as a test method, every
``assert`` rewritten to ``self.assert``, after ``setUp``) and passes when nothing is raised.

"Nothing is raised" is a verdict a program could forge (it can write a passing result line to
its own result pipe), so the answer's own code never decides: an answer must be the question's
code (compared as syntax trees: layout and comments aside) with every ``??`` filled, and the
*question's* code decides, run with the holes bound to values. A hole filled by a Python literal
is parsed here. A hole filled by another expression is first evaluated in a run of its own
(the answer's code, which can at most lie about its own values there), its values recorded as
plain literals; then the question runs with those values, and only benchmark code and literal
data run when the verdict is decided. Any other answer (a changed test) is graded wrong as
``unsupported_assertion`` (docs/evaluation.md, deviations).

Strict grading takes literal holes only: an expression hole is ``not_a_literal``, so a copy of
the asserted call (``assert g(X) == g(X)``), which upstream passes, states no value.
"""

from __future__ import annotations

import ast
import contextlib
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from codereasoner import values
from codereasoner.execution import Call, ExecResult, Program, Status
from codereasoner.families.reval import extraction as rx
from codereasoner.families.reval.kind import RevalKind
from codereasoner.tasks.base import Grading, Item, Reason, Score, Style
from codereasoner.tasks.common import Grade
from codereasoner.tasks.grading import PLAIN_FUNCTION, PLAIN_PREAMBLE, is_python_literal
from codereasoner.tasks.oracle import style_name, tagged
from codereasoner.tasks.plans import Job, verdict

__all__ = [
    "ANSWER_ENTRY",
    "PENALTIES",
    "RevalOutput",
    "answer_program",
    "completed_answer",
    "filled_holes",
    "penalized",
    "without_main_guard",
]

ANSWER_ENTRY = "__reval_answer__"
HOLES = "__reval_holes__"  # the literal values filling a question's ?? holes
CAPTURE = "__reval_capture__"  # records an expression hole's value in the first phase
# Builtin classes a hole's recorded value may be (or contain), rebuilt by name.
_CLASSES = frozenset({"int", "float", "complex", "str", "bytes", "bool", "list", "tuple", "dict",
                      "set", "frozenset", "bytearray", "type", "object", "range"})  # fmt: skip
# Strict grading: a hole holds a value, not code; an expression such as the asserted call itself
# (``assert g(X) == g(X)``, which upstream's execution passes) states nothing.
STRICT_HOLES = "strict grading: every ?? must be filled by a literal value"
UNVERIFIABLE = "the answer is not the question's code with its ?? filled: it would decide itself"

PENALTIES = ("assertTrue(True)", "assertFalse(False)", "assert True", "assert False",
             "assert True == True", "assert False == False")  # fmt: skip
_REASONS = {
    Status.ERROR: Reason.ERROR,
    Status.TIMEOUT: Reason.TIMEOUT,
    Status.MEMORY: Reason.MEMORY,
    Status.OUTPUT_LIMIT: Reason.OUTPUT_LIMIT,
    Status.KILLED: Reason.KILLED,
    Status.SANDBOX_ERROR: Reason.SANDBOX_ERROR,
}
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


def filled_holes(
    question: str, answer: str, class_test: bool = False
) -> tuple[str, tuple[Any, ...], dict[int, str]] | None:
    """How ``answer`` fills the question's ``??`` holes, when it is the question's code with
    each hole filled by an expression (compared as syntax trees: layout and comments do not
    matter); None otherwise.

    Returns ``(template, literals, expressions)``: the question with hole i written as
    ``HOLES[i]``, each hole as the tagged literal the driver decodes (``["v", value]``: the
    parsed value of a hole filled by a Python literal, None for the others), and
    the source of the other holes' expressions. ``class_test``: upstream rewrites every
    ``assert`` of a ClassEval answer to ``self.assert``, inside literals too; so is the holes'
    text before it is read.
    """
    holes_in_question = question.count("??")
    if not holes_in_question:
        return None
    names = iter(range(holes_in_question))
    marked = re.sub(r"\?\?", lambda _: f"{HOLES}_{next(names)}", question)
    found: dict[int, Any] = {}
    try:
        asked = ast.parse(_dedented(marked))
        given = ast.parse(_dedented(answer))
        same = _same_but_holes(asked, given, found, class_test)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not same or len(found) != holes_in_question:
        return None
    template = re.sub(rf"{HOLES}_(\d+)", rf"{HOLES}[\1]", marked)
    literals = tuple(
        ["v", None if isinstance(found[i], Expression) else found[i]]
        for i in range(holes_in_question)
    )
    expressions = {i: hole.text for i, hole in found.items() if isinstance(hole, Expression)}
    return template, literals, expressions


def capturing(template: str, expressions: dict[int, str]) -> str:
    """The template with each expression hole evaluated and recorded by CAPTURE."""

    def fill(match: re.Match[str]) -> str:
        index = int(match.group(1))
        if index not in expressions:
            return match.group(0)
        return f"{CAPTURE}({index}, ({expressions[index]}))"

    return re.sub(rf"{HOLES}\[(\d+)\]", fill, template)


@dataclass(frozen=True)
class Expression:
    """A hole filled with an expression that is not a Python literal."""

    text: str


def _syntax_error(answer: str) -> str:
    try:
        ast.parse(_dedented(answer))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def _dedented(text: str) -> str:
    return textwrap.dedent(text).strip()


def _same_but_holes(asked: Any, given: Any, found: dict[int, Any], class_test: bool) -> bool:
    """True when two syntax trees are equal except where ``asked`` has a hole name, where
    ``given`` has an expression (its literal value or its source recorded in ``found``)."""
    if isinstance(asked, ast.Name) and asked.id.startswith(f"{HOLES}_"):
        index = int(asked.id.rsplit("_", 1)[1])
        if not isinstance(given, ast.expr) or index in found:
            return False
        text = ast.unparse(given)
        found[index] = Expression(text)  # as code, it goes through the driver's rewriting
        if is_python_literal(given):
            with contextlib.suppress(values.ValueParseError):
                found[index] = values.parse(
                    text.replace("assert", "self.assert") if class_test else text
                )
        return True
    if type(asked) is not type(given):
        return False
    if isinstance(asked, ast.Assert):  # a message runs only when the assertion fails
        return _same_but_holes(asked.test, given.test, found, class_test)
    asked_equality, given_equality = _equality(asked), _equality(given)
    if asked_equality is not None and given_equality is not None:  # either way round
        kind, receiver, operands = asked_equality
        given_kind, given_receiver, given_operands = given_equality
        if kind != given_kind:
            return False
        if receiver is not None and not _same_but_holes(
            receiver, given_receiver, found, class_test
        ):
            return False
        return _either_order(operands, given_operands, found, class_test)
    if isinstance(asked, list):
        asked, given = _without_pass(asked), _without_pass(given)
        return len(asked) == len(given) and all(
            _same_but_holes(a, g, found, class_test) for a, g in zip(asked, given, strict=True)
        )
    if not isinstance(asked, ast.AST):
        return asked == given
    return all(
        _same_but_holes(getattr(asked, name), getattr(given, name, None), found, class_test)
        for name in asked._fields
    )


EQUAL_ASSERTIONS = frozenset({"assertEqual", "assertEquals"})  # the second: a deprecated alias


def _equality(node: Any) -> tuple[str, Any, tuple[Any, Any]] | None:
    """``(kind, receiver, (the two compared operands))`` of ``a == b`` (kind ``==``) or an
    ``assertEqual(a, b)`` call (``assertEquals`` alike, no other argument but a message; kind ``name`` or
    ``attribute``, with its receiver ``x`` of ``x.assertEqual``); None otherwise."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        return "==", None, (node.left, node.comparators[0])
    if not isinstance(node, ast.Call) or len(node.args) not in (2, 3):
        return None
    if any(keyword.arg != "msg" for keyword in node.keywords) or (
        len(node.args) == 3 and node.keywords
    ):
        return None  # only a message may follow the two values: it runs on failure alone
    function = node.func
    if isinstance(function, ast.Name) and function.id in EQUAL_ASSERTIONS:
        return "name", None, (node.args[0], node.args[1])
    if isinstance(function, ast.Attribute) and function.attr in EQUAL_ASSERTIONS:
        return "attribute", function.value, (node.args[0], node.args[1])
    return None


def _either_order(
    asked: tuple[Any, Any], given: tuple[Any, Any], found: dict[int, Any], class_test: bool
) -> bool:
    """The compared operands match in order, or swapped (``==`` and ``assertEqual`` assert the
    same whichever side a value is on); a failed try leaves ``found`` as it was."""
    for first, second in (given, given[::-1]):
        kept = dict(found)
        if _same_but_holes(asked[0], first, found, class_test) and _same_but_holes(
            asked[1], second, found, class_test
        ):
            return True
        found.clear()
        found.update(kept)
    return False


def _without_pass(nodes: list[Any]) -> list[Any]:
    """A statement list without ``pass`` statements (they do nothing); other lists as given."""
    return [node for node in nodes if not isinstance(node, ast.Pass)] if nodes else nodes


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
        epilogue = _CAPTURES + (
            f"def {ANSWER_ENTRY}(answer, test_class, holes=()):\n"
            "    captured, capture = __reval_captures__()\n"
            "    holes = tuple(__reval_decode__(hole) for hole in holes)\n"
            f"    space = dict(globals(), {HOLES}=holes, {CAPTURE}=capture)\n"
            "    exec(compile(answer, '<answer>', 'exec'), space)\n"
            "    return captured\n"
        )
    else:
        epilogue = f"{without_main_guard(row['test'])}\n\n{_CAPTURES}{_ANSWER_METHOD}"
    return Program(row["code"], entry=ANSWER_ENTRY, preamble=PLAIN_PREAMBLE, epilogue=epilogue)


# Holes cross between the runs as tagged literals: [tag, data]. An expression hole's values are
# recorded encoded (classes, deques and dates too, which are no literals); the question's run
# decodes every hole from data alone. Tags the decoder does not know fail that run.
_CAPTURES = f"""
def __reval_encode__(value, depth=0):
    import builtins, collections, datetime
    kind = type(value)
    if depth > 50:
        raise ValueError("a recorded value nests too deep")
    def inner(item):
        return __reval_encode__(item, depth + 1)
    if kind in (int, float, complex, str, bytes, bool, type(None)):
        return ["v", value]
    if kind in (list, tuple, set, frozenset):
        return [kind.__name__, [inner(item) for item in value]]
    if kind is dict:
        return ["dict", [[inner(k), inner(v)] for k, v in value.items()]]
    if kind is collections.deque:
        return ["deque", [inner(item) for item in value], value.maxlen]
    if kind is type and value.__name__ in {sorted(_CLASSES)!r} and getattr(builtins, value.__name__) is value:
        return ["class", value.__name__]
    if kind in (datetime.datetime, datetime.date, datetime.time):
        return [kind.__name__, value.isoformat()]
    if kind is datetime.timedelta:
        return ["timedelta", [value.days, value.seconds, value.microseconds]]
    converted, names = {PLAIN_FUNCTION}(value)
    if names:
        return inner(converted)
    return ["opaque", getattr(kind, "__qualname__", "?")]


def __reval_decode__(data):
    import builtins, collections, datetime
    tag = data[0]
    if tag == "v":
        return data[1]
    if tag in ("list", "tuple", "set", "frozenset"):
        return getattr(builtins, tag)(__reval_decode__(item) for item in data[1])
    if tag == "dict":
        return {{__reval_decode__(k): __reval_decode__(v) for k, v in data[1]}}
    if tag == "deque":
        return collections.deque((__reval_decode__(item) for item in data[1]), data[2])
    if tag == "class" and data[1] in {sorted(_CLASSES)!r}:
        return getattr(builtins, data[1])
    if tag in ("datetime", "date", "time"):
        return getattr(datetime, tag).fromisoformat(data[1])
    if tag == "timedelta":
        return datetime.timedelta(*data[1])
    raise ValueError(f"a hole's value cannot be rebuilt: {{data[0]}} {{data[1:]!r:.80}}")


def __reval_captures__():
    captured = {{}}
    def capture(index, value):
        captured.setdefault(index, []).append(__reval_encode__(value))
        return value
    return captured, capture
"""


_ANSWER_METHOD = f'''
def {ANSWER_ENTRY}(answer, test_class, holes=()):
    captured, capture = __reval_captures__()
    holes = tuple(__reval_decode__(hole) for hole in holes)
    globals()["{HOLES}"], globals()["{CAPTURE}"] = holes, capture
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
    return captured
'''


@cache
def _program(code: str, test: str | None, entry: str) -> Program:
    return answer_program({"code": code, "test": test, "entry_point": entry})


class RevalOutput(RevalKind):
    """``prompt`` / ``extract`` / ``plan`` / ``score`` / ``oracle`` for REval output questions."""

    name = "output"
    missing = "no test code"
    official = staticmethod(rx.output_official)
    robust = staticmethod(rx.output_robust)

    def oracle(self, item: Item, style: Style | str = Style.DIRECT) -> str:
        """The question's test code with its holes filled (the item's truth)."""
        return tagged(item.truth, style_name(style))

    def grader(self, item: Item, grading: Grading) -> Grade:
        question = str(item.metadata["output_pred"])
        program = _program(item.program, item.metadata.get("test"), item.entry)
        test_class = str(item.metadata.get("test_class", ""))

        def grade(sample: int, text: str) -> Score | Job:
            answer = completed_answer(text, question)
            penalty = penalized(answer, question)
            if penalty is not None:
                return verdict(item, sample, text, Reason.WRONG, penalty)
            filled = filled_holes(question, answer, bool(test_class))
            if filled is None:
                error = _syntax_error(answer)
                reason = Reason.SYNTAX_ERROR if error else Reason.UNSUPPORTED_ASSERTION
                return verdict(item, sample, text, reason, error or UNVERIFIABLE)
            template, literals, expressions = filled
            if expressions and grading is Grading.STRICT:
                return verdict(item, sample, text, Reason.NOT_LITERAL, STRICT_HOLES)
            if not expressions:
                call = Call(ANSWER_ENTRY, (template, test_class, literals))
                return Job(sample, program, call, _finish(item, sample, text), shared=True)
            # First the answer's expressions run, alone, and their values are recorded; then
            # the question runs with those values as its holes, and decides.
            probe = Call(ANSWER_ENTRY, (capturing(template, expressions), test_class, literals))
            finish = _then_question(item, sample, text, program, (template, test_class, literals))
            return Job(sample, program, probe, finish)

        return grade


def _then_question(
    item: Item,
    sample: int,
    text: str,
    program: Program,
    question: tuple[str, str, tuple[Any, ...]],
) -> Callable[[ExecResult], Score | Job]:
    """The first phase's finisher: the recorded values of the expression holes become the
    literal holes of the question's own run (``question``: its template, test class and literal
    holes), whose outcome is the verdict."""
    decide = _finish(item, sample, text)

    def finish(result: ExecResult) -> Score | Job:
        if not result.ok:
            return decide(result)  # the answer's own code failed: wrong, as upstream
        try:
            recorded = result.parsed_value()
        except ValueError:
            return verdict(item, sample, text, Reason.NON_LITERAL_VALUE, result.value or "")
        template, test_class, literals = question
        holes = _recorded_holes(recorded, literals)
        if holes is None:
            why = "a hole took different values, or an unexpected record"
            return verdict(item, sample, text, Reason.UNSUPPORTED_ASSERTION, why)
        call = Call(ANSWER_ENTRY, (template, test_class, holes))
        return Job(sample, program, call, decide, shared=True)

    return finish


def _recorded_holes(recorded: object, literals: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The literal holes with each recorded ``{index: [value, ...]}`` filled in (the values a
    hole took must agree)."""
    count = len(literals)
    if type(recorded) is not dict:
        return None
    holes = list(literals)
    for index, seen in recorded.items():
        if type(index) is not int or not 0 <= index < count or type(seen) is not list or not seen:
            return None
        if not all(values.equal(seen[0], other, "exact") for other in seen[1:]):
            return None
        holes[index] = seen[0]
    return tuple(holes)


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


KIND = RevalOutput()  # registered by name in codereasoner.tasks.registry
