"""Static analysis for the tracer: the AST of the traced source and the bytecode of each traced
code object, read once per code object and consulted on every event.

Part of the sandbox-side tracer (see ``tracer``), imported as a flat module: standard library
only, no module-level side effects. It knows nothing of frames or of rendering.
"""

from __future__ import annotations

import ast
import dis
import types

# Flags of a "point": what the code run after a line event may do until the frame's next event.
_STORE = 1  # the code may rebind or delete a local
MUTATE = 2  # the code may mutate a container without starting a Python frame
_INPLACE = 4  # `name += ...`: may mutate the object bound to that name
FULL = 8  # diff everything (after an exception, a return, a resume)
HARD = MUTATE | FULL
# A point: (flags, names it may rebind, names it may update in place with `+=`).
FULL_POINT = (FULL, (), ())
NO_POINT = (0, (), ())
_CO_OPTIMIZED = 1

FOR, WHILE, _FOREVER = 0, 1, 2
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
_COMPREHENSIONS: dict[str, type[ast.expr]] = {
    "<listcomp>": ast.ListComp,
    "<setcomp>": ast.SetComp,
    "<dictcomp>": ast.DictComp,
    "<genexpr>": ast.GeneratorExp,
}
EMPTY: tuple = ()
NO_OFFSETS: frozenset[int] = frozenset()


