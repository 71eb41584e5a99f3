"""Official prompt templates: byte-exact data files, checked against the published test vectors."""

from __future__ import annotations

import hashlib
import importlib
import json
from pathlib import Path

import pytest

from codereasoner import tasks
from codereasoner.families import cruxeval, livecodebench
from codereasoner.tasks import Item, Templates
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

CRUXEVAL = SHARED_DATA / "cruxeval" / "cruxeval.jsonl"
PACKAGE = Path(__file__).resolve().parents[2] / "src" / "codereasoner"
# every folder of templates, found, with the family package that reads it
FOLDERS = {
    path.parent: importlib.import_module(
        f"codereasoner.families.{path.parent.parent.name}"
    ).TEMPLATES
    for path in sorted(PACKAGE.glob("families/*/templates/SOURCES.json"))
}


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


def test_every_folder_of_templates_is_checked() -> None:
    found = {path.parent for path in PACKAGE.rglob("templates/**/SOURCES.json")}
    assert found == set(FOLDERS)


@pytest.mark.parametrize("folder", sorted(FOLDERS), ids=lambda path: path.parent.name)
def test_every_template_file_has_a_named_source(folder: Path) -> None:
    templates: Templates = FOLDERS[folder]
    sources = templates.sources()
    files = {str(path.relative_to(folder)) for path in folder.rglob("*.txt")}
    assert files == set(sources) and files
    for name, source in sources.items():
        if "upstream" in source:  # a prompt the project wrote: no upstream, said why
            assert source["upstream"] is None and source["written"], name
        else:
            assert source["repository"] and len(source["commit"]) == 40 and source["file"], name
        text = templates.text(name)
        if "sha256" in source:
            assert hashlib.sha256(text.encode()).hexdigest() == source["sha256"], name
        for field in source["fields"]:
            assert "{" + field + "}" in text, (name, field)


def test_template_endings_and_trailing_spaces() -> None:
    assert cruxeval.TEMPLATES.text("output_direct.txt").endswith("[/PYTHON]\n[ANSWER]\n")
    assert cruxeval.TEMPLATES.text("output_cot.txt").endswith("[/PYTHON]\n[THOUGHT]\n")
    assert cruxeval.TEMPLATES.text("output_phind.txt").endswith("assert f({input}) ==")
    cot_input = cruxeval.TEMPLATES.text("input_cot.txt")
    assert "We know that f(??) == 17. \n" in cot_input and "should be 16. \n" in cot_input
    assert livecodebench.TEMPLATES.text("execution_direct.txt").endswith(
        "assert {input} == ??\n[/PYTHON]\n[ANSWER]\n"
    )
    assert livecodebench.TEMPLATES.text("test_output.txt").endswith("== # TODO\n```\n")
    assert "and  write out" in livecodebench.TEMPLATES.text("test_output_system_cllama.txt")


def test_substitution_is_literal_and_single_pass() -> None:
    code = "def f(d):\n    return {'{input}': d}"  # braces and a placeholder name inside the code
    prompt = tasks.get("output_prediction").prompt(crux_item(code, "1", "{'{input}': 1}"))
    assert f"[PYTHON]\n{code}\nassert f(1) == ??\n[/PYTHON]\n[ANSWER]\n" in prompt
    prompt = tasks.get("input_prediction").prompt(crux_item(code, "1", "{'{input}': 1}"), "cot")
    assert "assert f(??) == {'{input}': 1}\n[/PYTHON]\n[THOUGHT]\n" in prompt


def test_lcb_prompts() -> None:
    item = Item(
        "s",
        "lcb-execution",
        "output_prediction",
        fields={"code": "def g(a):\n    return a", "input": "g(a = 1)"},
    )
    prompt = tasks.get("lcb_execution").prompt(item, "cot")
    assert prompt.endswith("def g(a):\n    return a\nassert g(a = 1) == ??\n[/PYTHON]\n[THOUGHT]\n")
    fields = {"question_content": "Double it.", "starter_code": "class Solution:\n    def d(self, x):\n        pass",
              "func_name": "d", "testcase_args": "[1], 2"}  # fmt: skip
    text = tasks.get("test_output_prediction").prompt(
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
        "output_direct.txt": tasks.get("output_prediction").prompt(item, "direct"),
        "output_cot.txt": tasks.get("output_prediction").prompt(item, "cot"),
        "output_phind.txt": tasks.get("output_prediction").prompt(item, "phind"),
        "input_direct.txt": tasks.get("input_prediction").prompt(item, "direct"),
        "input_cot.txt": tasks.get("input_prediction").prompt(item, "cot"),
    }
    for name, prompt in built.items():
        vector = cruxeval.TEMPLATES.sources()[name]["sample_0"]
        assert len(prompt) == vector["length"], name
        assert hashlib.sha256(prompt.encode()).hexdigest() == vector["sha256"], name
