"""Safe parsing, comparison and canonical rendering of Python literal values.

Stdlib only, with no package-relative imports and no module-level side effects: this file
is also copied into the sandbox and imported there as a standalone module.

Untrusted text is bounded before any costly work: `parse` refuses a text over ``max_chars``
at once, a text with more separators (commas and colons outside string literals) than
``max_nodes`` before the compiler builds its syntax tree, and a set, frozenset or dict display
whose elements or keys collide in ``hash()`` more than ``MAX_HASH_COLLISIONS`` times (such a
value costs quadratic time to build and to compare: 38,000 ints that are multiples of 2**61 - 1
take seconds) before the container is built. Values `parse` returns therefore build and compare
in linear time.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable
from typing import NoReturn, TypeGuard

__all__ = [
    "MAX_HASH_COLLISIONS",
    "POLICIES",
    "NotALiteral",
    "RenderLimitExceeded",
    "ValueParseError",
    "equal",
    "parse",
    "render",
    "top_level_indexes",
    "type_name",
]

POLICIES: tuple[str, ...] = ("strict", "exact", "lenient")
# Distinct elements of one set (keys of one dict) that may share one hash value. Benign values
# rarely have two (hash(-1) == hash(-2)); each costs every later insertion or lookup of that hash.
MAX_HASH_COLLISIONS = 16
# Containers smaller than this are built without the collision check (bounded cost anyway).
_HASH_CHECK_FROM = 32


class ValueParseError(ValueError):
    """The text is not a literal that `parse` accepts; the message is one line."""


class NotALiteral(TypeError):
    """`render` got something that is not a plain literal value."""


class RenderLimitExceeded(ValueError):
    """`render` output would exceed its character or depth limit."""


# Read through type's own descriptor so that no metaclass or user code runs.
_QUALNAME = type.__dict__["__qualname__"]


def type_name(value: object) -> str:
    """Return the qualified name of the value's real class without running user code."""
    name = _QUALNAME.__get__(type(value))
    return name if type(name) is str else "?"


# ---------------------------------------------------------------------------------------
# parse
# ---------------------------------------------------------------------------------------

_CONSTANT_NAMES: dict[str, object] = {
    "True": True,
    "False": False,
    "None": None,
    "true": True,
    "false": False,
    "null": None,
}
_FLOAT_NAMES: dict[str, float] = {"inf": math.inf, "Infinity": math.inf}
_NAN_NAMES = frozenset({"nan", "NaN"})
_FLOAT_CALL_ARGS: dict[str, float] = {
    "inf": math.inf,
    "+inf": math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-inf": -math.inf,
    "-infinity": -math.inf,
}
_NAN_CALL_ARGS = frozenset({"nan", "+nan", "-nan"})
_EMPTY_CALLS = frozenset({"tuple", "list", "dict"})
_SET_CALLS = frozenset({"set", "frozenset"})

_NODE_DESCRIPTIONS: dict[type[ast.AST], str] = {
    ast.Lambda: "lambda",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.Starred: "starred expression",
    ast.NamedExpr: "assignment expression",
    ast.Subscript: "subscript",
    ast.Slice: "slice",
    ast.Attribute: "attribute access",
    ast.IfExp: "conditional expression",
    ast.Compare: "comparison",
    ast.BoolOp: "boolean operator",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
}
_OPERATOR_SYMBOLS: dict[type[ast.AST], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.UAdd: "+",
    ast.USub: "-",
    ast.Not: "not",
    ast.Invert: "~",
}