class Loop:
    __slots__ = (
        "body_hi",
        "body_lo",
        "col",
        "head_hi",
        "head_lo",
        "hi",
        "inline",
        "kind",
        "line",
        "lo",
    )

    def __init__(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        body = node.body
        self.line = node.lineno
        self.col = node.col_offset
        self.lo = node.lineno
        self.body_lo = body[0].lineno
        self.body_hi = self.hi = max(node.lineno, _end(body[-1]))
        if isinstance(node, ast.While):
            constant = isinstance(node.test, ast.Constant) and bool(node.test.value)
            self.kind = _FOREVER if constant else WHILE
            self.head_lo, self.head_hi = node.test.lineno, _end(node.test)
        else:
            self.kind = FOR
            self.head_lo = node.lineno
            self.head_hi = max(_end(node.target), _end(node.iter))
        self.head_lo = min(self.head_lo, node.lineno)
        self.inline = self.body_lo <= self.head_hi


class Test:
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


def _end(node: ast.stmt | ast.expr) -> int:
    end = node.end_lineno
    return end if end is not None else node.lineno


class _Scope:
    """Loops and tests of one scope (function, class body, lambda, module, comprehension)."""

    __slots__ = ("comp_lines", "loops_at", "special", "tests")

    def __init__(self, node: ast.AST | None) -> None:
        self.loops_at: dict[int, tuple[Loop, ...]] = {}
        self.special: frozenset[int] = frozenset()
        self.tests: dict[int, Test] = {}
        self.comp_lines: list[int] = []
        if node is None:
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            self.comp_lines = [gen.target.lineno for gen in node.generators]
            return
        body = getattr(node, "body", None)
        if isinstance(body, list):
            enclosing: dict[int, list[Loop]] = {}
            special: set[int] = set()
            self._walk(body, enclosing, special)
            shared: dict[tuple[int, ...], tuple[Loop, ...]] = {}
            for line, loops in enclosing.items():
                # One tuple object per distinct nest, so the per-event check is an `is` test.
                key = tuple(id(loop) for loop in loops)
                self.loops_at[line] = shared.setdefault(key, tuple(loops))
            self.special = frozenset(special)

    def _walk(
        self, body: list[ast.stmt], enclosing: dict[int, list[Loop]], special: set[int]
    ) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                loop = Loop(stmt)
                for line in range(loop.lo, loop.hi + 1):
                    enclosing.setdefault(line, []).append(loop)
                special.update(range(loop.head_lo, loop.head_hi + 1))
                if loop.kind == _FOREVER:
                    special.add(loop.body_lo)
                if isinstance(stmt, ast.While) and not (loop.kind == WHILE and loop.inline):
                    self._add_test(Test(stmt))
            elif isinstance(stmt, ast.If):
                self._add_test(Test(stmt))
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

    def _add_test(self, test: Test) -> None:
        for line in range(test.lo, test.hi + 1):
            self.tests.setdefault(line, test)


class Source:
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
                    if isinstance(node, kind):
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


class CodeInfo:
    """Everything the per-event code needs about one traced code object, computed once."""

    __slots__ = (
        "back_jumps",
        "class_body",
        "clause",
        "code",
        "comp",
        "fiter",
        "fiter_loops",
        "inline_offsets",
        "loop_lines",
        "loops_at",
        "ops",
        "paranoid",
        "qualname",
        "recs",
        "returns",
        "special",
        "tests",
        "yields",
    )

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
        fiters: list[tuple[tuple[int, ...], int, int | None]] = []  # offsets, line, column
        instructions = list(dis.get_instructions(code))
        prefix = -1  # the offset of the EXTENDED_ARG chain before this instruction, if any
        for position, ins in enumerate(instructions):
            line = ins.positions.lineno if ins.positions is not None else None
            name = ins.opname
            # An instruction with an argument over 255 comes after EXTENDED_ARG prefixes, and a
            # jump to it lands on the first of them, where its line event is then reported (a
            # loop's back-jump to a FOR_ITER that has a long body to skip): the tables consulted
            # on events are keyed by both offsets.
            offsets: tuple[int, ...] = (ins.offset,) if prefix < 0 else (prefix, ins.offset)
            if name != "EXTENDED_ARG":
                prefix = -1
            elif prefix < 0:
                prefix = ins.offset
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
                flag = MUTATE
            self.ops.append((ins.offset, line, flag, target))
            if name in ("RETURN_VALUE", "RETURN_CONST"):
                self.returns.add(ins.offset)
            elif name == "YIELD_VALUE":
                self.yields.add(ins.offset)
                if position + 1 < len(instructions):  # where 3.13 reports a yield
                    self.yields.add(instructions[position + 1].offset)
            elif name == "FOR_ITER":
                column = ins.positions.col_offset if ins.positions is not None else None
                fiters.append((offsets, line or 0, column))
            elif name.startswith("JUMP_BACKWARD") and type(ins.argval) is int:
                for offset in offsets:
                    self.back_jumps[offset] = ins.argval
        self.comp = code.co_name in _COMPREHENSIONS
        # FOR_ITER offset (and that of its EXTENDED_ARG prefix) -> the Loop of a `for`
        # statement (none in a comprehension's frame).
        self.fiter: dict[int, Loop] = {}
        # FOR_ITER offset (and that of its EXTENDED_ARG prefix) -> the index of a
        # comprehension's `for` clause (its frame only).
        self.clause: dict[int, int] = {}
        self.loop_lines: list[int] = []
        if self.comp:
            lines = scope.comp_lines
            for index, (offsets, line, _) in enumerate(fiters):
                for offset in offsets:
                    self.clause[offset] = index
                self.loop_lines.append(lines[index] if index < len(lines) else line)
        else:
            for offsets, line, column in fiters:
                for loop in self.loops_at.get(line, ()):
                    # The column tells a `for` statement from a comprehension inlined (3.12+)
                    # on its header line.
                    if loop.kind == FOR and loop.line == line and column in (loop.col, None):
                        for offset in offsets:
                            self.fiter[offset] = loop
        # The `for` loops counted at their FOR_ITER; the others (`async for`) by line.
        self.fiter_loops: frozenset[Loop] = frozenset(self.fiter.values())

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
                    flags |= FULL
        if inplace:
            flags |= _STORE
            stores.extend(inplace)
        if self.paranoid:
            flags |= HARD
        return (flags, tuple(dict.fromkeys(stores)), tuple(dict.fromkeys(inplace)))

    def record(self, offset: int, line: int) -> tuple:
        """Everything static about a line event at ``offset``: (point, enclosing loops,
        whether loop counting must look closer, the if/while test starting here, the `for`
        loop it may start the next iteration of and its index in the enclosing loops, line)."""
        enc = self.loops_at.get(line, EMPTY)
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

    def body_offsets(self, test: Test) -> frozenset[int]:
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
