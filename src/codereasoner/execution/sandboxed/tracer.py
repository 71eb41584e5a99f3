"""Exact line tracer: the ground truth for every intermediate state of one call.

Runs inside the sandboxed child, where it is imported as a flat module: standard library and the
flat ``values`` module only, no module-level side effects.

Only code objects whose ``co_filename`` equals ``filename`` are traced; pass the program's
``source`` so that loops and conditions can be read from its AST. ``Tracer.call`` returns the
trace in its wire form, a JSON-serialisable dict::

    {"steps": [...], "return": str | None, "return_literal": bool,
     "exception": {"type": str, "message": str} | None,
     "partial": bool, "partial_reason": str | None, "events": int}

(``events``: trace callbacks handled for traced frames, line events included) with one step per
``line`` event of a traced frame::

    {"line": 1-based line, "frame": co_qualname, "fid": frame instance (0 = the entry; numbered
     in order of first appearance), "depth": traced call depth (0 = the entry),
     "loops": [[loop_line, iteration], ...] (tuples until serialised), outermost first,
     and only when they apply: "changes", "args", "cond", "ret", "yield", "exc"}

Policies:

* After-line: a line event fires *before* its line runs. ``changes`` ({name: text}, absent when
  empty) are the locals whose rendered value differs at the *next* event of the same frame (its
  next line, return, yield or exception): "line N ran; afterwards these had changed". Effects of
  callees that ran during the line are included. A text of ``None`` means the name was deleted.
  After a generator resumes, the changes up to its next line event are merged into the step of
  the line that yielded (that line finishes only then).
* ``args``: the first step of every new frame carries the locals at entry (arguments and
  closure variables); its ``changes`` never repeat them.
* ``ret`` / ``yield``: the rendered value on the step that returned or yielded; ``exc``: the type
  name of an exception raised on (or propagating through) that step.
* ``cond``, on the step where an ``if``/``elif``/``while`` test starts: True if the next line of
  that frame is in the statement's body, False if it is elsewhere or the frame returns; absent if
  the test raised and for one-line ``while`` loops. A one-line ``if test: body`` is decided from
  opcode events (3.11); 3.12+ may deliver none, and then only a body that returns is decided.
* ``loops``: iteration k starts at the k-th arrival at the loop's header (3.11 also reports the
  line of ``while True`` on every pass; if the compiler drops it, the top of the body counts).
  The check that leaves the loop belongs to the last iteration; a loop entered anew restarts at
  1. On 3.11 comprehensions are frames of their own, whose ``for`` clauses count the same way
  (line of each clause); 3.12+ inline them (PEP 709) and do not count their iterations.
* Multi-line statements: Python reports a line event each time execution moves to another line
  of the statement, so one statement can give several steps.
* Values: ``values.render(v, max_chars=max_value_chars)``. A value that is not a plain literal is
  shown as ``<TypeName object>`` (no user ``__repr__`` ever runs); a container with more items
  than could fit, or whose text is too long, as ``<list of 5000 items, too large>``; a long str or
  bytes as ``<str of 5000 chars, too large>``; any other oversized value as ``<int, too large>``.
  Locals named ``.0`` and the implicit ``__class__`` cell are left out.
* Exactness: any change of a rendered text is reported. Rebinding is found by identity, using
  the names the line's bytecode can store to; containers are re-checked with a ``marshal``
  fingerprint (C code that never calls user methods) after any line whose bytecode can mutate a
  container, and after any Python-level call. Not seen in time: mutations by C callbacks hidden
  in an iterator that ``for``, unpacking or ``in`` consumes (``for _ in map(xs.append, ys)``),
  and by finalizers that run inside the tracer; they appear at the frame's next full check.
* Exceptions: if the traced function raises, ``call`` records it and re-raises it; the trace is
  then in ``Tracer.last``. Messages are only rendered for builtin ``__str__`` and literal args.
* Caps: past ``max_steps`` steps or ``max_trace_chars`` (an estimate of the JSON size, checked
  every 64 steps) the trace is marked partial and ``on_overflow(trace)`` is called; the sandbox
  passes a callback that writes the trace and calls ``os._exit`` (a program can catch exceptions
  raised by a tracer). If it returns, or there is none, tracing stops and the call finishes
  untraced. A program that removes the tracer (``sys.settrace(None)``, ``frame.f_trace = None``)
  or makes the tracer fail yields ``tracer_removed`` / ``tracer_error: ...``.
* Side effects on the program: reading ``f_locals`` (3.11) makes ``locals()`` list names in the
  order they were first bound; the collector's first threshold is raised tenfold during the call
  so that the trace's own allocations do not make it run more often than in a plain run.
"""

from __future__ import annotations

import ast
import dis
import gc
import importlib.machinery
import importlib.util
import marshal
import os
import sys
import types
from collections.abc import Callable, Collection
from math import isfinite

import values

__all__ = ["TraceOverflow", "Tracer"]

_STORE = 1  # the code may rebind or delete a local
_MUTATE = 2  # the code may mutate a container without starting a Python frame
_INPLACE = 4  # `name += ...`: may mutate the object bound to that name
_FULL = 8  # diff everything (after an exception, a return, a resume)
_HARD = _MUTATE | _FULL
_FULL_POINT = (_FULL, (), ())
_CO_OPTIMIZED = 1
_PYTHON_CALLABLES = (types.FunctionType, types.MethodType)
_NO_POINT = (0, (), ())
_MISSING = object()
_STEP_CHARS = 90  # estimated JSON size of a step without its changes
_SIZE_CHECK_EVERY = 64  # steps between two checks of the trace size
_SMALL = 10**15  # ints below this render as repr() (16 chars at most; max_value_chars >= 16)
_NEG_SMALL = -_SMALL