def _is_sequence(value: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    return type(value) is list or type(value) is tuple


def _is_set(value: object) -> TypeGuard[set[object] | frozenset[object]]:
    return type(value) is set or type(value) is frozenset


def _is_number(value: object) -> TypeGuard[int | float | complex]:
    return type(value) is int or type(value) is float or type(value) is complex


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Parser:
    def __init__(self, source: str, max_depth: int, max_nodes: int) -> None:
        self.source = source
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.nodes = 0

    def where(self, node: ast.AST) -> str:
        lineno = getattr(node, "lineno", 1)
        byte_col = getattr(node, "col_offset", 0)
        # Only the tokenizer's own line breaks; str.splitlines also splits on \f, \u2028, ...
        lines = self.source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        line = lines[min(max(lineno, 1), len(lines)) - 1]
        # col_offset counts UTF-8 bytes; report characters.
        col = len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")) + 1
        return f"line {lineno} col {col}" if lineno > 1 else f"col {col}"

    def snippet(self, node: ast.AST) -> str:
        try:
            text = ast.get_source_segment(self.source, node) or ""
        except Exception:
            text = ""
        return _one_line(text, 40)

    def fail(self, what: str, node: ast.AST) -> NoReturn:
        raise ValueParseError(f"not a literal: {what} at {self.where(node)}")

    def reject(self, node: ast.AST) -> NoReturn:
        if isinstance(node, ast.Name):
            self.fail(f"name {node.id!r}", node)
        if isinstance(node, ast.Call):
            self.fail(f"function call '{self.snippet(node.func)}(...)'", node)
        if isinstance(node, ast.Constant) and node.value is Ellipsis:
            self.fail("Ellipsis", node)
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            symbol = _OPERATOR_SYMBOLS.get(type(node.op), type(node.op).__name__)
            self.fail(f"operator {symbol!r} in {self.snippet(node)!r}", node)
        description = _NODE_DESCRIPTIONS.get(type(node), type(node).__name__)
        if isinstance(node, ast.Attribute):
            description += f" {self.snippet(node)!r}"
        self.fail(description, node)

    def count(self) -> None:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise ValueParseError(f"more than {self.max_nodes} syntax nodes")

    def enter(self, depth: int) -> int:
        depth += 1
        if depth > self.max_depth:
            raise ValueParseError(f"nesting deeper than {self.max_depth}")
        return depth

    def convert(self, node: ast.AST, depth: int) -> object:
        self.count()
        if isinstance(node, ast.Constant):
            if node.value is Ellipsis:
                self.reject(node)
            return node.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            inner = self.enter(depth)
            items = [self.convert(element, inner) for element in node.elts]
            if isinstance(node, ast.Tuple):
                return tuple(items)
            if isinstance(node, ast.List):
                return items
            return self.make_set(items, False, node)
        if isinstance(node, ast.Dict):
            return self.convert_dict(node, depth)
        if isinstance(node, ast.Name):
            return self.convert_name(node)
        if isinstance(node, ast.UnaryOp):
            return self.convert_signed(node)
        if isinstance(node, ast.BinOp):
            return self.convert_complex(node)
        if isinstance(node, ast.Call):
            return self.convert_call(node, depth)
        self.reject(node)

    def convert_dict(self, node: ast.Dict, depth: int) -> dict[object, object]:
        inner = self.enter(depth)
        pairs: list[tuple[object, object]] = []
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                self.fail("dict unpacking '**'", value_node)
            key = self.convert(key_node, inner)
            value = self.convert(value_node, inner)
            try:
                hash(key)
            except TypeError:
                self.fail(f"unhashable dict key of type {type_name(key)}", key_node)
            pairs.append((key, value))
        self.check_collisions([key for key, _ in pairs], "dict keys", node)
        return dict(pairs)

    def make_set(self, items: Iterable[object], frozen: bool, node: ast.AST) -> object:
        elements = list(items)
        try:
            self.check_collisions(elements, "set elements", node)
            return frozenset(elements) if frozen else set(elements)
        except TypeError:
            self.fail("unhashable set element", node)

    def check_collisions(self, items: list[object], what: str, node: ast.AST) -> None:
        """Refuse items of which too many distinct ones share a hash (quadratic to build)."""
        if len(items) < _HASH_CHECK_FROM:
            return
        hashes = list(map(hash, items))
        if len(hashes) - len(set(hashes)) <= MAX_HASH_COLLISIONS:
            return  # no hash value can be shared by more than that many items
        buckets: dict[int, list[object]] = {}
        for item, key in zip(items, hashes, strict=True):
            bucket = buckets.setdefault(key, [])
            # Items are plain literals: == runs no user code; at most MAX_HASH_COLLISIONS + 1.
            if not any(other is item or other == item for other in bucket):
                bucket.append(item)
                if len(bucket) > MAX_HASH_COLLISIONS:
                    raise ValueParseError(
                        f"more than {MAX_HASH_COLLISIONS} distinct {what} with one hash value "
                        f"at {self.where(node)} (quadratic to build and compare)"
                    )

    def convert_name(self, node: ast.Name) -> object:
        if node.id in _CONSTANT_NAMES:
            return _CONSTANT_NAMES[node.id]
        if node.id in _FLOAT_NAMES:
            return _FLOAT_NAMES[node.id]
        if node.id in _NAN_NAMES:
            # A fresh object each time, so containers never compare equal through identity.
            return float("nan")
        self.reject(node)

    def convert_signed(
        self, node: ast.AST, problem: str = "sign applied to non-number"
    ) -> int | float | complex:
        negate = False
        while isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.UAdd, ast.USub)):
                self.reject(node)
            negate ^= isinstance(node.op, ast.USub)
            node = node.operand
            self.count()
        value = self.number_atom(node, problem)
        return -value if negate else value

    def number_atom(self, node: ast.AST, problem: str) -> int | float | complex:
        if isinstance(node, ast.Constant) and _is_number(node.value):
            return node.value
        if isinstance(node, ast.Name) and node.id in _FLOAT_NAMES:
            return _FLOAT_NAMES[node.id]
        if isinstance(node, ast.Name) and node.id in _NAN_NAMES:
            return float("nan")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "float"
        ):
            return self.convert_float_call(node)
        if isinstance(node, (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict)):
            self.fail(f"{problem}: {self.snippet(node)!r}", node)
        self.reject(node)

    def convert_complex(self, node: ast.BinOp) -> complex:
        right = node.right
        if (
            not isinstance(node.op, (ast.Add, ast.Sub))
            or not isinstance(right, ast.Constant)
            or type(right.value) is not complex
        ):
            self.reject(node)
        self.count()  # the imaginary constant
        self.count()  # the real part
        left = self.convert_signed(node.left, "real part of complex is not a number")
        if type(left) not in (int, float):
            self.reject(node)
        return left + right.value if isinstance(node.op, ast.Add) else left - right.value

    def convert_float_call(self, node: ast.Call) -> float:
        arg = node.args[0] if len(node.args) == 1 else None
        if node.keywords or not isinstance(arg, ast.Constant) or type(arg.value) is not str:
            self.fail("float() takes one string argument such as 'inf' or 'nan'", node)
        spelling = arg.value.strip().lower()
        if spelling in _FLOAT_CALL_ARGS:
            return _FLOAT_CALL_ARGS[spelling]
        if spelling in _NAN_CALL_ARGS:
            return float("nan")
        self.fail(f"float({arg.value!r}); only inf, -inf, nan and infinity are allowed", node)

    def convert_call(self, node: ast.Call, depth: int) -> object:
        func = node.func
        if not isinstance(func, ast.Name) or node.keywords:
            self.reject(node)
        name = func.id
        if name == "float":
            return self.convert_float_call(node)
        if name in _EMPTY_CALLS:
            if node.args:
                self.fail(f"{name}() with arguments", node)
            self.enter(depth)
            return {"tuple": (), "list": [], "dict": {}}[name]
        if name not in _SET_CALLS:
            self.reject(node)
        frozen = name == "frozenset"
        if not node.args:
            self.enter(depth)
            return frozenset() if frozen else set()
        if len(node.args) != 1:
            self.fail(f"{name}() takes at most one argument", node)
        arg = node.args[0]
        # The argument display is the container; the call itself adds no nesting level.
        if not isinstance(arg, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Call)):
            self.fail(f"{name}() argument must be a list, tuple, set or dict display", arg)
        items = self.convert(arg, depth)
        if not (_is_sequence(items) or _is_set(items) or type(items) is dict):
            self.fail(f"{name}() argument must be a list, tuple, set or dict display", arg)
        return self.make_set(items, frozen, node)


