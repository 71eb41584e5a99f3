"""``eval --gen-kwargs``: generation options beyond temperature, top-p and max tokens, as
lm-evaluation-harness's ``--gen_kwargs`` takes them (``top_k=40,repetition_penalty=1.1``, or a
JSON object), each checked, all part of the sampling settings (so of the completion cache key
and of what a resumed run must keep).

- ``top_k`` (an integer >= 0; 0: every token): sampled tokens come from the k most likely;
- ``repetition_penalty`` (a number > 0; 1: none): transformers' rule on the ids already seen;
- ``stop`` (a string or a list of strings): more stop sequences, after the benchmark's own.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import replace
from typing import Any

from codereasoner.models.base import Sampling
from codereasoner.models.registry import parse_options

OPTIONS = ("top_k", "repetition_penalty", "stop")
OWN_FLAGS = {
    "temperature": "--temperature",
    "top_p": "--top-p",
    "max_tokens": "--max-tokens",
    "max_new_tokens": "--max-tokens",
    "max_gen_toks": "--max-tokens",
    "seed": "--seed",
    "do_sample": "--temperature (0: greedy)",
    "until": "stop",
}
MAX_STOPS = 16
MAX_STOP_CHARS = 200


class GenKwargsError(ValueError):
    """The option's text is unusable; the message is one line, naming ``--gen-kwargs``."""


def parse_gen_kwargs(text: str) -> dict[str, Any]:
    """The options of ``key=value,...`` or a JSON object, checked (GenKwargsError otherwise)."""
    text = text.strip()
    try:
        given = json.loads(text) if text.startswith("{") else parse_options(text)
    except (ValueError, RecursionError) as exc:
        raise GenKwargsError(f"--gen-kwargs {text[:80]!r}: {str(exc)[:200]}") from None
    if not isinstance(given, dict):
        raise GenKwargsError(f"--gen-kwargs {text[:80]!r}: expected key=value,... or an object")
    checked: dict[str, Any] = {}
    for key, value in given.items():
        checked[str(key)] = _checked(str(key), value)
    return checked


def with_gen_kwargs(sampling: Sampling, options: dict[str, Any]) -> Sampling:
    """``sampling`` with the options of :func:`parse_gen_kwargs` applied."""
    return replace(
        sampling,
        top_k=options.get("top_k", sampling.top_k),
        repetition_penalty=options.get("repetition_penalty", sampling.repetition_penalty),
        stop=(*sampling.stop, *options.get("stop", ())),
    )


def _checked(key: str, value: Any) -> Any:
    where = f"--gen-kwargs {key}"
    if key in OWN_FLAGS:
        raise GenKwargsError(f"{where}: set it with {OWN_FLAGS[key]}, not --gen-kwargs")
    if key == "top_k":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise GenKwargsError(f"{where}={value!r}: expected an integer >= 0 (0: every token)")
        return value
    if key == "repetition_penalty":
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None or not math.isfinite(number) or number <= 0:
            raise GenKwargsError(f"{where}={value!r}: expected a number > 0 (1: no penalty)")
        return float(number)
    if key == "stop":
        stops = [value] if isinstance(value, str) else value
        if (
            not isinstance(stops, list)
            or not 0 < len(stops) <= MAX_STOPS
            or not all(isinstance(stop, str) and 0 < len(stop) <= MAX_STOP_CHARS for stop in stops)
        ):
            raise GenKwargsError(
                f"{where}: expected a text or a list of at most {MAX_STOPS} texts of 1 to "
                f"{MAX_STOP_CHARS} characters"
            )
        return tuple(stops)
    close = difflib.get_close_matches(key, OPTIONS, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise GenKwargsError(f"{where}: unknown option{hint}; expected {', '.join(OPTIONS)}")