_FOR, _WHILE, _FOREVER = 0, 1, 2
_INPLACE_FIRST = 13  # BINARY_OP arguments from here on are the in-place (+=, |=, ...) forms


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Opcodes that cannot rebind a local nor mutate a container without starting a Python frame
# (which the tracer sees). Everything not listed is treated as possibly mutating.
_CLEAN_OPS = _names(
    """NOP RESUME CACHE EXTENDED_ARG POP_TOP PUSH_NULL COPY SWAP END_FOR END_SEND LOAD_FAST
    LOAD_FAST_CHECK LOAD_FAST_LOAD_FAST LOAD_CONST RETURN_CONST LOAD_SMALL_INT
    LOAD_DEREF LOAD_CLOSURE LOAD_CLASSDEREF LOAD_FROM_DICT_OR_DEREF LOAD_FROM_DICT_OR_GLOBALS
    MAKE_CELL COPY_FREE_VARS LOAD_GLOBAL LOAD_NAME LOAD_ATTR LOAD_METHOD LOAD_SUPER_ATTR
    LOAD_ASSERTION_ERROR LOAD_BUILD_CLASS LOAD_LOCALS UNARY_POSITIVE UNARY_NEGATIVE UNARY_NOT
    UNARY_INVERT TO_BOOL COMPARE_OP IS_OP CONTAINS_OP BINARY_SUBSCR BINARY_SLICE BUILD_LIST
    BUILD_TUPLE BUILD_MAP BUILD_SET BUILD_CONST_KEY_MAP BUILD_STRING BUILD_SLICE LIST_TO_TUPLE
    LIST_APPEND SET_ADD MAP_ADD LIST_EXTEND SET_UPDATE DICT_UPDATE DICT_MERGE FORMAT_VALUE
    FORMAT_SIMPLE FORMAT_WITH_SPEC CONVERT_VALUE GET_ITER FOR_ITER UNPACK_SEQUENCE UNPACK_EX
    GET_LEN MATCH_CLASS MATCH_MAPPING MATCH_SEQUENCE MATCH_KEYS JUMP_FORWARD JUMP_BACKWARD
    JUMP_BACKWARD_NO_INTERRUPT JUMP_NO_INTERRUPT JUMP JUMP_IF_FALSE_OR_POP JUMP_IF_TRUE_OR_POP
    RETURN_VALUE YIELD_VALUE RETURN_GENERATOR GET_YIELD_FROM_ITER SEND KW_NAMES PRECALL
    RAISE_VARARGS RERAISE PUSH_EXC_INFO POP_EXCEPT CHECK_EXC_MATCH CHECK_EG_MATCH
    PREP_RERAISE_STAR CLEANUP_THROW MAKE_FUNCTION SET_FUNCTION_ATTRIBUTE SETUP_ANNOTATIONS
    ASYNC_GEN_WRAP NOT_TAKEN POP_ITER"""
)
_STORE_OPS = _names(
    """STORE_FAST STORE_FAST_LOAD_FAST STORE_FAST_STORE_FAST STORE_FAST_MAYBE_NULL DELETE_FAST
    LOAD_FAST_AND_CLEAR
    STORE_DEREF DELETE_DEREF STORE_NAME DELETE_NAME STORE_GLOBAL DELETE_GLOBAL"""
)
_NAME_STORES = frozenset({"STORE_FAST", "STORE_DEREF", "STORE_NAME", "STORE_GLOBAL"})
_COMPREHENSIONS = {
    "<listcomp>": ast.ListComp,
    "<setcomp>": ast.SetComp,
    "<dictcomp>": ast.DictComp,
    "<genexpr>": ast.GeneratorExp,
}
_ATOMS = (int, float, str, bytes, bool, complex, type(None))
_SIZED = (list, tuple, dict, set, frozenset)
_MUTABLE = (list, dict, set)
_EMPTY: tuple = ()
_NONE_TYPE = type(None)
_NO_OFFSETS: frozenset[int] = frozenset()
_METHOD = types.MethodType
_dumps = marshal.dumps

# Entry layout for one tracked local: [value, text, kind, extra]; the C fast path may append a
# 5th element (a snapshot of the items), which any change of `extra` here must drop.
_ID, _FOREIGN, _FP = 0, 1, 2  # identity only / identity + type / marshal fingerprint


class TraceOverflow(Exception):
    """Raised inside the tracer to abandon tracing once a cap is reached."""


_CORE_ABI = 3  # the _tracecore.c build this module is written against (its CORE_ABI)


def _load_accelerator() -> types.ModuleType | None:
    """The C fast path (``_tracecore``, built from _tracecore.c next to this file), or None.

    Optional: without it (not built, another interpreter, an ABI mismatch) every event runs
    through ``_Frame.local``, with identical traces.
    """
    directory = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(directory, "_tracecore" + suffix)
        if not os.path.exists(path):
            continue
        try:
            spec = importlib.util.spec_from_file_location("_tracecore", path)
            if spec is None or spec.loader is None:
                return None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except (ImportError, OSError):
            return None
        return module if getattr(module, "ABI", None) == _CORE_ABI else None
    return None


ACCELERATOR = _load_accelerator()
ENGINES = ("auto", "c", "python")


# ---------------------------------------------------------------------------------------
# Static analysis: the AST of the source and the bytecode of each traced code object
# ---------------------------------------------------------------------------------------


