"""``codereasoner bench``: list, describe and fetch benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from codereasoner import benchmarks
from codereasoner.benchmarks.cache import (
    LOCAL,
    DataUnavailable,
    cache_root,
    fetch,
    import_files,
    import_hint,
)
from codereasoner.cli.common import (
    console,
    dump_json,
    error_console,
    fail,
    flag_message,
    safe_markup,
)
from codereasoner.cli.progress import LineProgress

bench_app = typer.Typer(help="Describe and fetch benchmarks.", no_args_is_help=True)


def _get(name: str) -> benchmarks.Benchmark:
    try:
        return benchmarks.get(name)
    except KeyError as exc:
        fail(exc.args[0])


def _cache_word(bench: benchmarks.Benchmark) -> str:
    if all(source.kind == LOCAL for source in bench.sources):
        return "local"
    entries = bench.cache_status()
    if all(entry.verified for entry in entries):
        return "cached"
    if any(entry.present for entry in entries):
        return "unverified"
    return "not cached"


def _listing(bench: benchmarks.Benchmark) -> dict[str, Any]:
    word = _cache_word(bench)
    local = word == "local"
    return {
        "name": bench.name,
        "tasks": list(bench.tasks),
        "items": bench.counts.get("items"),
        "license": bench.license,
        "cache": word,
        "available": word == "cached",
        "where": bench.sources[0].url if local else str(cache_root() / bench.dataset),
    }


@bench_app.command("list")
def list_command(
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print a JSON list: name, tasks, items, license, cache, available (the data is "
            "in the cache and verified) and where (the cache folder, or what --data-dir takes).",
        ),
    ] = False,
) -> None:
    """All benchmarks: task, size, license, cache status."""
    listing = [_listing(bench) for bench in benchmarks.REGISTRY.values()]
    if as_json:
        typer.echo(dump_json(listing, indent=2))
        return
    table = Table(title="benchmarks", title_justify="left")
    for column in ("name", "task", "items", "license", "cache"):
        table.add_column(column, overflow="fold")
    for entry in listing:
        table.add_row(
            escape(entry["name"]),
            escape(", ".join(entry["tasks"])),
            str(entry["items"] if entry["items"] is not None else "?"),
            escape(entry["license"]),
            entry["cache"],
        )
    console.print(table)


@bench_app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="Benchmark name (see 'bench list').")],
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Also load the data from here and count it: the data root (one folder per "
            "dataset) or the benchmark's own folder."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """One benchmark: description, task and styles, counts, license, source, files, cache."""
    bench = _get(name)
    info: dict[str, Any] = {
        "name": bench.name,
        "title": bench.title,
        "description": bench.description,
        "task": ", ".join(bench.tasks),
        "styles": list(bench.styles),
        "metrics": bench.metrics,
        "counts": dict(bench.counts),
        "license": bench.license,
        "source": bench.upstream,
        "metric": bench.metric_note,
        "breakdown": f"{bench.breakdown}: {bench.breakdown_note}",
        "files": [
            {
                "name": entry.source.filename,
                "url": entry.source.url,
                "kind": entry.source.kind,
                "pinned_sha256": entry.source.sha256,
                "upstream_sha256": entry.source.upstream_sha256,
                "cache_path": str(entry.path),
                "cached": entry.present,
                "verified": entry.verified,
            }
            for entry in bench.cache_status()
        ],
    }
    if data_dir is not None:
        try:
            info["loaded"] = {
                "data_dir": str(bench.folder(data_dir)),
                "items": len(bench.load(data_dir)),
            }
        except DataUnavailable as exc:
            fail(flag_message(exc))
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
        "metrics",
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
        if entry["kind"] == LOCAL:
            table.add_row(f"file {entry['name']}", escape(f"local only: {entry['url']}"))
            continue
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
        if entry["upstream_sha256"]:
            pinned = f"upstream file sha256 {entry['upstream_sha256']}; {pinned}"
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
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Download here instead of the cache: into the data root's folder named after "
            "the dataset, or into the benchmark's own folder; then pass the same --data-dir to "
            "the other commands."
        ),
    ] = None,
    origin: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Import files you downloaded by hand into the cache instead of downloading: a "
            "folder holding the benchmark's files (see 'bench show'), or the data root holding "
            "its dataset's folder. Checksums are verified; nothing is copied on a mismatch.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Download a benchmark's data (into the cache, or --data-dir) and record its checksums;
    with --from, import local files into the cache instead."""
    bench = _get(name)
    if origin is not None:
        if data_dir is not None:
            fail("--from imports into the cache; give --from or --data-dir, not both")
        _import(bench, origin)
    else:
        _download(bench, data_dir)
    folder = None if data_dir is None else _fetch_folder(bench, data_dir)
    # Loading checks the items; REval traces every program in the sandbox for its ground truth
    # the first time (a minute or two), so the wait is shown.
    progress = LineProgress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=error_console,
        transient=True,
    )
    try:
        with progress:
            progress.add_task(f"reading and checking {bench.name}'s items", total=None, wait=True)
            count = len(bench.load(folder, download=False))
    except DataUnavailable as exc:
        fail(flag_message(exc))
    console.print(
        f"{safe_markup(bench.name)}: {count} items (upstream: {bench.counts.get('items', '?')})"
    )


