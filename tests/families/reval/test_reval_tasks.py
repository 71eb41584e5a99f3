"""REval task kinds: templates, answer extraction on messy outputs, state answers, grading."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from codereasoner import tasks
from codereasoner.execution import Call, Pool
from codereasoner.families.reval import TEMPLATES
from codereasoner.families.reval import benchmark as reval
from codereasoner.families.reval.items import build_items
from codereasoner.families.reval.output import (
    ANSWER_ENTRY,
    answer_program,
    completed_answer,
    filled_holes,
    penalized,
)
from codereasoner.families.reval.path import PathPrediction, answer_lines
from codereasoner.families.reval.state_answers import NIL, StateError, parse_state, state_verdict
from codereasoner.families.reval.truth import PairTruth
from codereasoner.tasks import Answer, Item, ParseFailure, Reason, run_plans
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reval"
SHARED = SHARED_DATA / "reval"
SPEC = SHARED_DATA.parent / "reference" / "benchmarks.md"
KIND_NAMES = ("coverage", "state", "path", "output")
RUNNING_MAX = (
    "from typing import List\n\n\ndef running_max(xs: List[int]) -> List[int]:\n    out = []\n"
    "    best = None\n    for x in xs:\n        if best is None or x > best:\n            best = x\n"
    "        out.append(best)\n    return out\n"
)
# The item a completion answers: robust path extraction reads line numbers in its program.
QUESTION = {name: Item(f"q/{name}", "reval", name, program=RUNNING_MAX) for name in KIND_NAMES}
HASHES = {  # the reference specification's REval prompts section
    "direct_coverage": "1a96d57e3d7eec08c8b757381ba7d9d3ee4b77dfd631a009aae685f504a7629d",
    "cot_coverage": "3809a152403f7fd116f5f6724dbdf6abc0479689eb999cad1d814bf6d6214f3b",
    "direct_state": "eea297983e6bafd51ed950d599efe7151eba01815e744efe243eae647074e353",
    "cot_state": "b7627043bb502b260398f0a1f81ceb128027895b4f7c8fd3780aa36b3840e253",
    "direct_path": "ecf6b4df7c14f2aac495e943a5c531a7f2dca554455440415fccafca08e3d30e",
    "cot_path": "295f1813facfc67659968e7ba1a00eb6abdab65a9ae930d4e5331406c054c301",
    "direct_output": "4bf741cf64666b4468684f4c08a06a0026586173d1d1df6af138793ebd522ff9",
    "cot_output": "26c0dc3c18a2c5ec458b619fa359892b55c68dff1e038afc9982beb1535f2a90",
}


def items_without_truth(folder: Path) -> dict[str, Item]:
    """Items with placeholder truth: prompts do not depend on it (no sandbox needed)."""
    pairs = reval.read_pairs(
        {name: folder / name for name in (reval.DATA.filename, reval.TASKS.filename)}
    )
    blank = {
        p.key: PairTruth(
            [True] * len(p.questions),
            [[-1]] * len(p.questions),
            [None] * len(p.questions),
            ["trace"] * len(p.questions),
            "0",
            0,
        )
        for p in pairs
    }
    return {item.id: item for item in build_items(pairs, blank, "reval")}


# -- templates ---------------------------------------------------------------------------------


def test_templates_are_byte_exact() -> None:
    for name, digest in HASHES.items():
        text = TEMPLATES.text(f"{name}.txt")
        assert hashlib.sha256(text.encode()).hexdigest() == digest, name
        assert text.endswith("[ANSWER]" if name.startswith("direct") else "[THOUGHT]"), name
    assert "information.  Think step by step" in TEMPLATES.text("cot_state.txt")
    assert "so int(a) is 1. \n" in TEMPLATES.text("cot_state.txt")
    assert "self.x = []\n    \n    def f" in TEMPLATES.text("direct_state.txt")
    assert "    x*2\n        else:\n            return x\nf(3)\n" not in TEMPLATES.text(
        "cot_coverage.txt"
    )
    assert "return x\nf(3)" in TEMPLATES.text("direct_coverage.txt")
    assert "return x\n\nf(3)" in TEMPLATES.text("cot_coverage.txt")


def spec_block(title: str) -> str:
    text = SPEC.read_text()
    start = text.index(title)
    body = text[text.index("```\n", start) + 4 :]
    return body[: body.index("\n```\n")]


@pytest.mark.skipif(not SPEC.exists() or not SHARED.exists(), reason="shared data not available")
def test_rendered_prompts_match_the_spec_examples() -> None:
    items = items_without_truth(SHARED)
    path = prompt(items["DREval/0/0/17/path"])
    assert path.endswith(spec_block("Rendered direct path prompt tail for DREval/0"))
    output = prompt(items["DREval/85/0/output"])
    tail = spec_block("Rendered direct output prompt tail for ClassEval DREval/85")
    assert output.endswith(tail.removeprefix("...\n"))


def prompt(item: Item, style: str = "direct") -> str:
    return tasks.get(item.task).prompt(item, style)


def test_prompt_dispatch_and_styles() -> None:
    items = items_without_truth(FIXTURES)
    state = items["DREval/2/0/7/state"]
    text = prompt(state, "cot")
    assert text.endswith(
        "Is Line 7 (        self.count += n) executed when the above test code is called? If so, "
        "what is the value and type of the variable self.count after Line 7 is executed? If not, "
        "answer Nil.\n[/QUESTION]\n[THOUGHT]"
    )
    assert "\n# setup code executed previously\n        self.counter = Counter(10)\n# \n" in text
    with pytest.raises(ValueError, match="not a valid Style"):
        prompt(state, "haiku")
    with pytest.raises(ValueError, match="not supported here"):
        prompt(state, "phind")
    assert {item.task for item in items.values()} == set(KIND_NAMES)
    assert set(KIND_NAMES) <= set(tasks.names())
    assert isinstance(tasks.get("path"), PathPrediction)


# -- extraction: a corpus of messy outputs, per kind ------------------------------------------

COVERAGE = [  # (completion, style, official, robust; None = no answer)
    ("YES", "direct", "YES", "YES"),
    (" no \n", "direct", "NO", "NO"),
    ("Yes.", "direct", "YES", "YES"),
    ("YES, because line 3 runs first", "direct", "YES", "YES"),
    ("NOT executed", "direct", "NO", None),
    ("The answer is YES", "direct", "NO", "YES"),  # upstream reads the first 3 characters only
    ("", "direct", "NO", None),
    ("YES\n[/ANSWER]", "direct", "YES", "YES"),
    ("[ANSWER]\nNO\n[/ANSWER]\n[ANSWER]\nYES\n[/ANSWER]", "direct", "NO", "NO"),  # first block
    ("[ANSWER]\nYES\n[/ANSWER", "direct", "YES", "YES"),  # truncated stop tag
    ("[ANSWER]\n```\nYES\n```\n[/ANSWER]", "direct", "NO", "YES"),  # fences: ambiguous upstream
    ("true", "direct", "NO", "YES"),  # JSON spelling
    ("[THOUGHT]\n1. x is 3\n[/THOUGHT]\n[ANSWER]\nYES\n[/ANSWER]", "cot", "YES", "YES"),
    ("[THOUGHT]\n1. x is 3\n[ANSWER]\nYES\n[/ANSWER]", "cot", "NO", "YES"),  # unfinished CoT
    # coverage upper-cases first, so lower-case tags count (and only the first 3 chars decide)
    ("[THOUGHT]\nx is 3\n[/thought]\n[answer]\nyes\n[/answer]", "cot", "YES", "YES"),
    ("1. x is 3\n[/THOUGHT]\nyes", "cot", "NO", "YES"),
    ("I think so", "direct", "NO", None),
]


@pytest.mark.parametrize(("text", "style", "official", "robust"), COVERAGE)
def test_coverage_extraction(text: str, style: str, official: str, robust: str | None) -> None:
    task, item = tasks.get("coverage"), QUESTION["coverage"]
    assert task.extract(item, text, style) == Answer(official)
    found = task.extract(item, text, style, "robust")
    assert found == (Answer(robust) if robust else ParseFailure("no YES or NO", text))


PATH = [  # (completion, style, official, robust)
    ("return out", "direct", "return out", "return out"),
    ("[ANSWER]\nout.append(best)\n[/ANSWER]", "direct", "out.append(best)", "out.append(best)"),
    ("-1", "direct", "-1", "-1"),
    ("-1 (the function returns)", "direct", "-1 (the function returns)", "-1"),
    ("", "direct", "-2", None),
    ("  best = x  \nbecause x > best", "direct", "best = x", "best = x"),
    ("10\tout.append(best)", "direct", "10\tout.append(best)", "out.append(best)"),
    ("Line 10: out.append(best)", "direct", "Line 10: out.append(best)", "out.append(best)"),
    ("10", "direct", "10", "out.append(best)"),  # a bare number: that line of the code
    ("out.append(best)  # keeps the max", "direct", "out.append(best)  # keeps the max",
     "out.append(best)"),
    ("```python\nreturn out\n```", "direct", "```python", "return out"),
    ("`return out`", "direct", "`return out`", "return out"),
    ("[THOUGHT]\nthe loop ends\n[/THOUGHT]\nreturn out", "cot", "[THOUGHT]", "return out"),
    ("[THOUGHT]\nthe loop ends\n[ANSWER]\nreturn out", "cot", "-2", "return out"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "style", "official", "robust"), PATH)
def test_path_extraction(text: str, style: str, official: str, robust: str | None) -> None:
    task, item = tasks.get("path"), QUESTION["path"]
    assert task.extract(item, text, style) == Answer(official)
    found = task.extract(item, text, style, "robust")  # line numbers: of item.program
    assert found == (Answer(robust) if robust else ParseFailure("no line of code", text))


def test_path_answer_lines() -> None:
    code = "def f(x):\n    if x:\n        return 1\n    else:\n        return 1\n"
    assert answer_lines("return 1", code) == [3, 5]  # duplicates both count
    assert answer_lines("-1", code) == [-1] and answer_lines("-2", code) == [-2]
    assert answer_lines("3\treturn 1", code) == [-2]  # the numbered prefix matches nothing
    assert answer_lines("3", code) == [-2]  # only -1 and -2 are numbers upstream


STATE = [  # (completion, style, official, robust)
    ("1; int", "direct", "1; int", "1; int"),
    ("[ANSWER]\n\u2018a\u2019; str\n[/ANSWER]", "direct", "'a'; str", "'a'; str"),
    ("[ANSWER]\n`[1, 2]`; `list`\n[/ANSWER]", "direct", "`[1, 2]`; `list`", "[1, 2]; list"),
    ("Nil", "direct", "Nil", "Nil"),
    ("[ANSWER]\nNil.\n[/ANSWER]", "direct", "Nil.", "Nil"),
    ("3; int  (after the loop)", "direct", "3; int  (after the loop)", "3; int"),
    ("```\n{'a': 1}; dict\n```", "direct", "```\n{'a': 1}; dict\n```", "{'a': 1}; dict"),
    ("null; NoneType", "direct", "null; NoneType", "None; NoneType"),
    ("[THOUGHT]\nx grows\n[/THOUGHT]\n[ANSWER]\n2; int\n[/ANSWER]", "cot", "2; int", "2; int"),
    ("[THOUGHT]\nx grows\n[ANSWER]\n2; int", "cot", "ERROR", "2; int"),
    ("the value is two", "direct", "the value is two", None),
]


@pytest.mark.parametrize(("text", "style", "official", "robust"), STATE)
def test_state_extraction(text: str, style: str, official: str, robust: str | None) -> None:
    task, item = tasks.get("state"), QUESTION["state"]
    assert task.extract(item, text, style) == Answer(official)
    found = task.extract(item, text, style, "robust")
    assert found == (Answer(robust) if robust else ParseFailure("no 'value; type' or Nil", text))


OUTPUT = [  # (completion, style, official, robust)
    ("assert f(1) == 2", "direct", "assert f(1) == 2", "assert f(1) == 2"),
    ("[ANSWER]\nassert f(1) == 2\n[/ANSWER]", "direct", "assert f(1) == 2", "assert f(1) == 2"),
    ("```python\nassert f(1) == 2\n```\nThis holds because f doubles.", "direct",
     "```python\nassert f(1) == 2\n```\nThis holds because f doubles.", "assert f(1) == 2"),
    ("Here is the completed code:\na = A(3)\nassertEqual(a.f(2), 5)", "direct",
     "Here is the completed code:\na = A(3)\nassertEqual(a.f(2), 5)",
     "a = A(3)\nassertEqual(a.f(2), 5)"),
    ("[THOUGHT]\nf doubles\n[ANSWER]\nassert f(1) == 2", "cot", "ERROR", "assert f(1) == 2"),
    ("no idea", "direct", "no idea", None),
]  # fmt: skip


@pytest.mark.parametrize(("text", "style", "official", "robust"), OUTPUT)
def test_output_extraction(text: str, style: str, official: str, robust: str | None) -> None:
    task, item = tasks.get("output"), QUESTION["output"]
    assert task.extract(item, text, style) == Answer(official)
    found = task.extract(item, text, style, "robust")
    assert found == (Answer(robust) if robust else ParseFailure("no test code", text))


def test_each_item_is_extracted_by_its_own_kind() -> None:
    items = items_without_truth(FIXTURES)
    text = "[ANSWER]\n10\n[/ANSWER]"
    path = items["DREval/0/0/9/path"]
    assert tasks.get(path.task).extract(path, text, "direct", "robust") == Answer(
        "out.append(best)"  # line 10 of the item's own program
    )
    # the rules all four share: the [ANSWER] tags are cut, an unfinished CoT gets the kind's
    # upstream sentinel (officially), an empty answer block is no answer (robustly)
    unfinished = "[THOUGHT]\nstill thinking\n[ANSWER]\nYES"
    sentinels = {"coverage": "NO", "state": "ERROR", "path": "-2", "output": "ERROR"}
    missing = {
        "coverage": "no YES or NO",
        "state": "no 'value; type' or Nil",
        "path": "no line of code",
        "output": "no test code",
    }
    for name, sentinel in sentinels.items():
        kind, item = tasks.get(name), QUESTION[name]
        answer = "YES" if name == "coverage" else "10"
        assert kind.extract(item, f"[ANSWER]\n{answer}\n[/ANSWER]") == Answer(answer), name
        assert kind.extract(item, unfinished, "cot") == Answer(sentinel), name
        empty = "[THOUGHT]\nx\n[/THOUGHT]\n[ANSWER]\n[/ANSWER]"
        assert kind.extract(item, empty, "cot", "robust") == ParseFailure(missing[name], empty)


# -- state answers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "parsed"),
    [
        ("Nil", NIL),
        ("nil", NIL),
        ("[Nil]", NIL),
        ("Nil; NoneType", NIL),
        ("3; int", (3, "int")),
        ("3; Integer", (3, "int")),
        ("'a'; string", ("a", "str")),
        ("[1, 2]; List[int]", ([1, 2], "list")),
        ("(1, 2); tuple[int, int]", ((1, 2), "tuple")),
        ("1, 2; int, int", ((1, 2), "tuple")),
        ("5; <class 'int'>", (5, "int")),
        ("None; NoneType", (None, "NoneType")),
        ("abc; str", ("abc", "str")),
        ("true; str", ("true", "str")),  # eval fails upstream: the raw text
        # greedy generic removal: list[tuple[...]] keeps "list[tuple", which contains "tuple"
        ("[(1, 2)]; list[tuple[int, int]]", ([(1, 2)], "tuple")),
    ],
)
def test_state_answers_parse(answer: str, parsed: object) -> None:
    found = parse_state(answer)
    assert found == NIL if parsed == NIL else (found.value, found.type) == parsed  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "answer",
    [
        "true; bool",
        "null; int",
        "[1, inf]; list",
        "nan; float",
        "<class 'int'>; type",
        "b''; bytearray",
    ],
)
def test_state_answers_upstream_cannot_evaluate_are_wrong(answer: str) -> None:
    """Upstream evals the value: JSON spellings and bare inf/nan are NameErrors there, a
    ``<class ...>`` value a syntax error, and ``b''`` is bytes, not a bytearray."""
    truth = {"bool": [["bool", "True"]], "int": [["int", "None"], ["NoneType", "None"]],
             "list": [["list", "[1, float('inf')]"]], "float": [["float", "float('nan')"]],
             "type": [["type", "int"]], "bytearray": [["bytearray", "b''"]]}  # fmt: skip
    kind = answer.rpartition(";")[2].strip()
    assert state_verdict(parse_state(answer), truth[kind])[0] is False


def test_state_answers_json_spellings_are_a_named_leniency() -> None:
    lenient = parse_state("true; bool", json_spellings=True)
    assert (lenient.value, lenient.type) == (True, "bool")  # type: ignore[union-attr]
    assert state_verdict(lenient, [["bool", "True"]])[0] is True
    assert isinstance(parse_state("true; bool"), StateError)


@pytest.mark.parametrize(
    ("answer", "truth", "right"),
    [
        ("Nil", None, True), ("Nil", [["int", "1"]], False), ("1; int", None, False),
        ("1; int", [["int", "1"], ["int", "2"]], True), ("3; int", [["int", "1"]], False),
        ("True; int", [["int", "1"]], False),  # the value's own type must be the stated type
        ("1; int", [["bool", "True"]], False),  # and the stated type an expected one
        ("5; str", [["str", "'5'"]], False), ("'5'; str", [["str", "'5'"]], True),
        ("0.30000000000000004; float", [["float", "0.3"]], True),
        ("0.3001; float", [["float", "0.3"]], False),
        ("[1, 2]; list", [["list", "[1.0, 2.0]"]], True),  # == across int and float
        ("None; NoneType", [["NoneType", "None"], ["int", "3"]], True),
        ("[1, 2]; numpy.ndarray", [["numpy.ndarray", "[1.0, 2.000001]"]], True),
        ("[1, 2]; np.ndarray", [["numpy.ndarray", "[1, 2]"]], False),  # locate('np...') is None
        ("int; type", [["type", "int"]], True),
        ("'2023-01-02 10:00:00'; datetime.datetime",
         [["datetime.datetime", "2023-01-02T10:00:00"]], True),
        ("'2023-01-02 10:00:00'; datetime", [["datetime.datetime", "2023-01-02T10:00:00"]],
         False),  # pydoc.locate("datetime") is the module
        ("[1, 2]; collections.deque", [["collections.deque", "[1, 2]"]], True),
        ("bytearray(b'ab'); bytearray", [["bytearray", "b'ab'"]], True),
        ("x; int", [["int", "1"]], False), ("1 2 3", [["int", "1"]], False),
        ("ERROR", [["int", "1"]], False), ("os.system('ls'); os.system", [["int", "1"]], False),
        ("<A object>; A", [["__main__.A", None]], False),
    ],
)  # fmt: skip
def test_state_verdicts(answer: str, truth: list | None, right: bool) -> None:
    assert state_verdict(parse_state(answer), truth)[0] is right


# -- grading ----------------------------------------------------------------------------------


def test_output_rules() -> None:
    question = "a = A(3)\nassertEqual(a.f(2), ??)\nassertEqual(a.f(4), ??)"
    short = "assertEqual(a.f(2), 5)\nassertEqual(a.f(4), 7)"
    assert completed_answer(short, question) == "a = A(3)\n" + short
    assert completed_answer("ERROR", "assert f(1) == ??") == "assert False"
    assert penalized("assert False", "assert f(1) == ??") == "penalty: contains 'assert False'"
    assert penalized("a = A(3)\nassertTrue(True)", "assertTrue(??)") is not None
    assert penalized("a = A(3)\nassertEqual(a.f(2), 5)", question) == (
        "penalty: 1 asserts, the question has 2"
    )
    assert penalized("assert f(1) == 2", "assert f(1) == ??") is None


def graded(pool: Pool, item: Item, answers: list[str]) -> list[tuple[bool, Reason]]:
    plan = tasks.get(item.task).plan(item, [Answer(text) for text in answers])
    (scores,) = run_plans(pool, [plan])
    return [(score.correct, score.reason) for score in scores]


@pytest.fixture(scope="module")
def fixture_items(pool: Pool, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Item]:
    paths = {name: FIXTURES / name for name in (reval.DATA.filename, reval.TASKS.filename)}
    items = reval.load(paths, pool=pool, cache=tmp_path_factory.mktemp("cache"))
    return {item.id: item for item in items}


def test_output_grading_in_the_sandbox(pool: Pool, fixture_items: dict[str, Item]) -> None:
    classeval = fixture_items["DREval/2/0/output"]
    assert (
        graded(
            pool,
            classeval,
            [
                "assertEqual(self.counter.add(5), 15)\nassertEqual(self.counter.add(2), 17)",
                "assertEqual(self.counter.add(5), 15)\nassertEqual(self.counter.add(2), 18)",
                "assert self.counter.add(5) == 15\nassert self.counter.add(2) == 17",  # 'self.assert ...'
                "self.assertEqual(self.counter.add(5), 15)\nself.assertEqual(self.counter.add(2), 17)",
                "assertEqual(self.counter.add(5), 15)\nassertTrue(True)",
                "ERROR",
            ],
        )
        == [
            (True, Reason.CORRECT),
            (False, Reason.ASSERTION_FAILED),
            # upstream: 'self.assert ...' is a syntax error, self.self.assertEqual an AttributeError;
            # here neither runs: the answer changes the question's code
            (False, Reason.UNSUPPORTED_ASSERTION),
            (False, Reason.UNSUPPORTED_ASSERTION),
            (False, Reason.WRONG),
            (False, Reason.WRONG),  # penalties
        ]
    )
    leak = fixture_items["DREval/2/1/output"]
    # one line answers the last line; the question's first two lines are prepended
    assert graded(pool, leak, ["assertEqual(0, counter.count)", "assertEqual(0, 3)"]) == [
        (True, Reason.CORRECT),
        (False, Reason.ASSERTION_FAILED),
    ]
    human = fixture_items["DREval/1/0/output"]
    assert graded(
        pool,
        human,
        [
            "assert total([1, 2]) == 11",
            "assert total([1, 2]) == 12",
            "assert total([1, 2]) ==",
            "assert total([1, 2]) == total([1, 2])",  # an expression: recorded, then the question
            "assert total([1, 2]) == 11  # the sum plus 8",  # layout and comments do not matter
            "assert total([1, 2]) == 11\nassert True == True",  # penalised, as upstream
            "assert total([1, 2]) == 11\nx = 1",  # changes the question's code: not run
            "assert total([1, 2]) == __import__('os').getpid() * 0 + 11",  # any expression
        ],
    ) == [
        (True, Reason.CORRECT),
        (False, Reason.ASSERTION_FAILED),
        (False, Reason.SYNTAX_ERROR),
        (True, Reason.CORRECT),
        (True, Reason.CORRECT),
        (False, Reason.WRONG),
        (False, Reason.UNSUPPORTED_ASSERTION),
        (True, Reason.CORRECT),
    ]


def test_output_holes_are_read_from_the_syntax_tree() -> None:
    question = "x = A()\nassertEqual(x.f(2), ??)\nassertEqual(??, x.g())"
    filled = filled_holes(
        question, "x = A()\nassertEqual(x.f(2), 5)  # five\nassertEqual(x.h(), x.g())"
    )
    assert filled == (
        "x = A()\nassertEqual(x.f(2), __reval_holes__[0])\nassertEqual(__reval_holes__[1], x.g())",
        (["v", 5], ["v", None]),
        {1: "x.h()"},
    )
    assert filled_holes(question, "x = B()\nassertEqual(x.f(2), 5)\nassertEqual(1, x.g())") is None
    assert filled_holes("assert f(1) == ??", "assert f(1) == 2\nx = 1") is None
    assert filled_holes("assert f(1) == ??", "assert f(1) == " + "+".join(["x"] * 3000)) is None
    # upstream rewrites 'assert' inside a ClassEval answer's literals too
    assert filled_holes("assertEqual(f(), ??)", "assertEqual(f(), 'assert')", True)[1] == (
        ["v", "self.assert"],
    )


def test_line_kinds_grading(pool: Pool, fixture_items: dict[str, Item]) -> None:
    assert graded(pool, fixture_items["DREval/2/0/9/coverage"], ["YES", "NO", "yes"]) == [
        (True, Reason.CORRECT),
        (False, Reason.WRONG),
        (True, Reason.CORRECT),
    ]
    assert graded(
        pool,
        fixture_items["DREval/2/0/9/path"],
        ["self.count += n", "-1", "return self.count", "-2"],
    ) == [
        (True, Reason.CORRECT),
        (True, Reason.CORRECT),
        (False, Reason.WRONG),
        (False, Reason.WRONG),
    ]
    assert graded(
        pool, fixture_items["DREval/2/0/9/state"], ["17; int", "16; int", "17; str", "seventeen"]
    ) == [
        (True, Reason.CORRECT),
        (False, Reason.WRONG),
        (False, Reason.WRONG),
        (False, Reason.NOT_LITERAL),
    ]
    failure = ParseFailure("no YES or NO", "hmm")
    coverage = fixture_items["DREval/0/1/9/coverage"]
    (scores,) = run_plans(pool, [tasks.get(coverage.task).plan(coverage, [failure])])
    assert (scores[0].correct, scores[0].reason) == (False, Reason.NO_ANSWER)


def test_grading_modes() -> None:
    """Strict grading of output answers refuses expression holes before anything runs."""
    item = items_without_truth(FIXTURES)["DREval/0/0/output"]
    assert re.fullmatch(r"DREval/\d+/\d+/output", item.id)
    question = str(item.metadata["output_pred"])
    copied = question.replace("??", question.split("assert ", 1)[1].split(" == ")[0])
    plan = tasks.get(item.task).plan(item, [Answer(copied)], "strict")
    (score,) = run_plans(None, [plan])[0]
    assert score.reason is Reason.NOT_LITERAL and "literal" in score.detail


# Rewrites that assert the same comparison of the same values (graded as upstream grades them),
# beside rewrites that change what is asserted (refused: `is True`, a bare `assert x`, `!=`).
SAME_ASSERTION = {
    "DREval/1/0/output": [
        'assert total([1, 2]) == 11, "values differ"',  # a message: it runs only on failure
        'assert total([1, 2]) == 12, "values differ"',
        "assert 11 == total([1, 2])",  # == operands swapped
        "assert 12 == total([1, 2])",
        "assert total([1, 2]) == 11\npass",  # pass after it
        "pass\nassert total([1, 2]) == 12",
    ],
    "DREval/2/0/output": [
        "assertEquals(self.counter.add(5), 15)\nassertEquals(self.counter.add(2), 17)",  # alias
        "assertEqual(15, self.counter.add(5))\nassertEqual(17, self.counter.add(2))",  # swapped
        "assertEquals(15, self.counter.add(5))\nassertEqual(self.counter.add(2), 18)",
        "assertEqual(self.counter.add(5), 15, 'first')\nassertEqual(self.counter.add(2), 17)",
    ],
    "DREval/2/1/output": ["assertEqual(counter.count, 0)", "assertEqual(3, 0)"],
}
OTHER_ASSERTION = {
    "DREval/1/0/output": [
        "assert (total([1, 2]) == 11) is True",
        "assert total([1, 2])",
        "assert total([1, 2]) != 12",
    ],
}


def upstream_passes(pool: Pool, item: Item, text: str) -> bool:
    """Upstream's verdict, its procedure run literally: the completed answer, the penalties,
    then the answer itself executed (HumanEval: in the program's namespace; ClassEval: rewritten
    by its create_from_answer into a test method), passing when nothing raises."""
    question = str(item.metadata["output_pred"])
    answer = completed_answer(text, question)
    if penalized(answer, question) is not None:
        return False
    row = {"code": item.program, "test": item.metadata.get("test"), "entry_point": item.entry}
    test_class = str(item.metadata.get("test_class") or "")
    result = pool.run(answer_program(row), Call(ANSWER_ENTRY, (answer, test_class)))
    return result.ok


def test_rewrites_asserting_the_same_comparison_get_upstreams_verdict(
    pool: Pool, fixture_items: dict[str, Item]
) -> None:
    for item_id, answers in SAME_ASSERTION.items():
        item = fixture_items[item_id]
        ours = graded(pool, item, answers)
        theirs = [upstream_passes(pool, item, answer) for answer in answers]
        assert [correct for correct, _ in ours] == theirs, (item_id, ours)
        assert True in theirs and False in theirs  # both verdicts are exercised
        assert all(reason is not Reason.UNSUPPORTED_ASSERTION for _, reason in ours)
    for item_id, answers in OTHER_ASSERTION.items():
        item = fixture_items[item_id]
        assert all(upstream_passes(pool, item, answer) for answer in answers)
        assert graded(pool, item, answers) == [(False, Reason.UNSUPPORTED_ASSERTION)] * 3
