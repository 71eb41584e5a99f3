"""The one registry type behind every extension point: names in registration order, one error
type (a KeyError and a ValueError at once, its text unquoted), lazy ``module:attribute``
targets."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from codereasoner import benchmarks, models, tasks
from codereasoner.registry import Registry, RegistryError
from codereasoner.synth import generators


@dataclass(frozen=True)
class Thing:
    name: str


def test_register_get_and_errors() -> None:
    things: Registry[Thing] = Registry("thing")
    first = things.register(Thing("a"))
    assert things.register(first) is first  # the same object again: nothing happens
    things.register(Thing("b"))
    assert things.names() == ["a", "b"] and list(things) == ["a", "b"] and len(things) == 2
    with pytest.raises(RegistryError) as taken:
        things.register(Thing("a"))
    assert str(taken.value) == "thing 'a' is already registered"
    with pytest.raises(KeyError) as unknown:
        things.get_entry("c")
    assert isinstance(unknown.value, ValueError)
    assert str(unknown.value) == "unknown thing 'c'; expected one of a, b"  # not quoted
    assert things.get("c") is None and "c" not in things
    assert things.unregister("b").name == "b" and things.names() == ["a"]


def test_lazy_targets_import_on_first_use() -> None:
    things: Registry[object] = Registry("thing")
    things.register_lazy("dumps", "json:dumps")
    assert things["dumps"] is json.dumps
    things.register_lazy("broken", "json:nothing_here")
    with pytest.raises(RegistryError, match="thing 'broken': cannot import 'json:nothing_here'"):
        things.get_entry("broken")


def test_every_extension_point_is_one() -> None:
    from codereasoner.evaluation.families import FAMILIES
    from codereasoner.programs import REWRITES

    assert isinstance(benchmarks.REGISTRY, Registry)
    assert isinstance(models.BACKENDS, Registry) and isinstance(generators.GENERATORS, Registry)
    assert isinstance(FAMILIES, Registry) and isinstance(REWRITES, Registry)
    lookups = [benchmarks.get, models.BACKENDS.get_entry, generators.get, tasks.get]
    lookups += [FAMILIES.get_entry, REWRITES.get_entry]
    for lookup in lookups:
        with pytest.raises(RegistryError, match=r"unknown .* 'nope'; expected one of"):
            lookup("nope")


def test_the_rewards_are_one_too() -> None:
    pytest.importorskip("trl")
    from codereasoner.training.grpo_rewards import REWARDS

    assert isinstance(REWARDS, Registry)
    assert REWARDS.names() == ["code_reasoning", "format", "length", "process"]
    with pytest.raises(RegistryError, match="unknown reward 'nope'; expected one of"):
        REWARDS.get_entry("nope")
