"""The synthesis generators, one declaration each, and everything that reads them.

A generator is one :class:`GeneratorKind`: its name (``--generator NAME``), a few words for help
text, the options it takes (each one becomes an option of ``codereasoner synth``, refused for
the generators that do not declare it), and where its entry point lives, imported only when a
run uses it. The entry point takes :class:`GeneratorSettings` and returns the run's candidate
source (:class:`~codereasoner.synth.pipeline.CandidateSource`). ``codereasoner synth`` (its help,
its checks, its construction) and :func:`~codereasoner.synth.pipeline.make_source` read
:data:`GENERATORS`; a new generator is one more entry in :data:`BUILTIN` (or one
:func:`register` call from outside the package)::

    GeneratorKind(
        "mine",
        "codereasoner_plugin.generator:build_source",
        "cases from my generator",
        options=(GeneratorOption("corpus", "Folder of seed programs.", required=True),),
    )
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codereasoner.registry import Registry, RegistryError
from codereasoner.settings import SettingError

if TYPE_CHECKING:
    from codereasoner.synth.pipeline import CandidateSource

__all__ = [
    "BUILTIN",
    "GENERATORS",
    "GeneratorKind",
    "GeneratorOption",
    "GeneratorSettings",
    "OptionMissing",
    "OptionNotTaken",
    "all_options",
    "get",
    "given_options",
    "names",
    "register",
    "unregister",
]

_OPTION_TYPES = (str, int, float, Path)


@dataclass(frozen=True)
class GeneratorOption:
    """An option a generator takes: ``--NAME`` (``_`` written ``-``) on the command line.

    - ``help``: one sentence for help text; the CLI adds which generators take it;
    - ``required``: the generator refuses to run without it;
    - ``example``: a value shown when a required option is missing;
    - ``value_type``: ``str``, ``int``, ``float`` or ``Path``.
    """

    name: str
    help: str
    required: bool = False
    example: str = ""
    value_type: type = str

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"generator option {self.name!r}: expected a lower-case identifier")
        if self.value_type not in _OPTION_TYPES:
            raise ValueError(
                f"generator option {self.name}: value_type must be str, int, float or Path"
            )

    @property
    def flag(self) -> str:
        """The command-line spelling: ``--model``."""
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class GeneratorSettings:
    """What a generator's entry point is given: the run's seed, its output folder (for a log of
    its own, such as the llm generator's ``generations.jsonl``) and the values of the options it
    declares (only those given; a required one is always there)."""

    seed: int
    out: Path
    options: Mapping[str, Any] = field(default_factory=dict)


Build = Callable[[GeneratorSettings], "CandidateSource"]


@dataclass(frozen=True)
class GeneratorKind:
    """One generator.

    - ``name``: what ``--generator`` takes;
    - ``target``: ``module:function``, imported when a run uses the generator; the function
      takes :class:`GeneratorSettings` and returns a candidate source (it may also have
      ``preflight()``, run before the first candidate, and ``close()``);
    - ``summary``: a few words for help text;
    - ``options``: the options it takes, beyond those every generator takes.
    """

    name: str
    target: str
    summary: str
    options: tuple[GeneratorOption, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or not all(char.isalnum() or char in "-_" for char in self.name):
            raise ValueError(f"generator name {self.name!r}: expected letters, digits, - or _")
        module, colon, attribute = self.target.partition(":")
        if not module or not colon or not attribute:
            raise ValueError(
                f"generator {self.name}: target {self.target!r}: expected module:function"
            )
        names = [option.name for option in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"generator {self.name}: an option is declared twice")

    def option(self, name: str) -> GeneratorOption | None:
        """The declared option called ``name``, or None."""
        return next((option for option in self.options if option.name == name), None)

    def missing(self, given: Mapping[str, Any]) -> list[GeneratorOption]:
        """The required options ``given`` lacks (None counts as not given)."""
        return [o for o in self.options if o.required and given.get(o.name) is None]

    def load(self) -> Build:
        """The entry point (importing its module now)."""
        module, _, attribute = self.target.partition(":")
        build: Build = getattr(importlib.import_module(module), attribute)
        return build

    def build(self, settings: GeneratorSettings) -> CandidateSource:
        """The candidate source for a run; ValueError when a required option is missing or
        an option this generator does not take is given."""
        foreign = [name for name in settings.options if self.option(name) is None]
        if foreign:
            raise ValueError(
                f"the {self.name} generator takes no option {', '.join(sorted(foreign))}"
            )
        missing = self.missing(settings.options)
        if missing:
            raise ValueError(
                f"the {self.name} generator needs {', '.join(o.name for o in missing)}"
            )
        return self.load()(settings)


BUILTIN: tuple[GeneratorKind, ...] = (
    GeneratorKind(
        "offline",
        "codereasoner.synth.generators.offline:build_source",
        "built in, no model",
    ),
    GeneratorKind(
        "llm",
        "codereasoner.synth.generators.llm:build_source",
        "a teacher model writes each case",
        options=(
            GeneratorOption(
                "model",
                "Teacher model spec, e.g. openai:NAME@URL.",
                required=True,
                example="openai:NAME@http://127.0.0.1:8000/v1",
            ),
        ),
    ),
)
"""The generators that ship with the package, in the order help text lists them."""

_generators: Registry[GeneratorKind] = Registry("generator")
GENERATORS: Mapping[str, GeneratorKind] = _generators
"""Every registered generator by name (read-only; change it with :func:`register`)."""


def register(kind: GeneratorKind, *, replace: bool = False) -> GeneratorKind:
    """Add a generator (``replace`` one of the same name); returns it. ValueError for a name
    already registered without ``replace``, or for an option declared by another generator
    with another value type."""
    if kind.name in _generators and not replace:
        raise RegistryError(f"generator {kind.name!r} is already registered")
    for option in kind.options:
        for other in all_options():
            if other.name == option.name and other.value_type is not option.value_type:
                raise ValueError(
                    f"generator {kind.name}: option {option.name} is declared with another "
                    "type by another generator"
                )
    return _generators.register(kind, replace=True)


def unregister(name: str) -> GeneratorKind:
    """Remove a generator and return it; RegistryError if there is none of that name."""
    return _generators.unregister(name)


def names() -> list[str]:
    return _generators.names()


def get(name: str) -> GeneratorKind:
    """The generator called ``name``; RegistryError naming the known ones otherwise."""
    return _generators.get_entry(name)


def all_options() -> Iterator[GeneratorOption]:
    """Every option some generator declares, once per name, in registration order."""
    seen: set[str] = set()
    for kind in _generators.values():
        for option in kind.options:
            if option.name not in seen:
                seen.add(option.name)
                yield option


def takers(option: str) -> list[str]:
    """The generators that declare an option called ``option``."""
    return [kind.name for kind in _generators.values() if kind.option(option) is not None]


class OptionNotTaken(ValueError):
    """An option given to a generator that does not declare it."""

    def __init__(self, option: str) -> None:
        self.option = option
        self.takers = takers(option)
        super().__init__(f"{option} applies to generator {' or '.join(self.takers)} only")


class OptionMissing(ValueError):
    """A generator's required option, not given."""

    def __init__(self, generator: str, option: GeneratorOption) -> None:
        self.generator = generator
        self.option = option
        super().__init__(f"generator {generator} needs {option.name}")


def given_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options given for generator ``name`` (those not None). SettingError for an unknown
    generator, :class:`OptionNotTaken` for an option it does not declare, :class:`OptionMissing`
    for a required one not given."""
    kind = _generators.get(name)
    if kind is None:
        raise SettingError("generator", name, " or ".join(names()))
    given = {key: value for key, value in options.items() if value is not None}
    for key in given:
        if kind.option(key) is None:
            raise OptionNotTaken(key)
    for option in kind.missing(given):
        raise OptionMissing(name, option)
    return given


for _kind in BUILTIN:
    register(_kind)
del _kind
