"""Answers that are literals, read and matched without evaluation: the rule CoRE's answers and
probes and the cases' probes share.

:func:`read_value` takes the literal a text states (all of it, else its longest literal prefix).
A probe answer (:func:`grade_probe`) matches by a fixed rule:

- one gold value: the answer's literal (trailing prose cut; a single ``name = value`` part is
  read as its value) equals it under ``values.equal(..., "lenient")``; for a ``str`` gold, an
  answer that is no literal also matches when its bare text is the string (``else`` vs 'else');
- several parts (``metadata["multi_part"]``): a dict with the same names (quotes ignored), a
  tuple or list in the gold's order, or ``name = value`` / ``name: value`` parts; each part
  matches as above.
"""

from __future__ import annotations

from codereasoner import values
from codereasoner.tasks import extraction
from codereasoner.tasks.base import Item, Reason, Score
from codereasoner.tasks.plans import verdict
from codereasoner.values import top_level_indexes

__all__ = ["grade_probe", "match_parts", "match_value", "parts_of", "read_value"]


def read_value(text: str) -> tuple[bool, object]:
    """``(True, value)`` for the literal the text states (all of it, else its longest literal
    prefix: trailing prose is cut); ``(False, None)`` when there is none."""
    for candidate in (text, extraction.robust_value(text)):
        if candidate is not None:
            try:
                return True, values.parse(candidate)
            except values.ValueParseError:
                continue
    return False, None


def _split(text: str, separators: str) -> list[str]:
    cuts = [index for index in top_level_indexes(text) if text[index] in separators]
    pieces = [text[a + 1 : b] for a, b in zip([-1, *cuts], [*cuts, len(text)], strict=True)]
    return [piece.strip() for piece in pieces if piece.strip()]


def _separator(part: str) -> int | None:
    """The first top-level ``:`` or ``=`` (not ``==``, ``<=``, ``>=``, ``!=``)."""
    for index in top_level_indexes(part):
        char, before, after = part[index], part[index - 1 : index], part[index + 1 : index + 2]
        if char == ":" or (char == "=" and before not in ("=", "<", ">", "!") and after != "="):
            return index
    return None


def _name(text: str) -> str:
    return text.strip().strip("`'\"*").strip()


def parts_of(text: str) -> dict[str, object] | None:
    """``a = 1, b: [2]; c=x`` -> ``{"a": 1, "b": [2]}`` (parts that hold no literal dropped);
    None when the text has no such part."""
    found: dict[str, object] = {}
    for part in _split(text, ",;\n"):
        cut = _separator(part)
        if cut is None or not _name(part[:cut]):
            continue
        ok, value = read_value(part[cut + 1 :])
        if ok:
            found[_name(part[:cut])] = value
    return found or None


def _bare(text: str) -> str:
    text = text.strip().strip("`").strip().rstrip(".").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def match_value(gold: object, text: str) -> bool:
    ok, value = read_value(text)
    if ok and values.equal(gold, value, "lenient"):
        return True
    parts = parts_of(text)
    if parts is not None and len(parts) == 1:
        return values.equal(gold, next(iter(parts.values())), "lenient")
    return not ok and type(gold) is str and _bare(text) == gold


def match_parts(gold: dict[str, object], text: str) -> bool:
    ok, value = read_value(text)
    for candidate in ([value] if ok else []) + [parts_of(text)]:
        ordered: list[object] | None = None
        if type(candidate) is dict:
            named = {_name(key): item for key, item in candidate.items() if type(key) is str}
            if set(named) == set(gold):
                return all(values.equal(gold[key], named[key], "lenient") for key in gold)
            ordered = list(candidate.values())
        elif type(candidate) in (list, tuple):
            ordered = list(candidate)  # type: ignore[call-overload]
        if ordered is not None and len(ordered) == len(gold):
            pairs = zip(gold.values(), ordered, strict=True)
            return all(values.equal(g, v, "lenient") for g, v in pairs)
    return False


def grade_probe(item: Item, sample: int, text: str) -> Score:
    try:
        gold = item.truth_value()
    except ValueError as exc:
        return verdict(item, sample, text, Reason.BAD_TRUTH, str(exc))
    multi = bool(item.metadata.get("multi_part")) and type(gold) is dict
    same = match_parts(gold, text) if multi else match_value(gold, text)  # type: ignore[arg-type]
    if same:
        return verdict(item, sample, text, Reason.CORRECT)
    readable = read_value(text)[0] or parts_of(text) is not None or type(gold) is str
    return verdict(item, sample, text, Reason.WRONG if readable else Reason.NOT_LITERAL)
