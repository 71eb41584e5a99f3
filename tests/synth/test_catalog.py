"""The method catalog: introspected names, one entry or a documented exclusion each."""

from __future__ import annotations

import pytest

from codereasoner.synth.catalog import (
    BUILTINS,
    EXCLUDED,
    HEAVY_METHODS,
    MODES,
    STYLES,
    TYPES,
    by_name,
    catalog,
    public_names,
)


def test_every_public_name_is_in_the_catalog_or_excluded_with_a_reason() -> None:
    names = set(by_name())
    for kind in TYPES:
        for name in public_names(kind):
            qualname = f"{kind.__name__}.{name}"
            assert qualname in names or EXCLUDED.get(qualname), qualname
    for reason in EXCLUDED.values():
        assert reason.strip()


def test_builtins_and_types_are_all_there() -> None:
    names = set(by_name())
    assert {f"builtins.{name}" for name in BUILTINS} <= names
    assert {
        "str.partition",
        "list.sort",
        "dict.setdefault",
        "set.pop",
        "frozenset.union",
        "tuple.index",
        "int.from_bytes",
        "float.hex",
        "bytes.decode",
    } <= names
    assert len(catalog()) == len(names)  # qualified names are unique


def test_entries_are_well_formed() -> None:
    for method in catalog():
        assert method.qualname == f"{method.owner}.{method.name}"
        assert method.mode in MODES and method.style in STYLES
        assert method.signatures and all(isinstance(sig, tuple) for sig in method.signatures)
        assert method.weight > 0
        if method.style in ("method", "attribute", "function"):
            assert method.receiver, method.qualname
        if method.mode == "mutate":
            assert method.result == "none", method.qualname


@pytest.mark.parametrize("qualname", sorted(HEAVY_METHODS))
def test_hard_methods_weigh_more_than_the_usual(qualname: str) -> None:
    assert by_name()[qualname].weight > by_name()["str.upper"].weight
