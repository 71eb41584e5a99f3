"""The optional LLM rewriter, through a real OpenAI-compatible server on 127.0.0.1: its rewrites
are checked in the sandbox like the AST rewrites."""

from __future__ import annotations

import random

from codereasoner.execution import Pool, parse_call
from codereasoner.models import load_backend
from codereasoner.models.replay_server import Query, ReplayServer
from codereasoner.programs import extract_python, llm_candidates, make_variants, rewrite_prompt

ORIGINAL = """\
def f(xs):
    total = 0
    for x in xs:
        if x > 0 and x % 2 == 0:
            total += x
    return total
"""
EQUIVALENT = """\
def f(values):
    kept = [v for v in values if v > 0 if v % 2 == 0]
    return sum(kept)
"""
NOT_EQUIVALENT = """\
def f(values):
    kept = [v for v in values if v > 0 if v % 2 == 1]
    return sum(kept)
"""


def test_extract_python_takes_the_first_fence_that_parses() -> None:
    reply = f"Here it is:\n```python\ndef f(:\n```\nand\n```python\n{EQUIVALENT}```\nDone."
    assert extract_python(reply) == EQUIVALENT
    assert extract_python(f"```\n{EQUIVALENT}```") == EQUIVALENT
    assert extract_python("no code here") is None
    assert extract_python("```python\n\n```") is None


def test_the_prompt_shows_the_code_and_asks_for_one_fence() -> None:
    prompt = rewrite_prompt(ORIGINAL)
    assert ORIGINAL.strip() in prompt
    assert "```python" in prompt and "equivalent" in prompt


def test_llm_rewrites_are_kept_or_rejected_by_the_sandbox(pool: Pool) -> None:
    asked: list[str] = []

    def reply(query: Query) -> str:
        asked.append(query.prompt)
        code = EQUIVALENT if query.choice == 0 else NOT_EQUIVALENT
        return f"Sure.\n```python\n{code}```\n"

    with ReplayServer(reply=reply) as server:
        backend = load_backend(f"openai:{server.model}@{server.url}")
        try:
            candidates = llm_candidates(backend, [ORIGINAL], 2)
        finally:
            backend.close()
    assert asked and all(ORIGINAL.strip() in prompt for prompt in asked)
    assert candidates == [(EQUIVALENT, 0), (NOT_EQUIVALENT, 0)]

    calls = [parse_call("f([1, 2, 3, 4])"), parse_call("f([-2, 6, 7])")]
    search = make_variants(
        [ORIGINAL], "f", calls, pool, random.Random(0), attempts=0, candidates=candidates
    )
    assert [(v.source, v.kinds, v.original) for v in search.variants] == [(EQUIVALENT, ("llm",), 0)]
    assert search.rejected == {"not_equivalent": 1}
    assert search.tried == 2
    (disagreement,) = search.mismatches
    assert disagreement.source == NOT_EQUIVALENT
    assert disagreement.mismatch.original != disagreement.mismatch.variant


FORGERS = {
    "imports what renders results": "import values\n\ndef f(xs):\n    return 0\n",
    "reaches the import machinery through a default": (
        "def f(xs, __import__=__import__):\n    return __import__('values').render\n"
    ),
    "a parameter named __import__": "def f(xs):\n    g = lambda __import__: 0\n    return g(1)\n",
    "walks frames": "def f(xs):\n    g = (x for x in xs)\n    return g.gi_frame.f_back\n",
    "opens files": "def f(xs, open=open):\n    return open('/proc/self/environ').read()\n",
}


def test_unsafe_rewrites_are_left_out_before_anything_runs() -> None:
    def reply(query: Query) -> str:
        code = list(FORGERS.values())[query.choice] if query.choice < len(FORGERS) else EQUIVALENT
        return f"```python\n{code}```\n"

    with ReplayServer(reply=reply) as server:
        backend = load_backend(f"openai:{server.model}@{server.url}")
        try:
            candidates = llm_candidates(backend, [ORIGINAL], len(FORGERS) + 1)
        finally:
            backend.close()
    assert candidates == [(EQUIVALENT, 0)]


def test_a_rewrite_may_import_what_its_original_imports() -> None:
    from codereasoner.programs.llm_rewrite import imported_modules, is_safe

    original = "import math\n\ndef f(x):\n    return math.floor(x)\n"
    assert imported_modules(original) == {"math"}
    assert is_safe("import math\n\ndef f(x):\n    return int(math.floor(x))\n", {"math"})
    assert not is_safe("import gc\n\ndef f(x):\n    return x\n", {"math"})
    assert not is_safe(
        "from math import floor as __import__\n\ndef f(x):\n    return x\n", {"math"}
    )
