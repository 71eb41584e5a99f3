"""Answer extraction: the upstream rules (quirks included) and the project's robust rules.

The upstream rule here is CRUXEval-O's (docs/benchmark-rules.md), the default of every
output-prediction kind; the other upstream rules are in their family folders. Upstream rules never
fail: they return a string, possibly empty or unparsable, that grading then judges. The robust
functions look for the asserted value the way a reader would (first ``[ANSWER]`` block, code
fences removed, the ``assert ... == X`` statement parsed with :mod:`ast`, trailing prose cut) and
return ``None`` when there is no answer. :func:`answer_tag_block` finds the ``<Answer>`` block
that models trained in the project's case format end with (``--extraction answer-tag``); the
kinds then read it with their robust rules. Nothing here evaluates model text.
"""

from __future__ import annotations

import ast
import re

__all__ = [
    "answer_blocks",
    "answer_tag_block",
    "answer_tag_blocks",
    "between",
    "cruxeval_output",
    "find_assertion",
    "last_line",
    "robust_call",
    "robust_value",
]

_MAX_PARSE_CHARS = 20_000
_MAX_STATEMENT_LINES = 200
_MAX_CUTS = 200
_FENCE = re.compile(r"^\s*(```|~~~|\[/?PYTHON\])")
_WORDS = frozenset({"True", "False", "None", "true", "false", "null", "inf", "nan", "NaN"})
# A block's content holds no opening tag: an ``<Answer>`` quoted in the reasoning (a string
# method replacing the tag, say) does not swallow the text up to the real block.
_ANSWER_TAG = re.compile(r"<answer>((?:(?!<answer>).)*?)(</answer>|\Z)", re.IGNORECASE | re.DOTALL)
# Matched on a line whose trailing spaces, stars and backticks are stripped first (a lazy group
# before them backtracked quadratically over a long run of spaces).
_ANSWER_LINE = re.compile(r"^\W*(?:final\s+)?(?:answer|output)\W*?[:=][\s*`]*(.+)$", re.IGNORECASE)


def _without_tail(line: str) -> str:
    """``line`` without its trailing whitespace (``\\s``, as str.isspace), stars and backticks."""
    end = len(line)
    while end and (line[end - 1].isspace() or line[end - 1] in "*`"):
        end -= 1
    return line[:end]


def between(text: str, marker: str) -> str:
    """The text after the first ``marker`` up to the second one (or to the end)."""
    return text.split(marker, 2)[1] if marker in text else text


# ---------------------------------------------------------------------------------------
# upstream rules
# ---------------------------------------------------------------------------------------


def last_line(text: str) -> str:
    """The last line, stripped (the OpenAI path's fallback answer)."""
    return text.rsplit("\n", 1)[-1].strip()


def cruxeval_output(completion: str, *, cot: bool = False, openai: bool = False) -> str:
    """CRUXEval-O post-processing (HF/vLLM path, or the OpenAI path with ``openai=True``)."""
    text = completion
    if cot and "[ANSWER]" in text:
        text = between(text, "[ANSWER]").strip()
    elif cot and openai:
        return last_line(text)
    if "==" in text:
        text = between(text, "==").strip()
    return text.strip()


# ---------------------------------------------------------------------------------------
# robust rules
# ---------------------------------------------------------------------------------------


def answer_blocks(text: str) -> list[str]:
    """The contents of ``[ANSWER]`` blocks (closing tag optional), else the whole text.

    Fence lines (```` ``` ````, ``~~~``, ``[PYTHON]``) are dropped from each block.
    """
    if "[ANSWER]" in text:
        blocks = [part.split("[/ANSWER]", 1)[0] for part in text.split("[ANSWER]")[1:]]
    else:
        blocks = [text.split("[/ANSWER]", 1)[0]]
    return ["\n".join(ln for ln in b.split("\n") if not _FENCE.match(ln)) for b in blocks]


def answer_tag_blocks(text: str, *, closed: bool = False) -> list[str]:
    """The stripped contents of the ``<Answer>…</Answer>`` blocks, in order (tag names in any
    case). A final ``<Answer>`` never closed runs to the end of the text, unless ``closed``."""
    return [
        found.group(1).strip()
        for found in _ANSWER_TAG.finditer(text)
        if found.group(2) or not closed
    ]


def answer_tag_block(text: str) -> str | None:
    """The last closed ``<Answer>`` block's content, else a final unclosed one's
    (:func:`answer_tag_blocks`); None when the text has none or it is empty."""
    blocks = answer_tag_blocks(text, closed=True) or answer_tag_blocks(text)
    return (blocks[-1] or None) if blocks else None


def _parse(source: str, mode: str = "exec") -> ast.AST | None:
    return _try_parse(source, mode)[0]


