"""CRUXEval-I's upstream post-processing (docs/benchmark-rules.md); CRUXEval-O's, the default of
every output-prediction kind, is :func:`codereasoner.tasks.extraction.cruxeval_output`."""

from __future__ import annotations

from codereasoner.tasks.extraction import between, last_line

__all__ = ["cruxeval_input"]


def cruxeval_input(completion: str, *, cot: bool = False, openai: bool = False) -> str:
    """CRUXEval-I post-processing: the call before the first ``==``, ``assert f`` removed."""
    text = completion
    if cot and "[ANSWER]" in text:
        text = between(text, "[ANSWER]").strip()
    elif cot and openai:
        return last_line(text)
    if "==" in text:
        text = text.split("==", 1)[0].strip()
    if "assert f" in text:
        text = "f" + between(text, "assert f").strip()
    return text.strip()
