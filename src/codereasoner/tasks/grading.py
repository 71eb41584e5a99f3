"""Grading rules shared by the task kinds: verdicts in the parent, execution in the sandbox.

Official grading reproduces what upstream harnesses decide when they execute
``{program}\\nassert {truth} == {answer}``, without executing answer text here: the assertion is
only *parsed* in the parent. When it is ``assert truth == E`` with ``E`` a plain literal, ``E`` is
parsed and compared here; a call of the entry point with literal arguments runs the benchmark
program in a shared batch; any other ``E`` is evaluated in the sandbox as its own untrusted
program, and the value it returns is compared here. Only assertions of another shape (extra
statements, a message, chained comparisons), which no literal can produce, run as written in the
sandbox, where reaching the end of the program is the verdict.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from codereasoner import values
from codereasoner.execution import Call, CallSyntaxError, ExecResult, Program, Status, parse_call
from codereasoner.tasks.base import Item, Reason, Score
from codereasoner.tasks.plans import Finish, Job, Plan, verdict

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


def hook_program(prefix: str, expression: str) -> Program:
    """``prefix`` plus a function returning ``expression`` (already known to parse alone)."""
    body = f"def {HOOK}():\n    return (\n{expression}\n    )\n"
    return Program(f"{prefix}\n{body}" if prefix else body, entry=HOOK)


def compare_result(
    item: Item, sample: int, answer: str, truth: object, policy: str = "strict"
) -> Finish:
    """A finisher: the call's returned value against ``truth``, compared here."""

    def finish(result: ExecResult) -> Score:
        if result.status is not Status.OK:
            return verdict(item, sample, answer, _STATUS_REASONS[result.status], result.describe())
        try:
            value = result.parsed_value()
        except ValueError:
            return verdict(item, sample, answer, Reason.NON_LITERAL_VALUE, result.value or "")
        same = values.equal(truth, value, policy)
        return verdict(item, sample, answer, Reason.CORRECT if same else Reason.WRONG,
                       result.value or "")  # fmt: skip

    return finish


def _program_completed(item: Item, sample: int, answer: str) -> Finish:
    def finish(result: ExecResult) -> Score:
        if result.ok:
            reached = result.value == "True"
            return verdict(item, sample, answer,
                           Reason.CORRECT if reached else Reason.WRONG, result.value or "")  # fmt: skip
        if result.exception_type == "AssertionError":
            return verdict(item, sample, answer, Reason.ASSERTION_FAILED, result.describe())
        return verdict(item, sample, answer, _STATUS_REASONS[result.status], result.describe())

    return finish


def _parse_module(text: str) -> ast.Module | str:
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg}"
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------------------
# official and strict grading
# ---------------------------------------------------------------------------------------


def official_assertion(item: Item, sample: int, answer: str, *, call_entry: bool) -> Score | Job:
    """Judge ``{item.program}\\nassert {item.truth} == {answer}`` as upstream would.

    ``call_entry``: input prediction, where a call of the entry point with literal arguments
    runs in the item's shared batch.
    """
    text = f"assert {item.truth} == {answer}"
    tree = _parse_module(text)
    if isinstance(tree, str):
        return verdict(item, sample, answer, Reason.SYNTAX_ERROR, tree)
    expression = _single_equality(tree, item)
    if expression is None:
        program = f"{item.program}\n{text}\n\ndef {HOOK}():\n    return True\n"
        return Job(
            sample, Program(program, HOOK), Call(HOOK), _program_completed(item, sample, answer)
        )
    segment = ast.get_source_segment(text, expression) or ""
    truth = item.truth_value()
    if is_python_literal(expression):
        try:
            value = values.parse(segment)
        except values.ValueParseError:
            pass  # e.g. an unhashable set element: let Python raise it in the sandbox
        else:
            same = values.equal(truth, value, "strict")
            return verdict(item, sample, answer, Reason.CORRECT if same else Reason.WRONG)
    finish = compare_result(item, sample, answer, truth)
    if call_entry and _is_literal_call(expression, item.entry):
        try:
            call = parse_call(segment)
        except CallSyntaxError:
            pass
        else:
            return Job(sample, Program(item.program, item.entry), call, finish, shared=True)
    return Job(sample, hook_program(item.program, segment), Call(HOOK), finish)


def _single_equality(tree: ast.Module, item: Item) -> ast.expr | None:
    """``E`` when the module is exactly ``assert <truth> == E``; else None."""
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    statement = tree.body[0]
    test = statement.test
    if statement.msg is not None or not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    if not isinstance(test.ops[0], ast.Eq):
        return None
    try:
        gold = ast.parse(item.truth, mode="eval").body
        item.truth_value()
    except (SyntaxError, ValueError):
        return None
    return test.comparators[0] if ast.dump(test.left) == ast.dump(gold) else None


def official_expression(item: Item, sample: int, answer: str, expression: str) -> Score | Job:
    """Judge ``eval(expression) == truth`` (LiveCodeBench test output), without eval here."""
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
    finish = compare_result(item, sample, answer, truth)
    return Job(sample, hook_program("", source), Call(HOOK), finish)


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


def truth_jobs(items: Iterable[Item]) -> list[Plan]:
    """Plans that re-derive each item's gold output by running its call in the sandbox."""
    plans = []
    for item in items:
        plan = Plan(item, [None])
        plan.add(0, official_assertion(item, 0, item.call, call_entry=True))
        plans.append(plan)
    return plans
