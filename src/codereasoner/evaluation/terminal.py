"""Text for the terminal: the consoles every command prints through, and untrusted text (item
ids, answers, server replies, file names) made safe to show: control characters as escapes,
never Rich markup. Below the command line so that a metric family can print its own report."""

from __future__ import annotations

import re

from rich.console import Console
from rich.markup import escape
from rich.text import Text

__all__ = ["console", "error_console", "print_plain", "safe_cell", "safe_markup", "safe_text"]

console = Console(emoji=False)
error_console = Console(stderr=True, emoji=False)

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), bidi controls, lone
# surrogates (which cannot even be encoded for the terminal).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: object) -> str:
    """Untrusted text made safe for a terminal: control characters shown as escapes."""
    return _UNSAFE.sub(_visible, text if type(text) is str else str(text))


def safe_markup(text: object) -> str:
    """:func:`safe_text`, escaped for Rich markup (for text the user typed, such as a file name;
    prefer :func:`safe_cell` for text from the sandbox). The consoles here render no ``:emoji:``
    codes, so ``x:smile:.py`` is shown as typed."""
    return escape(safe_text(text))


def safe_cell(text: object, style: str = "") -> Text:
    """:func:`safe_text` as a Rich ``Text``: no markup, no emoji codes, no highlighting."""
    return Text(safe_text(text), style=style)


def print_plain(text: str) -> None:
    """One line as typed: never markup, control characters made visible."""
    console.print(safe_cell(text), highlight=False, soft_wrap=True)