def _import(bench: benchmarks.Benchmark, origin: Path) -> None:
    if not origin.is_dir():
        what = "not a folder" if origin.exists() else "no such folder"
        fail(f"--from {origin}: {what}; expected the folder holding the files to import")
    try:
        paths = import_files(bench.dataset, bench.sources, bench.folder(origin))
    except (DataUnavailable, OSError) as exc:
        if isinstance(exc, DataUnavailable):
            fail(flag_message(exc))
        fail(f"cannot import into the cache {cache_root()} ({exc.strerror or exc})")
    for path in paths:
        console.print(f"{safe_markup(path.name)}: {safe_markup(path)} (imported, sha256 checked)")


def _download(bench: benchmarks.Benchmark, data_dir: Path | None) -> None:
    folder = None if data_dir is None else _fetch_folder(bench, data_dir)
    created = [] if folder is None else [p for p in (folder, *folder.parents) if not p.exists()]
    for source in bench.sources:
        try:
            path = fetch(bench.dataset, source, folder=folder, benchmark=bench.name)
        except (DataUnavailable, OSError) as exc:
            _remove_empty(created)
            fail(_fetch_error(bench, exc, folder))
        console.print(f"{safe_markup(source.filename)}: {safe_markup(path)}")


def _fetch_error(
    bench: benchmarks.Benchmark, exc: DataUnavailable | OSError, folder: Path | None
) -> str:
    """The one error line; here ``--data-dir`` is where to download to, so the way to use
    local files is ``--from`` (into the cache) or copying them into that folder."""
    if isinstance(exc, DataUnavailable):
        if not exc.local:
            return str(exc)
        if folder is None:
            return f"{exc.problem}; {import_hint(bench.name)}"
        return f"{exc.problem}; copy the files you downloaded into {folder} by hand instead"
    return f"--data-dir: cannot write into {folder} ({exc.strerror or exc})"


def _remove_empty(created: list[Path]) -> None:
    """Folders a failed fetch created, deepest first, as long as they are empty."""
    for path in created:
        try:
            path.rmdir()
        except OSError:
            return


def _fetch_folder(bench: benchmarks.Benchmark, data_dir: Path) -> Path:
    """Where ``--data-dir`` wants the files: the benchmark's folder when ``data_dir`` is it
    (holds one of its files, or is named after its dataset), else ``<data_dir>/<dataset>/``."""
    folder = bench.folder(data_dir)
    if folder != data_dir:
        return folder
    own = data_dir.name == bench.dataset
    if own or any((data_dir / source.filename).is_file() for source in bench.sources):
        return data_dir
    return data_dir / bench.dataset


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
