"""REval programs as sandbox jobs: the case drivers, the answer runner and the state probe.

Every REval (program, input) runs like upstream's ``Sandbox.run``, with only the benchmark code
(``code``, compiled as ``<program>``) traced:

* HumanEval-style: the input (an argument-tuple expression such as ``([1, 2], 3,)``) is evaluated
  by the untraced epilogue; the entry ``__reval_case__`` calls the function with it.
* ClassEval-style: the epilogue defines the test classes (``test``), creates the test class that
  belongs to the input and calls its ``setUp`` there, untraced, as upstream calls ``setUp``
  before it starts tracing; ``__reval_case__`` then runs the class's first ``test*`` method (the
  method upstream traces; its text is ``inputs[i]``, give or take whitespace).

The preamble only puts the interpreter's site-packages on ``sys.path`` (the sandbox starts Python
with ``-S``), so that ClassEval programs importing numpy, gensim or bs4 find the system packages.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codereasoner.execution import Program
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.families.reval import vars as reval_vars
from codereasoner.families.reval.output import without_main_guard

__all__ = [
    "CASE_ENTRY",
    "PROBE_ENTRY",
    "TestClass",
    "case_program",
    "pair_program",
    "probe_program",
    "setup_text",
    "test_classes",
]

CASE_ENTRY = "__reval_case__"
PROBE_ENTRY = "__reval_probe__"
_UNITTEST_SETUP_DOC = "Hook method for setting up the test fixture"


@dataclass(frozen=True)
class TestClass:
    """A ClassEval test class: its first ``test*`` method and the ``setUp`` it inherits."""

    __test__ = False  # not a pytest class

    name: str
    method: str
    setup_source: str | None  # inspect.getsource of its setUp; None for unittest's own


@functools.lru_cache(maxsize=256)
def test_classes(test_source: str, entry: str) -> tuple[TestClass, ...]:
    """The test classes upstream keeps (``{entry}Test*`` subclasses of TestCase), in order."""
    tree = ast.parse(test_source)
    lines = test_source.splitlines(keepends=True)
    defined = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    found = []
    for node in defined.values():
        if not re.match(f"{entry}Test.*", node.name) or not _is_test_case(node, defined):
            continue
        methods = [
            item.name
            for item in node.body
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            and item.name.startswith("test")
        ]
        if not methods:
            raise ValueError(f"test class {node.name} has no test method")
        found.append(TestClass(node.name, methods[0], _setup_source(node, defined, lines)))
    return tuple(found)


def _bases(node: ast.ClassDef) -> list[str]:
    return [ast.unparse(base) for base in node.bases]


def _is_test_case(node: ast.ClassDef, defined: Mapping[str, ast.ClassDef]) -> bool:
    for base in _bases(node):
        if base in ("unittest.TestCase", "TestCase"):
            return True
        if base in defined and base != node.name and _is_test_case(defined[base], defined):
            return True
    return False


def _setup_source(
    node: ast.ClassDef, defined: Mapping[str, ast.ClassDef], lines: list[str]
) -> str | None:
    """``inspect.getsource(cls.setUp)`` found along the class's bases in the test file."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "setUp":
            first = min([item.lineno, *(d.lineno for d in item.decorator_list)])
            return "".join(inspect.getblock(lines[first - 1 :]))
    for base in _bases(node):
        if base in defined and base != node.name:
            return _setup_source(defined[base], defined, lines)
    return None


def setup_text(test_class: TestClass, *, comment_first: bool) -> str:
    """Upstream's ``setup`` prompt text (docs/benchmark-rules.md); "" without an own ``setUp``.

    Coverage and state leave the first ``setUp`` body line uncommented (``comment_first=False``);
    path and output comment it out too.
    """
    source = test_class.setup_source
    if source is None or _UNITTEST_SETUP_DOC in source:
        return ""
    head = "\n# setup code executed previously\n" + ("# " if comment_first else "")
    return head + "\n# ".join(source.split("\n")[1:])


def _class_epilogue(row: Mapping[str, Any], test_class: TestClass) -> str:
    return (
        f"{without_main_guard(row['test'])}\n\n"
        f"__reval_test__ = {test_class.name}()\n"
        "__reval_test__.setUp()\n\n"
        f"def {CASE_ENTRY}():\n"
        f"    return __reval_test__.{test_class.method}()\n"
    )


