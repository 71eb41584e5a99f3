"""Every ``codereasoner`` command the README, recipes/README.md and docs/*.md show in a shell
block, read as the real command line reads it: each names a command that exists, with options
that exist and values of the right type. And the rules the docs state hold in their own
examples: a trained model is evaluated with chat prompts, the way it was trained. (The README's
CPU training path also runs as written: tests/test_readme_training.py.)"""

from __future__ import annotations

import shlex
from typing import Any

import pytest
import typer
from typer._click.exceptions import UsageError

from codereasoner.cli import app
from tests.docs_run.steps import BLOCK, DOCUMENTS, ROOT

pytestmark = pytest.mark.docs

SHELL_ENDS = ("&&", "||", "|", ";", "&", ">", ">>", "2>", "2>&1")


def documented_commands() -> list[tuple[str, list[str]]]:
    """``(where, words after "codereasoner")`` of every command line in a shell block."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for block in BLOCK.findall(text):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip().removeprefix("$ ")
                if not line.startswith("codereasoner "):
                    continue
                words = shlex.split(line, comments=True)
                cut = next((i for i, word in enumerate(words) if word in SHELL_ENDS), len(words))
                found.append((f"{document.relative_to(ROOT)}: {line[:100]}", words[1:cut]))
    return found


COMMANDS = documented_commands()


def parse(words: list[str]) -> list[str]:
    """The command's path (``["eval"]``, ``["train", "sft"]``), parsed as the command line
    parses it; UsageError for an unknown command or option or a value of the wrong type."""
    command: Any = typer.main.get_command(app)
    context: Any = None
    name, path, args = "codereasoner", list[str](), list(words)
    while True:
        context = command.make_context(name, args, parent=context)
        if not hasattr(command, "resolve_command"):  # a command, not a group of them
            return path
        rest = [*(getattr(context, "_protected_args", None) or []), *context.args]
        if not rest:
            return path
        name, found, args = command.resolve_command(context, rest)
        assert found is not None and name is not None
        command, path = found, [*path, name]


def usage_words(words: list[str]) -> list[str]:
    """A usage line's words before its optional parts (``train sft --config RECIPE.yaml
    [key=value ...]``); other lines as they are."""
    cut = next((i for i, word in enumerate(words) if word.startswith("[")), len(words))
    return words[:cut]


def test_the_docs_show_many_commands() -> None:
    assert len(COMMANDS) >= 100
    shown = {tuple(parse(usage_words(words)))[:1] for _, words in COMMANDS}
    assert {("eval",), ("score",), ("synth",), ("distill",), ("export",), ("train",)} <= shown


@pytest.mark.parametrize(("where", "words"), COMMANDS, ids=[where for where, _ in COMMANDS])
def test_every_documented_command_parses(where: str, words: list[str]) -> None:
    words = usage_words(words)
    try:
        parse(words)
    except UsageError as exc:
        pytest.fail(f"{where}: {exc.format_message()}")


def test_trained_models_are_evaluated_as_they_were_trained() -> None:
    """A checkpoint trained on chat rows, read by its answer tags, is asked in chat form: an
    evaluation of one (``--extraction answer-tag`` or the reasoning style) says ``--chat``."""
    trained = [
        (where, words)
        for where, words in COMMANDS
        if words[:1] == ["eval"]
        and ("answer-tag" in words or "reasoning" in words)
        and "oracle" not in words
    ]
    assert len(trained) >= 5
    unchatted = [where for where, words in trained if "--chat" not in words]
    assert unchatted == []
