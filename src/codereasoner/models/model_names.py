"""Is a model name usable, decided in milliseconds before anything loads?

``hf:NAME`` and a recipe's ``model_name_or_path`` take a local folder, ``gguf:FILE``, a packaged
model's name or a hub name. A mistake in any of them used to cost a torch import and five hub
retries before one line said so; :func:`check_model_name` says it first:

- a local folder without ``config.json``, or a path that names no folder (more than one ``/``,
  or starting with ``.``, ``/`` or ``~``, is a path, never a hub name), names the command that
  builds a tiny model there;
- a name close to a packaged model's (``smolm2-135m``) gets "did you mean";
- a hub name that is not in the Hugging Face cache is refused when ``HF_HUB_OFFLINE`` is set or
  the hub's host cannot be resolved (a few seconds at most), instead of retrying.
"""

from __future__ import annotations

import difflib
import os
import re
import socket
import threading
from pathlib import Path
from urllib.parse import urlparse

from codereasoner.models.base import BackendError
from codereasoner.models.packaged import GGUF_PREFIX, PACKAGED
from codereasoner.settings import env_flag

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?")
TINY_MODEL_COMMAND = "codereasoner train tiny-model"
RESOLVE_TIMEOUT_S = 3.0


def check_model_name(name: str) -> None:
    """BackendError (one line, without ``name``: callers say which model) when ``name``
    cannot be a model: nothing is imported or downloaded."""
    if name.startswith(GGUF_PREFIX):
        path = Path(name[len(GGUF_PREFIX) :]).expanduser()
        if not path.is_file():
            raise BackendError(f"no such GGUF file {path}; expected gguf:PATH to a .gguf file")
        return
    if name in PACKAGED:
        return
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise BackendError(
                "a folder without config.json, not a model folder (a trained model's "
                f"output_dir, or `{TINY_MODEL_COMMAND} {name}` for a tiny test model)"
            )
        return
    if path.exists():
        raise BackendError(f"a file, not a model folder (a GGUF file is gguf:{name})")
    suggestion = _did_you_mean(name)
    if not is_hub_name(name):
        raise BackendError(
            f"no such model folder{suggestion}; a training run makes one in its output_dir, "
            f"and `{TINY_MODEL_COMMAND} {name}` builds a tiny test model there"
        )
    if suggestion and "/" not in name:
        raise BackendError(
            f"not a local folder nor a packaged model{suggestion} (packaged: {', '.join(PACKAGED)})"
        )
    if hub_cached(name):
        return
    if hub_offline():
        raise BackendError(
            f"not a local folder, a packaged model ({', '.join(PACKAGED)}) or a hub model in "
            "the Hugging Face cache, and HF_HUB_OFFLINE is set (unset it to download)"
        )
    host = hub_host()
    if not resolves(host):
        raise BackendError(
            f"not a local folder, a packaged model ({', '.join(PACKAGED)}) or a hub model in "
            f"the Hugging Face cache, and the hub ({host}) cannot be reached"
        )


def is_hub_name(name: str) -> bool:
    """``org/name`` or ``name`` as the hub spells them; a path is never one."""
    return bool(HUB_ID.fullmatch(name)) and ".." not in name and not name.endswith(".")


def _did_you_mean(name: str) -> str:
    close = difflib.get_close_matches(Path(name).name, list(PACKAGED), n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def hub_offline() -> bool:
    return env_flag("HF_HUB_OFFLINE") or env_flag("TRANSFORMERS_OFFLINE")


def hub_cached(name: str) -> bool:
    """The Hugging Face cache holds a snapshot of hub model ``name``."""
    home = os.environ.get("HF_HOME") or str(Path("~/.cache/huggingface").expanduser())
    cache = Path(os.environ.get("HF_HUB_CACHE") or Path(home) / "hub")
    folder = cache / ("models--" + name.replace("/", "--")) / "snapshots"
    return folder.is_dir() and any(folder.iterdir())


def hub_host() -> str:
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return urlparse(endpoint).hostname or endpoint


def resolves(host: str, timeout_s: float = RESOLVE_TIMEOUT_S) -> bool:
    """The host's name resolves within ``timeout_s`` (a resolver that hangs counts as no)."""
    found: list[bool] = []

    def look_up() -> None:
        try:
            socket.getaddrinfo(host, 443)
            found.append(True)
        except OSError:
            found.append(False)

    worker = threading.Thread(target=look_up, daemon=True)
    worker.start()
    worker.join(timeout_s)
    return bool(found and found[0])
