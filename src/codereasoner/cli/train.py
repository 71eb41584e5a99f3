"""``codereasoner train sft|grpo --config RECIPE [key=value ...]`` and ``train tiny-model OUT``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from codereasoner.cli.common import check_folder, console, fail, flag_message, safe_cell, safe_text
from codereasoner.extras import missing

INSTALL_TRAIN = "pip install 'codereasoner[train]'"
OVERRIDES_HELP = (
    "Settings that replace the recipe's, as key=value (the value read as YAML), e.g. "
    "learning_rate=1e-5 max_steps=10 use_peft=true model_name_or_path=runs/sft. Any field of "
    "our TrainArguments, TRL's SFTConfig/GRPOConfig or TRL's ModelConfig (docs/training.md)."
)
CONFIG_OPTION = typer.Option(
    "--config", "-c", help="The recipe: a YAML file (see recipes/).", show_default=False
)
DRY_RUN_OPTION = typer.Option(
    "--dry-run",
    help="Parse and check the recipe and its data, print the settings, train nothing; what "
    "needs the training hardware (bf16 support, vLLM, the GPUs) is checked when training starts.",
)
# The recipes' batch comments are for the paper's 8 GPUs, one training process each.
PAPER_PROCESSES = 8

app = typer.Typer(
    help="Train with TRL: SFT on distilled chains, GRPO on the execution-verified reward.",
    no_args_is_help=True,
)


def _run(stage: str, config: Path, overrides: list[str] | None, dry_run: bool) -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    absent = missing("trl", "transformers", "torch", "yaml")
    if absent is not None:  # said first: nothing else can be checked without them
        fail(f"train needs the train extra ({absent}): {INSTALL_TRAIN}")
    try:
        from codereasoner.training.recipe import RecipeError, load_recipe
        from codereasoner.training.trainers import is_main_process, read_data, train
    except ImportError as exc:
        fail(f"train needs the train extra ({exc.name or exc}): {INSTALL_TRAIN}")
    from codereasoner.synth.writer import FolderBusy

    try:
        recipe = load_recipe(
            stage, config, overrides or [], hardware=not dry_run, inputs=not dry_run
        )  # a dry run checks a recipe whose model an earlier stage has yet to train
        if dry_run:
            read_data(recipe)  # the rows as training reads them: one error line when bad
            _print_settings(recipe)
            return
        result = train(
            recipe,
            log=lambda line: console.print(safe_cell(line), highlight=False, soft_wrap=True),
        )
    except (RecipeError, FolderBusy) as exc:
        if not is_main_process():  # rank 0 says it, once
            raise typer.Exit(2) from None
        fail(flag_message(exc))
    except ModuleNotFoundError as exc:  # trl, transformers, torch or yaml: the train extra
        fail(f"train needs the train extra ({exc.name or exc}): {INSTALL_TRAIN}")
    except KeyboardInterrupt:
        fail("interrupted (re-run the same command to resume from the last checkpoint)", 130)
    if not is_main_process():
        return
    if result.signalled:
        where = safe_text(str(result.interrupted)) if result.interrupted else "no checkpoint"
        fail(
            f"interrupted by SIGTERM after step {result.steps}: saved {where}; re-run the same "
            "command to resume",
            143,
        )
    out = safe_text(str(result.output_dir))
    if result.already_done:
        typer.echo(
            f"{out}: already finished ({result.steps} steps); "
            "choose another output_dir to train again"
        )
        return
    typer.echo(
        f"{stage}: {result.steps} steps in {result.seconds:.0f} s; model in {out} "
        f"(evaluate: {_eval_hint(out, recipe)})"
    )


def _eval_hint(out: str, recipe: Any) -> str:
    """The eval command that asks the trained model as it was trained: chat prompts (the
    rows are chat messages), its answer tags, and GRPO's completion length."""
    hint = f"codereasoner eval --model hf:{out} --chat --extraction answer-tag"
    length = getattr(recipe.config, "max_completion_length", None)
    if isinstance(length, int) and length > 0:
        hint += f" --max-tokens {length}"
    return hint + " --bench ..."