def _function_epilogue(row: Mapping[str, Any], case: str) -> str:
    return (
        f"__reval_args__ = (\n{case}\n)\n\n"
        f"def {CASE_ENTRY}():\n"
        f"    return {row['entry_point']}(*__reval_args__)\n"
    )


def pair_program(row: Mapping[str, Any], input_idx: int) -> Program:
    """The program running input ``input_idx`` of ``row`` (entry ``__reval_case__``)."""
    if row["test"] is None:
        epilogue = _function_epilogue(row, row["inputs"][input_idx])
    else:
        epilogue = _class_epilogue(row, test_classes(row["test"], row["entry_point"])[input_idx])
    return Program(
        row["code"], entry=CASE_ENTRY, preamble=SITE_PACKAGES_PREAMBLE, epilogue=epilogue
    )


def case_program(row: Mapping[str, Any], case: str) -> Program:
    """The program running the input whose text is ``case`` (one of ``row["inputs"]``)."""
    return pair_program(row, list(row["inputs"]).index(case))


def probe_program(row: Mapping[str, Any], input_idx: int) -> Program:
    """``pair_program`` plus the state probe (entry ``__reval_probe__``, see reval_truth)."""
    base = pair_program(row, input_idx)
    return Program(
        base.source,
        entry=PROBE_ENTRY,
        preamble=base.preamble,
        epilogue=base.epilogue + "\n" + _PROBE,
    )


_NODE_VALUES = textwrap.indent(inspect.getsource(reval_vars.node_values), "    ")

# The state probe: records, at the line events the parent asks for (counted over the traced
# program's frames, as the tracer counts steps), deep copies of the named locals, keeping only
# what upstream keeps; then evaluates each question's variable expression over those copies with
# upstream's VarInterpreter rules and returns [type name, rendered text or None] per value.
_PROBE = f"""
def {PROBE_ENTRY}(plan):
    import ast, collections, contextlib, copy, datetime, itertools, sys
    from collections.abc import Generator, Iterator, Mapping, Sequence
    import values

    wanted, snaps, lines, states = plan["snap"], {{}}, {{}}, []
    record, count = plan["record"], [0]
    skipped = ("module", "function", "builtin_function_or_method")

    def keep(value):
        if value.__class__.__name__ in skipped:
            return False
        return not isinstance(value, (Iterator, Generator))

    def local(frame, event, arg):
        if event == "line":
            index = count[0]
            count[0] = index + 1
            names = wanted.get(index)
            if names is not None:
                here = frame.f_locals
                lines[index] = frame.f_lineno
                snaps[index] = {{n: copy.deepcopy(here[n]) for n in names
                                if n in here and keep(here[n])}}
        if record and event in ("line", "return", "exception"):
            if not states or states[-1] != frame.f_lineno:
                states.append(frame.f_lineno)
        return local

    def hook(frame, event, arg):
        return local if frame.f_code.co_filename == "<program>" else None

    sys.settrace(hook)
    try:
        {CASE_ENTRY}()
    finally:
        sys.settrace(None)

{_NODE_VALUES}
    def plain(value, top=True):
        kind = type(value)
        if kind.__module__ == "numpy" and hasattr(value, "tolist"):
            return value.tolist()
        if top and kind in (collections.deque, bytearray):
            return (list if kind is collections.deque else bytes)(value)
        if kind in (list, tuple, set, frozenset):
            return kind(plain(item, False) for item in value)
        if kind is dict:
            return {{plain(k, False): plain(v, False) for k, v in value.items()}}
        return value

    def show(value):
        kind = type(value)
        name = kind.__qualname__
        if kind.__module__ != "builtins":
            name = kind.__module__ + "." + name
        try:
            text = values.render(plain(value), max_chars=plan["max_chars"])
        except Exception:
            text = None
        if isinstance(value, type):
            text = value.__qualname__
            if value.__module__ != "builtins":
                text = value.__module__ + "." + text
        elif text is None:
            dated = (datetime.datetime, datetime.date, datetime.time)
            text = value.isoformat() if isinstance(value, dated) else None
        return [name, text]

    answers = {{}}
    for key, expression, indices in plan["questions"]:
        after = [snaps.get(index, {{}}) for index in indices]
        try:
            tree = ast.parse(expression)
            found = node_values(tree.body[0].value, after)
        except Exception:
            found = None
        answers[key] = None if found is None else [show(value) for value in found]
    return {{"values": answers, "lines": lines, "states": states}}
"""
