"""One typed error for a setting that cannot be used, raised wherever a value is checked and
named as the Python API spells it (``timeout_s``, ``n``); only the command line turns the name
into the flag that sets it (``--timeout``, ``--n``), so no lower layer spells a flag.

    raise SettingError("timeout_s", 0.0, "a positive number")
    str(error)  # "timeout_s 0.0: expected a positive number"
"""

from __future__ import annotations

import os

__all__ = ["SettingError", "check_at_least", "env_flag"]


class SettingError(ValueError):
    """``setting`` cannot be ``value``; ``expected`` says what can (a phrase after
    "expected")."""

    def __init__(self, setting: str, value: object, expected: str) -> None:
        self.setting = setting
        self.value = value
        self.expected = expected
        super().__init__(f"{setting} {self.shown}: expected {expected}")

    @property
    def shown(self) -> str:
        """The value as a message shows it: text quoted, numbers as typed (``2``, not ``2.0``)."""
        if isinstance(self.value, str):
            return repr(self.value)
        if isinstance(self.value, float):
            return format(self.value, "g")
        return str(self.value)

    def named(self, name: str) -> str:
        """The message with the setting called ``name`` (a flag, say)."""
        return f"{name} {self.shown}: expected {self.expected}"


def check_at_least(minimum: int, expected: str | None = None, **settings: int | None) -> None:
    """A SettingError for the first of ``settings`` (None: not given) below ``minimum``."""
    for name, value in settings.items():
        if value is not None and value < minimum:
            wanted = expected or ("a positive number" if minimum == 1 else f"at least {minimum}")
            raise SettingError(name, value, wanted)


TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


def env_flag(name: str) -> bool:
    """An environment variable set to a true word (``HF_HUB_OFFLINE=1``, ``=true``, ``=yes``)."""
    return os.environ.get(name, "").strip().lower() in TRUE_WORDS
