"""Literal values for the offline generator: receivers and method arguments by kind.

Values are small on purpose (short strings, 2-5 elements) so that outputs render in under 50
characters. Strings are ASCII except a few cases for ``str.is*`` predicates. Arguments are made
from the receiver's value where the method needs it (a separator that occurs, an element that is
present), so that most calls do not raise.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from codereasoner import values
from codereasoner.synth.generators.offline_samples import (
    ASCII_CLASS_SAMPLES,
    CLASS_SAMPLES,
    ENCODINGS,
    FILTER_FUNCS,
    FORMATS,
    LETTERS,
    MAP_FUNCS,
    NAMED_FORMATS,
    PAD_CHARS,
    SEPARATORS,
    TYPE_SPECS,
    WORDS,
)


@dataclass(frozen=True)
class Code:
    """Argument text that is not a literal (a keyword, a function, a type); always inline."""

    text: str


def literal(value: Any) -> str:
    """The code of an argument or input: a literal, or a :class:`Code`'s text."""
    if isinstance(value, Code):
        return value.text
    return values.render(value)


def word(rng: random.Random, short: bool = False) -> str:
    if rng.random() < 0.6:
        choice = rng.choice(WORDS)
        return choice[:3] if short else choice
    size = rng.randint(1, 3) if short else rng.randint(2, 5)
    return "".join(rng.choice(LETTERS) for _ in range(size))


def text(rng: random.Random) -> str:
    """A short string without surrounding whitespace: a word, two words, or letters and digits."""
    roll = rng.random()
    if roll < 0.35:
        return word(rng)
    if roll < 0.6:
        return f"{word(rng, True)}{rng.choice(' -_.')}{word(rng, True)}"
    if roll < 0.8:
        pool = LETTERS[: rng.randint(4, 26)]
        return "".join(rng.choice(pool) for _ in range(rng.randint(3, 9)))
    return "".join(rng.choice("abcxyz0123 ") for _ in range(rng.randint(3, 8))).strip() or "ab1"


def cased(rng: random.Random) -> str:
    base = text(rng)
    style = rng.randrange(5)
    if style == 0:
        return base.upper()
    if style == 1:
        return base.title()
    if style == 2:
        return "".join(c.upper() if rng.random() < 0.4 else c for c in base)
    if style == 3:
        return base.capitalize()
    return base


