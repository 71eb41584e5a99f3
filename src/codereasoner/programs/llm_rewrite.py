"""The optional LLM rewriter: a model writes other implementations of a program.

The prompt is the project's own (no benchmark defines one): it asks for a functionally
equivalent implementation, written differently, keeping the function or method name and its
signature, in one ```python fence. :func:`llm_candidates` sends it through any backend of
:mod:`codereasoner.models` and returns the fenced code that parses; nothing a model writes runs
here. :func:`codereasoner.programs.variants.make_variants` takes the result as ``candidates``
and checks each in the sandbox like a rewrite (kind ``"llm"``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from codereasoner.execution.code_safety import unsafe_construct
from codereasoner.models.base import Backend, Completion, Request, Sampling

__all__ = ["REWRITE_PROMPT", "REWRITE_SYSTEM", "extract_python", "llm_candidates", "rewrite_prompt"]

REWRITE_SYSTEM = (
    "You are an expert Python programmer who rewrites code without changing what it does."
)
REWRITE_PROMPT = """\
Rewrite the following Python program so that it is functionally equivalent (the same result, the \
same printed output and the same exceptions for every input) but written differently: use other \
variable names, other control flow or other idioms. Keep the name and the signature of every \
function and method that callers use, and keep any class names. Do not add imports beyond the \
ones it has, and do not print anything it does not print.

```python
{code}
```

Answer with the complete rewritten program in one ```python fence and nothing else."""

MAX_REPLY_CHARS = 100_000  # a model's reply is read this far
MAX_CODE_CHARS = 20_000  # a longer block is no rewrite of a benchmark program
_PYTHON_FENCE = re.compile(r"```[ \t]*python[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_ANY_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


def rewrite_prompt(code: str) -> str:
    return REWRITE_PROMPT.format(code=code.strip("\n"))


def extract_python(text: str) -> str | None:
    """The first fenced block of ``text`` that parses as Python (a ```python fence first), or
    None. Parsing only: the code is never run here."""
    for block in [
        *_PYTHON_FENCE.findall(text[:MAX_REPLY_CHARS]),
        *_ANY_FENCE.findall(text[:MAX_REPLY_CHARS]),
    ]:
        source = block.strip("\n")
        if len(source) > MAX_CODE_CHARS:
            continue
        try:
            ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if source.strip():
            return source + "\n"
    return None


def imported_modules(code: str) -> set[str]:
    """The modules ``code`` imports (a rewrite may import them too, and nothing else)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    return names


def is_safe(source: str, imports: set[str]) -> bool:
    """Whether a rewrite holds none of :mod:`~codereasoner.execution.code_safety`'s forbidden
    constructs (its imports limited to the original's): an unchecked rewrite could replace
    what renders its results and forge the equivalence check."""
    try:
        return unsafe_construct(ast.parse(source), imports) is None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def llm_candidates(
    backend: Backend, originals: Sequence[str], n: int, sampling: Sampling | None = None
) -> list[tuple[str, int]]:
    """``n`` rewrites asked of ``backend`` per original, as (source, original index) pairs in
    original then sample order; replies with no parsable fence, unsafe rewrites (:func:`is_safe`)
    and repeats are left out."""
    if n <= 0 or not originals:
        return []
    chosen = sampling or Sampling(temperature=0.8, max_tokens=2048)
    requests = [
        Request(rewrite_prompt(code), tuple(range(n)), chosen, chat=True, system=REWRITE_SYSTEM)
        for code in originals
    ]
    replies: dict[int, list[Completion]] = {}

    def on_result(index: int, completions: list[Completion]) -> None:
        replies[index] = completions

    backend.generate(requests, on_result)
    found: list[tuple[str, int]] = []
    seen: set[str] = set()
    for index in range(len(originals)):
        imports = imported_modules(originals[index])
        for completion in sorted(replies.get(index, []), key=lambda c: c.sample):
            source = extract_python(completion.text)
            if source is not None and is_safe(source, imports) and source not in seen:
                seen.add(source)
                found.append((source, index))
    return found
