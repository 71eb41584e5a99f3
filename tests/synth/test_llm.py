"""The llm generator: its prompt, its strict reply parser, and replies served over real HTTP."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from codereasoner.execution import Pool
from codereasoner.models import load_backend
from codereasoner.models.replay_server import Query, ReplayServer
from codereasoner.synth import generators
from codereasoner.synth.case import Candidate, Constraints, Drop
from codereasoner.synth.decontam import Decontamination
from codereasoner.synth.generators import GeneratorSettings
from codereasoner.synth.generators.llm import (
    PARSE_REASONS,
    LLMSource,
    ReplyError,
    build_prompt,
    parse_reply,
    schedule,
)
from codereasoner.synth.pipeline import SynthConfig, run

OUTPUTS = ("cases.jsonl", "dropped.jsonl", "audit.jsonl", "summary.json")

GOOD = """Here is a case.
```python
def f(text, sep):
    head, _, tail = text.partition(sep)
    return tail + head
```
[CALL] f('ab,cd', ',')
"""


def test_prompt_states_method_constraints_and_contract() -> None:
    constraints = Constraints(True, False, ("for", "if"), ("break",))
    prompt = build_prompt("str.partition", constraints)
    assert "`str.partition`" in prompt
    assert "a `for` loop containing an `if` statement (nesting depth 2)" in prompt
    assert "pass the result of one call directly" in prompt
    assert "use no built-in methods other than `str.partition`" in prompt
    assert "a `break`" in prompt
    assert "[CALL] f(<literal arguments>)" in prompt
    flat = build_prompt("list.sort", Constraints())
    assert "straight-line code" in flat and "a `break`" not in flat


@pytest.mark.parametrize(
    ("reply", "code_end", "input_repr"),
    [
        (GOOD, "return tail + head", "'ab,cd', ','"),
        (
            "<think>I should use partition. ```python\nimport os\n```</think>\n" + GOOD,
            "return tail + head",
            "'ab,cd', ','",
        ),
        (
            "```python\ndef f(xs, k=2):\n    return xs[:k]\n# call: f([1, 2, 3], k=1)\n```",
            "return xs[:k]",
            "[1, 2, 3], k=1",
        ),
        (
            "```\ndef f(s):\n    return s.upper()\n\nassert f('é\u00e8') == ??\n```",
            "return s.upper()",
            "'é\u00e8'",
        ),
        ("```python\ndef g():\n    return [1]\n```\n[CALL] g() [/CALL]", "return [1]", ""),
    ],
)
def test_good_replies_parse(reply: str, code_end: str, input_repr: str) -> None:
    parsed = parse_reply(reply)
    assert parsed.code.startswith("def ") and parsed.code.endswith(code_end)
    assert "call" not in parsed.code.lower().split("\n")[-1]  # the call line is not in the code
    assert parsed.input_repr == input_repr
    compile(parsed.code, "<reply>", "exec")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty_reply"),
        ("def f(x):\n    return x\n[CALL] f(1)", "no_code_block"),
        (
            "```python\ndef f(x):\n    return x\n```\n```python\ndef g(): pass\n```\n[CALL] f(1)",
            "multiple_code_blocks",
        ),
        ("```python\ndef f(x)\n    return x\n```\n[CALL] f(1)", "syntax_error"),
        ("```python\nx = 1\n```\n[CALL] f(1)", "top_level_code"),
        ("```python\nimport os\ndef f(x):\n    return x\n```\n[CALL] f(1)", "import"),
        ("```python\ndef f(x):\n    return x\nprint(f(1))\n```\n[CALL] f(1)", "top_level_code"),
        ("```python\n# nothing\n```\n[CALL] f(1)", "no_function"),
        (
            "```python\ndef f(x):\n    return x\ndef g(x):\n    return x\n```\n[CALL] f(1)",
            "multiple_functions",
        ),
        ("```python\ndef f(x):\n    return x\n```\nThe answer is 1.", "no_call"),
        ("```python\ndef f(x):\n    return x\n```\n[CALL] f(1)\n[CALL] f(2)", "multiple_calls"),
        ("```python\ndef f(x):\n    return x\n```\n[CALL] f(len('ab'))", "call_not_literal"),
        ("```python\ndef f(x):\n    return x\n```\n[CALL] f(__import__('os'))", "call_not_literal"),
        ("```python\ndef f(x):\n    return x\n```\n[CALL] g(1)", "call_wrong_function"),
    ],
)
def test_malformed_replies_are_rejected_with_a_reason(reply: str, reason: str) -> None:
    assert reason in PARSE_REASONS
    with pytest.raises(ReplyError) as caught:
        parse_reply(reply)
    assert caught.value.reason == reason, caught.value.detail


# Replies chosen by the method named in the prompt: some good, some malformed.
SCRIPT = [
    (GOOD, None),
    ("```python\ndef f(s):\n    return s[::-1]\n```\n[CALL] f('abc')", None),
    ("Sure! def f(x): return x", "no_code_block"),
    ("```python\nimport re\ndef f(s):\n    return s\n```\n[CALL] f('a')", "import"),
    ("```python\ndef f(s):\n    return s\n```\n[CALL] f(input())", "call_not_literal"),
]


def _method_in(prompt: str) -> str:
    return prompt.split("Method: `", 1)[1].split("`", 1)[0]


def _scripted(query: Query) -> str:
    return SCRIPT[zlib.crc32(_method_in(query.prompt).encode()) % len(SCRIPT)][0]


def test_llm_source_over_http(tmp_path: Path) -> None:
    log = tmp_path / "generations.jsonl"
    with ReplayServer(reply=_scripted) as server:
        source = LLMSource(load_backend(f"openai:replay@{server.url}"), seed=3, log_path=log)
        got = source.produce(range(12))
        requests = server.stats()["requests"]
        lines = source.committed_lines()
    assert requests == 12 and len(lines) == 12
    log.write_text("".join(lines))
    outcomes = set()
    for index, item in enumerate(got):
        method, constraints = schedule(3, index)
        expected = SCRIPT[zlib.crc32(method.encode()) % len(SCRIPT)][1]
        outcomes.add(expected)
        if expected is None:
            assert isinstance(item, Candidate), item
            assert item.method == method and item.constraints == constraints
            assert item.generator == "llm:openai:replay@" + server.url
            assert item.call.startswith("f(")
        else:
            assert isinstance(item, Drop) and (item.stage, item.reason) == ("parse", expected)
    assert None in outcomes and len(outcomes) > 1  # both kinds were exercised
    # a fresh source over the same log answers from it: no server needed
    again = LLMSource(load_backend("openai:replay@http://127.0.0.1:9/v1"), 3, log).produce(
        range(12)
    )
    assert again == got


def _valid_reply(query: Query) -> str:
    """A correct case for string methods (its input names the method), malformed otherwise."""
    method = _method_in(query.prompt)
    if not method.startswith("str."):
        return "I cannot do that."
    code = "def f(text):\n    parts = text.split(',')\n    return parts[::-1]"
    return f"```python\n{code}\n```\n[CALL] f('ab,cd,{method}')"


def test_llm_pipeline_end_to_end_and_resume_without_new_requests(
    tmp_path: Path, pool: Pool
) -> None:
    with (
        Pool(1, isolation="bubblewrap", hash_seed=1) as second,
        ReplayServer(reply=_valid_reply) as server,
    ):
        # the registry builds the source from the option (and closes it at the end)
        config = SynthConfig(
            out=tmp_path,
            n=10,
            seed=1,
            generator="llm",
            generator_options={"model": f"openai:replay@{server.url}"},
            mutants=1,
        )
        run(config, pools=(pool, second), decontam=Decontamination.skip("test"))
        asked = server.stats()["requests"]
        first = {name: (tmp_path / name).read_bytes() for name in OUTPUTS}
        # a backend built by the caller works too; complete: nothing is asked again
        backend = load_backend(f"openai:replay@{server.url}")
        source = generators.get("llm").build(GeneratorSettings(1, tmp_path, {"model": backend}))
        run(config, pools=(pool, second), source=source, decontam=Decontamination.skip("test"))
        source.close()  # a source given to run is the caller's to close
        assert server.stats()["requests"] == asked
    assert asked >= 10
    assert {name: (tmp_path / name).read_bytes() for name in OUTPUTS} == first
    generations = (tmp_path / "generations.jsonl").read_text().splitlines()
    assert [json.loads(line)["index"] for line in generations] == list(range(10))
    cases = [json.loads(line) for line in first["cases.jsonl"].decode().splitlines()]
    drops = [json.loads(line) for line in first["dropped.jsonl"].decode().splitlines()]
    methods = [schedule(1, index)[0] for index in range(10)]
    originals = [case for case in cases if not case["mutation"]]
    assert sum(d["stage"] == "parse" for d in drops) == sum(
        not method.startswith("str.") for method in methods
    )
    assert len(originals) == len({method for method in methods if method.startswith("str.")})
    assert originals
    for case in originals:
        assert case["output"] == repr(["str." + case["method"][4:], "cd", "ab"])
        assert case["generator"] == f"llm:openai:replay@{server.url}"
        assert case["provenance"]["teacher"]["prompt_id"] == "synth-teacher-v1"
