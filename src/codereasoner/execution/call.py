"""Programs and calls: what the execution engine runs.

A call's arguments are literal values parsed in the trusted parent; a call string such as
``f(1, 'a')`` is taken apart with :mod:`ast` and never evaluated, so an answer that smuggles code
into a call is rejected before anything runs.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from codereasoner import values

# The sandbox starts Python with -S (no site): a program that imports installed packages
# (numpy, pandas, ...) puts the interpreter's site-packages on sys.path with this first.
SITE_PACKAGES_PREAMBLE = (
    "import site as __site_, sys as __sys_\n"
    "__sys_.path.extend(p for p in __site_.getsitepackages() if p not in __sys_.path)\n"
    "del __site_, __sys_\n"
)

_ENTRY_PATTERN = re.compile(r"[A-Za-z_]\w*(\(\))?(\.[A-Za-z_]\w*)*")


class CallSyntaxError(ValueError):
    """A call string is not ``entry(literal, ..., name=literal)``."""


@dataclass(frozen=True)
class Program:
    """Python source defining an entry point (a function, or ``Solution().method``).

    ``preamble`` runs before the source and ``epilogue`` after it, in the same namespace, but
    neither is traced nor counted in line numbers: use them for context a benchmark supplies
    (``from typing import *``) and for drivers (a test method, a call built from an expression).
    """

    source: str
    entry: str = "f"
    preamble: str = ""
    epilogue: str = ""

    def __post_init__(self) -> None:
        check_entry(self.entry)

    def call(self, *args: Any, **kwargs: Any) -> Call:
        """A call of this program's entry point with literal arguments."""
        return Call(self.entry, args, kwargs)


@dataclass(frozen=True)
class Call:
    """An entry point applied to literal arguments."""

    entry: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_entry(self.entry)

    def render(self) -> str:
        """The call as Python text, e.g. ``f(1, 'a', key=[2])``."""
        parts = [values.render(arg) for arg in self.args]
        parts += [f"{name}={values.render(value)}" for name, value in self.kwargs.items()]
        return f"{self.entry}({', '.join(parts)})"

    def wire(self) -> dict[str, str]:
        """The call as sent to the sandbox: canonical literal text only."""
        return {
            "entry": self.entry,
            "args": values.render(tuple(self.args)),
            "kwargs": values.render(dict(self.kwargs)),
        }


def check_entry(entry: str) -> None:
    if not _ENTRY_PATTERN.fullmatch(entry):
        raise CallSyntaxError(
            f"entry point {entry!r}: expected a name such as 'f' or 'Solution().method'"
        )


def _entry_text(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_entry_text(node.value)}.{node.attr}"
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        inner = _entry_text(node.func)
        if "." not in inner and "(" not in inner:
            return f"{inner}()"
    raise CallSyntaxError(
        "the called object must be a name, a dotted name or 'Class().method', "
        f"not {ast.unparse(node)!r}"
    )


class _Source:
    """Slices of the call's text by a node's position (ast's columns count UTF-8 bytes), in
    constant time per node: ast.get_source_segment splits the whole text at every call."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8", "surrogatepass")
        self.line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))

    def segment(self, node: ast.expr) -> str:
        if node.end_lineno is None or node.end_col_offset is None:
            raise CallSyntaxError("an argument has no position in the call's text")
        start = self.line_starts[node.lineno - 1] + node.col_offset
        end = self.line_starts[node.end_lineno - 1] + node.end_col_offset
        return self.data[start:end].decode("utf-8", "surrogatepass")


def _literal(source: _Source, node: ast.expr, what: str) -> Any:
    # the argument's own text, not ast.unparse's: unparsing writes every int in decimal, which
    # fails beyond Python's digit limit for a literal the answer wrote in hexadecimal
    text = source.segment(node)
    try:
        return values.parse(text)
    except values.ValueParseError as exc:
        raise CallSyntaxError(f"{what} is not a literal value: {exc}") from None


def parse_call(text: str, *, max_chars: int = 1_000_000) -> Call:
    """Parse ``f(1, 'a', k=None)`` into a :class:`Call`; arguments must be literals."""
    if len(text) > max_chars:
        raise CallSyntaxError(f"call text is longer than {max_chars} characters")
    stripped = text.strip()
    try:
        tree = ast.parse(stripped, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise CallSyntaxError(f"not a Python call expression: {reason}") from None
    node = tree.body
    if not isinstance(node, ast.Call):
        raise CallSyntaxError(f"expected a call such as f(1, 'a'), got {text.strip()[:60]!r}")
    entry = _entry_text(node.func)
    source = _Source(stripped)
    args: list[Any] = []
    for position, arg in enumerate(node.args, start=1):
        if isinstance(arg, ast.Starred):
            unpacked = _literal(source, arg.value, f"starred argument {position}")
            if not isinstance(unpacked, list | tuple):
                raise CallSyntaxError(f"starred argument {position} must be a list or tuple")
            args.extend(unpacked)
        else:
            args.append(_literal(source, arg, f"argument {position}"))
    kwargs: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            unpacked = _literal(source, keyword.value, "** argument")
            if not isinstance(unpacked, dict) or not all(isinstance(k, str) for k in unpacked):
                raise CallSyntaxError("** argument must be a dict with string keys")
            kwargs.update(unpacked)
        else:
            kwargs[keyword.arg] = _literal(
                source, keyword.value, f"keyword argument {keyword.arg!r}"
            )
    call = Call(entry, tuple(args), kwargs)
    try:  # what parses must also go to the sandbox (an int past the decimal digit limit cannot)
        call.wire()
    except ValueError as exc:
        raise CallSyntaxError(f"the call's arguments cannot be rendered: {exc}") from None
    return call
