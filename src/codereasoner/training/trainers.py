"""``codereasoner train sft|grpo``: TRL's SFTTrainer and GRPOTrainer, configured, not subclassed.

:func:`build_trainer` turns a :class:`~codereasoner.training.recipe.Recipe` into a TRL trainer
(the data read and checked, the model loaded from its name or folder, LoRA when ``use_peft``,
the GRPO rewards from :data:`REWARDS`, the curves callbacks); :func:`train` runs it in its
output folder, resumably:

- the folder is locked while a run writes into it (a second run is refused at once);
- ``train.json`` records what the folder is training (stage, model, data digest); a later run
  over other data or another model is refused instead of mixing checkpoints;
- a run killed at any point (SIGKILL included) resumes from its last complete checkpoint when
  the same command runs again (checkpoints: TRL's ``save_strategy``/``save_steps``), skipping
  newer ones whose trainer state is missing or torn, and saying so;
- at the end the model is saved in the output folder itself (merged, when trained with LoRA;
  the adapter in ``adapter/``), ready for ``codereasoner eval --model hf:OUTPUT_DIR``, and
  ``train_done.json`` marks the folder finished: running the command again reports it. With
  ``load_best_model_at_end`` (and an ``eval_dataset``), that model is the best checkpoint's by
  ``metric_for_best_model``, and ``train_done.json`` names it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codereasoner.execution import SandboxUnavailable
from codereasoner.files import foreign_entry, parse_json, write_atomic
from codereasoner.models import BackendError
from codereasoner.models.packaged import local_model
from codereasoner.synth.writer import LOCK_FILE, FolderBusy, exclusive
from codereasoner.training.grpo_rewards import REWARDS, RewardContext, build_rewards
from codereasoner.training.recipe import Recipe, RecipeError, Stage, first_line
from codereasoner.training.rewards import COLUMNS, CodeReasoningReward

__all__ = [
    "DONE_FILE",
    "REWARDS",
    "RUN_FILE",
    "TrainResult",
    "build_trainer",
    "is_main_process",
    "last_checkpoint",
    "read_dataset",
    "train",
    "usable_checkpoint",
]

RUN_FILE = "train.json"
DONE_FILE = "train_done.json"
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
ADAPTER_DIR = "adapter"


# --- data -------------------------------------------------------------------------------------


# The training rows and the evaluation rows (None without an eval_dataset).
TrainingData = tuple[list[dict[str, Any]], list[dict[str, Any]] | None]


def read_dataset(path: Path, stage: Stage, limit: int | None = None) -> list[dict[str, Any]]:
    """The rows of an exported JSONL, checked for ``stage``; SFT ``messages`` rows become
    prompt-completion rows (the loss on the final assistant turn, with any chat template)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise RecipeError(f"dataset {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError(f"dataset {path}: cannot read it ({exc})") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = parse_json(line)
        except json.JSONDecodeError:
            raise RecipeError(f"{where}: not a JSON object") from None
        if not isinstance(row, dict):
            raise RecipeError(f"{where}: expected a JSON object, got {type(row).__name__}")
        rows.append(_sft_row(row, where) if stage is Stage.SFT else _grpo_row(row, where))
        if limit is not None and len(rows) >= limit:
            break
    if not rows:
        raise RecipeError(f"dataset {path}: no rows")
    return rows


def _messages(value: object, where: str, name: str) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise RecipeError(f"{where}: `{name}` must be a non-empty list of chat messages")
    for message in value:
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            raise RecipeError(f"{where}: `{name}` holds a message without string role/content")
    return value


def _sft_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    if "prompt" in row and "completion" in row:
        if isinstance(row["prompt"], str) and isinstance(row["completion"], str):
            return row
        _messages(row["prompt"], where, "prompt")
        _messages(row["completion"], where, "completion")
        return row
    if "messages" not in row:
        raise RecipeError(
            f"{where}: expected `messages` (export --format trl-sft) or `prompt`+`completion`"
        )
    messages = _messages(row["messages"], where, "messages")
    if messages[-1]["role"] != "assistant" or len(messages) < 2:
        raise RecipeError(f"{where}: `messages` must end with an assistant turn after a prompt")
    return {"prompt": messages[:-1], "completion": messages[-1:]}


def _grpo_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    if "prompt" not in row:
        raise RecipeError(f"{where}: expected `prompt` (export --format trl-grpo)")
    if not isinstance(row["prompt"], str):
        _messages(row["prompt"], where, "prompt")
    missing = [name for name in COLUMNS if not isinstance(row.get(name), str)]
    if missing:
        raise RecipeError(f"{where}: missing the reward's string columns {', '.join(missing)}")
    return row


def _dataset(rows: list[dict[str, Any]]) -> Any:
    from datasets import Dataset

    return Dataset.from_list(rows)


# --- building ---------------------------------------------------------------------------------


def _model_init_kwargs(recipe: Recipe) -> dict[str, Any]:
    """Model loading settings, as TRL's own scripts derive them from ModelConfig."""
    model = recipe.model
    kwargs: dict[str, Any] = {
        "revision": model.model_revision,
        "trust_remote_code": recipe.config.trust_remote_code,
        "attn_implementation": model.attn_implementation,
        "dtype": model.dtype,
    }
    kwargs.update(recipe.config.model_init_kwargs or {})
    return {key: value for key, value in kwargs.items() if value is not None}


def build_trainer(
    recipe: Recipe, callbacks: Sequence[Any] = (), data: TrainingData | None = None
) -> Any:
    """The TRL trainer a recipe describes (nothing trained yet); ``data``: the recipe's rows
    when already read (:func:`read_data`)."""
    from trl import GRPOTrainer, SFTTrainer, get_peft_config, get_quantization_config

    rows, eval_rows = data if data is not None else read_data(recipe)
    recipe.config.model_init_kwargs = _model_init_kwargs(recipe)
    common: dict[str, Any] = {
        "model": _model_folder(recipe),
        "args": recipe.config,
        "train_dataset": _dataset(rows),
        "eval_dataset": _dataset(eval_rows) if eval_rows else None,
        "peft_config": get_peft_config(recipe.model),
        "quantization_config": get_quantization_config(recipe.model),
        "callbacks": list(callbacks),
    }
    trainer: Any
    if recipe.stage is Stage.SFT:
        trainer = SFTTrainer(**common)
    else:
        rewards = _rewards(recipe)
        trainer = GRPOTrainer(reward_funcs=rewards, **common)
        _set_eos_ids(trainer, rewards)
    return _with_progress(trainer)


def _model_folder(recipe: Recipe) -> str:
    """The model to load: a folder or hub name as given; ``gguf:FILE`` and packaged models
    (``smollm2-135m``) converted once into a cached folder."""
    name = recipe.model.model_name_or_path
    try:
        return local_model(name)
    except BackendError as exc:
        raise RecipeError(f"{recipe.source}: model_name_or_path {name}: {exc}") from None


def _rewards(recipe: Recipe) -> list[Any]:
    context = RewardContext(recipe.train, recipe.config)
    rewards = build_rewards(recipe.train.rewards, context, recipe.source)
    for reward in rewards:
        if isinstance(reward, CodeReasoningReward):
            try:  # a sandbox that cannot start is a setup error now, not a crash at step one
                reward.pool()
            except (SandboxUnavailable, ValueError) as exc:
                raise RecipeError(f"{recipe.source}: the reward's sandbox: {exc}") from None
    return rewards


def _set_eos_ids(trainer: Any, rewards: Sequence[Any]) -> None:
    """Truncation as TRL itself counts it (``completions/clipped_ratio``): the last id is
    neither an EOS id nor the pad id."""
    ids = {int(i) for i in trainer.eos_token_ids}
    pad = getattr(trainer, "_tokenizer", trainer.processing_class).pad_token_id
    if pad is not None:
        ids.add(int(pad))
    for reward in rewards:
        if isinstance(reward, CodeReasoningReward):
            reward.eos_token_ids = frozenset(ids)


def _with_progress(trainer: Any) -> Any:
    from transformers import ProgressCallback

    from codereasoner.training.curves import MetricsProgress

    if not trainer.args.disable_tqdm:
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(MetricsProgress)
    return trainer


# --- running ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainResult:
    output_dir: Path
    resumed_from: Path | None
    already_done: bool
    steps: int
    seconds: float
    metrics: dict[str, Any]
    best: dict[str, Any] | None = None  # the best checkpoint, when it became the final model
    signalled: bool = False  # stopped by SIGTERM, after saving a checkpoint
    interrupted: Path | None = None  # the checkpoint saved on the way out


def last_checkpoint(output_dir: Path) -> Path | None:
    """The newest checkpoint that was written whole (see :func:`usable_checkpoint`)."""
    return usable_checkpoint(output_dir)[0]


def usable_checkpoint(output_dir: Path) -> tuple[Path | None, list[str]]:
    """The newest checkpoint whose trainer state (saved last) is there and parses, and why each
    newer one was skipped: a torn or missing state never stops a resume that an older
    checkpoint can make."""
    if not output_dir.is_dir():
        return None, []
    found = []
    for child in output_dir.iterdir():
        match = CHECKPOINT.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    skipped: list[str] = []
    for _, child in sorted(found, reverse=True):
        problem = _state_problem(child / "trainer_state.json")
        if problem is None:
            return child, skipped
        skipped.append(f"skipped {child.name}: {problem}")
    return None, skipped


MAX_STATE_BYTES = 64 << 20  # a trainer state holds the log history: large, not unbounded


def _state_problem(path: Path) -> str | None:
    """Why a checkpoint's trainer state cannot be resumed from; None when it can."""
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return f"{path.name} is over {MAX_STATE_BYTES >> 20} MiB"
        state = parse_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"no {path.name} (not written whole)"
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return f"{path.name} does not parse ({type(exc).__name__})"
    if not isinstance(state, dict) or not isinstance(state.get("global_step"), int):
        return f"{path.name} has no global_step"
    return None


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _identity(recipe: Recipe) -> dict[str, Any]:
    assert recipe.train.dataset is not None
    dataset = Path(recipe.train.dataset)
    held_out = recipe.train.eval_dataset
    return {
        "stage": recipe.stage.value,
        "model": recipe.model.model_name_or_path,
        "dataset_sha256": _digest(dataset),
        # the best checkpoint is chosen on it: evaluations on other data would not compare
        "eval_dataset_sha256": _digest(Path(held_out)) if held_out else None,
        "max_samples": recipe.train.max_samples,
        "rewards": recipe.train.rewards if recipe.stage is Stage.GRPO else None,
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


def _check_run_record(recipe: Recipe) -> bool:
    """True when the folder has no run record yet; RecipeError when it holds another run."""
    record = recipe.output_dir / RUN_FILE
    if not record.exists():
        stranger = foreign_entry(recipe.output_dir, (LOCK_FILE, RUN_FILE))
        if stranger is not None:  # the folder is another command's, or the user's
            raise RecipeError(
                f"{recipe.output_dir}: holds {stranger}, which no training run wrote; choose a "
                "new or empty output_dir"
            )
        return True
    try:
        before = parse_json(record.read_text(encoding="utf-8"))["identity"]
    except (OSError, ValueError, KeyError, TypeError):
        raise RecipeError(f"{record}: unreadable; remove it or choose another output_dir") from None
    changed = [key for key, value in _identity(recipe).items() if before.get(key) != value]
    if changed:
        raise RecipeError(
            f"{recipe.output_dir}: holds a run with another {', '.join(changed)}; "
            "choose another output_dir"
        )
    return False


def _write_run_record(recipe: Recipe) -> None:
    record = {
        "identity": _identity(recipe),
        "recipe": recipe.source,
        "settings": dict(recipe.settings),
    }
    _write_json(recipe.output_dir / RUN_FILE, record)


@dataclass(frozen=True)
class _Plan:
    """What rank 0 decided, holding the folder: every rank follows it."""

    error: str | None = None
    finished: dict[str, Any] | None = None
    checkpoint: str | None = None
    first: bool = False
    skipped: tuple[str, ...] = ()  # newer checkpoints left out, and why


def _plan(recipe: Recipe) -> _Plan:
    first = _check_run_record(recipe)
    done = recipe.output_dir / DONE_FILE
    if done.exists():
        return _Plan(finished=parse_json(done.read_text(encoding="utf-8")))
    checkpoint, skipped = _resume_point(recipe)
    return _Plan(
        checkpoint=str(checkpoint) if checkpoint else None, first=first, skipped=tuple(skipped)
    )


def _resume_point(recipe: Recipe) -> tuple[Path | None, list[str]]:
    """The checkpoint to resume from: ``resume_from_checkpoint`` (a path; ``true``: the last),
    else the folder's last usable one, if any; and the newer ones skipped, with why."""
    explicit = recipe.config.resume_from_checkpoint
    out = recipe.output_dir
    if explicit in (None, "", "False", "false"):
        return usable_checkpoint(out)
    if explicit in ("True", "true"):
        found, skipped = usable_checkpoint(out)
        if found is None:
            raise RecipeError(f"resume_from_checkpoint=true: no complete checkpoint in {out}")
        return found, skipped
    path = Path(explicit)
    problem = _state_problem(path / "trainer_state.json")
    if problem is not None:
        raise RecipeError(
            f"resume_from_checkpoint={explicit}: not a complete checkpoint ({problem})"
        )
    return path, []


def _world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def _shared(plan: _Plan | None) -> _Plan:
    """Rank 0's plan, on every rank."""
    if _world_size() <= 1:
        assert plan is not None
        return plan
    import torch.distributed as dist

    objects = [plan]
    dist.broadcast_object_list(objects, src=0)
    shared = objects[0]
    assert isinstance(shared, _Plan)
    return shared


def train(recipe: Recipe, log: Callable[[str], None] = print) -> TrainResult:
    """Train (or resume, or report finished) in ``recipe.output_dir``; RecipeError when the
    recipe, the data or the folder cannot be used (another run holding it included).

    Under ``accelerate launch``/``torchrun`` every process runs this: rank 0 holds the folder's
    lock and decides (refuse, finished, resume point) for all of them.
    """
    from codereasoner.training.curves import CurvesCallback
    from codereasoner.training.interrupt import StopOnSignal, stopping_on_sigterm

    out = recipe.output_dir
    started = time.monotonic()
    data = read_data(recipe)  # before the folder exists: a bad file must not leave a run record
    if _world_size() > 1:
        _ = recipe.config.device  # joins the process group, so that the ranks can agree
    with contextlib.ExitStack() as stack:
        plan = None
        if is_main_process():
            try:
                stack.enter_context(exclusive(out))
                plan = _plan(recipe)
            except (RecipeError, FolderBusy) as exc:
                plan = _Plan(error=str(exc))
        plan = _shared(plan)
        if plan.error is not None:
            raise RecipeError(plan.error)
        if plan.finished is not None:
            steps = int(plan.finished.get("steps", 0))
            return TrainResult(out, None, True, steps, 0.0, plan.finished)
        checkpoint = Path(plan.checkpoint) if plan.checkpoint else None
        for line in plan.skipped:
            log(line)
        if checkpoint is not None:
            log(f"resuming from {checkpoint}")
        stop = StopOnSignal()
        callbacks = [CurvesCallback(out), stop] if recipe.train.curves else [stop]
        try:
            trainer = build_trainer(recipe, callbacks, data)
        except (OSError, ValueError, ImportError) as exc:  # no such model, TRL's checks, no vLLM
            if isinstance(exc, RecipeError):
                raise
            raise RecipeError(
                f"{recipe.source}: cannot build the trainer: {first_line(exc)}"
            ) from None
        if plan.first and is_main_process():  # once the trainer exists: a bad recipe leaves none
            _write_run_record(recipe)
        with stopping_on_sigterm(stop):
            resume = str(checkpoint) if checkpoint else None
            outcome = trainer.train(resume_from_checkpoint=resume)
        if stop.signalled is not None:
            steps = trainer.state.global_step
            saved = last_checkpoint(out)
            seconds = time.monotonic() - started
            return TrainResult(
                out, checkpoint, False, steps, seconds, {}, signalled=True, interrupted=saved
            )
        _save_final(trainer, out, log)
        metrics = dict(outcome.metrics)
        best = best_checkpoint(trainer.args, trainer.state)
        if trainer.is_world_process_zero():
            done = {"steps": trainer.state.global_step, "metrics": metrics, "best": best}
            _write_json(out / DONE_FILE, done)
            if best is not None:
                log(_best_line(best, out))
        steps = trainer.state.global_step
        return TrainResult(out, checkpoint, False, steps, time.monotonic() - started, metrics, best)


def best_checkpoint(args: Any, state: Any) -> dict[str, Any] | None:
    """The best evaluation of a ``load_best_model_at_end`` run and the checkpoint loaded for it
    before the final save (``checkpoint`` None: the starting model, evaluated with
    ``eval_on_start``, stayed the best, and has no checkpoint); None when it is off or nothing
    was evaluated."""
    if not args.load_best_model_at_end or state.best_metric is None:
        return None
    folder = state.best_model_checkpoint
    return {
        "checkpoint": Path(folder).name if folder else None,
        "step": state.best_global_step,
        "metric": args.metric_for_best_model,
        "value": state.best_metric,
    }


def _best_line(best: dict[str, Any], out: Path) -> str:
    score = f"{best['metric']} {best['value']:.4g}"
    if best["checkpoint"] is None:
        return f"no checkpoint beat the starting model ({score}); the model in {out} is the last"
    return f"the model in {out} is the best checkpoint, {best['checkpoint']} ({score})"


def is_main_process() -> bool:
    """Rank 0 of a `torchrun`/`accelerate launch` job, or a single process."""
    return os.environ.get("RANK", "0") == "0"


def read_data(recipe: Recipe) -> TrainingData:
    """The recipe's training rows and evaluation rows (None without ``eval_dataset``)."""
    train_args = recipe.train
    assert train_args.dataset is not None  # load_recipe checks it
    rows = read_dataset(Path(train_args.dataset), recipe.stage, train_args.max_samples)
    eval_rows = (
        read_dataset(Path(train_args.eval_dataset), recipe.stage, train_args.max_samples)
        if train_args.eval_dataset
        else None
    )
    return rows, eval_rows


def _sharded(trainer: Any) -> bool:
    """Parameters sharded across processes (FSDP, DeepSpeed ZeRO-3): no merge on one rank."""
    if getattr(trainer, "is_fsdp_enabled", False):
        return True
    plugin = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
    return plugin is not None and getattr(plugin, "zero_stage", 0) == 3


def _save_final(trainer: Any, out: Path, log: Callable[[str], None]) -> None:
    """The trained model in ``out`` (LoRA: merged there, the adapter in ``out/adapter``)."""
    model = trainer.model
    if not hasattr(model, "merge_and_unload"):  # not a peft model
        trainer.save_model(str(out))
        return
    trainer.save_model(str(out / ADAPTER_DIR))
    if _sharded(trainer):
        if trainer.is_world_process_zero():
            log(
                f"the LoRA adapter is in {out / ADAPTER_DIR}; merge it into the base model on "
                "one process before evaluating (sharded parameters cannot be merged here)"
            )
        return
    if trainer.is_world_process_zero():
        merged = model.merge_and_unload()
        merged.save_pretrained(str(out))
        trainer.processing_class.save_pretrained(str(out))
