"""The shell lines the README, recipes/README.md and docs/*.md show, in each document's order,
and why a line cannot run on this machine (a GPU, a model server, a cluster, the network, a
placeholder the reader fills in), or None when it runs as written.

A document's lines run in one scratch folder, in order, so what one line writes the next one
reads, as for a reader who types them. What a skipped line would have written is unknown, so a
line that reads it is skipped too, naming the line it waits for.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from codereasoner.models.packaged import PACKAGED

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [
    ROOT / "README.md",
    ROOT / "recipes" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
BLOCK = re.compile(r"```(?:bash|sh|shell|console)\n(.*?)```", re.DOTALL)
# Words that stand for something the reader supplies: a shell line holding one is a usage line.
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*(?:\.yaml)?|<[^>]*>|.*\.\.\..*|\[.*|/path/to/.*)$")
SERVER_PORT = re.compile(r"--port[ =](\d+)")
MODEL_URL = re.compile(r"@https?://([\w.-]+):(\d+)")
OUTPUT_FLAGS = ("--out", "-o", "--output", "--output-dir")


@dataclass
class Step:
    """One shell line of a document (continuation lines joined, its comment dropped)."""

    document: str
    number: int  # the line in the document where it starts
    text: str
    background: bool = False  # ends with ``&``: a server the next lines talk to
    skip: str | None = None  # why it cannot run here

    def __str__(self) -> str:
        return f"{self.document}:{self.number}: {self.text[:110]}"


# What the reader is assumed to hold, as the docs describe it; the runner provides each one:
# a program to run, CRUXEval's official samples, a generations file for the line's benchmark,
# the data root and files downloaded by hand.
READER_FILES = ("prog.py", "samples.json", "gens.jsonl", "data", "downloads")
INPUT_FLAGS = ("--from", "--cases", "--data-dir", "-g", "--generations", "--completions",
               "--pass-rate", "--config")  # fmt: skip
# commands whose positional arguments are files or folders they read
READS_POSITIONALS = {("report",), ("export-generations",), ("run",), ("trace",)}


@dataclass
class DocumentState:
    """What the lines before this one left: servers started, paths written (by any line, and
    by skipped lines), variables set."""

    ports: list[int] = field(default_factory=list)  # servers running, last started last
    made: set[str] = field(default_factory=set)
    unmade: dict[str, Step] = field(default_factory=dict)  # path -> the skipped line
    variables: set[str] = field(default_factory=set)


def read_steps(document: Path) -> list[Step]:
    """The shell lines of ``document``'s shell blocks, in order, classified."""
    text = document.read_text(encoding="utf-8")
    name = str(document.relative_to(ROOT)) if document.is_relative_to(ROOT) else document.name
    steps: list[Step] = []
    state = DocumentState()
    for match in BLOCK.finditer(text):
        first_line = text.count("\n", 0, match.start(1)) + 1
        for number, line in _lines(match.group(1), first_line):
            step = _step(name, number, line)
            if step is not None:
                step.skip = why_not_here(step, state)
                remember(step, state)
                steps.append(step)
    return steps


def _lines(block: str, first_line: int) -> Iterable[tuple[int, str]]:
    """``(line number, text)`` with continuations joined and ``for ...; do`` loops kept whole."""
    pending, start = "", first_line
    for offset, raw in enumerate(block.split("\n")):
        if not pending:
            start = first_line + offset
        pending += raw.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        opened = pending.lstrip().startswith(("for ", "while ", "until ", "if "))
        closed = re.search(r"\b(done|fi)\b", pending)
        if opened and not closed:
            pending += "\n"
            continue
        yield start, pending
        pending = ""
    if pending.strip():
        yield start, pending


def _step(document: str, number: int, line: str) -> Step | None:
    text = _drop_comment(line.strip().removeprefix("$ ")).strip()
    if not text:
        return None
    background = False
    parts = re.split(r"\s*&\s*(?=sleep\b|$)", text)
    if len(parts) > 1 and not text.endswith("&&"):
        text, background = parts[0].strip(), True
    return Step(document, number, text, background)