class Values:
    """Makes receivers and arguments for one case; ``sep`` is shared by the case's receivers."""

    def __init__(self, rng: random.Random, binary: bool) -> None:
        self.rng = rng
        self.binary = binary
        self.sep = rng.choice(SEPARATORS)
        self.format = rng.choice(FORMATS)
        self.named = rng.choice(NAMED_FORMATS)
        self.sets_as_lists = rng.random() < 0.25
        self.join_text = rng.random() < 0.2 and not binary
        self.tight = False  # set when several loops repeat a growing call

    # -- receivers -------------------------------------------------------------------------

    def receiver(self, kind: str, small: bool = False) -> Any:
        value = self._receiver(kind, small)
        if self.binary and isinstance(value, str):
            return value.encode("latin-1")
        return value

    def _receiver(self, kind: str, small: bool) -> Any:
        rng = self.rng
        size = 3 if small else rng.randint(3, 5)
        if kind == "text":
            return text(rng)
        if kind == "text_cased":
            return cased(rng)
        if kind == "text_class":
            return rng.choice(ASCII_CLASS_SAMPLES if self.binary else CLASS_SAMPLES)
        if kind == "text_padded":
            pad = rng.choice(PAD_CHARS)
            left, right = pad * rng.randint(0, 3), pad * rng.randint(0, 3)
            return f"{left}{word(rng)}{right}" if left or right else f" {word(rng)} "
        if kind == "text_sep":
            parts = [word(rng, True) for _ in range(rng.randint(2, 3 if small else 4))]
            if rng.random() < 0.15:
                parts.insert(rng.randrange(len(parts) + 1), "")
            return self.sep.join(parts)
        if kind == "text_lines":
            parts = [word(rng, True) for _ in range(rng.randint(2, 3))]
            return rng.choice(("\n", "\n", "\r\n")).join(parts) + rng.choice(("", "\n"))
        if kind == "text_tabs":
            parts = [word(rng, True) for _ in range(rng.randint(2, 3))]
            return "\t".join(parts)
        if kind == "text_digits":
            digits = str(rng.randint(0, 999))
            return rng.choice((digits, "-" + digits, "+" + digits, word(rng, True), digits + "a"))
        if kind == "fmt":
            return self.format[0]
        if kind == "fmt_named":
            return self.named[0]
        if kind == "joiner":
            return rng.choice(("", " ", ",", "-", ", ", "+", "|", "::"))
        if kind == "ilist":
            return [rng.choice((rng.randint(0, 9), rng.randint(-5, 20))) for _ in range(size)]
        if kind == "slist":
            return [word(rng, True) for _ in range(size - 1)]
        if kind == "flags":
            pool = rng.choice(((0, 1, 2, 3), (True, False), ("", "a", "b"), (0, 5, 7)))
            return [rng.choice(pool) for _ in range(rng.randint(2, 4))]
        if kind == "sdict":
            keys = rng.sample(("a", "b", "c", "x", "y", "k", "id", "n", "key", "v"), size - 1)
            return {key: rng.randint(0, 9) for key in keys}
        if kind in ("iset", "ifrozen"):
            return set(rng.sample(range(0, 13), size))
        if kind == "ituple":
            return tuple(rng.randint(0, 6) for _ in range(size))
        if kind == "int":
            return rng.choice((rng.randint(-20, 20), rng.randint(0, 200)))
        if kind == "uint":
            return rng.choice((rng.randint(0, 255), rng.randint(256, 5000)))
        if kind == "float":
            return rng.randint(-40, 40) / rng.choice((2, 4, 8))
        if kind == "code":
            return rng.choice((rng.randint(65, 90), rng.randint(97, 122), rng.randint(48, 57)))
        if kind == "char":
            return rng.choice(LETTERS + LETTERS.upper() + "0123456789 !?#")
        if kind == "any":
            return rng.choice(
                (
                    rng.randint(-5, 9),
                    word(rng, True),
                    [1, 2],
                    2.5,
                    (1, "a"),
                    True,
                    None,
                    {"a": 1},
                    b"ab",
                    0.0,
                )
            )
        raise KeyError(f"unknown receiver kind {kind!r}")

    # -- arguments -------------------------------------------------------------------------

    def args(self, kind: str, receiver: Any) -> list[Any]:
        """The argument(s) for one argument kind: usually one, two for ``from_to``/``delete``,
        one per placeholder for ``fmt_args``."""
        if kind == "fmt_args":
            return [self._format_value(code) for code in self.format[1]]
        if kind == "from_to":
            size = self.rng.randint(1, 3)
            source = "".join(self.rng.sample(self._alphabet(receiver), size))
            target = "".join(self.rng.choice(LETTERS) for _ in range(size))
            return [self._encode(source), self._encode(target)]
        if kind == "delete":
            return [None, self._encode(self._sub(receiver, present=0.8))]
        value = self._arg(kind, receiver)
        if isinstance(value, str) and kind not in (
            "encoding",
            "hex_text",
            "float_hex",
            "byteorder",
        ):
            value = self._encode(value)
        if kind in ("str_list", "suffixes") and self.binary and isinstance(value, list | tuple):
            value = type(value)(item.encode("latin-1") for item in value)
        return [value]

    def _encode(self, value: str) -> str | bytes:
        return value.encode("latin-1") if self.binary else value

    def _text(self, receiver: Any) -> str:
        if isinstance(receiver, bytes):
            return receiver.decode("latin-1")
        return receiver if isinstance(receiver, str) else ""

    def _alphabet(self, receiver: Any) -> str:
        chars = sorted(set(self._text(receiver)) - {" "})
        return "".join(chars) if len(chars) >= 3 else LETTERS[:6]

    def _sub(self, receiver: Any, present: float, longest: int = 2) -> str:
        source = self._text(receiver)
        if source and self.rng.random() < present:
            size = self.rng.randint(1, min(longest, len(source)))
            start = self.rng.randrange(len(source) - size + 1)
            return source[start : start + size]
        return self.rng.choice(LETTERS)

    def _format_value(self, code: str) -> Any:
        if code == "s":
            return word(self.rng, True)
        if code == "i":
            return self.rng.randint(0, 99)
        return self.rng.randint(0, 99) / 4

    def _elements(self, receiver: Any) -> list[Any]:
        if isinstance(receiver, dict):
            return list(receiver)
        if isinstance(receiver, set | frozenset):
            return sorted(receiver)
        return list(receiver)

    def _arg(self, kind: str, receiver: Any) -> Any:
        rng = self.rng
        source = self._text(receiver)
        if kind == "sub":
            return self._sub(receiver, 0.8)
        if kind == "sub_in":
            return self._sub(receiver, 1.0)
        if kind == "prefix":
            return source[: rng.randint(1, 3)] if source and rng.random() < 0.7 else word(rng, True)
        if kind == "suffix":
            return (
                source[-rng.randint(1, 3) :]
                if source and rng.random() < 0.7
                else rng.choice(LETTERS)
            )
        if kind == "suffixes":
            return (self._arg("suffix", receiver), rng.choice(LETTERS))
        if kind == "chars":
            edge = {source[0], source[-1]} if source else set()
            return "".join(sorted(edge | {rng.choice(PAD_CHARS + LETTERS[:4])}))
        if kind == "width":
            return max(0, len(receiver) + rng.randint(-2, 5))
        if kind == "fill":
            return rng.choice("*-_.#=+0")
        if kind == "sep":
            if self.sep in source and rng.random() < 0.85:
                return self.sep
            return self._sub(receiver, 0.7, 1)
        if kind == "maxsplit":
            return rng.choice((0, 1, 1, 2, -1))
        if kind == "tabsize":
            return rng.randint(1, 6)
        if kind == "old":
            self._old = self._sub(receiver, 0.8)
            return self._old
        if kind == "new":
            # never containing the old text, so that repeated replacing cannot grow the string
            options = [
                new
                for new in ("", "-", "_", "X", "zz", "o", "*", "ab")
                if not new or self._old not in new
            ]
            return rng.choice(options)
        if kind == "count":
            return rng.choice((1, 1, 2, -1))
        if kind == "start":
            return rng.randint(0, max(0, len(receiver) - 1))
        if kind == "encoding":
            return rng.choice(ENCODINGS)
        if kind == "keepends":
            return rng.random() < 0.5
        if kind == "str_list":
            if self.join_text:
                return word(rng)
            return [word(rng, True) for _ in range(rng.randint(2, 3))]
        if kind == "fmt_mapping":
            keys = self.named[1].split()
            return {key: rng.choice((word(rng, True), rng.randint(0, 99))) for key in keys}
        if kind == "table":
            chars = self._alphabet(receiver)
            picked = rng.sample(chars, min(len(chars), rng.randint(1, 3)))
            return {ord(c): rng.choice((None, "", rng.choice(LETTERS), "*")) for c in picked}
        if kind in ("elem", "value"):
            return rng.randint(0, 9)
        if kind == "elem_in":
            return rng.choice(self._elements(receiver))
        if kind == "elem_any":
            items = self._elements(receiver)
            return rng.choice(items) if items and rng.random() < 0.6 else rng.randint(0, 9)
        if kind == "elems":
            return [rng.randint(0, 9) for _ in range(1 if self.tight else rng.randint(1, 2))]
        if kind == "index":
            return rng.randint(-2, len(receiver) + 1)
        if kind == "index_in":
            return rng.randint(-len(receiver), len(receiver) - 1)
        if kind == "reverse":
            return Code(f"reverse={rng.random() < 0.7}")
        if kind == "key_in":
            return rng.choice(self._elements(receiver))
        if kind == "key_any":
            keys = self._elements(receiver)
            return rng.choice(keys) if keys and rng.random() < 0.5 else rng.choice(("z", "q", "m"))
        if kind == "mapping":
            keys = [*self._elements(receiver), "z", "w"]
            return {key: rng.randint(0, 9) for key in rng.sample(keys, rng.randint(1, 2))}
        if kind == "keys":
            if rng.random() < 0.25:
                return word(rng, True)
            return rng.sample(("a", "b", "c", "x", "y", "id", "k"), rng.randint(2, 3))
        if kind == "other_set":
            pool = self._elements(receiver) + list(range(0, 10))
            chosen = set(rng.sample(pool, rng.randint(1, 3)))
            return sorted(chosen) if self.sets_as_lists else chosen
        if kind == "length":
            return max(1, (receiver.bit_length() + 7) // 8) + rng.randint(0, 1)
        if kind == "byteorder":
            return rng.choice(("big", "little"))
        if kind == "raw_bytes":
            return bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 2)))
        if kind == "hex_text":
            data = bytes(
                rng.choice((rng.randint(97, 122), rng.randint(0, 255)))
                for _ in range(rng.randint(1, 3))
            )
            return (" " if rng.random() < 0.3 else "").join(f"{b:02x}" for b in data)
        if kind == "float_hex":
            return (rng.randint(-40, 40) / rng.choice((2, 4, 8))).hex()
        if kind == "func":
            return Code(rng.choice(MAP_FUNCS if self._is_map else FILTER_FUNCS))
        if kind == "second_list":
            return rng.choice(
                (
                    [word(rng, True) for _ in range(rng.randint(2, 4))],
                    [rng.randint(0, 9) for _ in range(rng.randint(2, 4))],
                )
            )
        if kind == "start_int":
            return rng.randint(1, 10)
        if kind == "nonzero":
            return rng.choice((-3, -2, 2, 3, 4, 5, 7, 10))
        if kind == "ndigits":
            return rng.randint(0, 2)
        if kind == "type_spec":
            return Code(rng.choice(TYPE_SPECS))
        raise KeyError(f"unknown argument kind {kind!r}")

    _is_map = True
    _old = ""

    def for_function(self, name: str) -> None:
        """Tell the factory which built-in the ``func`` argument is for (map or filter)."""
        self._is_map = name == "map"