def _separators(text: str, enough: int) -> int:
    """Commas and colons outside string literals (each follows a distinct syntax node); exact
    once the raw count reaches ``enough``, else the raw count. One linear pass: a backslash
    always escapes the next character (the tokenizer reads raw strings so too), and an
    unterminated string runs to the end (the text is then no literal anyway)."""
    count = text.count(",") + text.count(":")
    if count < enough or ("'" not in text and '"' not in text):
        return count
    count, index, size = 0, 0, len(text)
    while index < size:
        char = text[index]
        if char in "'\"":
            quote = text[index : index + 3] if text[index : index + 3] in ("'''", '"""') else char
            index += len(quote)
            while index < size and not text.startswith(quote, index):
                if text[index] == "\\":
                    index += 1
                elif len(quote) == 1 and text[index] == "\n":
                    break
                index += 1
            index += len(quote)
            continue
        if char in ",:":
            count += 1
        index += 1
    return count


def parse(
    text: str, *, max_chars: int = 1_000_000, max_depth: int = 100, max_nodes: int = 200_000
) -> object:
    """Parse a Python literal (plus JSON spellings and inf/nan forms) without evaluating code.

    Raises ValueParseError, with a one-line message, for anything else or any exceeded limit.
    The limits are applied before the costly work: the length first, then a lower bound on the
    syntax nodes (separators outside strings) before the text is compiled, the exact node count
    and depth while converting, and hash collisions before a set or dict is built.
    """
    if type(text) is not str:
        raise ValueParseError(f"expected str, got {type_name(text)}")
    if len(text) > max_chars:
        raise ValueParseError(f"answer longer than {max_chars} characters")
    source = text.strip()
    if not source:
        raise ValueParseError("empty answer")
    if _separators(source, max_nodes) >= max_nodes:
        raise ValueParseError(f"more than {max_nodes} syntax nodes")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        place = [f"line {exc.lineno}"] if exc.lineno and exc.lineno > 1 else []
        place += [f"col {exc.offset}"] if exc.offset else []
        where = f" at {' '.join(place)}" if place else ""
        raise ValueParseError(_one_line(f"syntax error: {exc.msg}{where}")) from None
    except (RecursionError, MemoryError):
        # CPython's parser reports stack exhaustion on very deep expressions this way.
        raise ValueParseError("expression too deeply nested to parse") from None
    except (ValueError, OverflowError) as exc:  # e.g. null bytes, integer-string limit
        raise ValueParseError(_one_line(f"cannot parse: {exc}")) from None
    parser = _Parser(source, max_depth, max_nodes)
    try:
        return parser.convert(tree.body, 0)
    except RecursionError:
        raise ValueParseError("nesting too deep to parse") from None


