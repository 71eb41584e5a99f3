"""Grading rules shared by the task kinds: verdicts in the parent, execution in the sandbox.

Official grading reproduces what upstream harnesses decide when they execute
``{program}\nassert {truth} == {answer}``, without executing answer text here and without ever
letting the sandbox decide a verdict: the assertion is only *parsed* in the parent, and every
verdict is a comparison, made here, of the truth (which never enters the sandbox) with values the
answer evaluates to.

- ``assert truth == E`` with ``E`` a plain literal: ``E`` is parsed and compared here;
- with ``E`` a call of the entry point with literal arguments (input prediction): the benchmark
  program runs on those arguments in the item's shared batch;
- any other ``E``: evaluated in the sandbox at module level, after the program, as upstream
  does, and the value it returns is compared here;
- an assertion message is dropped (it runs only when the assertion fails, so it never changes
  the verdict); chained ``truth == E1 == E2`` compares every operand; ``truth == E and C``
  also needs ``C`` truthy; statements after the assertion run in the sandbox after ``E`` (an
  exception fails the answer, as upstream);
- shapes whose verdict would not depend on the truth (``truth == E or C``, ``... if C else
  ...``, ``not``, other comparison operators) are graded wrong as ``unsupported_assertion``.

Values evaluated in the sandbox are converted there to plain literals when Python's ``==`` makes
them equal to one (``OrderedDict``, ``Fraction(2)``, numpy scalars, ...: see
:mod:`codereasoner.tasks.answer_values`), so such answers pass as upstream; objects with an
``__eq__`` of their own stay non-literal and fail (docs/evaluation.md lists each deviation).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from codereasoner import values
from codereasoner.execution import Call, CallSyntaxError, ExecResult, Program, Status, parse_call
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.tasks.base import Item, Reason, Score
from codereasoner.tasks.plans import Finish, GradingPlan, Job, verdict

HOOK = "__codereasoner_answer__"

_STATUS_REASONS = {
    Status.ERROR: Reason.ERROR,
    Status.TIMEOUT: Reason.TIMEOUT,
    Status.MEMORY: Reason.MEMORY,
    Status.OUTPUT_LIMIT: Reason.OUTPUT_LIMIT,
    Status.KILLED: Reason.KILLED,
    Status.SANDBOX_ERROR: Reason.SANDBOX_ERROR,
}
_LITERAL_TYPES = (int, float, complex, str, bytes, bool, type(None))


def is_python_literal(node: ast.AST) -> bool:
    """True when Python evaluates ``node`` to exactly what ``values.parse`` returns for it.

    JSON spellings, ``inf``/``nan`` names and ``set()``-style calls are excluded: Python
    would evaluate those differently (NameError) or they need a call.
    """
    if isinstance(node, ast.Constant):
        return type(node.value) in _LITERAL_TYPES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(is_python_literal(element) for element in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and is_python_literal(k) for k in node.keys) and all(
            is_python_literal(v) for v in node.values
        )
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        right = node.right
        return (
            isinstance(node.op, (ast.Add, ast.Sub))
            and isinstance(right, ast.Constant)
            and type(right.value) is complex
            and _is_number(node.left)
        )
    return False


def _is_number(node: ast.AST) -> bool:
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, complex)


def _is_literal_call(node: ast.AST, entry: str) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    names = [keyword.arg for keyword in node.keywords if keyword.arg is not None]
    if node.func.id != entry or len(names) != len(set(names)):
        return False  # a repeated keyword is a compile error: let the sandbox report it
    args_ok = all(
        is_python_literal(arg.value if isinstance(arg, ast.Starred) else arg) for arg in node.args
    )
    return args_ok and all(is_python_literal(keyword.value) for keyword in node.keywords)


_VALUE = "__codereasoner_value__"
PLAIN_FUNCTION = "__codereasoner_plain__"  # defined by PLAIN_PREAMBLE
_PLAIN_SOURCE = (Path(__file__).with_name("answer_values.py")).read_text(encoding="utf-8")
# Before the program: the installed packages importable (upstream runs with them: numpy in an
# answer works), and a converter to plain literals, built from answer_values in a namespace of its
# own so that the program's globals cannot shadow the names it uses. Values are converted as soon
# as they are computed (code after the assertion could otherwise change them).
PLAIN_PREAMBLE = f"""{SITE_PACKAGES_PREAMBLE}
def {PLAIN_FUNCTION}(value, _space={{}}):
    if not _space:  # compiled once per process, on first use
        import builtins
        _space.update(__builtins__=builtins, __name__="answer_values")
        exec({_PLAIN_SOURCE!r}, _space)
    return _space["plain"](value)
