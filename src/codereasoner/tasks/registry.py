"""The task-kind registry: name -> kind, where the name is ``Item.task`` of the kind's items.

    from codereasoner import tasks
    kind = tasks.get(item.task)
    answer = kind.extract(item, completion, "cot")
    score = kind.score(item, answer, pool)

A benchmark declares the names of the kinds its items use; every item is prompted, extracted,
graded and answered by the oracle through its own kind. The built-in kinds are registered when
:mod:`codereasoner.tasks` is imported; :func:`register` adds another (a test removes its own with
:func:`unregister`).
"""

from __future__ import annotations

from codereasoner.registry import Registry, RegistryError, builtin_registrations
from codereasoner.tasks.base import TaskKind

__all__ = ["get", "names", "register", "unregister"]

_KINDS: Registry[TaskKind] = Registry("task kind")


def register(kind: TaskKind) -> None:
    """Make ``kind`` the kind of the items whose ``task`` is ``kind.name``.

    Registering the same object again does nothing; RegistryError (a ValueError) when the name
    is taken by another or is not a non-empty string.
    """
    name = getattr(kind, "name", None)
    if not isinstance(name, str) or not name:
        raise RegistryError(f"a task kind needs a non-empty string name, not {name!r}")
    _KINDS.register(kind)


def unregister(name: str) -> TaskKind:
    """Remove the kind registered as ``name`` and return it (RegistryError when there is none)."""
    return _KINDS.unregister(name)


def get(name: str) -> TaskKind:
    """The kind registered as ``name``; RegistryError naming the registered ones otherwise."""
    return _KINDS.get_entry(name)


def names() -> list[str]:
    """The registered names, in registration order (the built-in kinds first)."""
    return _KINDS.names()


# A benchmark family with a folder of its own (codereasoner/families/) sits above this layer: its
# kinds are found by scanning the folders' manifests and imported on first use.
for _name, _target in builtin_registrations("task_kinds"):
    _KINDS.register_lazy(_name, _target)
del _name, _target