# ---------------------------------------------------------------------------------------
# render
# ---------------------------------------------------------------------------------------

_LOG10_2 = 0.30102999566398


class _Renderer:
    def __init__(self, max_chars: int | None, max_depth: int) -> None:
        self.max_chars = max_chars
        self.max_depth = max_depth
        self.used = 0
        self.active: set[int] = set()

    def reserve(self, size: int) -> None:
        if self.max_chars is not None and self.used + size > self.max_chars:
            raise RenderLimitExceeded(f"rendered text longer than {self.max_chars} characters")

    def put(self, parts: list[str], text: str) -> None:
        self.reserve(len(text))
        self.used += len(text)
        parts.append(text)

    def emit(self, parts: list[str], value: object, depth: int) -> None:
        # Exact type checks only: they never consult user code, unlike isinstance.
        if value is None or type(value) is bool:
            self.put(parts, repr(value))
        elif type(value) is int:
            self.put(parts, self.int_text(value))
        elif type(value) is float:
            self.put(parts, _float_text(value))
        elif type(value) is complex:
            self.put(parts, _complex_text(value))
        elif type(value) is str or type(value) is bytes:
            # The repr is never shorter than the content plus its quotes.
            self.reserve(len(value) + 2)
            self.put(parts, repr(value))
        elif type(value) in (list, tuple, dict, set, frozenset):
            self.container(parts, value, depth)
        else:
            raise NotALiteral(f"not a plain literal: value of type {type_name(value)}")

    def int_text(self, value: int) -> str:
        # Lower bound on the digit count, so huge ints are refused before repr does the work.
        self.reserve(max(0, int((value.bit_length() - 1) * _LOG10_2)))
        try:
            return repr(value)
        except ValueError:
            raise RenderLimitExceeded(
                f"integer with {value.bit_length()} bits exceeds the int-to-str digit limit"
            ) from None

    def container(self, parts: list[str], value: object, depth: int) -> None:
        key = id(value)
        if key in self.active:
            raise NotALiteral("recursive container")
        depth += 1
        if depth > self.max_depth:
            raise RenderLimitExceeded(f"nesting deeper than {self.max_depth}")
        self.active.add(key)
        try:
            if type(value) is list:
                self.sequence(parts, value, "[", "]", depth)
            elif type(value) is tuple:
                self.sequence(parts, value, "(", ",)" if len(value) == 1 else ")", depth)
            elif type(value) is dict:
                self.mapping(parts, value, depth)
            elif type(value) is set:
                self.set_like(parts, value, "{", "}", "set()", depth)
            elif type(value) is frozenset:
                self.set_like(parts, value, "frozenset({", "})", "frozenset()", depth)
        finally:
            self.active.discard(key)

    def sequence(
        self,
        parts: list[str],
        items: list[object] | tuple[object, ...],
        open_: str,
        close: str,
        depth: int,
    ) -> None:
        self.put(parts, open_)
        for index, item in enumerate(items):
            if index:
                self.put(parts, ", ")
            self.emit(parts, item, depth)
        self.put(parts, close)

    def mapping(self, parts: list[str], value: dict[object, object], depth: int) -> None:
        self.put(parts, "{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                self.put(parts, ", ")
            self.emit(parts, key, depth)
            self.put(parts, ": ")
            self.emit(parts, item, depth)
        self.put(parts, "}")

    def set_like(
        self,
        parts: list[str],
        value: set[object] | frozenset[object],
        open_: str,
        close: str,
        empty: str,
        depth: int,
    ) -> None:
        if not value:
            self.put(parts, empty)
            return
        texts: list[str] = []
        for item in value:
            piece: list[str] = []
            self.emit(piece, item, depth)
            texts.append("".join(piece))
        texts.sort()
        self.put(parts, open_)
        for index, text in enumerate(texts):
            if index:
                self.put(parts, ", ")
            parts.append(text)  # already counted while it was rendered
        self.put(parts, close)


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "float('-inf')"
    return repr(value)


def _complex_text(value: complex) -> str:
    if not (math.isfinite(value.real) and math.isfinite(value.imag)):
        raise NotALiteral(f"complex with a non-finite part has no literal form: {value!r}")
    return repr(value)


def render(value: object, *, max_chars: int | None = None, max_depth: int = 100) -> str:
    """Render a plain literal as canonical Python text that `parse` reads back equal.

    Only exact builtin types are accepted (subclasses raise NotALiteral) and no user code
    runs. Sets are ordered by their elements' rendered text. Signed zeros inside complex
    numbers may not survive a round trip (the value still compares equal). Shared, non-cyclic
    references are rendered in full each time, so pass max_chars for untrusted values.
    """
    renderer = _Renderer(max_chars, max_depth)
    parts: list[str] = []
    try:
        renderer.emit(parts, value, 0)
    except RecursionError:
        raise RenderLimitExceeded("nesting too deep to render") from None
    return "".join(parts)


# ---------------------------------------------------------------------------------------
# equal
# ---------------------------------------------------------------------------------------


def _tag(value: object) -> object:
    """A hashable key that is equal only for values equal with the same types throughout."""
    if type(value) is tuple:
        return (tuple, tuple(_tag(item) for item in value))
    if type(value) is frozenset:
        return (frozenset, frozenset(_tag(item) for item in value))
    return (type(value), value)


def _exact(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if (type(a) is list and type(b) is list) or (type(a) is tuple and type(b) is tuple):
        return len(a) == len(b) and all(_exact(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict and type(b) is dict:
        if len(a) != len(b):
            return False
        by_tag = {_tag(key): item for key, item in b.items()}
        for key, item in a.items():
            tag = _tag(key)
            if tag not in by_tag or not _exact(item, by_tag[tag]):
                return False
        return True
    if (type(a) is set and type(b) is set) or (type(a) is frozenset and type(b) is frozenset):
        return {_tag(x) for x in a} == {_tag(y) for y in b}
    return bool(a == b)


class _Lenient:
    def __init__(self, rel_tol: float, abs_tol: float) -> None:
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol

    def close(self, x: float, y: float) -> bool:
        if x == y:
            return True
        try:
            fx, fy = float(x), float(y)
        except OverflowError:  # an int beyond float range: only exact equality counts
            return False
        if math.isnan(fx) or math.isnan(fy):
            return math.isnan(fx) and math.isnan(fy)
        if math.isinf(fx) or math.isinf(fy):
            return False  # equal infinities were caught by == above
        return math.isclose(fx, fy, rel_tol=self.rel_tol, abs_tol=self.abs_tol)

    def equal(self, a: object, b: object) -> bool:
        if type(a) is bool or type(b) is bool:
            return type(a) is type(b) and a == b
        if _is_number(a) and _is_number(b):
            if type(a) is complex or type(b) is complex:
                ca, cb = complex(a), complex(b)
                return self.close(ca.real, cb.real) and self.close(ca.imag, cb.imag)
            return self.close(a, b)  # type: ignore[arg-type]  # both int or float here
        if _is_sequence(a) and _is_sequence(b):
            return len(a) == len(b) and all(self.equal(x, y) for x, y in zip(a, b, strict=True))
        if _is_set(a) and _is_set(b):
            return self.sets(a, b)
        if type(a) is dict and type(b) is dict:
            return a.keys() == b.keys() and all(self.equal(item, b[key]) for key, item in a.items())
        return bool(a == b)

    def sets(self, a: set[object] | frozenset[object], b: set[object] | frozenset[object]) -> bool:
        if len(a) != len(b):
            return False
        if a == b:
            return True
        # Pair off exact matches by hash, then match the rest greedily by tolerance.
        rest_a = [x for x in a if x not in b]
        rest_b = [y for y in b if y not in a]
        if len(rest_a) != len(rest_b):
            return False
        for x in rest_a:
            for index, y in enumerate(rest_b):
                if self.equal(x, y):
                    del rest_b[index]
                    break
            else:
                return False
        return True


def equal(
    a: object, b: object, policy: str = "strict", *, rel_tol: float = 1e-6, abs_tol: float = 1e-9
) -> bool:
    """Compare two plain literal values under an equality policy.

    - "strict": Python ``==`` (CRUXEval semantics): ``(1,) != [1]``, ``1 == 1.0 == True``,
      nan != nan.
    - "exact": types must match at every level (``True != 1``, ``1 != 1.0``, list != tuple,
      set != frozenset); dicts ignore key order. Floats compare with ``==``, so nan != nan
      here too, even for the same object; set elements and dict keys are matched by hashing,
      where Python's identity shortcut applies.
    - "lenient": list and tuple interchangeable, set and frozenset interchangeable; numbers
      compared with ``math.isclose(rel_tol, abs_tol)``, nan == nan, inf == inf of the same
      sign; bools equal only to bools; dict keys matched by ``==``, values leniently.
    """
    if policy == "strict":
        return bool(a == b)
    if policy == "exact":
        return _exact(a, b)
    if policy == "lenient":
        return _Lenient(rel_tol, abs_tol).equal(a, b)
    raise ValueError(f"unknown equality policy {policy!r}; expected one of {', '.join(POLICIES)}")


def top_level_indexes(text: str) -> list[int]:
    """Indexes of the characters outside brackets and quotes."""
    found, depth, quote = [], 0, ""
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[index - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0:
            found.append(index)
    return found
