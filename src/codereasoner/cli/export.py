"""``codereasoner export --from DIR --format F --out PATH``: distilled data as training files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from codereasoner.cli.common import check_parents, fail, flag_message, safe_text
from codereasoner.training.export import (
    DATASET_INFO,
    DIRECTIONS,
    FORMATS,
    LLAMAFACTORY_NAMES,
    VERL_DATA_SOURCE,
    DistilledRecord,
    ExportError,
    RecordFilter,
    export,
    parse_directions,
)
from codereasoner.training.method_split import (
    DEFAULT_PERCENT,
    SPLITS,
    MethodSplit,
    write_manifest,
)
from codereasoner.training.pass_rate import PassRateFilter

# The formats that write prompts for RL (every record), which a pass rate can filter.
RL_FORMATS = ("trl-grpo", "verl")

FORMAT_HELP = (
    "What to write. trl-sft: JSONL of conversational 'prompt' (the user message) and "
    "'completion' (the assistant message) rows, so TRL trains on the completion only; verified "
    "records only. trl-grpo: JSONL of 'prompt' (chat list) plus the reward "
    "columns direction, code, entry_point, call, target, case_id, probes; every record. "
    "llamafactory-alpaca / llamafactory-sharegpt: a LLaMA-Factory dataset_dir, verified records "
    "only. verl: parquet (needs pyarrow, in the train extra) with data_source "
    f"'{VERL_DATA_SOURCE}' (verl selects the reward by it), prompt, ability 'code', reward_model "
    "and extra_info; every record."
)
PASS_RATE_HELP = (
    "trl-grpo and verl only: keep the records whose pass rate in DIR lies strictly between "
    "--pass-above and --pass-below. DIR is a `codereasoner distill` folder of the model GRPO "
    "starts from (--teacher SFT_MODEL --k 8 --temperature 1.0 --max-tokens 4096, over the same "
    "cases, directions, style and hint): a prompt it always or never solves gives a whole GRPO "
    "group the advantage 0."
)
METHODS_HELP = (
    "Keep the records of one share of the catalog methods: "
    + ", ".join(SPLITS)
    + ". Each method falls in a share by a hash of --method-seed and its name "
    "(--method-split percent), so held-out methods never reach training; the split is recorded "
    "beside --out as OUT.methods.json."
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
    pass_rate: Annotated[
        Path | None,
        typer.Option("--pass-rate", metavar="DIR", help=PASS_RATE_HELP, show_default=False),
    ] = None,
    pass_above: Annotated[
        float | None,
        typer.Option(
            help="With --pass-rate: leave out pass rates at or below this (-1: none).  [default: 0]"
        ),
    ] = None,
    pass_below: Annotated[
        float | None,
        typer.Option(
            help="With --pass-rate: leave out pass rates at or above this (2: none).  [default: 1]"
        ),
    ] = None,
    methods: Annotated[
        str | None, typer.Option(help=METHODS_HELP, metavar="SHARE", show_default=False)
    ] = None,
    method_split: Annotated[
        str,
        typer.Option(help="With --methods: train,validation,test percentages of the methods."),
    ] = ",".join(map(str, DEFAULT_PERCENT)),
    method_seed: Annotated[int, typer.Option(help="With --methods: the split's seed.")] = 0,
) -> None:
    """Export distilled.jsonl as TRL (SFT, GRPO), LLaMA-Factory or verl training data."""
    try:
        if fmt not in FORMATS:
            raise ExportError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
        by_pass_rate = _pass_rate_filter(fmt, pass_rate, pass_above, pass_below)
        split_by = _method_split(methods, method_split, method_seed)
        select = _both(split_by, methods, by_pass_rate)
        check_parents("--out", out)  # a file in the way: one line, not an OSError at the end
        summary = export(
            source, fmt, out, parse_directions(directions), force=force, split=split, select=select
        )
        if split_by is not None and methods is not None:
            write_manifest(out, split_by, methods, summary.methods)
    except ExportError as exc:
        fail(flag_message(exc))
    typer.echo(safe_text(summary.line()))


def _method_split(share: str | None, percent: str, seed: int) -> MethodSplit | None:
    if share is None:
        return None
    try:
        shares = tuple(int(part) for part in percent.split(","))
    except ValueError:
        raise ExportError(
            f"--method-split {percent!r}: expected three whole percentages such as 70,15,15"
        ) from None
    split = MethodSplit(seed, shares)  # type: ignore[arg-type]  # its check names the shape
    split.selector(share)
    return split


def _both(
    split: MethodSplit | None, share: str | None, pass_rate: RecordFilter | None
) -> RecordFilter | None:
    """The method share's records, then those the pass rate keeps."""
    if split is None or share is None:
        return pass_rate
    by_method = split.selector(share)
    if pass_rate is None:
        return by_method

    def select(records: Sequence[DistilledRecord]) -> tuple[list[DistilledRecord], str]:
        kept, said = by_method(records)
        chosen, more = pass_rate(kept)
        return chosen, f"{said}; {more}"

    return select


def _pass_rate_filter(
    fmt: str, source: Path | None, above: float | None, below: float | None
) -> RecordFilter | None:
    if source is None:
        if above is not None or below is not None:
            flag = "--pass-above" if above is not None else "--pass-below"
            raise ExportError(f"{flag} needs --pass-rate DIR (the pass rates to filter by)")
        return None
    if fmt not in RL_FORMATS:
        raise ExportError(
            f"--pass-rate filters RL prompts: --format {' or '.join(RL_FORMATS)}, not {fmt}"
        )
    return PassRateFilter.read(
        source, 0.0 if above is None else above, 1.0 if below is None else below
    )


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