def _print_settings(recipe: Any) -> None:
    """The recipe's settings as the trainer will see them (converted by their fields' types),
    GRPO's batches, and what a check without the training hardware left out."""
    from codereasoner.training.recipe import WITHOUT_HARDWARE, Stage

    typer.echo(
        safe_text(f"{recipe.source}: train {recipe.stage.value}, output_dir {recipe.output_dir}")
    )
    owners = (recipe.train, recipe.config, recipe.model)
    for key in sorted(recipe.settings):
        owner = next((o for o in owners if hasattr(o, key)), None)
        value = getattr(owner, key) if owner is not None else recipe.settings[key]
        if key in WITHOUT_HARDWARE and not recipe.hardware_checked:
            value = recipe.settings[key]  # as written; the check parsed it otherwise
        typer.echo(safe_text(f"  {key}: {value!r}"))
    if recipe.stage is Stage.GRPO:
        typer.echo(_grpo_batches(recipe.config))
    if not recipe.hardware_checked:
        typer.echo(
            "checked without the training hardware: bf16 support, vLLM and the GPUs are "
            "checked when training starts"
        )


def _grpo_batches(config: Any) -> str:
    """One GRPO batch (a generation) and its optimizer updates, as TRL derived them."""
    per_process = config.per_device_train_batch_size * config.steps_per_generation
    per_update = config.per_device_train_batch_size * config.gradient_accumulation_steps
    updates = (
        config.steps_per_generation * config.num_iterations // config.gradient_accumulation_steps
    )
    prompts = per_process * PAPER_PROCESSES / config.num_generations
    update_prompts = per_update * PAPER_PROCESSES / config.num_generations
    return (
        f"GRPO batch: {per_process} completions per process ({prompts:g} prompts x "
        f"{config.num_generations} on {PAPER_PROCESSES} processes), {updates} optimizer "
        f"updates per batch ({update_prompts:g} prompts each on {PAPER_PROCESSES} processes)"
    )


def _stage_command(stage: str, summary: str) -> None:
    def command(
        config: Annotated[Path, CONFIG_OPTION],
        overrides: Annotated[
            list[str] | None, typer.Argument(help=OVERRIDES_HELP, show_default=False)
        ] = None,
        dry_run: Annotated[bool, DRY_RUN_OPTION] = False,
    ) -> None:
        _run(stage, config, overrides, dry_run)

    command.__doc__ = summary
    app.command(stage)(command)


_stage_command(
    "sft", "Supervised fine-tuning (TRL SFTTrainer) on `export --format trl-sft` data; resumable."
)
_stage_command(
    "grpo",
    "GRPO (TRL GRPOTrainer) with the execution-verified reward on `export --format trl-grpo` "
    "data; curves in OUTPUT_DIR/train_curves.{jsonl,png}; resumable.",
)


@app.command("tiny-model")
def tiny_model_command(
    out: Annotated[Path, typer.Argument(help="The folder to write the model into.")],
    seed: Annotated[int, typer.Option(help="Weights seed.")] = 0,
) -> None:
    """Build a tiny random Qwen2-style model and tokenizer locally (no network, ~1 s) for CPU smoke runs."""
    try:
        from codereasoner.training.tiny import build_tiny_model
    except ImportError as exc:
        fail(f"tiny-model needs the train extra ({exc.name or exc}): {INSTALL_TRAIN}")
    check_folder("", out)
    if out.exists() and any(out.iterdir()):
        fail(f"{out}: exists and is not empty; choose a new folder")
    try:
        build_tiny_model(out, seed=seed)
    except ImportError as exc:
        fail(f"tiny-model needs the train extra ({exc.name or exc}): {INSTALL_TRAIN}")
    typer.echo(f"tiny model in {safe_text(str(out))}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="train")