def _drop_comment(line: str) -> str:
    """The line without its trailing ``# ...`` comment (a ``#`` inside quotes is kept)."""
    quote: str | None = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def words_of(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def why_not_here(step: Step, state: DocumentState) -> str | None:
    """Why ``step`` cannot run on a CPU machine with no network and no cluster, or None."""
    text, words = step.text, words_of(step.text)
    first = words[0] if words else ""
    if first in ("pip", "sudo", "apt-get") or first == "make":
        return "installs software (make test installs what the project needs; .ci/run runs it)"
    if re.search(r"\bvllm[: ]|\baccelerate |CUDA_VISIBLE_DEVICES|verl-grpo\.sh|vllm-serve", text):
        return "needs GPUs (vLLM, accelerate or verl)"
    if any(_gpu_recipe(word) for word in words):
        return "needs GPUs (a 7B recipe)"
    if words[:2] == ["transformers", "serve"] and not _importable("fastapi", "uvicorn"):
        return "needs transformers' serving extra (pip install fastapi uvicorn openai)"
    if first == "ray" or "ray:" in text or "NNODES=" in text:
        return "needs a Ray cluster of several nodes"
    if re.search(r"(^|\s|/)(bench/|docs/make_images\.py)", text):
        return "a benchmark or study script (its own command, docs/performance.md)"
    placeholders = [word for word in words if _placeholder(word, state)]
    if placeholders:
        return f"a usage line: {placeholders[0]} stands for the reader's own value"
    for host, port in MODEL_URL.findall(text):
        if int(port) not in state.ports:
            return f"needs a model server at {host}:{port}"
    if first == "until" and "curl" in text:
        return "waits for a model server this machine cannot start"
    if first == "kill" and not state.ports:
        return "stops a server this machine did not start"
    unknown = [name for name in _benchmarks(words) if name not in _known_benchmarks()]
    if unknown:
        return f"needs the plugin the page builds (benchmark {unknown[0]}; pip install .)"
    if re.search(r"codereasoner bench fetch (?!.*--from)", text):
        return "downloads from the benchmark's source (no network here)"
    read = inputs(words)
    for path in read:
        if path in state.unmade:
            line = state.unmade[path]
            return f"reads {path}, which a skipped line writes ({line.document}:{line.number})"
    for path in read:
        if not _held(path, state):
            return f"reads {path}, the reader's own (no line before it makes it)"
    return None


def _held(path: str, state: DocumentState) -> bool:
    """Whether ``path`` is there when the line runs: written by an earlier line, a reader's
    file the runner provides, a file of the repository, or a packaged model."""
    clean = path.removeprefix("./").rstrip("/")
    top = clean.split("/", 1)[0]
    return (
        clean in state.made
        or any(clean.startswith(made + "/") for made in state.made)
        or top in READER_FILES
        or (top not in ("runs", "data") and (ROOT / clean).exists())
        or clean in PACKAGED
    )


def inputs(words: list[str]) -> list[str]:
    """The files and folders a ``codereasoner`` line reads (options, ``hf:`` and ``synth:``
    specs, and the positional paths of the commands that take them)."""
    if words[:2] == ["python", "-m"] and words[2:3] and words[2].startswith("codereasoner."):
        words = ["codereasoner", *words[3:]]
    if words[:1] != ["codereasoner"]:
        return []
    found: list[str] = []
    command = tuple(word for word in words[1:3] if not word.startswith("-"))[:1]
    for index, word in enumerate(words[1:], start=1):
        before = words[index - 1]
        value = word.split(":", 1)[1] if word.startswith(("hf:", "synth:")) else None
        if value is not None:
            found.append(value)
        elif before == "--from" and "/" not in word and "." not in word:
            continue  # a source's name (core build --from cruxeval), not a path
        elif before in INPUT_FLAGS or (
            command in READS_POSITIONALS
            and not word.startswith("-")
            and index > 1
            and not before.startswith("-")
            and "(" not in word
        ):
            found.append(word)
    return [path.split("=", 1)[-1] for path in found if path and not path.startswith("$")]


def outputs(words: list[str]) -> list[str]:
    """What a line writes: ``--out``-like options, ``output_dir=``, ``tiny-model OUT``."""
    found = [
        words[index + 1]
        for index, word in enumerate(words[:-1])
        if word in OUTPUT_FLAGS or word == "--results"
    ]
    overridden = [word.split("=", 1)[1] for word in words if word.startswith("output_dir=")]
    found += overridden
    if words[1:2] == ["train"] and "--config" in words and not overridden:
        recipe = ROOT / words[words.index("--config") + 1]
        if recipe.is_file():
            found += re.findall(r"(?m)^output_dir:\s*(\S+)", recipe.read_text(encoding="utf-8"))
    if words[1:3] == ["train", "tiny-model"] and len(words) > 3:
        found.append(words[3])
    return [path.removeprefix("./").rstrip("/") for path in found]


def _importable(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


def _gpu_recipe(word: str) -> bool:
    name = word.rsplit("/", 1)[-1]
    return name.endswith(".yaml") and re.search(r"\d+b\b|\d+b[-.]", name.lower()) is not None


def _placeholder(word: str, state: DocumentState) -> bool:
    value = word.split("=", 1)[1] if re.match(r"^[\w.-]+=", word) else word
    if re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", word):
        return False  # an assignment: it defines, never stands for, a value
    if value.startswith("$") or value in state.variables:
        return False
    return PLACEHOLDER.match(value) is not None


def remember(step: Step, state: DocumentState) -> None:
    words = words_of(step.text)
    for word in words:
        match = re.fullmatch(r"([A-Z_][A-Z0-9_]*)=.*", word)
        if match:
            state.variables.add(match.group(1))
    written = outputs(words)
    state.made |= set(written)
    if step.skip is None:
        if step.background:
            state.ports += [int(port) for port in SERVER_PORT.findall(step.text)][:1]
        elif words[:1] == ["kill"] and state.ports:
            state.ports.pop()
        return
    for path in written:
        state.unmade.setdefault(path, step)


def _benchmarks(words: list[str]) -> list[str]:
    return [
        name
        for index, word in enumerate(words[1:], start=1)
        if words[index - 1] == "--bench"
        for name in word.split(",")
        if not name.startswith("$")
    ]


def _known_benchmarks() -> set[str]:
    from codereasoner import benchmarks

    return set(benchmarks.REGISTRY)


def all_steps() -> list[Step]:
    return [step for document in DOCUMENTS for step in read_steps(document)]
