"""The generator registry: declarations, lookup, option checks, lazy construction."""

from __future__ import annotations

from pathlib import Path

import pytest

from codereasoner.synth import generators
from codereasoner.synth.generators import (
    GeneratorKind,
    GeneratorOption,
    GeneratorSettings,
)
from codereasoner.synth.generators.offline import OfflineGenerator, OfflineSource
from codereasoner.synth.pipeline import SynthConfig, make_source


def test_the_builtin_generators_are_registered_in_order() -> None:
    assert generators.names()[:2] == ["offline", "llm"]
    assert [kind.name for kind in generators.BUILTIN] == ["offline", "llm"]
    llm = generators.get("llm")
    model = llm.option("model")
    assert model is not None and model.required and model.flag == "--model"
    assert generators.get("offline").options == ()
    assert [option.name for option in generators.all_options()] == ["model"]
    assert generators.takers("model") == ["llm"]
    with pytest.raises(TypeError):
        generators.GENERATORS["x"] = llm  # type: ignore[index]  # read-only


def test_an_unknown_generator_names_the_known_ones() -> None:
    with pytest.raises(
        ValueError, match="unknown generator 'teacher'; expected one of offline, llm"
    ):
        generators.get("teacher")


def test_build_checks_the_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="the offline generator takes no option model"):
        generators.get("offline").build(GeneratorSettings(0, tmp_path, {"model": "oracle"}))
    with pytest.raises(ValueError, match="the llm generator needs model"):
        generators.get("llm").build(GeneratorSettings(0, tmp_path))
    missing = generators.get("llm").missing({"model": None})
    assert [option.name for option in missing] == ["model"]


def test_the_offline_entry_point_gives_the_generator_s_candidates(tmp_path: Path) -> None:
    source = generators.get("offline").build(GeneratorSettings(5, tmp_path))
    assert isinstance(source, OfflineSource) and source.name == "offline"
    assert source.produce(range(3)) == [OfflineGenerator(5).generate(i) for i in range(3)]
    assert source.committed_lines() == []
    made = make_source(SynthConfig(out=tmp_path, n=1, seed=5))
    assert isinstance(made, OfflineSource) and made.generator.seed == 5
    with pytest.raises(ValueError, match="unknown generator"):
        make_source(SynthConfig(out=tmp_path, n=1, generator="nope"))


def test_a_new_generator_is_one_declaration_imported_only_when_built(tmp_path: Path) -> None:
    kind = GeneratorKind(
        "toy",
        "codereasoner_no_such_module.generator:build_source",
        "a test generator",
        options=(GeneratorOption("corpus", "Seed programs.", required=True),),
    )
    generators.register(kind)  # nothing is imported yet
    try:
        assert generators.get("toy") is kind and "toy" in generators.names()
        assert [option.name for option in generators.all_options()] == ["model", "corpus"]
        with pytest.raises(ValueError, match="already registered"):
            generators.register(kind)
        with pytest.raises(ModuleNotFoundError):
            kind.build(GeneratorSettings(0, tmp_path, {"corpus": "x"}))
    finally:
        generators.unregister("toy")
    assert "toy" not in generators.GENERATORS


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: GeneratorKind("bad name", "m:f", "x"), "expected letters, digits"),
        (lambda: GeneratorKind("ok", "module_only", "x"), "expected module:function"),
        (
            lambda: GeneratorKind("ok", "m:f", "x", (GeneratorOption("a", "h"),) * 2),
            "declared twice",
        ),
        (lambda: GeneratorOption("Model", "h"), "lower-case identifier"),
        (lambda: GeneratorOption("n", "h", value_type=list), "value_type"),
    ],
)
def test_malformed_declarations_are_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def test_an_option_keeps_one_type_across_generators() -> None:
    clash = GeneratorKind("other", "m:f", "x", (GeneratorOption("model", "h", value_type=int),))
    with pytest.raises(ValueError, match="another type"):
        generators.register(clash)
    assert "other" not in generators.GENERATORS
