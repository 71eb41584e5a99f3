"""``eval``'s item and prompt options read before anything loads: ``--ids`` / ``--ids-file``
(which items) and ``--chat-template`` (how a chat is rendered: a backend option, so part of
the model's identity and cache key)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codereasoner.evaluation.run_settings import RunError
from codereasoner.files import read_text_bounded
from codereasoner.models.base import BackendError, SpecError
from codereasoner.models.hf import read_chat_template
from codereasoner.models.registry import parse_options, parse_spec

MAX_IDS = 100_000
MAX_ID_CHARS = 1_000


class IdsError(ValueError):
    """``--ids`` or ``--ids-file`` is unusable; the message is one line naming the flag."""


def read_ids(given: str | None, path: Path | None) -> tuple[str, ...]:
    """The ids of ``--ids a,b`` or of ``--ids-file FILE`` (one per line, blank lines and ``#``
    comments skipped), in order, each once; () when neither is given."""
    if given is not None and path is not None:
        raise IdsError("--ids and --ids-file: give one of them")
    if given is not None:
        found = [part.strip() for part in given.split(",") if part.strip()]
        where = "--ids"
    elif path is not None:
        where = f"--ids-file {path}"
        try:
            text = read_text_bounded(path)
        except FileNotFoundError:
            raise IdsError(f"{where}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise IdsError(f"{where}: cannot read it ({exc})") from None
        found = [line.strip() for line in text.splitlines()]
        found = [line for line in found if line and not line.startswith("#")]
    else:
        return ()
    if not found:
        raise IdsError(f"{where}: no ids; expected at least one item id")
    if len(found) > MAX_IDS:
        raise IdsError(f"{where}: {len(found):,} ids; at most {MAX_IDS:,}")
    long = next((item for item in found if len(item) > MAX_ID_CHARS), None)
    if long is not None:
        raise IdsError(f"{where}: an id of {len(long):,} characters; at most {MAX_ID_CHARS:,}")
    return tuple(dict.fromkeys(found))


def with_chat_template(
    model: str, model_args: str | None, template: str | None
) -> str | dict[str, Any] | None:
    """``model_args`` with ``--chat-template`` added as the backend takes it: hf's
    ``chat_template`` option (a file or a tokenizer's template name), an OpenAI-compatible
    server's ``chat_template`` request field (vLLM's; the file's text)."""
    if template is None:
        return model_args
    try:
        options = parse_options(model_args) if model_args else {}
        kind = parse_spec(model).kind
    except SpecError as exc:
        raise RunError(f"--model-args: {exc}") from None
    if "chat_template" in options:
        raise RunError("--chat-template and --model-args both set chat_template")
    if kind == "hf":
        return {**options, "chat_template": template}
    if kind == "openai":
        extra = dict(options.get("extra_body") or {})
        try:
            extra["chat_template"] = read_chat_template(Path(template))
        except BackendError as exc:
            raise RunError(f"--chat-template {exc}") from None
        return {**options, "extra_body": extra}
    raise RunError(f"--chat-template: applies to hf and openai models, not {kind}")
