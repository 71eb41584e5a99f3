"""Output (REval OP): complete the test code by replacing ``??``; the answer is executed.

Official grading (benchmarks.md 4.5): ``ERROR`` becomes ``assert False``; a shorter answer gets
the question's first lines prepended; the penalty patterns fail it; otherwise it runs in the
sandbox (HumanEval: ``exec`` in the program's namespace; ClassEval: as a test method, every
``assert`` rewritten to ``self.assert``, after ``setUp``) and passes when nothing is raised.

"Nothing is raised" is a verdict a program could forge (it can write a passing result line to
its own result pipe), so the answer's code never runs: an answer must be the question's code
(compared as syntax trees: layout and comments aside) with every ``??`` filled by a Python
literal, and what runs is the *question's* code with the parsed values bound in place of the
holes. Only benchmark code and literal data run, and the verdict is upstream's. Any other answer
(an expression in a hole, a changed test) is graded wrong as ``unsupported_assertion``: upstream
would execute it, and its own code would decide the verdict (docs/evaluation.md, deviations).
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from codereasoner import values
from codereasoner.execution import Call, ExecResult, Program, Status
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.tasks import reval_extraction as rx
from codereasoner.tasks.base import Grading, Item, Reason, Score
from codereasoner.tasks.common import Grade, RevalKind
from codereasoner.tasks.grading import is_python_literal
from codereasoner.tasks.plans import MAX_ANSWER_CHARS, Job, verdict

__all__ = [
    "ANSWER_ENTRY",
    "PENALTIES",
    "SITE_PREAMBLE",
    "RevalOutput",
    "answer_program",
    "completed_answer",
    "filled_holes",
    "penalized",
    "without_main_guard",
]

ANSWER_ENTRY = "__reval_answer__"
HOLES = "__reval_holes__"  # the literal values filling a question's ?? holes
UNVERIFIABLE = ("the answer is not the question with its ?? filled by literals: its own code "
                "would decide the verdict")  # fmt: skip
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


def filled_holes(
    question: str, answer: str, class_test: bool = False, imported: frozenset[str] = frozenset()
) -> tuple[str, tuple[Any, ...]] | None:
    """``(the question with hole i as HOLES[i], the parsed literals)`` when ``answer`` is the
    question's code with every ``??`` filled by a Python literal (compared as syntax trees, so
    layout and comments do not matter); None otherwise.

    ``class_test``: upstream rewrites every ``assert`` of a ClassEval answer to ``self.assert``,
    inside literals too; the holes' text is rewritten the same way before it is parsed.
    """
    holes_in_question = question.count("??")
    if not holes_in_question or len(answer) > MAX_ANSWER_CHARS:
        return None
    names = iter(range(holes_in_question))
    marked = re.sub(r"\?\?", lambda _: f"{HOLES}_{next(names)}", question)
    try:
        asked = ast.parse(_dedented(marked))
        given = ast.parse(_dedented(answer))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: dict[int, Any] = {}
    same = _same_but_holes(asked, given, found, (class_test, imported))
    if not same or len(found) != holes_in_question:
        return None

    def fill(match: re.Match[str]) -> str:
        index = int(match.group(1))
        hole = found[index]
        return f"({hole.text})" if isinstance(hole, Expression) else f"{HOLES}[{index}]"

    template = re.sub(rf"{HOLES}_(\d+)", fill, marked)
    literals = tuple(None if isinstance(found[i], Expression) else found[i]
                     for i in range(holes_in_question))  # fmt: skip
    return template, literals


@dataclass(frozen=True)
class Expression:
    """A hole filled with a reference expression (see :func:`reference_expression`)."""

    text: str


# What a hole's expression may use besides literals: the program's and the question's own
# names, these builtins and these modules' attributes. Nothing that reaches files, descriptors,
# processes, frames or the interpreter: the expression runs beside the verdict's result pipe.
SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "bin", "bool", "bytes", "chr", "complex", "dict", "divmod", "enumerate",
    "filter", "float", "frozenset", "hex", "int", "isinstance", "len", "list", "map", "max",
    "min", "oct", "ord", "pow", "range", "repr", "reversed", "round", "set", "sorted", "str",
    "sum", "tuple", "zip",
})  # fmt: skip
SAFE_MODULES = frozenset({"math", "cmath", "datetime", "decimal", "fractions", "statistics",
                          "string", "collections", "itertools", "functools", "operator", "heapq",
                          "bisect", "re", "json", "copy", "numbers", "np", "numpy"})  # fmt: skip
_BUILTIN_NAMES = frozenset(dir(builtins))
_REFERENCE_NODES = (
    ast.Name, ast.Attribute, ast.Call, ast.keyword, ast.Subscript, ast.Slice, ast.Constant,
    ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
    ast.IfExp, ast.Starred, ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)  # fmt: skip


def reference_expression(
    node: ast.expr, class_test: bool = False, imported: frozenset[str] = frozenset()
) -> bool:
    """True when ``node`` only computes from the program's objects: names, calls, attribute and
    item access, operators and literals; no underscore names or dunder attributes, no builtin outside
    SAFE_BUILTINS, no module outside SAFE_MODULES (nor an attribute of that name), no name the
    program ``imported`` from another module, no lambdas, comprehensions or f-strings."""
    for part in ast.walk(node):
        if not isinstance(part, _REFERENCE_NODES):
            return False
        if isinstance(part, ast.Attribute):
            attr = part.attr  # a private method is fine; a dunder or a module alias is not
            bare = attr.lstrip("_")
            if attr.startswith("__") or (bare in _MODULE_NAMES and bare not in SAFE_MODULES):
                return False
        if isinstance(part, ast.Name):
            name = part.id
            if name.startswith("_") or (name in _BUILTIN_NAMES and name not in SAFE_BUILTINS):
                return False
            if name in imported or (name in _MODULE_NAMES and name not in SAFE_MODULES):
                return False
            if class_test and "assert" in name:
                return False  # upstream rewrites it to self.assert...
    return True


@cache
def unsafe_imports(*sources: str) -> frozenset[str]:
    """The names ``sources`` bind by importing anything outside SAFE_MODULES."""
    names: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] not in SAFE_MODULES:
                        names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in (
                SAFE_MODULES
            ):
                names.update(alias.asname or alias.name for alias in node.names)
    return frozenset(names)


# Names a program may have bound to a module that reaches the system: refused in expressions
# even when the program imported them under that name.
_MODULE_NAMES = frozenset({
    "os", "sys", "ctypes", "io", "subprocess", "shutil", "pathlib", "builtins", "importlib",
    "socket", "signal", "fcntl", "mmap", "posix", "tempfile", "sqlite3", "pickle", "shelve",
    "marshal", "gc", "inspect", "threading", "multiprocessing", "asyncio", "logging", "glob",
    "platform", "resource", "select", "selectors", "pty", "tty", "termios", "codecs", "zipfile",
    "tarfile", "gzip", "bz2", "lzma", "csv", "configparser", "urllib", "http", "email", "ssl",
    "time", "types", "weakref", "atexit", "traceback", "warnings", "contextlib", "unittest",
    "site", "pydoc", "code", "runpy", "imp", "zipimport", "webbrowser", "uuid", "secrets",
    "hashlib", "hmac", "base64", "binascii", "struct", "array", "queue", "sched", "dbm",
    "pandas", "pd", "bs4", "lxml", "gensim", "nltk", "PIL", "requests", "docx", "openpyxl",
})  # fmt: skip


def _syntax_error(answer: str) -> str:
    try:
        ast.parse(_dedented(answer))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def _dedented(text: str) -> str:
    return textwrap.dedent(text).strip()


def _same_but_holes(
    asked: Any, given: Any, found: dict[int, Any], rules: tuple[bool, frozenset[str]]
) -> bool:
    """True when two syntax trees are equal except where ``asked`` has a hole name, where
    ``given`` has a Python literal or a reference expression (recorded in ``found``)."""
    class_test, imported = rules
    if isinstance(asked, ast.Name) and asked.id.startswith(f"{HOLES}_"):
        if not isinstance(given, ast.expr):
            return False
        index = int(asked.id.rsplit("_", 1)[1])
        if index in found:
            return False
        if is_python_literal(given):
            text = ast.unparse(given)
            if class_test:
                text = text.replace("assert", "self.assert")
            try:
                found[index] = values.parse(text)
            except values.ValueParseError:
                return False
            return True
        if not reference_expression(given, class_test, imported):
            return False
        found[index] = Expression(ast.unparse(given))
        return True
    if type(asked) is not type(given):
        return False
    if isinstance(asked, list):
        return len(asked) == len(given) and all(
            _same_but_holes(a, g, found, rules) for a, g in zip(asked, given, strict=True)
        )
    if not isinstance(asked, ast.AST):
        return asked == given
    return all(
        _same_but_holes(getattr(asked, name), getattr(given, name, None), found, rules)
        for name in asked._fields
    )


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
            f"def {ANSWER_ENTRY}(answer, test_class, holes=()):\n"
            f"    space = dict(globals(), {HOLES}=holes)\n"
            "    exec(compile(answer, '<answer>', 'exec'), space)\n"
        )
    else:
        epilogue = f"{without_main_guard(row['test'])}\n\n{_ANSWER_METHOD}"
    return Program(row["code"], entry=ANSWER_ENTRY, preamble=SITE_PREAMBLE, epilogue=epilogue)


_ANSWER_METHOD = f'''
def {ANSWER_ENTRY}(answer, test_class, holes=()):
    globals()["{HOLES}"] = holes
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
            imported = unsafe_imports(item.program, str(item.metadata.get("test") or ""))
            filled = filled_holes(question, answer, bool(test_class), imported)
            if filled is None and _syntax_error(answer):
                return verdict(item, sample, text, Reason.SYNTAX_ERROR, _syntax_error(answer))
            if filled is None:
                return verdict(item, sample, text, Reason.UNSUPPORTED_ASSERTION, UNVERIFIABLE)
            template, holes = filled
            call = Call(ANSWER_ENTRY, (template, test_class, holes))
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
