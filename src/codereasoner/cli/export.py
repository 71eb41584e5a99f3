"""``codereasoner export --from DIR --format F --out PATH``: distilled data as training files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from codereasoner.cli.common import check_parents, fail, safe_text
from codereasoner.training.export import (
    DATASET_INFO,
    DIRECTIONS,
    FORMATS,
    LLAMAFACTORY_NAMES,
    VERL_DATA_SOURCE,
    ExportError,
    export,
    parse_directions,
)

FORMAT_HELP = (
    "What to write. trl-sft: JSONL of conversational 'messages' (user prompt, assistant "
    "completion), verified records only. trl-grpo: JSONL of 'prompt' (chat list) plus the reward "
    "columns direction, code, entry_point, call, target, case_id, probes; every record. "
    "llamafactory-alpaca / llamafactory-sharegpt: a LLaMA-Factory dataset_dir, verified records "
    "only. verl: parquet (needs pyarrow, in the train extra) with data_source "
    f"'{VERL_DATA_SOURCE}' (verl selects the reward by it), prompt, ability 'code', reward_model "
    "and extra_info; every record."
)
OUT_HELP = (
    "Where to write. trl-sft, trl-grpo: a .jsonl file; verl: a .parquet file; "
    "llamafactory-*: a folder (created) holding "
    + " or ".join(f"{name}.jsonl" for name in LLAMAFACTORY_NAMES.values())
    + f" and its {DATASET_INFO} (use it as dataset_dir and the dataset name "
    + " or ".join(LLAMAFACTORY_NAMES.values())
    + "). Written atomically; an existing PATH is refused unless --force."
)


def export_command(
    source: Annotated[
        Path,
        typer.Option(
            "--from",
            help="The distillation output folder (holding distilled.jsonl).",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option("--format", "-f", help=FORMAT_HELP + " One of: " + ", ".join(FORMATS) + "."),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP, show_default=False)],
    directions: Annotated[
        str,
        typer.Option(help="Directions to export, comma-separated: forward, backward, probe."),
    ] = ",".join(DIRECTIONS),
    split: Annotated[str, typer.Option(help="verl only: the extra_info.split value.")] = "train",
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out.")] = False,
) -> None:
    """Export distilled.jsonl as TRL (SFT, GRPO), LLaMA-Factory or verl training data."""
    try:
        if fmt not in FORMATS:
            raise ExportError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
        check_parents("--out", out)  # a file in the way: one line, not an OSError at the end
        summary = export(source, fmt, out, parse_directions(directions), force=force, split=split)
    except ExportError as exc:
        fail(str(exc))
    typer.echo(safe_text(summary.line()))


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
