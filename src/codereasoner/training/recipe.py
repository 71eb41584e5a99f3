"""Training recipes: one YAML file of flat settings, plus ``key=value`` overrides.

A recipe combines three sets of fields, each declared once, where it belongs:

- :class:`TrainArguments`, ours: the stage, the data, the GRPO rewards, the sandbox;
- TRL's ``SFTConfig`` or ``GRPOConfig`` (every ``transformers.TrainingArguments`` field too);
- TRL's ``ModelConfig``: the model, its dtype, LoRA and quantisation.

They are parsed the way TRL's own scripts parse theirs (``TrlParser``: the file's values become
the defaults, then argparse converts and checks them), so every TRL field works without being
re-declared here. On top of TRL's parser:

- ``base: other.yaml`` inherits another recipe (relative to this file), this file's keys win;
- overrides are ``key=value`` words, the value read as YAML (``learning_rate=1e-5``,
  ``use_peft=true``, ``reward_weights=[1.0,0.1]``);
- an unknown key, a bad value or a TRL consistency check is one :class:`RecipeError` line that
  names the file and the key (with the nearest known key for a typo).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from codereasoner.execution.executor import parse_executor
from codereasoner.training.arguments import RecipeError, TrainArguments

__all__ = [
    "Recipe",
    "RecipeError",
    "Stage",
    "TrainArguments",
    "load_recipe",
    "parse_overrides",
    "read_recipe_file",
]

BASE_KEY = "base"
ISOLATIONS = ("auto", "bubblewrap", "fallback")
ENV_KEY = "env"
# Settings transformers checks against this machine's devices (a bf16 or TF32 GPU). A recipe
# checked without the hardware it trains on is parsed with these in their place.
WITHOUT_HARDWARE: dict[str, Any] = {"use_cpu": "true", "tf32": None}


class Stage(StrEnum):
    SFT = "sft"
    GRPO = "grpo"


@dataclass(frozen=True)
class Recipe:
    """A parsed recipe: our arguments, TRL's training config and TRL's model config."""

    stage: Stage
    source: str  # the file, for messages
    train: TrainArguments
    config: Any  # trl.SFTConfig or trl.GRPOConfig
    model: Any  # trl.ModelConfig
    settings: Mapping[str, Any]  # the merged file and overrides, as read
    hardware_checked: bool = True  # False: parsed without its devices (WITHOUT_HARDWARE)

    @property
    def output_dir(self) -> Path:
        return Path(self.config.output_dir)


def _trl_config_class(stage: Stage) -> type:
    from trl import GRPOConfig, SFTConfig

    return SFTConfig if stage is Stage.SFT else GRPOConfig


def _dataclass_types(stage: Stage) -> tuple[type, type, type]:
    from trl import ModelConfig

    return TrainArguments, _trl_config_class(stage), ModelConfig


def _yaml_loader() -> Any:
    """A safe YAML loader that leaves every scalar a string but true/false and null: argparse
    then converts each value by its field's type, as it converts a command line (YAML 1.1
    would read ``save_strategy: no`` as False, ``seed: 010`` as 8, ``1e-5`` as a string)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {}
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
    )
    return Loader


def _load_yaml(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=_yaml_loader())  # a SafeLoader subclass


