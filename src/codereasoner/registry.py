"""One registry type for every extension point (benchmarks, task kinds, backends, generators):
a read-only mapping from names to entries, in registration order, with one error type.

    kinds = Registry[TaskKind]("task kind")
    kinds.register(kind)                 # by its ``name``; RegistryError when taken
    kinds.register_lazy("mine", "pkg.mod:KIND")   # imported on first use
    kinds.get("state")                   # RegistryError naming the known ones when unknown

:class:`RegistryError` is both a ``KeyError`` and a ``ValueError`` (callers written for either
keep working), and its text is the message itself, never quoted.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["Registry", "RegistryError", "builtin_registrations"]

T = TypeVar("T")


class RegistryError(KeyError, ValueError):
    """An unknown name, a name taken, or a lazy target that cannot be imported."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry(Mapping[str, T], Generic[T]):
    """Entries by name. ``noun`` names them in errors ("unknown task kind 'x'; expected one of
    ..."); ``name_of`` reads an entry's name (its ``name`` attribute by default)."""

    def __init__(self, noun: str, name_of: Callable[[T], str] | None = None) -> None:
        self.noun = noun
        self._name_of = name_of or (lambda entry: str(getattr(entry, "name", "")))
        self._entries: dict[str, T | str] = {}

    # -- Mapping ---------------------------------------------------------------------------

    def __getitem__(self, name: str) -> T:
        return self.get_entry(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    # -- changes -----------------------------------------------------------------------------

    def register(self, entry: T, *, name: str | None = None, replace: bool = False) -> T:
        """Add ``entry`` (under ``name``, default its own); registering the same object again
        does nothing; another under a taken name is a RegistryError unless ``replace``."""
        key = name or self._name_of(entry)
        self._add(key, entry, replace)
        return entry

    def register_lazy(self, name: str, target: str, *, replace: bool = False) -> None:
        """Add ``"module:attribute"`` under ``name``, imported when it is first used."""
        if ":" not in target:
            raise RegistryError(f"{self.noun} {name!r}: expected module:attribute, not {target!r}")
        self._add(name, target, replace)

    def _add(self, key: str, entry: T | str, replace: bool) -> None:
        if not key:
            raise RegistryError(f"a {self.noun} needs a non-empty name, not {key!r}")
        known = self._entries.get(key)
        if known is not None and known is not entry and not replace:
            raise RegistryError(f"{self.noun} {key!r} is already registered")
        self._entries[key] = entry

    def unregister(self, name: str) -> T:
        """Remove ``name`` and return its entry."""
        entry = self.get_entry(name)
        del self._entries[name]
        return entry

    def put(self, name: str, entry: T) -> None:
        """Set ``name`` to ``entry`` whatever was there (a temporary stand-in; see users)."""
        self._entries[name] = entry

    def remove(self, name: str) -> None:
        """Forget ``name`` if present (no error)."""
        self._entries.pop(name, None)

    # -- reading -----------------------------------------------------------------------------

    def get_entry(self, name: str) -> T:
        """The entry of ``name`` (a lazy target imported now); RegistryError when unknown."""
        try:
            entry = self._entries[name]
        except (KeyError, TypeError):
            known = ", ".join(self._entries) or "none"
            raise RegistryError(f"unknown {self.noun} {name!r}; expected one of {known}") from None
        if isinstance(entry, str):
            entry = self._load(name, entry)
            self._entries[name] = entry
        return entry

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._entries)

    def _load(self, name: str, target: str) -> T:
        module, _, attribute = target.partition(":")
        try:
            loaded: T = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise RegistryError(
                f"{self.noun} {name!r}: cannot import {target!r} ({type(exc).__name__}: {exc})"
            ) from None
        return loaded


FAMILIES_FOLDER = Path(__file__).resolve().parent / "families"
MANIFEST = "family.json"
MANIFEST_KINDS = ("benchmarks", "task_kinds", "metric_families", "commands")


def builtin_registrations(kind: str) -> list[tuple[str, str]]:
    """``(name, "codereasoner.families.FOLDER.MODULE:ATTRIBUTE")`` of every built-in family
    folder's ``kind`` registrations (``benchmarks``, ``task_kinds``, ``metric_families``,
    ``commands``: a function adding the folder's CLI command group to the app), found by
    scanning ``families/*/family.json``: a new built-in family is one folder, listed nowhere
    else. Folders come in their declared ``order``; nothing is imported."""
    return [
        (name, f"codereasoner.families.{folder}.{target}")
        for folder, declared in _manifests()
        for name, target in declared.get(kind, {}).items()
    ]


@functools.cache
def _manifests() -> tuple[tuple[str, dict[str, dict[str, str]]], ...]:
    """``(folder, {kind: {name: target}})`` of every family folder in declared order, read
    once: three registries ask at start-up."""
    found: list[tuple[int, str, dict[str, dict[str, str]]]] = []
    for manifest in sorted(FAMILIES_FOLDER.glob(f"*/{MANIFEST}")):
        try:
            declared = json.loads(manifest.read_text(encoding="utf-8"))
            order = int(declared.get("order", 1000))
            kinds = {kind: dict(declared.get(kind) or {}) for kind in MANIFEST_KINDS}
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise RegistryError(f"{manifest}: not a family manifest ({exc})") from None
        found.append((order, manifest.parent.name, kinds))
    found.sort(key=lambda entry: entry[:2])
    return tuple((folder, kinds) for _, folder, kinds in found)
