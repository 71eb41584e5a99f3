"""``codereasoner bench``: list, describe and fetch benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from codereasoner import benchmarks
from codereasoner.benchmarks.cache import DataUnavailable, fetch
from codereasoner.cli.common import console, fail

bench_app = typer.Typer(help="Describe and fetch benchmarks.", no_args_is_help=True)


def _get(name: str) -> benchmarks.Benchmark:
    try:
        return benchmarks.get(name)
    except KeyError as exc:
        fail(exc.args[0])


def _cache_word(bench: benchmarks.Benchmark) -> str:
    entries = bench.cache_status()
    if all(entry.verified for entry in entries):
        return "cached"
    if any(entry.present for entry in entries):
        return "unverified"
    return "not cached"


@bench_app.command("list")
def list_command() -> None:
    """All benchmarks: task, size, license, cache status."""
    table = Table(title="benchmarks", title_justify="left")
    for column in ("name", "task", "items", "license", "cache"):
        table.add_column(column, overflow="fold")
    for bench in benchmarks.REGISTRY.values():
        table.add_row(bench.name, bench.task.name, str(bench.counts.get("items", "?")),
                      escape(bench.license), _cache_word(bench))  # fmt: skip
    console.print(table)


@bench_app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="Benchmark name (see 'bench list').")],
    data_dir: Annotated[
        Path | None, typer.Option(help="Also load the data from this directory and count it.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """One benchmark: description, task and styles, counts, license, source, files, cache."""
    bench = _get(name)
    info: dict[str, Any] = {
        "name": bench.name, "title": bench.title, "description": bench.description,
        "task": bench.task.name, "styles": [style.value for style in bench.task.styles],
        "counts": dict(bench.counts), "license": bench.license, "source": bench.upstream,
        "metric": bench.metric_note, "breakdown": f"{bench.breakdown}: {bench.breakdown_note}",
        "files": [
            {"name": entry.source.filename, "url": entry.source.url, "kind": entry.source.kind,
             "pinned_sha256": entry.source.sha256, "cache_path": str(entry.path),
             "cached": entry.present, "verified": entry.verified}
            for entry in bench.cache_status()
        ],
    }  # fmt: skip
    if data_dir is not None:
        try:
            info["loaded"] = {"data_dir": str(data_dir), "items": len(bench.load(data_dir))}
        except DataUnavailable as exc:
            fail(str(exc))
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    table = Table(
        title=escape(f"{bench.name}: {bench.title}"), show_header=False, title_justify="left"
    )
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key in (
        "description",
        "task",
        "styles",
        "counts",
        "license",
        "source",
        "metric",
        "breakdown",
    ):
        value = info[key]
        text = ", ".join(value) if isinstance(value, list) else value
        if isinstance(value, dict):
            text = ", ".join(f"{k} {v}" for k, v in value.items())
        table.add_row(key, escape(str(text)))
    for entry in info["files"]:
        state = (
            "verified"
            if entry["verified"]
            else "present, unverified"
            if entry["cached"]
            else "not cached"
        )
        pinned = (
            f"sha256 {entry['pinned_sha256']}"
            if entry["pinned_sha256"]
            else "sha256 recorded on first download"
        )
        table.add_row(
            f"file {entry['name']}",
            escape(f"{entry['url']} ({pinned}); cache: {entry['cache_path']} ({state})"),
        )
    if "loaded" in info:
        table.add_row(
            "loaded", escape(f"{info['loaded']['items']} items from {info['loaded']['data_dir']}")
        )
    console.print(table)


@bench_app.command("fetch")
def fetch_command(
    name: Annotated[str, typer.Argument(help="Benchmark name (see 'bench list').")],
) -> None:
    """Download a benchmark's data into the cache and record its checksums."""
    bench = _get(name)
    for source in bench.sources:
        try:
            path = fetch(bench.dataset, source)
        except DataUnavailable as exc:
            fail(str(exc))
        console.print(f"{escape(source.filename)}: {escape(str(path))}")
    try:
        count = len(bench.load(download=False))
    except DataUnavailable as exc:
        fail(str(exc))
    console.print(f"{bench.name}: {count} items (upstream: {bench.counts.get('items', '?')})")


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