def read_recipe_file(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The file's settings with its ``base`` chain resolved (this file's keys win)."""
    import yaml

    resolved = path.resolve()
    if resolved in seen:
        raise RecipeError(f"{path}: `base` chain loops back to this file")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecipeError(f"{path}: no such recipe file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError(f"{path}: cannot read the recipe ({exc})") from None
    try:
        loaded = _load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise RecipeError(f"{path}: not valid YAML{where}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise RecipeError(f"{path}: expected a mapping of settings, got {type(loaded).__name__}")
    settings = dict(loaded)
    base = settings.pop(BASE_KEY, None)
    if base is None:
        return settings
    if not isinstance(base, str):
        raise RecipeError(f"{path}: `base` must be a file name, got {base!r}")
    inherited = read_recipe_file(path.parent / base, (*seen, resolved))
    env = {**inherited.get(ENV_KEY, {}), **settings.get(ENV_KEY, {})}
    merged = {**inherited, **settings}
    if env:
        merged[ENV_KEY] = env
    return merged


def parse_overrides(words: Sequence[str]) -> dict[str, Any]:
    """``["learning_rate=1e-5", "--use_peft=true"]`` -> ``{"learning_rate": "1e-5", ...}``;
    values are read as YAML (so ``[1, 2]`` is a list, ``true`` a bool)."""
    import yaml

    parsed: dict[str, Any] = {}
    for word in words:
        key, sep, value = word.removeprefix("--").partition("=")
        if not sep or not key:
            raise RecipeError(f"override {word!r}: expected key=value, e.g. learning_rate=1e-5")
        try:
            parsed[key.replace("-", "_")] = _load_yaml(value) if value else ""
        except yaml.YAMLError:
            raise RecipeError(f"override {word!r}: the value is not valid YAML") from None
    return parsed


def _parser(types: Sequence[type]) -> Any:
    """TRL's parser, with argparse's print-usage-and-exit turned into a RecipeError."""
    from trl import TrlParser

    class RaisingParser(TrlParser):
        def error(self, message: str) -> Any:
            raise RecipeError(message)

    return RaisingParser(list[Any](types))


def _known_keys(types: Sequence[type]) -> dict[str, type]:
    return {f.name: owner for owner in types for f in dataclasses.fields(owner) if f.init}


def _check_keys(settings: Mapping[str, Any], types: Sequence[type], where: str) -> None:
    known = _known_keys(types)
    for key in settings:
        if key == ENV_KEY or key in known:
            continue
        close = difflib.get_close_matches(key, list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise RecipeError(f"{where}: unknown setting {key!r}{hint}")


def _check_env(env: object, where: str) -> dict[str, str]:
    if not isinstance(env, dict):
        raise RecipeError(f"{where}: `env` must be a mapping of environment variables")
    return {str(key): str(value) for key, value in env.items()}


def load_recipe(
    stage: Stage | str,
    path: Path,
    overrides: Sequence[str] = (),
    *,
    hardware: bool = True,
    inputs: bool = False,
) -> Recipe:
    """Parse ``path`` (and ``key=value`` overrides) for ``stage``; RecipeError when unusable.

    The recipe's ``env`` mapping is applied to ``os.environ`` (as TRL's parser does).
    ``hardware=False`` checks everything but what needs the devices the recipe trains on
    (a GPU recipe's bf16 on a CPU machine): :data:`WITHOUT_HARDWARE` stands in for those
    settings, and the recipe says so (``hardware_checked``). ``inputs=True`` also checks, before
    TRL is imported, that the model and data files it names exist (:func:`check_inputs`).
    """
    stage = Stage(stage)
    # The file and the overrides first: their mistakes are said before TRL is imported (seconds).
    settings = read_recipe_file(path)
    where = str(path)
    declared = settings.get("stage")
    if declared is not None and declared != stage.value:
        raise RecipeError(f"{where}: a recipe for `train {declared}`, not `train {stage.value}`")
    extra = parse_overrides(overrides)
    if inputs:
        check_inputs(
            stage, {**settings, **extra}, lambda key: f"override {key}=" if key in extra else where
        )
    types = _dataclass_types(stage)
    _check_keys(settings, types, where)
    for key in extra:
        _check_keys({key: None}, types, f"override {key}=")
    merged = _portable_names({**settings, **extra}, types)
    env = _check_env(merged.pop(ENV_KEY, {}), where)
    os.environ.update(env)
    parser = _parser(types)

    def source(key: str) -> str:
        return f"override {key}=" if key in extra else where

    parsed = merged if hardware else {**merged, **WITHOUT_HARDWARE}
    parser.set_defaults_with_config(**_as_arguments(parser, parsed, source))
    try:
        train, config, model = parser.parse_args_into_dataclasses(args=[])
    except RecipeError as exc:
        named = re.match(r"argument --(\w+)", str(exc))
        raise RecipeError(f"{source(named.group(1)) if named else where}: {exc}") from None
    except (ValueError, TypeError) as exc:  # TRL's and transformers' own consistency checks
        raise RecipeError(f"{where}: {first_line(exc)}") from None
    if train.stage is not None and train.stage != stage.value:
        raise RecipeError(f"override stage={train.stage}: this is `train {stage.value}`")
    if not model.model_name_or_path:
        raise RecipeError(f"{where}: set model_name_or_path (a local folder or a hub name)")
    if not train.dataset:
        raise RecipeError(f"{where}: set dataset (the exported {stage.value} JSONL)")
    if "output_dir" not in merged:
        raise RecipeError(f"{where}: set output_dir (the folder checkpoints and the model go to)")
    if train.isolation not in ISOLATIONS:
        raise RecipeError(
            f"{source('isolation')}: isolation {train.isolation!r}; expected one of "
            + ", ".join(ISOLATIONS)
        )
    try:
        parse_executor(train.executor)
    except ValueError as exc:
        raise RecipeError(f"{source('executor')}: {exc}") from None
    _check_evaluation(stage, train, config, source)
    if stage is Stage.GRPO:
        from codereasoner.training.grpo_rewards import check_rewards

        check_rewards(
            train.rewards,
            config.reward_weights,
            source("reward_weights" if "reward_weights" in extra else "rewards"),
        )
    if env:
        merged[ENV_KEY] = env
    return Recipe(stage, where, train, config, model, merged, hardware_checked=hardware)


def check_inputs(stage: Stage, settings: Mapping[str, Any], source: Callable[[str], str]) -> None:
    """The model and the data files a recipe names exist, checked before TRL or torch is
    imported (seconds), so a missing one is said at once with the command that makes it."""
    from codereasoner.models.base import BackendError
    from codereasoner.models.model_names import check_model_name

    model = settings.get("model_name_or_path")
    if isinstance(model, str) and model:
        try:
            check_model_name(model)
        except BackendError as exc:
            raise RecipeError(
                f"{source('model_name_or_path')}: model_name_or_path {model}: {exc}"
            ) from None
    for key in ("dataset", "eval_dataset"):
        path = settings.get(key)
        if isinstance(path, str) and path and not Path(path).is_file():
            what = "is a folder" if Path(path).is_dir() else "no such file"
            raise RecipeError(
                f"{source(key)}: {key} {path}: {what}; expected the JSONL that `codereasoner "
                f"export --from DISTILLED --format trl-{stage.value} --out {path}` writes"
            )


def _check_evaluation(
    stage: Stage, train: TrainArguments, config: Any, source: Callable[[str], str]
) -> None:
    """Evaluation needs held-out data; GRPO's best checkpoint needs a metric of its answers."""
    strategy = str(getattr(config.eval_strategy, "value", config.eval_strategy))
    if strategy != "no" and not train.eval_dataset:
        raise RecipeError(
            f"{source('eval_strategy')}: eval_strategy {strategy} needs eval_dataset "
            "(held-out rows in the training data's format)"
        )
    if not config.load_best_model_at_end:
        return
    saving = str(getattr(config.save_strategy, "value", config.save_strategy))
    if strategy == saving == "steps" and config.save_steps != config.eval_steps:
        # transformers allows a multiple, but only a saved step can be returned to: a best
        # evaluation between checkpoints would be lost, and the last model kept instead
        raise RecipeError(
            f"{source('save_steps')}: load_best_model_at_end returns to the checkpoint of the "
            f"best evaluation, so save_steps ({config.save_steps:g}) must equal eval_steps "
            f"({config.eval_steps:g})"
        )
    metric = config.metric_for_best_model or ""
    if stage is Stage.GRPO and metric.endswith("loss"):
        # GRPO's loss on fresh samples averages advantages that sum to zero in each group.
        raise RecipeError(
            f"{source('metric_for_best_model')}: GRPO's {metric} does not rank checkpoints; "
            "set metric_for_best_model: eval_reward (the mean reward of held-out answers)"
        )


# transformers 5.24 renamed these (training.md P2); recipes keep the old names, which older
# versions (verl's transformers<5.11) still need, and the parser takes whichever exists.
RENAMED = {"gradient_checkpointing": "activation_checkpointing"}


def _portable_names(settings: dict[str, Any], types: Sequence[type]) -> dict[str, Any]:
    known = _known_keys(types)
    for old, new in RENAMED.items():
        if old in settings and new in known and new not in settings:
            settings[new] = settings.pop(old)
    return settings


def _as_arguments(
    parser: Any, settings: dict[str, Any], source: Callable[[str], str]
) -> dict[str, Any]:
    """Settings as argparse defaults: scalars as strings (argparse converts and checks them by
    type), list items converted by the field's type, mappings as they are."""
    actions = {action.dest: action for action in parser._actions}
    converted: dict[str, Any] = {}
    for key, value in settings.items():
        action = actions.get(key)
        many = action is not None and action.nargs in ("+", "*")
        if isinstance(value, list) and not many:
            raise RecipeError(f"{source(key)}: {key} takes one value, not a list")
        if many:
            convert = action.type if action is not None and callable(action.type) else str
            items = value if isinstance(value, list) else [value]
            try:
                converted[key] = [convert(str(item)) for item in items]
            except (ValueError, TypeError):
                raise RecipeError(f"{source(key)}: {key}: {items!r} are not valid items") from None
        elif value is None or isinstance(value, dict):
            converted[key] = value
        else:
            converted[key] = str(value)
    return converted


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
