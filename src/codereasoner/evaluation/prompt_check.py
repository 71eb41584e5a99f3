"""Does a generations file answer this benchmark's prompts? Each JSON Lines record may carry the
``prompt_hash`` of the prompt its model saw (``export-generations`` writes it); ``score`` checks
it against every prompt the benchmark can show for that id (each style, chat or raw, with the
benchmark's system message) and refuses a record answering another prompt, naming the benchmark
whose prompt it was when one of the same data has it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codereasoner.benchmarks import Benchmark
from codereasoner.evaluation.scoring import same_data
from codereasoner.files import read_text_bounded
from codereasoner.models.base import prompt_hash
from codereasoner.tasks import Item

IGNORE_FLAG = "--ignore-prompt-hash"
MAX_HASH_CHARS = 128


class PromptMismatch(ValueError):
    """A record answers a prompt this benchmark never shows; the message is one line."""


@dataclass(frozen=True)
class HashCheck:
    """What the check found: ``checked`` records matched, ``absent`` items had no hash,
    ``ignored`` when the check was switched off."""

    checked: int = 0
    absent: int = 0
    ignored: bool = False

    def to_dict(self) -> dict[str, object]:
        if self.ignored:
            return {"ignored": True}
        return {"checked": self.checked, "absent": self.absent}


def file_hashes(path: Path) -> dict[str, list[str]]:
    """``{id: prompt hashes}`` of a JSON Lines generations file (read again for its errors);
    an official file (one object of answers) has none."""
    found: dict[str, list[str]] = {}
    try:
        text = read_text_bounded(path)
    except (OSError, UnicodeDecodeError):
        return {}  # unreadable: reading the generations says so, in one line
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return {}  # an official file, or not one read_generations took
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            return {}
        digest = record.get("prompt_hash")
        if digest is None:
            continue
        if not isinstance(digest, str) or not 0 < len(digest) <= MAX_HASH_CHARS:
            raise PromptMismatch(
                f"{path}:{number}: field 'prompt_hash' must be a text of at most "
                f"{MAX_HASH_CHARS} characters, got {type(digest).__name__}"
            )
        found.setdefault(record["id"], []).append(digest)
    return found


def item_hashes(bench: Benchmark, item: Item) -> dict[str, str]:
    """``{hash: how}`` of every prompt ``bench`` can show for ``item`` (``how``: the style,
    chat or raw)."""
    shown: dict[str, str] = {}
    for style in bench.styles:
        text = bench.prompt(item, style)
        for chat in (False, True):
            digest = prompt_hash(text, chat, bench.system_message(chat))
            shown.setdefault(digest, f"{style} style, {'chat' if chat else 'raw'}")
    return shown


def check_prompt_hashes(
    path: Path,
    bench: Benchmark,
    items: Sequence[Item],
    data_dir: Path | None,
    *,
    others: Iterable[tuple[Benchmark, Sequence[Item]]] | None = None,
) -> HashCheck:
    """PromptMismatch at the first record whose hash is none of ``bench``'s prompts for its id;
    ``others`` (default: the benchmarks of the same data at hand) are read only to name whose
    prompt it was."""
    hashes = file_hashes(path)
    by_id = {item.id: item for item in items}
    checked = 0
    for item_id, digests in hashes.items():
        item = by_id.get(item_id)
        if item is None:
            continue
        shown = item_hashes(bench, item)
        for digest in digests:
            if digest in shown:
                checked += 1
                continue
            found = owner(digest, item_id, same_data(bench, data_dir) if others is None else others)
            raise PromptMismatch(_mismatch(path, bench, item_id, found))
    absent = sum(1 for item in items if item.id not in hashes)
    return HashCheck(checked=checked, absent=absent)


def owner(
    digest: str, item_id: str, others: Iterable[tuple[Benchmark, Sequence[Item]]]
) -> tuple[str, str] | None:
    """``(benchmark, how)`` whose prompt for ``item_id`` hashes to ``digest``, if any."""
    for other, other_items in others:
        item = next((entry for entry in other_items if entry.id == item_id), None)
        if item is None:
            continue
        how = item_hashes(other, item).get(digest)
        if how is not None:
            return other.name, how
    return None


def _mismatch(path: Path, bench: Benchmark, item_id: str, found: tuple[str, str] | None) -> str:
    where = f"{path}: record {item_id[:80]!r}"
    if found is not None:
        name, how = found
        return (
            f"{where}: its prompt_hash is {name}'s prompt ({how}), not {bench.name}'s: this file "
            f"answers {name}; score it with --bench {name} (or pass {IGNORE_FLAG})"
        )
    return (
        f"{where}: its prompt_hash matches none of {bench.name}'s prompts for this id (another "
        f"benchmark, data version or system message?); pass {IGNORE_FLAG} to score it anyway"
    )