def _try_parse(source: str, mode: str = "exec") -> tuple[ast.AST | None, bool]:
    """The tree, or None and whether more lines could complete the source."""
    if len(source) > _MAX_PARSE_CHARS:
        return None, False
    try:
        return ast.parse(source, mode=mode), False
    except SyntaxError as exc:
        message = exc.msg or ""
        return None, "never closed" in message or "unterminated triple" in message
    except (ValueError, RecursionError, MemoryError, OverflowError):
        return None, False


def _prefixes(line: str) -> list[str]:
    """The line cut before each later space, longest first: drops trailing prose."""
    cuts = [m.start() for m in re.finditer(r"\s", line)][:_MAX_CUTS]
    return [line] + [line[:cut] for cut in reversed(cuts) if line[:cut].strip()]


def _as_assertion(source: str) -> tuple[tuple[str, str] | None, bool]:
    """``(lhs, rhs)`` when ``source`` is one ``assert lhs == rhs``; and whether it is incomplete."""
    text = source.strip()
    tree, incomplete = _try_parse(text)
    if not isinstance(tree, ast.Module) or len(tree.body) != 1:
        return None, incomplete
    statement = tree.body[0]
    if not isinstance(statement, ast.Assert):
        return None, False
    test = statement.test
    if not isinstance(test, ast.Compare) or not isinstance(test.ops[0], ast.Eq):
        return None, False
    left = ast.get_source_segment(text, test.left)
    right = ast.get_source_segment(text, test.comparators[0])
    return ((left, right) if left is not None and right is not None else None), False


def find_assertion(text: str, *, last: bool = False) -> tuple[str, str] | None:
    """``(lhs, rhs)`` source text of the first (or last) ``assert lhs == rhs`` statement.

    A statement may span lines (a multi-line literal); trailing prose on its line is cut.
    """
    lines = text.split("\n")
    found: list[tuple[str, str]] = []
    for start, line in enumerate(lines):
        if not re.match(r"\s*assert\b", line):
            continue
        hit, end = None, start + 1
        while hit is None and end <= min(len(lines), start + _MAX_STATEMENT_LINES):
            hit, incomplete = _as_assertion("\n".join(lines[start:end]))
            if not incomplete:
                break
            end += 1
        if hit is None:
            cuts = (_as_assertion(prefix)[0] for prefix in _prefixes(line.strip()))
            hit = next(filter(None, cuts), None)
        if hit is not None:
            if not last:
                return hit
            found.append(hit)
    return found[-1] if found else None


def _expression_prefix(line: str, want_call: str | None = None) -> str | None:
    """The longest prefix of ``line`` (cut at spaces) that is one plausible answer expression.

    Comments are dropped; a lone word such as ``I`` (from prose) is not an answer.
    """
    for candidate in _prefixes(line.strip().strip("`")):
        tree = _parse(candidate, "eval")
        if not isinstance(tree, ast.Expression):
            continue
        body = tree.body
        if want_call is not None and not _calls(body, want_call):
            continue
        if isinstance(body, ast.Name) and body.id not in _WORDS:
            continue
        return ast.get_source_segment(candidate, body)
    return None


def _calls(node: ast.AST, entry: str) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == entry


def robust_value(text: str, *, last: bool = False) -> str | None:
    """The predicted value's source text: the asserted right-hand side, else a bare answer."""
    for block in _ordered(answer_blocks(text), last):
        hit = find_assertion(block, last=last)
        if hit is not None:
            return hit[1]
    for block in _ordered(answer_blocks(text), last):
        lines = [line for line in block.split("\n") if line.strip()]
        labelled = [m.group(1) for line in lines if (m := _ANSWER_LINE.match(_without_tail(line)))]
        for line in _ordered(labelled, True) + _ordered(lines, last)[:1]:
            value = _expression_prefix(line.split("==", 1)[1] if "==" in line else line)
            if value is not None:
                return value
    return None


def robust_call(text: str, entry: str = "f", *, last: bool = False) -> str | None:
    """The predicted call's source text: the asserted left-hand side, else a bare call."""
    for block in _ordered(answer_blocks(text), last):
        hit = find_assertion(block, last=last)
        tree = _parse(hit[0], "eval") if hit is not None else None
        if hit is not None and isinstance(tree, ast.Expression) and _calls(tree.body, entry):
            return hit[0]
    pattern = re.compile(rf"(?<![\w.]){re.escape(entry)}\s*\(")
    for block in _ordered(answer_blocks(text), last):
        for line in _ordered(block.split("\n"), last):
            match = pattern.search(line)
            if match:
                call = _expression_prefix(line[match.start() :].split("==", 1)[0], entry)
                if call is not None:
                    return call
    return None


def _ordered(items: list[str], last: bool) -> list[str]:
    return list(reversed(items)) if last else items
