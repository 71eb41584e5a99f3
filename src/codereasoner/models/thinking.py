"""The hidden thinking of reasoning models (QwQ, DeepSeek-R1 and the like), kept out of replies.

Such a model thinks first, then answers. Where the thinking lands depends on the server:

- with a reasoning parser (vLLM ``--reasoning-parser``), the reply's ``content`` is the answer
  alone and the thinking comes in ``reasoning_content`` (newer vLLM: ``reasoning``); the
  OpenAI backend keeps it apart, in :attr:`Completion.reasoning`;
- without one, ``content`` holds ``<think>…</think>`` followed by the answer, or, when the
  chat template already wrote the opening ``<think>``, the thinking and a ``</think>`` that
  has no opening tag.

:func:`visible_text` is the reply without its thinking; :class:`WithoutThinking` serves a
backend's replies that way (distillation keeps and verifies the visible chain only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from codereasoner.models.base import Backend, Completion, OnResult, Request

__all__ = ["MAX_REPLY_CHARS", "WithoutThinking", "visible_text"]

OPEN = "<think>"
MAX_REPLY_CHARS = 4_000_000  # far beyond any reply's token limit; only a hostile server sends more
_TAG = re.compile(r"</?think>")


def visible_text(text: str) -> str:
    """``text`` without its thinking, stripped of surrounding whitespace: every ``<think>``
    block (nested ones included; one never closed runs to the end), and everything before a
    ``</think>`` that closes no block (thinking whose opening tag the chat template wrote).
    A text without these tags comes back unchanged. One pass over at most
    :data:`MAX_REPLY_CHARS` characters (the rest of a longer text is dropped)."""
    text = text[:MAX_REPLY_CHARS]
    kept: list[str] = []
    depth = 0
    end = 0
    found = False
    for tag in _TAG.finditer(text):
        found = True
        if tag.group() == OPEN:
            if depth == 0:
                kept.append(text[end : tag.start()])
            depth += 1
        elif depth > 0:
            depth -= 1
        else:
            kept.clear()  # a closing tag with no block open: all before it was thinking
        end = tag.end()
    if not found:
        return text
    if depth == 0:
        kept.append(text[end:])
    return "".join(kept).strip()


class WithoutThinking:
    """``backend`` whose completions carry :func:`visible_text` of their text (the thinking a
    server reported apart stays in ``reasoning``). Same ``model_id``: the model is the same."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        def visible(index: int, completions: list[Completion]) -> None:
            on_result(index, [replace(c, text=visible_text(c.text)) for c in completions])

        self.backend.generate(requests, visible)

    def preflight(self) -> None:
        self.backend.preflight()

    def close(self) -> None:
        self.backend.close()