class _Loop:
    __slots__ = (
        "body_hi", "body_lo", "col", "head_hi", "head_lo", "hi", "inline", "kind", "line", "lo",
    )  # fmt: skip

    def __init__(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        body = node.body
        self.line = node.lineno
        self.col = node.col_offset
        self.lo = node.lineno
        self.body_lo = body[0].lineno
        self.body_hi = self.hi = max(node.lineno, _end(body[-1]))
        if isinstance(node, ast.While):
            constant = isinstance(node.test, ast.Constant) and bool(node.test.value)
            self.kind = _FOREVER if constant else _WHILE
            self.head_lo, self.head_hi = node.test.lineno, _end(node.test)
        else:
            self.kind = _FOR
            self.head_lo = node.lineno
            self.head_hi = max(_end(node.target), _end(node.iter))
        self.head_lo = min(self.head_lo, node.lineno)
        self.inline = self.body_lo <= self.head_hi


class _Test:
    __slots__ = ("body_hi", "body_lo", "body_span", "hi", "inline", "lo")

    def __init__(self, node: ast.If | ast.While) -> None:
        body = node.body
        self.lo, self.hi = node.test.lineno, _end(node.test)
        self.body_lo, self.body_hi = body[0].lineno, _end(body[-1])
        self.inline = self.body_lo <= self.hi
        self.body_span = (
            (body[0].lineno, body[0].col_offset),
            (_end(body[-1]), body[-1].end_col_offset or 0),
        )


def _end(node: ast.AST) -> int:
    end = getattr(node, "end_lineno", None)
    return end if end is not None else node.lineno  # type: ignore[attr-defined]


class _Scope:
    """Loops and tests of one scope (function, class body, lambda, module, comprehension)."""

    __slots__ = ("comp_lines", "loops_at", "special", "tests")

    def __init__(self, node: ast.AST | None) -> None:
        self.loops_at: dict[int, tuple[_Loop, ...]] = {}
        self.special: frozenset[int] = frozenset()
        self.tests: dict[int, _Test] = {}
        self.comp_lines: list[int] = []
        if node is None:
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            self.comp_lines = [gen.target.lineno for gen in node.generators]
            return
        body = getattr(node, "body", None)
        if isinstance(body, list):
            enclosing: dict[int, list[_Loop]] = {}
            special: set[int] = set()
            self._walk(body, enclosing, special)
            shared: dict[tuple[int, ...], tuple[_Loop, ...]] = {}
            for line, loops in enclosing.items():
                # One tuple object per distinct nest, so the per-event check is an `is` test.
                key = tuple(id(loop) for loop in loops)
                self.loops_at[line] = shared.setdefault(key, tuple(loops))
            self.special = frozenset(special)

    def _walk(
        self, body: list[ast.stmt], enclosing: dict[int, list[_Loop]], special: set[int]
    ) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                loop = _Loop(stmt)
                for line in range(loop.lo, loop.hi + 1):
                    enclosing.setdefault(line, []).append(loop)
                special.update(range(loop.head_lo, loop.head_hi + 1))
                if loop.kind == _FOREVER:
                    special.add(loop.body_lo)
                if isinstance(stmt, ast.While) and not (loop.kind == _WHILE and loop.inline):
                    self._add_test(_Test(stmt))
            elif isinstance(stmt, ast.If):
                self._add_test(_Test(stmt))
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    self._walk(inner, enclosing, special)
            for handler in getattr(stmt, "handlers", ()):
                self._walk(handler.body, enclosing, special)
            for case in getattr(stmt, "cases", ()):
                self._walk(case.body, enclosing, special)

    def _add_test(self, test: _Test) -> None:
        for line in range(test.lo, test.hi + 1):
            self.tests.setdefault(line, test)


class _Source:
    """Scope nodes of the traced source, found by (code name, first line)."""

    def __init__(self, source: str | None) -> None:
        self.nodes: dict[tuple[str, int], list[ast.AST]] = {}
        self.scopes: dict[int, _Scope] = {}
        if source is None:
            return
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        self._add(("<module>", 1), tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                self._add((node.name, first), node)
            elif isinstance(node, ast.Lambda):
                self._add(("<lambda>", node.lineno), node)
            else:
                for name, kind in _COMPREHENSIONS.items():
                    if type(node) is kind:
                        self._add((name, node.lineno), node)

    def _add(self, key: tuple[str, int], node: ast.AST) -> None:
        self.nodes.setdefault(key, []).append(node)

    def scope(self, code: types.CodeType) -> _Scope:
        candidates = self.nodes.get((code.co_name, code.co_firstlineno), [])
        node = candidates[0] if candidates else None
        if len(candidates) > 1:
            columns = {p[2] for p in code.co_positions() if p[0] == code.co_firstlineno}
            for candidate in candidates:
                if getattr(candidate, "col_offset", None) in columns:
                    node = candidate
                    break
        key = id(node)
        if key not in self.scopes:
            self.scopes[key] = _Scope(node)
        return self.scopes[key]


class _CodeInfo:
    """Everything the per-event code needs about one traced code object, computed once."""

    __slots__ = (
        "back_jumps", "class_body", "code", "comp", "fiter", "inline_offsets", "loop_lines",
        "loops_at",
        "ops", "paranoid", "qualname", "recs", "returns", "special", "tests", "yields",
    )  # fmt: skip

    def __init__(self, code: types.CodeType, scope: _Scope) -> None:
        self.code = code
        self.qualname: str = getattr(code, "co_qualname", code.co_name)
        # A class body runs with unoptimised locals (its namespace); functions never do.
        self.class_body = not code.co_flags & _CO_OPTIMIZED
        self.paranoid = False  # see Tracer.assume_hidden_mutators
        self.loops_at = scope.loops_at
        self.special = scope.special
        self.tests = scope.tests
        self.inline_offsets: dict[int, frozenset[int]] = {}
        self.ops: list[tuple[int, int | None, int, str | None]] = []  # offset, line, flag, name
        self.recs: dict[int, tuple] = {}
        self.returns: set[int] = set()
        self.yields: set[int] = set()
        # A backward jump -> its target: 3.13 reports the line event of a backward jump within
        # one line (a one-line loop, an inlined comprehension) at the jump itself.
        self.back_jumps: dict[int, int] = {}
        fiters: list[tuple[int, int, int | None]] = []  # offset, line, column
        instructions = list(dis.get_instructions(code))
        for position, ins in enumerate(instructions):
            line = ins.positions.lineno if ins.positions is not None else None
            name = ins.opname
            target = None
            if name in _CLEAN_OPS or name.startswith("POP_JUMP_"):
                flag = 0
            elif name in _STORE_OPS:
                flag = _STORE
                target = ins.argval if type(ins.argval) is str else None
            elif name == "BINARY_OP" and ins.arg is not None and ins.arg < _INPLACE_FIRST:
                flag = 0
            elif (
                name == "BINARY_OP"
                and position + 1 < len(instructions)
                and (instructions[position + 1].opname in _NAME_STORES)
            ):
                # `name += ...` mutates at most the object bound to that name.
                flag = _INPLACE
                target = instructions[position + 1].argval
            else:
                flag = _MUTATE
            self.ops.append((ins.offset, line, flag, target))
            if name in ("RETURN_VALUE", "RETURN_CONST"):
                self.returns.add(ins.offset)
            elif name == "YIELD_VALUE":
                self.yields.add(ins.offset)
                if position + 1 < len(instructions):  # where 3.13 reports a yield
                    self.yields.add(instructions[position + 1].offset)
            elif name == "FOR_ITER":
                column = ins.positions.col_offset if ins.positions is not None else None
                fiters.append((ins.offset, line or 0, column))
            elif name.startswith("JUMP_BACKWARD") and type(ins.argval) is int:
                self.back_jumps[ins.offset] = ins.argval
        self.comp = code.co_name in _COMPREHENSIONS
        # FOR_ITER offset -> loop: the _Loop of a `for` statement, or the index of a
        # comprehension's `for` clause.
        self.fiter: dict[int, object] = {}
        self.loop_lines: list[int] = []
        if self.comp:
            lines = scope.comp_lines
            for index, (offset, line, _) in enumerate(fiters):
                self.fiter[offset] = index
                self.loop_lines.append(lines[index] if index < len(lines) else line)
        else:
            for offset, line, column in fiters:
                for loop in self.loops_at.get(line, ()):
                    # The column tells a `for` statement from a comprehension inlined (3.12+)
                    # on its header line.
                    if loop.kind == _FOR and loop.line == line and column in (loop.col, None):
                        self.fiter[offset] = loop

    def point(self, offset: int, line: int) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
        """What the code run after a line event at ``offset`` may do, until the next event.

        Returns (flags, names it may rebind, names it may update in place with ``+=``).
        Without a backward jump (which fires an event) execution stays on instructions of the
        same line, or without a line, at offsets from ``offset`` on.
        """
        flags = 0
        stores: list[str] = []
        inplace: list[str] = []
        for op_offset, op_line, flag, target in self.ops:
            if flag and (op_line is None or (op_offset >= offset and op_line == line)):
                flags |= flag
                if target is not None:
                    (inplace if flag == _INPLACE else stores).append(target)
                elif flag == _STORE:
                    flags |= _FULL
        if inplace:
            flags |= _STORE
            stores.extend(inplace)
        if self.paranoid:
            flags |= _HARD
        return (flags, tuple(dict.fromkeys(stores)), tuple(dict.fromkeys(inplace)))

    def record(self, offset: int, line: int) -> tuple:
        """Everything static about a line event at ``offset``: (point, enclosing loops,
        whether loop counting must look closer, the if/while test starting here, the `for`
        loop it may start the next iteration of and its index in the enclosing loops, line)."""
        enc = self.loops_at.get(line, _EMPTY)
        # A `for` loop whose next iteration this event may start (the fast path of
        # count_loops) and its index in the enclosing loops.
        target = None if self.comp else self.fiter.get(offset)
        point = self.point(offset, line)
        jumped_to = self.back_jumps.get(offset)
        if jumped_to is not None:
            # Execution goes on at the jump's target (or, were the jump not taken, from here):
            # what either may do.
            other = self.point(jumped_to, line)
            point = (
                point[0] | other[0],
                tuple(dict.fromkeys(point[1] + other[1])),
                tuple(dict.fromkeys(point[2] + other[2])),
            )
        rec = (
            point,
            enc,
            self.comp or line in self.special,
            self.tests.get(line),
            target,
            len(enc) - 1,
            line,
        )
        self.recs[offset] = rec
        return rec

    def body_offsets(self, test: _Test) -> frozenset[int]:
        """Bytecode offsets of the body of a one-line ``if`` (by source position)."""
        key = id(test)
        found = self.inline_offsets.get(key)
        if found is None:
            start, end = test.body_span
            found = frozenset(
                ins.offset
                for ins in dis.get_instructions(self.code)
                if ins.positions is not None
                and ins.positions.lineno is not None
                and ins.positions.col_offset is not None
                and start <= (ins.positions.lineno, ins.positions.col_offset) < end
            )
            self.inline_offsets[key] = found
        return found


# ---------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------


class _Renderer:
    __slots__ = ("bound", "fp_limit", "max_chars", "repr_limit")

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        # A container with more items than this cannot render within max_chars (>= 3 chars each).
        self.bound = max_chars // 3
        # See with_fingerprint. An int in a fingerprint this short has under 2,000 digits.
        self.repr_limit = min(max_chars, 201)
        self.fp_limit = 4 * self.repr_limit + 16

    def text(self, value: object) -> str:
        """The rendered text of a value (never runs user code)."""
        kind = type(value)
        max_chars = self.max_chars
        if kind is int:
            if _NEG_SMALL < value < _SMALL:  # type: ignore[operator]
                text = repr(value)
                if len(text) <= max_chars:
                    return text
        elif kind is str or kind is bytes:
            if len(value) + 2 <= max_chars:  # type: ignore[arg-type]
                text = repr(value)
                if len(text) <= max_chars:
                    return text
            return f"<{kind.__name__} of {len(value)} chars, too large>"  # type: ignore[arg-type]
        elif value is None or kind is bool:
            return repr(value)
        elif kind is float:
            if value == value and value not in (float("inf"), float("-inf")):
                text = repr(value)
                if len(text) <= max_chars:
                    return text
        elif kind in _SIZED:
            if len(value) > self.bound:  # type: ignore[arg-type]
                return f"<{kind.__name__} of {len(value)} items, too large>"  # type: ignore[arg-type]
            if (kind is list or kind is tuple or kind is dict) and _reprable(
                value, max_chars, 0
            ) >= 0:
                # Only builtin atoms inside: the C repr is the canonical rendering, and fast.
                text = repr(value)
                if len(text) <= max_chars:
                    return text
        try:
            return values.render(value, max_chars=max_chars)
        except values.NotALiteral:
            return f"<{values.type_name(value)} object>"
        except (values.RenderLimitExceeded, RecursionError, MemoryError):
            if kind in _SIZED:
                return f"<{kind.__name__} of {len(value)} items, too large>"  # type: ignore[arg-type]
            return f"<{values.type_name(value)}, too large>"

    def with_fingerprint(self, value: object, fp: bytes | None) -> str:
        """``text(value)`` for a container of at most ``bound`` items whose ``marshal``
        fingerprint (version 2) is ``fp``, taking a shortcut that the fingerprint proves safe.

        marshal accepts only exact builtin types (no subclasses, so no user code in their
        reprs), code objects, Ellipsis, StopIteration and buffer objects (written as bytes,
        type code ``s``). Without the type codes of sets (``<``, ``>``) and bytes-like objects
        (``s``) anywhere in ``fp`` (payload bytes may match too: then the long way is taken),
        the C ``repr`` is the canonical rendering unless it shows a code object or
        StopIteration (``<``), a non-finite float or complex (``nan``, ``inf``) or
        ``Ellipsis``. A text of at most 201 chars nests at most 100 deep, render's depth
        limit; a short ``fp`` bounds the size of any int, so ``repr`` never works long.
        """
        if (
            fp is None
            or len(fp) > self.fp_limit
            or 0x73 in fp  # b"s"
            or 0x3C in fp  # b"<"
            or 0x3E in fp  # b">"
        ):
            return self.text(value)
        text = repr(value)
        if (
            len(text) > self.repr_limit
            or "<" in text
            or "nan" in text
            or "inf" in text
            or "Ellipsis" in text
        ):
            return self.text(value)
        return text


def _reprable(value: object, budget: int, depth: int) -> int:
    """Budget left after ``value`` if ``repr(value) == values.render(value)``, else -1.

    True for lists, tuples and dicts nested at most 20 deep that hold only ints below
    ``_SMALL``, finite floats, str, bytes, bool and None (their C reprs run no user code). Sets
    are excluded: values.render sorts them, repr does not. The budget is a lower bound on the
    length of the text, so a negative result also means "too long to bother".
    """
    kind = type(value)
    if kind is list or kind is tuple:
        if depth > 20:
            return -1
        return _items_reprable(value, budget - 2, depth)  # type: ignore[arg-type]
    if kind is dict:
        if depth > 20:
            return -1
        budget = _items_reprable(value, budget - 2, depth)  # type: ignore[arg-type]
        if budget < 0:
            return -1
        return _items_reprable(value.values(), budget, depth)  # type: ignore[attr-defined]
    return -1


def _items_reprable(items: Collection, budget: int, depth: int) -> int:
    """``_reprable`` for the items of a container (or the keys or values of a dict)."""
    if len(items) > 8:
        kinds = set(map(type, items))
        if len(kinds) == 1:
            # Many items of one type: checked by C loops.
            kind = kinds.pop()
            if kind is int:
                if min(items) <= _NEG_SMALL or max(items) >= _SMALL:
                    return -1
                return budget - 3 * len(items)
            if kind is str or kind is bytes:
                return budget - 4 * len(items) - sum(map(len, items))
            if kind is float:
                # Finite floats have a finite sum (if it overflows, "no" is still correct).
                return budget - 5 * len(items) if isfinite(sum(items)) else -1
            if kind is bool or kind is _NONE_TYPE:
                return budget - 6 * len(items)
    # len() is O(1): the budget only needs checking after the items that recurse.
    for item in items:
        kind = type(item)
        if kind is int:
            if not _NEG_SMALL < item < _SMALL:  # type: ignore[operator]
                return -1
            budget -= 3
        elif kind is str or kind is bytes:
            budget -= len(item) + 4  # type: ignore[arg-type]
        elif item is None or kind is bool:
            budget -= 6
        elif kind is float:
            if item - item != 0.0:  # type: ignore[operator]  # nan or inf
                return -1
            budget -= 5
        else:
            if depth >= 20:
                return -1
            if kind is list or kind is tuple:  # _reprable, inlined
                budget = _items_reprable(item, budget - 2, depth + 1)  # type: ignore[arg-type]
            else:
                budget = _reprable(item, budget, depth + 1)
            if budget < 0:
                return -1
    return budget if budget >= 0 else -1


def _fingerprint(value: object) -> bytes | None:
    try:
        return _dumps(value, 2)
    except (ValueError, RecursionError, MemoryError):
        return None


def _deep_immutable(value: object) -> bool:
    kind = type(value)
    if kind in _ATOMS:
        return True
    if kind is tuple or kind is frozenset:
        return all(_deep_immutable(item) for item in value)  # type: ignore[attr-defined]
    return False


def _hidden_mutator(value: object) -> bool:
    """Whether a class attribute could run C code on a read, a comparison or an operator: a
    callable that is not a Python function or class (a bound builtin method, a partial, ...),
    also behind property, staticmethod or classmethod. Python callables start frames, which
    the tracer sees; C callables do not."""
    kind = type(value)
    if kind is property:
        return any(
            _hidden_mutator(part)
            for part in (value.fget, value.fset, value.fdel)  # type: ignore[attr-defined]
            if part is not None
        )
    if kind is staticmethod or kind is classmethod:
        return _hidden_mutator(value.__func__)  # type: ignore[attr-defined]
    return callable(value) and not isinstance(value, (*_PYTHON_CALLABLES, type))


def _exception_info(exc: BaseException) -> dict[str, str]:
    """Type name and message of an exception, without running code the program defined."""
    name = values.type_name(exc)
    try:
        args = BaseException.args.__get__(exc)  # type: ignore[attr-defined]
        mro = type.__dict__["__mro__"].__get__(type(exc))
        owner = next(klass for klass in mro if "__str__" in klass.__dict__)
        if owner.__module__ == "builtins" and all(
            type(arg) in _ATOMS or _literal(arg) for arg in args
        ):
            return {"type": name, "message": str(exc)[:2000]}
    except Exception:
        pass
    return {"type": name, "message": f"<{name} with non-literal arguments>"}


def _literal(value: object) -> bool:
    try:
        values.render(value, max_chars=2000)
    except Exception:
        return False
    return True


# ---------------------------------------------------------------------------------------
# Per-frame state and the event handlers
# ---------------------------------------------------------------------------------------


# The fields _tracecore.FrameCore holds in C (the ones its line-event fast path uses).
_CORE_FIELDS = (
    "cond_step", "cond_test", "counts", "depth", "enc", "fid", "fn", "info", "inline_offs",
    "inline_seen", "inline_step", "loops", "max_chars", "off", "point", "qual", "raised", "recs",
    "rev_index", "rev_loop", "rev_more", "rev_step", "snap", "step", "template", "tr", "watch",
)  # fmt: skip
_FrameBase: type = object if ACCELERATOR is None else ACCELERATOR.FrameCore
_TracerBase: type = object if ACCELERATOR is None else ACCELERATOR.TracerCore


class _Frame(_FrameBase):
    """Trace state of one frame instance. The frame's ``f_trace`` is the instance itself when
    the C fast path is used (it handles common line events and calls ``local`` for the rest),
    else its bound ``local``."""

    __slots__ = _CORE_FIELDS if ACCELERATOR is None else ()

    def __init__(self, tr: Tracer, info: _CodeInfo, depth: int) -> None:
        # _tracecore.c's new_frame sets the same fields: keep the two in step.
        self.tr = tr
        self.info = info
        self.qual = info.qualname
        self.max_chars = tr.render.max_chars
        self.fid = tr.next_fid
        tr.next_fid += 1
        self.depth = depth
        self.snap: dict[str, list] = {}
        self.watch: dict[str, list] = {}
        self.step: dict | None = None
        self.off = -1  # of the latest line event (-1: none yet)
        self.point: tuple = _FULL_POINT
        self.counts: dict[object, int] = {}
        self.enc: tuple = _EMPTY
        self.loops: tuple = _EMPTY
        self.cond_test: _Test | None = None
        self.cond_step: dict | None = None
        self.rev_loop: object = None
        self.rev_index = 0
        self.rev_step: dict | None = None
        self.rev_more: list | None = None
        self.inline_step: dict | None = None
        self.inline_offs: frozenset[int] = _NO_OFFSETS
        self.inline_seen = False  # an opcode event arrived (3.12 may not deliver any)
        self.raised = False  # an exception reached this frame since its last line event
        # The fields every step starts with, copied (dict.copy) for each step. Built with room
        # for the optional keys: a copy keeps the template's table size, so adding `changes`
        # or `cond` to a step does not resize it.
        template = {"line": 0, "frame": self.qual, "fid": self.fid, "depth": depth,
                    "loops": _EMPTY, "changes": None}  # fmt: skip
        del template["changes"]
        self.template = template
        self.recs = info.recs
        self.fn = self if tr.accelerated else self.local

    # -- locals ------------------------------------------------------------------------------

    def entry(self, value: object) -> list:
        """A tracking entry [value, text, kind, extra] for a freshly bound value."""
        kind = type(value)
        render = self.tr.render
        if kind in _ATOMS:
            return [value, render.text(value), _ID, None]
        if kind in _MUTABLE or kind is tuple or kind is frozenset:
            if (kind is tuple or kind is frozenset) and _deep_immutable(value):
                return [value, render.text(value), _ID, None]
            size = len(value)  # type: ignore[arg-type]
            if size > render.bound:
                return [value, render.text(value), _FP, size]
            fp = _fingerprint(value)
            return [value, render.with_fingerprint(value, fp), _FP, fp]
        return [value, render.text(value), _FOREIGN, kind]

    def bind(self, name: str, value: object, old: list | None, step: dict) -> None:
        """Track a new binding of ``name`` (``_MISSING``: deleted) and record any change."""
        snap = self.snap
        if value is _MISSING:
            if old is None:
                return
            del snap[name]
            self.watch.pop(name, None)
            text = None
        else:
            entry = snap[name] = self.entry(value)
            if entry[2] != _ID:
                self.watch[name] = entry
            elif old is not None and old[2] != _ID:
                del self.watch[name]
            text = entry[1]
            if old is not None and text == old[1]:
                return
        if name[0] != "." and name != "__class__":
            self.note(step, name, text)

    def note(self, step: dict, name: str, text: str | None) -> None:
        """Record ``changes[name] = text`` in ``step`` (this frame's latest step)."""
        changes = step.get("changes")
        if changes is None:
            step["changes"] = {name: text}
        else:
            changes[name] = text
        self.tr.size += len(name) + (4 if text is None else len(text)) + 6

    def store(self, name: str, value: object, entry: list | None, step: dict) -> None:
        """A stored-to name whose value is not the tracked object any more (or is new)."""
        if entry is not None and entry[2] == _ID and type(value) in _ATOMS:
            entry[0] = value
            text = self.tr.render.text(value)
            if text != entry[1]:
                entry[1] = text
                self.note(step, name, text)
        else:
            self.bind(name, value, entry, step)

    def rebind_all(self, loc, step: dict) -> None:
        snap = self.snap
        text_of = self.tr.render.text
        for name, value in loc.items():
            entry = snap.get(name)
            if entry is not None:
                if entry[0] is value:
                    continue
                if entry[2] == _ID and type(value) in _ATOMS:
                    entry[0] = value  # an atom replaced by an atom: reuse the entry
                    text = text_of(value)
                    if text != entry[1]:
                        entry[1] = text
                        if name[0] != "." and name != "__class__":
                            self.note(step, name, text)
                    continue
            self.bind(name, value, entry, step)
        if len(snap) > len(loc):
            self.drop_missing(loc, step)

    def drop_missing(self, loc, step: dict) -> None:
        """Names tracked but no longer in the frame's locals were deleted."""
        snap = self.snap
        for name in [name for name in snap if name not in loc]:
            self.bind(name, _MISSING, snap[name], step)

    def recheck(self, step: dict) -> None:
        """Look for in-place changes of the tracked containers and objects."""
        render = self.tr.render
        bound = render.bound
        for name, entry in self.watch.items():
            value = entry[0]
            if entry[2] == _FOREIGN:
                if type(value) is entry[3]:
                    continue
                text = self.recheck_foreign(entry)
            else:
                size = len(value)
                if size > bound:
                    # Too many items to fit: the text depends on the length only.
                    if size == entry[3]:
                        continue
                    entry[3] = size
                    del entry[4:]  # the C fast path's snapshot (see _tracecore.c) is stale
                    text = f"<{type(value).__name__} of {size} items, too large>"
                else:
                    try:  # _fingerprint, inlined
                        fp = _dumps(value, 2)
                    except (ValueError, RecursionError, MemoryError):
                        fp = None
                    if fp is not None and fp == entry[3]:
                        continue
                    entry[3] = fp
                    del entry[4:]
                    text = render.with_fingerprint(value, fp)
            if text != entry[1]:
                entry[1] = text
                if name[0] != "." and name != "__class__":
                    self.note(step, name, text)

    @staticmethod
    def recheck_foreign(entry: list) -> str:
        """The text of a tracked non-literal object whose type changed (``__class__ = ...``)."""
        value = entry[0]
        entry[3] = type(value)
        return f"<{values.type_name(value)} object>"

    def update(self, loc, step: dict) -> None:
        """Record in ``step`` the locals that changed since the snapshot (the line just ran)."""
        snap = self.snap
        flags, stores, inplace = self.point
        if flags & _FULL or (flags & _MUTATE and len(loc) != len(snap)):
            self.rebind_all(loc, step)
        else:
            # Only the names the line stores to can have been rebound (no Python call ran).
            for name in stores:
                value = loc.get(name, _MISSING)
                entry = snap.get(name)
                if entry is None or entry[0] is not value:
                    self.store(name, value, entry, step)
        if self.watch:
            if flags & _HARD:
                self.recheck(step)
            elif inplace:
                self.recheck_inplace(inplace, step)

    def recheck_inplace(self, names: tuple[str, ...], step: dict) -> None:
        snap = self.snap
        for name in names:
            entry = snap.get(name)
            if entry is not None and entry[2] != _ID:
                self.recheck(step)  # `x += ...` mutated a container in place (maybe aliased)
                return

    # -- loops ---------------------------------------------------------------------------------

    def count_loops(self, line: int, off: int, step: dict, enc: tuple) -> None:
        info = self.info
        if info.comp:
            self.comp_loops(off, step)
            return
        counts = self.counts
        target = info.fiter.get(off)
        if target is not None and enc is self.enc and enc[-1] is target:
            # The common case: the next iteration of the innermost `for` loop.
            counts[target] += 1
            loops = (*self.loops[:-1], (target.line, counts[target]))
            self.loops = step["loops"] = self.template["loops"] = loops
            self.rev_loop = target
            self.rev_index = len(enc) - 1
            self.rev_step = step
            self.rev_more = None
            return
        changed = enc is not self.enc
        if changed:
            for loop in [loop for loop in counts if loop not in enc]:
                del counts[loop]
            self.enc = enc
        rehit = None
        if enc:
            prev = self.recs[self.off][6] if self.off >= 0 else -1  # the previous line
            backward = off <= self.off
            claimed = False
            for loop in reversed(enc):
                count = counts.get(loop)
                if count is None:
                    counts[loop] = 1
                    changed = True
                    continue
                if claimed:
                    continue
                kind = loop.kind
                in_head = loop.head_lo <= line <= loop.head_hi
                if kind == _FOR:
                    target = info.fiter.get(off)
                    if target is loop or (
                        target is None
                        and not info.fiter
                        and in_head
                        and loop.body_lo <= prev <= loop.body_hi
                        and not loop.head_lo <= prev <= loop.head_hi
                    ):
                        counts[loop] = count + 1
                        claimed = True
                        rehit = loop
                    elif in_head and target is None and backward:
                        counts[loop] = 1  # entered anew by an enclosing loop
                        changed = True
                elif kind == _WHILE:
                    if not in_head:
                        continue
                    prev_in_head = loop.head_lo <= prev <= loop.head_hi
                    if loop.body_lo <= prev <= loop.body_hi and not prev_in_head:
                        counts[loop] = count + 1
                        claimed = True
                        rehit = loop
                    elif loop.inline and backward:
                        counts[loop] = count + 1
                        claimed = True
                    elif prev_in_head and backward:
                        counts[loop] = 1
                        changed = True
                elif (
                    loop.body_lo <= prev <= loop.body_hi
                    and not (loop.head_lo <= prev <= loop.head_hi)
                    and (in_head or (line == loop.body_lo and backward))
                ):
                    # `while True`: back at the header, or at the top of the body when the
                    # compiler dropped the header from the loop.
                    counts[loop] = count + 1
                    claimed = True
            if claimed:
                changed = True
        if changed:
            self.loops = self.template["loops"] = tuple([(loop.line, counts[loop]) for loop in enc])
            step["loops"] = self.loops
        if rehit is not None and not (rehit.kind == _WHILE and rehit.inline):
            self.rev_loop = rehit
            self.rev_index = enc.index(rehit)
            self.rev_step = step
            self.rev_more = None
        elif self.rev_loop is not None:
            # A continuation line of a multi-line header: it shares the pending decision.
            if self.rev_more is None:
                self.rev_more = []
            self.rev_more.append(step)

    def resolve_rev(self, line: int | None, off: int | None) -> None:
        """Decide whether the last header check entered the loop body or left the loop."""
        loop = self.rev_loop
        index = self.rev_index
        if line is not None:
            if self.info.comp:
                target = self.info.fiter.get(off)  # type: ignore[arg-type]
                if target is None or target >= index:  # type: ignore[operator]
                    self.rev_loop = None
                    return
            else:
                if loop.body_lo <= line <= loop.body_hi:  # type: ignore[attr-defined]
                    self.rev_loop = None
                    return
                if loop.head_lo <= line <= loop.head_hi:  # type: ignore[attr-defined]
                    return  # still in a multi-line header
        self.rev_loop = None
        steps = [self.rev_step] + (self.rev_more or [])
        for step in steps:
            old = step["loops"]  # type: ignore[index]
            if index < len(old):
                step["loops"] = (*old[:index], (old[index][0], max(1, old[index][1] - 1)))  # type: ignore[index]

    def comp_loops(self, off: int, step: dict) -> None:
        info = self.info
        counts = self.counts
        index = info.fiter.get(off)
        lines = info.loop_lines
        if not counts:
            for position in range(len(lines)):
                counts[position] = 1
            self.loops = self.template["loops"] = tuple([(line, 1) for line in lines])
        elif index is not None:
            counts[index] += 1
            if len(lines) == 1:  # one `for` clause: the common case
                self.loops = self.template["loops"] = ((lines[0], counts[0]),)
            else:
                for inner in range(index + 1, len(lines)):  # type: ignore[arg-type]
                    counts[inner] = 1
                self.loops = self.template["loops"] = tuple(
                    [(line, counts[position]) for position, line in enumerate(lines)]
                )
            self.rev_loop = index
            self.rev_index = index  # type: ignore[assignment]
            self.rev_step = step
            self.rev_more = None
        step["loops"] = self.loops

    # -- the trace function ------------------------------------------------------------------

    def local(self, frame: types.FrameType, event: str, arg: object):
        tr = self.tr
        try:
            if tr.stopped:
                frame.f_trace = None
                return None
            if event != "line":
                tr.events += 1
                if event == "opcode":
                    if self.inline_step is not None:
                        self.inline_seen = True
                        if frame.f_lasti in self.inline_offs:
                            self.inline_step["cond"] = True
                            self.inline_step = None
                            frame.f_trace_opcodes = False
                elif event == "return":
                    self.on_return(frame, arg)
                    return None
                elif event == "exception":
                    self.on_exception(frame, arg)
                return self.fn
            # The hot path: one line event.
            off = frame.f_lasti
            rec = self.recs.get(off)
            if rec is None:
                rec = self.info.record(off, frame.f_lineno)
            # What is static about this event, for this offset (the line included).
            point, enc, special, test, target, index, line = rec
            # First finish the previous step of this frame.
            step = self.step
            if step is None:
                new = self.first_step(frame, line)
            else:
                self.raised = False
                flags, stores, inplace = self.point
                if flags:
                    loc = frame.f_locals
                    snap = self.snap
                    if flags & _FULL or (flags & _MUTATE and len(loc) != len(snap)):
                        self.rebind_all(loc, step)
                    else:
                        # The common case, inlined: only the names the line stores to can have
                        # been rebound (no Python call ran).
                        for name in stores:
                            try:
                                value = loc[name]
                            except KeyError:
                                value = _MISSING
                            entry = snap.get(name)
                            if entry is None or entry[0] is not value:
                                # An atom replacing an atom, inlined from store(): an int that
                                # renders as its repr (16 chars at most) or a str that may.
                                kind = type(value)
                                if entry is None or entry[2] != _ID:
                                    self.store(name, value, entry, step)
                                    continue
                                if kind is int and _NEG_SMALL < value < _SMALL:  # type: ignore[operator]
                                    text = repr(value)
                                elif kind is str and len(value) <= self.max_chars:  # type: ignore[arg-type]
                                    text = repr(value)
                                    if len(text) > self.max_chars:  # many escapes
                                        text = tr.render.text(value)
                                else:
                                    self.store(name, value, entry, step)
                                    continue
                                entry[0] = value
                                if text != entry[1]:
                                    entry[1] = text
                                    # self.note(step, name, text), inlined
                                    changes = step.get("changes")
                                    if changes is None:
                                        step["changes"] = {name: text}
                                    else:
                                        changes[name] = text
                                    tr.size += len(name) + len(text) + 6
                    if self.watch:
                        if flags & _HARD:
                            self.recheck(step)
                        elif inplace:
                            for name in inplace:
                                entry = snap.get(name)
                                if entry is not None and entry[2] != _ID:
                                    # `x += ...` mutated a container in place (maybe aliased)
                                    self.recheck(step)
                                    break
                rev = self.rev_loop
                if rev is not None:
                    if rev.__class__ is _Loop and rev.body_lo <= line <= rev.body_hi:  # type: ignore[attr-defined]
                        self.rev_loop = None  # the header check entered the body
                    else:
                        self.resolve_rev(line, off)
                pending = self.cond_test
                if pending is not None and not pending.lo <= line <= pending.hi:
                    self.cond_step["cond"] = pending.body_lo <= line <= pending.body_hi  # type: ignore[index]
                    self.cond_test = None
                if self.inline_step is not None:
                    if self.inline_seen:  # the body's first instruction never ran
                        self.inline_step["cond"] = False
                    self.inline_step = None
                    frame.f_trace_opcodes = False
                if len(tr.steps) >= tr.limit:
                    tr.check_caps()
                new = self.template.copy()  # faster than a dict display
                new["line"] = line
            if enc is not self.enc or special:
                if target is not None and enc is self.enc and enc[-1] is target:
                    # The common case, inlined from count_loops: the next iteration of the
                    # innermost `for` loop.
                    counts = self.counts
                    count = counts[target] = counts[target] + 1
                    loops = self.loops
                    loops = (
                        (*loops[:-1], (target.line, count))
                        if len(loops) > 1
                        else ((target.line, count),)
                    )
                    self.loops = new["loops"] = self.template["loops"] = loops
                    self.rev_loop = target
                    self.rev_index = index
                    self.rev_step = new
                    self.rev_more = None
                else:
                    self.count_loops(line, off, new, enc)
            if test is not None and self.cond_test is None:
                if not test.inline:
                    self.cond_test = test
                    self.cond_step = new
                elif test.lo == line:
                    self.start_inline(frame, test, new)
            tr.steps.append(new)
            self.step = new
            self.off = off
            self.point = point
            return self.fn
        except Exception as exc:
            return self.abandon(frame, exc)

    def abandon(self, frame: types.FrameType, exc: Exception) -> None:
        """Stop tracing this frame: a cap was reached (TraceOverflow) or the tracer failed (a
        tracer bug must not change the program's behaviour)."""
        if not isinstance(exc, TraceOverflow):
            self.tr.fail(f"tracer_error: {type(exc).__name__}: {exc}")
        frame.f_trace = None

    def start_inline(self, frame: types.FrameType, test: _Test, step: dict) -> None:
        """A one-line ``if test: body`` starts: decide it from opcode events."""
        self.inline_step = step
        self.inline_offs = self.info.body_offsets(test)
        self.inline_seen = False
        frame.f_trace_opcodes = True

    def first_step(self, frame: types.FrameType, line: int) -> dict:
        tr = self.tr
        text_of = tr.render.text
        snap = self.snap
        args = {}
        for name, value in frame.f_locals.items():
            if type(value) in _ATOMS:  # self.entry(value), inlined
                entry = snap[name] = [value, text_of(value), _ID, None]
            else:
                entry = snap[name] = self.entry(value)
                if entry[2] != _ID:
                    self.watch[name] = entry
            if name[0] != "." and name != "__class__":
                args[name] = entry[1]
        if len(tr.steps) >= tr.limit:
            tr.check_caps()
        for name, text in args.items():
            tr.size += len(name) + len(text) + 6  # args never change: counted at once
        return {"line": line, "frame": self.qual, "fid": self.fid, "depth": self.depth,
                "loops": self.loops, "args": args}  # fmt: skip

    def on_return(self, frame: types.FrameType, arg: object) -> None:
        tr = self.tr
        tr.depth -= 1
        step = self.step
        if step is None:
            return
        # Since the latest line event only the rest of that line ran (a Python call or an
        # exception since then has made the point _FULL_POINT).
        if self.point[0]:
            if tr.accelerated:
                self.finish(frame, step)  # type: ignore[attr-defined]  # FrameCore.finish
            else:
                self.update(frame.f_locals, step)
        self.point = _NO_POINT
        off = frame.f_lasti
        info = self.info
        if off in info.yields and not self.raised:
            step["yield"] = tr.render.text(arg)
            return
        if self.inline_step is not None:
            if off in self.inline_offs:
                self.inline_step["cond"] = True  # the body returned
            elif self.inline_seen:
                self.inline_step["cond"] = False
            self.inline_step = None
        if self.cond_test is not None:
            self.cond_step["cond"] = False  # type: ignore[index]
            self.cond_test = None
        if self.rev_loop is not None:
            self.resolve_rev(None, None)
        if off in info.returns and not self.raised:
            step["ret"] = tr.render.text(arg)
        if info.class_body and not tr.paranoid:
            namespace = frame.f_locals
            if any(_hidden_mutator(value) for value in list(namespace.values())):
                tr.assume_hidden_mutators()

    def on_exception(self, frame: types.FrameType, arg: object) -> None:
        self.point = _FULL_POINT
        if type(arg) is tuple and arg[0] is StopIteration and frame.f_lasti in self.info.fiter:
            return  # a `for` loop over a generator that returned a value: plain iteration
        self.raised = True
        self.cond_test = None
        if self.inline_step is not None:
            self.inline_step = None
            frame.f_trace_opcodes = False
        step = self.step
        if step is not None and type(arg) is tuple and len(arg) == 3:
            step["exc"] = values.type_name(arg[1])


if ACCELERATOR is not None:
    ACCELERATOR.enable_vectorcall(_Frame)


def _owner(trace_function: object) -> _Frame | None:
    """The _Frame behind a frame's ``f_trace`` (itself, or its bound ``local``), if any."""
    owner = trace_function.__self__ if type(trace_function) is _METHOD else trace_function
    return owner if type(owner) is _Frame else None


# ---------------------------------------------------------------------------------------
# The tracer
# ---------------------------------------------------------------------------------------


class Tracer(_TracerBase):
    """Traces one call at a time; see the module docstring for the trace format and policies.

    With the C fast path, ``steps``, ``size``, ``limit``, ``stopped`` and ``render`` are fields
    of its ``TracerCore`` base, read there on every line event.
    """

    def __init__(
        self,
        *,
        filename: str = "<program>",
        max_steps: int = 10_000,
        max_value_chars: int = 200,
        max_trace_chars: int = 2_000_000,
        on_overflow: Callable[[dict], None] | None = None,
        source: str | None = None,
        engine: str = "auto",
    ) -> None:
        """``engine``: "c" (the C fast path, required), "python", or "auto" (C when built)."""
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        if engine == "c" and ACCELERATOR is None:
            raise ValueError("the tracer's C fast path (_tracecore) is not built")
        self.accelerated = ACCELERATOR is not None and engine != "python"
        self.filename = filename
        self.max_steps = max_steps
        self.max_trace_chars = max_trace_chars
        self.on_overflow = on_overflow
        if max_value_chars < 16:
            raise ValueError("max_value_chars must be at least 16")
        self.render = _Renderer(max_value_chars)
        self._source = _Source(source)
        self._infos: dict[int, _CodeInfo | None] = {}
        # Constants the C fast path needs (fields of its TracerCore base).
        self.frame_type = _Frame
        self.full_point = _FULL_POINT
        self.no_point = _NO_POINT
        self.missing = _MISSING
        self.loop_type = _Loop
        self.no_offsets = _NO_OFFSETS
        self._codes: list[types.CodeType] = []  # keeps the ids in _infos valid
        # Like _infos, kept across calls: see assume_hidden_mutators.
        self.paranoid = False
        self._reset()

    def _reset(self) -> None:
        self.steps: list[dict] = []
        # Estimated JSON size of the trace but for the fixed part of each step
        # (_STEP_CHARS): len(name) + len(text) + 6 (4 for a deletion) per change or argument,
        # counted as they are recorded (a change of a name already in that step's changes,
        # which is rare, is counted twice).
        self.size = 200
        self.limit = min(self.max_steps, _SIZE_CHECK_EVERY)
        self.events = 0
        self.depth = 0
        self.next_fid = 0
        self.stopped = False
        self.partial_reason: str | None = None
        self.last: dict | None = None

    # -- hooks ---------------------------------------------------------------------------------

    def _global(self, frame: types.FrameType, event: str, arg: object):
        if self.stopped:
            return None
        # Python code is about to run: the caller's next event must diff everything.
        caller = frame.f_back
        if caller is not None:
            owner = _owner(caller.f_trace)
            if owner is not None:
                owner.point = _FULL_POINT
        code = frame.f_code
        key = id(code)
        info = self._infos.get(key, False)
        if info is False:
            info = self._analyse(code)
        if info is None:
            return None
        try:
            state = _owner(frame.f_trace)
            if state is not None and state.tr is not self:
                state = None
            if state is None:
                state = _Frame(self, info, self.depth)
            else:
                state.depth = state.template["depth"] = self.depth
                state.point = _FULL_POINT
            self.depth += 1
            self.events += 1
            return state.fn
        except Exception as exc:
            return self._call_error(exc)

    def _call_error(self, exc: Exception) -> None:
        """The tracer failed on a call event: stop tracing (the program runs on untraced)."""
        self.fail(f"tracer_error: {type(exc).__name__}: {exc}")

    def assume_hidden_mutators(self) -> None:
        """A class of the program holds a C callable (``property(log.append)``, ``__eq__ =
        staticmethod(log.append)``): attribute reads, comparisons and operators may now run it
        without any Python frame starting, so from here on every line re-checks every local."""
        self.paranoid = True
        for info in self._infos.values():
            if info is not None:
                info.paranoid = True
                info.recs.clear()  # the frames share these: their next lines are re-derived

    def _analyse(self, code: types.CodeType) -> _CodeInfo | None:
        info = None
        if code.co_filename == self.filename:
            info = _CodeInfo(code, self._source.scope(code))
            info.paranoid = self.paranoid
        self._infos[id(code)] = info
        self._codes.append(code)
        return info

    # -- stopping ------------------------------------------------------------------------------

    def _stop(self) -> None:
        self.stopped = True
        sys.settrace(None)
        frame = sys._getframe()
        while frame is not None:
            if _owner(frame.f_trace) is not None:
                frame.f_trace = None
            frame = frame.f_back

    def overflow(self, reason: str) -> None:
        """Mark the trace partial, hand it to on_overflow, then stop tracing."""
        if self.partial_reason is None:
            self.partial_reason = reason
        if self.on_overflow is not None:
            self.on_overflow(self._wire(None, False, None))
        self._stop()
        raise TraceOverflow(reason)

    def check_caps(self) -> None:
        """Called before recording a step once len(steps) reaches ``limit``."""
        steps = self.steps
        count = len(steps)
        if count >= self.max_steps:
            self.overflow("max_steps")
        if self.size + _STEP_CHARS * count > self.max_trace_chars:
            self.overflow("max_trace_chars")
        self.limit = min(self.max_steps, count + _SIZE_CHECK_EVERY)

    def fail(self, reason: str) -> None:
        if self.partial_reason is None:
            self.partial_reason = reason
        self._stop()

    # -- the call ------------------------------------------------------------------------------

    def _wire(self, value: str | None, literal: bool, exception: dict | None) -> dict:
        return {
            "steps": self.steps,
            "return": value,
            "return_literal": literal,
            "exception": exception,
            "partial": self.partial_reason is not None,
            "partial_reason": self.partial_reason,
            "events": self.events + len(self.steps),
        }

    def call(self, function: Callable, args: tuple, kwargs: dict) -> dict:
        """Run ``function(*args, **kwargs)`` under the tracer and return the trace (wire form).

        If the function raises, the exception is recorded in the trace and re-raised; the trace
        is then available as ``self.last``.
        """
        self._reset()
        previous = sys.gettrace()
        thresholds = gc.get_threshold()
        # The trace's own allocations would otherwise make the collector run far more often
        # than in the plain run (and rescan the growing trace each time).
        gc.set_threshold(thresholds[0] * 10, *thresholds[1:])
        hook = self._global
        if self.accelerated:
            ACCELERATOR.settrace(hook)  # type: ignore[union-attr]
        else:
            sys.settrace(hook)
        try:
            value = function(*args, **kwargs)
        except BaseException as exc:
            removed = sys.gettrace() is not hook
            sys.settrace(previous)
            gc.set_threshold(*thresholds)
            self._finish(removed)
            self.last = self._wire(None, False, _exception_info(exc))
            raise
        removed = sys.gettrace() is not hook
        sys.settrace(previous)
        gc.set_threshold(*thresholds)
        self._finish(removed)
        self.value = value  # the worker renders it again under the result's own limits
        text = self.render.text(value)
        # Literal renderings never start with "<"; the markers always do.
        self.last = self._wire(text, not text.startswith("<"), None)
        return self.last

    def _finish(self, removed: bool) -> None:
        if self.stopped:
            return
        self.stopped = True
        if (removed or self.depth != 0) and self.partial_reason is None:
            self.partial_reason = "tracer_removed"