"""
_HOOK_EPILOGUE = f"""
def {HOOK}():
    return {_VALUE}
"""
_CALL_EPILOGUE = f"""
def {HOOK}(*args, **kwargs):
    return {PLAIN_FUNCTION}(ENTRY(*args, **kwargs))
"""


def hook_program(prefix: str, expression: str, statements: str = "") -> Program:
    """``prefix``, then ``expression`` evaluated at module level (as upstream's assertion is)
    and converted to a plain literal at once, then ``statements``; the hook returns
    ``(value, converted type names)``."""
    body = f"{_VALUE} = {PLAIN_FUNCTION}((\n{expression}\n))\n{statements}"
    source = f"{prefix}\n{body}" if prefix else body
    return Program(source, entry=HOOK, preamble=PLAIN_PREAMBLE, epilogue=_HOOK_EPILOGUE)


def plain_call_program(program: str, entry: str) -> Program:
    """The benchmark program with a hook calling ``entry`` and returning its value as a plain
    literal (input prediction's literal calls, officially graded)."""
    epilogue = _CALL_EPILOGUE.replace("ENTRY", entry)  # an entry point is a checked dotted name
    return Program(program, entry=HOOK, preamble=PLAIN_PREAMBLE, epilogue=epilogue)


def returned_plain(result: ExecResult) -> tuple[object, tuple[str, ...]]:
    """The hook's ``(value, converted type names)``; ValueError when it is not that."""
    returned = result.parsed_value()
    if not (
        type(returned) is tuple
        and len(returned) == 2
        and type(returned[1]) is tuple
        and all(type(name) is str for name in returned[1])
    ):
        raise ValueError("the grading hook returned an unexpected shape")
    return returned[0], returned[1]


def _describe_value(value: object, converted: tuple[str, ...]) -> str:
    try:
        text = values.render(value, max_chars=200)
    except (values.NotALiteral, values.RenderLimitExceeded, RecursionError):
        text = "<value too long to show>"
    return f"{text} (converted from {', '.join(converted)})" if converted else text


def status_verdict(item: Item, sample: int, answer: str, result: ExecResult) -> Score:
    """The verdict on a call that did not return: its status decides the reason."""
    reason = _STATUS_REASONS[result.status]
    if reason is Reason.ERROR and result.exception_type == "AssertionError":
        reason = Reason.ASSERTION_FAILED
    return verdict(item, sample, answer, reason, result.describe())


def compare_result(
    item: Item, sample: int, answer: str, truth: object, policy: str = "strict"
) -> Finish:
    """A finisher: the call's returned value against ``truth``, compared here."""

    def finish(result: ExecResult) -> Score:
        if result.status is not Status.OK:
            return status_verdict(item, sample, answer, result)
        try:
            value = result.parsed_value()
        except ValueError:
            return verdict(item, sample, answer, Reason.NON_LITERAL_VALUE, result.value or "")
        same = values.equal(truth, value, policy)
        reason = Reason.CORRECT if same else Reason.WRONG
        return verdict(item, sample, answer, reason, result.value or "")

    return finish


def compare_plain(
    item: Item, sample: int, answer: str, truth: object, shape: _Shape | None = None
) -> Finish:
    """A finisher for hook programs: the plain value(s) they return decide, here, whether
    ``truth == E1 == ... and C1 and ...`` holds (``shape``: how many of each; None: one E)."""
    equalities, conditions = (1, 0) if shape is None else (len(shape.operands), shape.conditions)

    def finish(result: ExecResult) -> Score:
        if result.status is not Status.OK:
            return status_verdict(item, sample, answer, result)
        try:
            value, converted = returned_plain(result)
        except ValueError:
            return verdict(item, sample, answer, Reason.NON_LITERAL_VALUE, result.value or "")
        if shape is None:
            parts: list[object] = [value]
        elif type(value) is list and len(value) == equalities + conditions:
            parts = value
        else:
            return verdict(item, sample, answer, Reason.NON_LITERAL_VALUE, result.value or "")
        detail = _describe_value(parts[0], converted)
        operands, tests = parts[:equalities], parts[equalities:]
        pairs = zip([truth, *operands[:-1]], operands, strict=True)
        same = all(values.equal(left, right, "strict") for left, right in pairs)
        holds = same and all(bool(test) for test in tests)
        return verdict(item, sample, answer, Reason.CORRECT if holds else Reason.WRONG, detail)

    return finish


def _parse_module(text: str) -> ast.Module | str:
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg}"
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return f"{type(exc).__name__}: {exc}"


def source_segment(text: str, node: ast.AST) -> str:
    """The source text of ``node`` in ``text``, in linear time (``ast.get_source_segment`` is
    quadratic on one long line in Python 3.11). Column offsets count UTF-8 bytes."""
    lines = text.split("\n")
    first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
    start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    if first == last:
        return lines[first].encode()[start:end].decode()
    head = lines[first].encode()[start:].decode()
    tail = lines[last].encode()[:end].decode()
    return "\n".join([head, *lines[first + 1 : last], tail])


# ---------------------------------------------------------------------------------------
# official and strict grading
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Shape:
    """``assert truth == E1 [== E2 ...] [and C1 and ...]`` then ``statements``."""

    operands: tuple[ast.expr, ...]
    condition_nodes: tuple[ast.expr, ...]
    statements: tuple[ast.stmt, ...]

    @property
    def conditions(self) -> int:
        return len(self.condition_nodes)

    @property
    def simple(self) -> bool:
        return len(self.operands) == 1 and not self.condition_nodes and not self.statements


def official_assertion(item: Item, sample: int, answer: str, *, call_entry: bool) -> Score | Job:
    """Judge ``{item.program}\\nassert {item.truth} == {answer}`` as upstream would.

    ``call_entry``: input prediction, where a call of the entry point with literal arguments
    runs in the item's shared batch.
    """
    # The tokenizer reads \r\n and a lone \r as \n; so do the offsets used below.
    text = f"assert {item.truth} == {answer}".replace("\r\n", "\n").replace("\r", "\n")
    tree = _parse_module(text)
    if isinstance(tree, str):
        return verdict(item, sample, answer, Reason.SYNTAX_ERROR, tree)
    try:
        truth = item.truth_value()
        gold = ast.parse(item.truth, mode="eval").body
    except (SyntaxError, ValueError) as exc:
        return verdict(item, sample, answer, Reason.BAD_TRUTH, str(exc))
    shape = _assertion_shape(tree, gold)
    if isinstance(shape, str):
        return verdict(item, sample, answer, Reason.UNSUPPORTED_ASSERTION, shape)
    if shape.simple:
        expression = shape.operands[0]
        segment = source_segment(text, expression)
        if is_python_literal(expression):
            try:
                value = values.parse(segment)
            except values.ValueParseError:
                pass  # e.g. an unhashable set element: let Python raise it in the sandbox
            else:
                same = values.equal(truth, value, "strict")
                return verdict(item, sample, answer, Reason.CORRECT if same else Reason.WRONG)
        finish = compare_plain(item, sample, answer, truth)
        if call_entry and _is_literal_call(expression, item.entry):
            try:
                call = parse_call(segment)
            except CallSyntaxError:
                pass
            else:
                program = plain_call_program(item.program, item.entry)
                return Job(sample, program, replace(call, entry=HOOK), finish, shared=True)
        return Job(sample, hook_program(item.program, segment), Call(HOOK), finish)
    operands = [f"(\n{source_segment(text, node)}\n)" for node in shape.operands]
    conditions = [f"not not (\n{source_segment(text, node)}\n)" for node in shape.condition_nodes]
    listed = "[\n" + ",\n".join([*operands, *conditions]) + "\n]"
    program = hook_program(item.program, listed, _after(text, tree.body[0]))
    return Job(sample, program, Call(HOOK), compare_plain(item, sample, answer, truth, shape))


def _after(text: str, statement: ast.stmt) -> str:
    """The module's text after ``statement`` (decorators and all), as statements of their own."""
    lines = text.split("\n")
    last = statement.end_lineno - 1  # type: ignore[operator]
    rest = lines[last].encode()[statement.end_col_offset :].decode()
    return "\n".join([rest.lstrip(" \t;"), *lines[last + 1 :]]) + "\n"


def _assertion_shape(tree: ast.Module, gold: ast.expr) -> _Shape | str:
    """How the assertion is built, or why its shape is not graded (a one-line reason)."""
    first, *rest = tree.body
    if not isinstance(first, ast.Assert):
        return "the answer does not continue the assertion"
    test: ast.expr = first.test
    conditions: tuple[ast.expr, ...] = ()
    if isinstance(first.test, ast.BoolOp) and isinstance(first.test.op, ast.And):
        test, conditions = first.test.values[0], tuple(first.test.values[1:])
    if not (isinstance(test, ast.Compare) and ast.dump(test.left) == ast.dump(gold)):
        kind = type(first.test).__name__
        return f"the assertion is a {kind}, not the truth compared with the answer"
    if not all(isinstance(op, ast.Eq) for op in test.ops):
        return "the assertion uses a comparison other than =="
    return _Shape(tuple(test.comparators), conditions, tuple(rest))


def official_expression(item: Item, sample: int, answer: str, expression: str) -> Score | Job:
    """Judge ``eval(expression) == truth`` (LiveCodeBench test output), without eval here.

    Upstream evaluates the expression in its grading module, where ``json`` and ``ast`` are
    imported; the hook program does the same.
    """
    source = expression.lstrip(" \t")  # eval strips leading spaces and tabs
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return verdict(item, sample, answer, Reason.SYNTAX_ERROR, f"{type(exc).__name__}: {exc}")
    try:
        truth = item.truth_value()
    except ValueError as exc:
        return verdict(item, sample, answer, Reason.BAD_TRUTH, str(exc))
    if is_python_literal(tree.body):
        try:
            value = values.parse(source)
        except values.ValueParseError:
            pass
        else:
            same = values.equal(truth, value, "strict")
            return verdict(item, sample, answer, Reason.CORRECT if same else Reason.WRONG)
    finish = compare_plain(item, sample, answer, truth)
    return Job(sample, hook_program(EVAL_NAMESPACE, source), Call(HOOK), finish)


# The names upstream's test-output grader has imported where it evaluates the answer.
EVAL_NAMESPACE = "import ast\nimport json"


def strict_value(item: Item, sample: int, answer: str, policy: str = "strict") -> Score:
    """The answer parsed as a literal (JSON spellings accepted) and compared with the truth."""
    try:
        truth = item.truth_value()
    except ValueError as exc:
        return verdict(item, sample, answer, Reason.BAD_TRUTH, str(exc))
    try:
        value = values.parse(answer)
    except values.ValueParseError as exc:
        return verdict(item, sample, answer, Reason.NOT_LITERAL, str(exc))
    same = values.equal(truth, value, policy)
    return verdict(item, sample, answer, Reason.CORRECT if same else Reason.WRONG)


def strict_call(item: Item, sample: int, answer: str, policy: str = "strict") -> Score | Job:
    """The answer parsed as a call with literal arguments, run in the item's shared batch."""
    try:
        call = parse_call(answer)
    except CallSyntaxError as exc:
        return verdict(item, sample, answer, Reason.NOT_LITERAL, str(exc))
    if call.entry != item.entry:
        return verdict(item, sample, answer, Reason.WRONG_ENTRY, f"calls {call.entry}")
    try:
        truth = item.truth_value()
    except ValueError as exc:
        return verdict(item, sample, answer, Reason.BAD_TRUTH, str(exc))
    finish = compare_result(item, sample, answer, truth, policy)
    return Job(sample, Program(item.program, item.entry), call, finish, shared=True)


def truth_jobs(items: Iterable[Item]) -> list[GradingPlan]:
    """Plans that re-derive each item's gold output by running its call in the sandbox."""
    plans = []
    for item in items:
        plan = GradingPlan(item, [None])
        plan.add(0, official_assertion(item, 0, item.call, call_entry=True))
        plans.append(plan)
    return plans
