"""REval answer extraction: upstream's ``_postprocess`` rules (docs/benchmark-rules.md) and robust ones.

Upstream functions never fail: they return the text grading judges, using upstream's sentinels
when a CoT completion lacks ``[/THOUGHT]`` (coverage ``NO``, path ``-2``, state and output
``ERROR``). Robust functions read the first ``[ANSWER]`` block (closing tag optional, code fences
dropped, else the text after ``[/THOUGHT]``), cope with trailing prose and JSON spellings, and
return ``None`` when there is no answer. Nothing here evaluates model text.
"""

from __future__ import annotations

import ast
import re

from codereasoner.tasks.extraction import answer_blocks

__all__ = [
    "COT_END",
    "coverage_official",
    "coverage_robust",
    "cut",
    "output_official",
    "output_robust",
    "path_official",
    "path_robust",
    "robust_block",
    "state_official",
    "state_robust",
]

COT_END = "[/THOUGHT]"
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_YES_NO = re.compile(r"\b(yes|no|true|false)\b", re.IGNORECASE)
_LINE_PREFIX = re.compile(r"^(?:line\s*)?(\d+)\s*(?:\t|[:.)|]\s*|\s+(?=\S))", re.IGNORECASE)
# Both are matched after the text around them is stripped by str methods: a pattern that began
# with optional whitespace (or non-word characters) before more of it backtracked quadratically
# over a long run of spaces.
_TYPE = re.compile(r"(<class '[\w.]+'>|[A-Za-z_][\w.]*(?:\[[^;]*\])?)")
_WORD_SPAN = re.compile(r"\w(?:.*\w)?", re.DOTALL)
_TRUNCATED_CLOSE = re.compile(r"\[/ANSWER(?!\])")
_MAX_LINES = 200


def cut(text: str) -> str:
    """After the first ``[ANSWER]`` (stripped), before ``[/ANSWER]`` and ``[/ANSWER`` (stripped)."""
    start = text.find("[ANSWER]")
    if start != -1:
        text = text[start + len("[ANSWER]") :].strip()
    for closing in ("[/ANSWER]", "[/ANSWER"):
        end = text.find(closing)
        if end != -1:
            text = text[:end].strip()
    return text


def coverage_official(text: str, *, cot: bool = False) -> str:
    """``YES`` or ``NO``: upper-cased, and only the first three characters decide."""
    answer = text.upper().strip()
    if cot and COT_END not in answer:
        return "NO"
    head = cut(answer)[:3]
    return "YES" if "YES" in head and "NO" not in head else "NO"


def path_official(text: str, *, cot: bool = False) -> str:
    """The first line of the answer, stripped; ``-2`` when empty or when the CoT is unfinished."""
    if cot and COT_END not in text:
        return "-2"
    return cut(text).split("\n")[0].strip() or "-2"


def state_official(text: str, *, cot: bool = False) -> str:
    """The answer with curly quotes straightened; ``ERROR`` when the CoT is unfinished."""
    if cot and COT_END not in text:
        return "ERROR"
    return cut(text.translate(_QUOTES).strip())


def output_official(text: str, *, cot: bool = False) -> str:
    """The completed test code; ``ERROR`` when the CoT is unfinished."""
    if cot and COT_END not in text:
        return "ERROR"
    return cut(text)


def robust_block(text: str) -> str:
    """The first non-empty ``[ANSWER]`` block, else the text after ``[/THOUGHT]``, fences dropped."""
    text = _TRUNCATED_CLOSE.sub("[/ANSWER]", text)
    if "[ANSWER]" not in text and COT_END in text:
        text = text.rsplit(COT_END, 1)[1]
    blocks = [block.strip() for block in answer_blocks(text)]
    return next((block for block in blocks if block), "")


def coverage_robust(text: str) -> str | None:
    """``YES``/``NO`` from the first yes/no/true/false word of the answer block."""
    found = _YES_NO.search(robust_block(text))
    if found is None:
        return None
    return "YES" if found.group(1).lower() in ("yes", "true") else "NO"


def path_robust(text: str, code: str) -> str | None:
    """A code line (stripped) or ``-1``: a bare line number is read as that line of ``code``; a
    ``17\\t`` / ``Line 17:`` prefix or a trailing comment is dropped when what remains is a line."""
    lines = [line.strip().strip("`").strip() for line in robust_block(text).split("\n")]
    answer = next((line for line in lines if line), "").replace("\u2212", "-")
    if not answer:
        return None
    if re.match(r"-1(?!\d)", answer):
        return "-1"
    code_lines = code.split("\n")
    number = re.fullmatch(r"(?:line\s*)?(\d+)\W*", answer, re.IGNORECASE)
    if number and 1 <= int(number.group(1)) <= len(code_lines):
        return code_lines[int(number.group(1)) - 1].strip()
    stripped = {line.strip() for line in code_lines}
    prefix = _LINE_PREFIX.match(answer)
    candidates = [answer, answer[prefix.end() :].strip() if prefix else answer]
    candidates += [candidate.split("#", 1)[0].strip() for candidate in candidates]
    return next((candidate for candidate in candidates if candidate in stripped), answer)


def _is_nil(line: str) -> bool:
    """``nil`` alone between non-word characters (``[Nil]``, ``**nil**.``)."""
    words = _WORD_SPAN.search(line)
    return words is not None and words.group().lower() == "nil"


def state_robust(text: str) -> str | None:
    """``Nil`` or ``value; type`` from the first answer line that has one."""
    block = robust_block(text.translate(_QUOTES))
    for raw in block.split("\n")[:_MAX_LINES]:
        line = raw.strip().strip("`").strip()
        if not line:
            continue
        if _is_nil(line):
            return "Nil"
        if ";" in line:
            value, _, rest = line.rpartition(";")
            kind = _TYPE.match(rest.lstrip().lstrip("`").lstrip())
            if kind is not None:
                value = value.strip().strip("`").strip()
                return f"{'None' if value == 'null' else value}; {kind.group(1)}"
    return None


def output_robust(text: str) -> str | None:
    """The completed test code, with prose lines before and after it dropped."""
    lines = [line.rstrip() for line in robust_block(text).split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not _parses("\n".join(lines)) and not _parses(lines[0]):
        lines.pop(0)
    while len(lines) > 1 and not _parses("\n".join(lines)):
        lines.pop()
    answer = "\n".join(lines).strip("\n")
    return answer if answer.strip() else None


def _parses(source: str) -> bool:
    try:
        ast.parse(source.strip("\n"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
