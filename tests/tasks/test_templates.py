"""Official prompt templates: byte-exact data files, checked against the published test vectors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from codereasoner.tasks import (
    InputPrediction,
    Item,
    OutputPrediction,
    TestOutputPrediction,
    template,
    template_sources,
)
from tests.conftest import SHARED_DATA

CRUXEVAL = SHARED_DATA / "cruxeval" / "cruxeval.jsonl"
TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "src" / "codereasoner" / "tasks" / "templates"


def crux_item(code: str, input_: str, output: str) -> Item:
    return Item(
        "x",
        "cruxeval-o",
        "output_prediction",
        program=code,
        call=f"f({input_})",
        truth=output,
        fields={"code": code, "input": input_, "output": output},
    )


def test_every_template_file_has_a_named_source() -> None:
    sources = template_sources()
    files = {str(path.relative_to(TEMPLATE_DIR)) for path in TEMPLATE_DIR.rglob("*.txt")}
    assert files == set(sources)
    for name, source in sources.items():
        assert source["repository"] and len(source["commit"]) == 40 and source["file"], name
        text = template(name)
        for field in source["fields"]:
            assert "{" + field + "}" in text, (name, field)


def test_template_endings_and_trailing_spaces() -> None:
    assert template("cruxeval/output_direct.txt").endswith("[/PYTHON]\n[ANSWER]\n")
    assert template("cruxeval/output_cot.txt").endswith("[/PYTHON]\n[THOUGHT]\n")
    assert template("cruxeval/output_phind.txt").endswith("assert f({input}) ==")
    cot_input = template("cruxeval/input_cot.txt")
    assert "We know that f(??) == 17. \n" in cot_input and "should be 16. \n" in cot_input
    assert template("livecodebench/execution_direct.txt").endswith(
        "assert {input} == ??\n[/PYTHON]\n[ANSWER]\n"
    )
    assert template("livecodebench/test_output.txt").endswith("== # TODO\n```\n")
    assert "and  write out" in template("livecodebench/test_output_system_cllama.txt")


def test_substitution_is_literal_and_single_pass() -> None:
    code = "def f(d):\n    return {'{input}': d}"  # braces and a placeholder name inside the code
    prompt = OutputPrediction("cruxeval").prompt(crux_item(code, "1", "{'{input}': 1}"))
    assert f"[PYTHON]\n{code}\nassert f(1) == ??\n[/PYTHON]\n[ANSWER]\n" in prompt
    prompt = InputPrediction().prompt(crux_item(code, "1", "{'{input}': 1}"), "cot")
    assert "assert f(??) == {'{input}': 1}\n[/PYTHON]\n[THOUGHT]\n" in prompt


def test_lcb_prompts() -> None:
    item = Item(
        "s",
        "lcb-execution",
        "output_prediction",
        fields={"code": "def g(a):\n    return a", "input": "g(a = 1)"},
    )
    prompt = OutputPrediction("livecodebench").prompt(item, "cot")
    assert prompt.endswith("def g(a):\n    return a\nassert g(a = 1) == ??\n[/PYTHON]\n[THOUGHT]\n")
    fields = {"question_content": "Double it.", "starter_code": "class Solution:\n    def d(self, x):\n        pass",
              "func_name": "d", "testcase_args": "[1], 2"}  # fmt: skip
    text = TestOutputPrediction().prompt(
        Item("q", "lcb-test-output", "test_output_prediction", fields=fields)
    )
    assert text == (
        "Problem:\nDouble it.Function:\n```\nclass Solution:\n    def d(self, x):\n        pass\n```\n"
        "Please complete the following test case:\n\n```\nassert d([1], 2) == # TODO\n```\n"
    )


@pytest.mark.skipif(not CRUXEVAL.exists(), reason="shared CRUXEval data not present")
def test_published_sample_0_hashes() -> None:
    row = json.loads(CRUXEVAL.read_text().split("\n", 1)[0])
    item = crux_item(row["code"], row["input"], row["output"])
    built = {
        "cruxeval/output_direct.txt": OutputPrediction("cruxeval").prompt(item, "direct"),
        "cruxeval/output_cot.txt": OutputPrediction("cruxeval").prompt(item, "cot"),
        "cruxeval/output_phind.txt": OutputPrediction("cruxeval").prompt(item, "phind"),
        "cruxeval/input_direct.txt": InputPrediction().prompt(item, "direct"),
        "cruxeval/input_cot.txt": InputPrediction().prompt(item, "cot"),
    }
    for name, prompt in built.items():
        vector = template_sources()[name]["sample_0"]
        assert len(prompt) == vector["length"], name
        assert hashlib.sha256(prompt.encode()).hexdigest() == vector["sha256"], name
