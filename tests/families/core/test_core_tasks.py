"""CoRE task kinds: prompts, the extraction rule on messy completions, both gradings, probes."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest

from codereasoner import tasks
from codereasoner.execution import Pool, TraceOptions, parse_call
from codereasoner.families.core import TEMPLATES
from codereasoner.families.core import benchmark as core
from codereasoner.families.core.output import (
    OUTPUT_TASK,
    CoreOutput,
    ancestor_output,
    extract_answer,
    program,
)
from codereasoner.families.core.probe import PROBE_TASK, CoreProbe, check_trace
from codereasoner.tasks import Answer, Grading, Item, ParseFailure, Reason
from codereasoner.tasks.literal_answers import match_value
from codereasoner.trace import trace_call

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "core"
REFERENCE = Path(__file__).resolve().parents[4] / "shared" / "reference" / "benchmarks.md"
PATHS = {name: FIXTURES / name for name in (core.IO.filename, core.QA.filename)}
ITEMS = {item.id: item for item in core.load(PATHS, "core", (OUTPUT_TASK, PROBE_TASK))}
OUTPUT = CoreOutput()
PROBE = CoreProbe()


def _spec_blocks() -> list[str]:
    """The three output templates of the reference specification's CoRE section, as printed there (braces unescaped)."""
    text = REFERENCE.read_text(encoding="utf-8")
    section = text[text.index("Standard output (IO; source: CoRE paper App. B.1)") :]
    return re.findall(r"\n```\n(You are given a Python function.*?)\n```\n", section, re.S)[:3]


@pytest.mark.skipif(not REFERENCE.exists(), reason="shared reference not available")
@pytest.mark.parametrize(("index", "style"), [(0, "direct"), (1, "cot"), (2, "coc")])
def test_output_prompts_are_the_papers_templates_byte_for_byte(index: int, style: str) -> None:
    item = ITEMS["3034_0"]
    block = _spec_blocks()[index]
    expected = (
        block.replace("{code}", item.fields["code"])
        .replace("{func_name}", item.fields["func_name"])
        .replace("{x}", item.fields["x"])
    )
    assert OUTPUT.prompt(item, style) == expected + "\n"  # the ancestor's strings end with "\n"


def test_template_files_are_pinned() -> None:
    digests = {
        "output_direct.txt": "abd961cf108bf82badbd513d38cf4f40a4729f9db8fdc094902be9048d68a839",
        "output_cot.txt": "52a9fb8039af47f8f8c3118a805ab35d20a6c147ea5a04645efa8a2a7ead232a",
        "output_coc.txt": "98649755a8fbd759968879ff1399597e1146f15fc69e21e75cfa427d062fba08",
    }
    for name, digest in digests.items():
        assert hashlib.sha256(TEMPLATES.text(name).encode()).hexdigest() == digest, name


def test_prompts_end_where_the_model_continues_and_hide_probe_metadata() -> None:
    item = ITEMS["36_2"]
    assert OUTPUT.prompt(item).endswith("    return total\nassert fizz_buzz(79) == ??\n# Answer:\n")
    assert OUTPUT.prompt(item, "cot").endswith("== ??\nLet's execute the code step by step:\n")
    coc = OUTPUT.prompt(item, "coc")
    assert coc.endswith("== ??\n[TRACE]\n") and "delta state: {'s': 'hihi'}\n" in coc
    probe = ITEMS["Fine/36_0#1"]
    for style in ("direct", "cot", "coc"):
        text = PROBE.prompt(probe, style)
        assert "Input: fizz_buzz(79)\nQuestion: In the iteration where value = 77" in text
        assert text.endswith("on a final line of the form `Answer: <value>`.\n")
        for hidden in ("fixture: never shown", "Compound Conditions", "170", "dictionary"):
            assert hidden not in text, (style, hidden)
    with pytest.raises(ValueError, match="expected one of direct, cot, coc"):
        OUTPUT.prompt(item, "phind")


# Raw completions -> the extracted answer text (None: nothing found, graded as no_answer).
OUTPUT_CORPUS = [
    ("assert fizz_buzz(79) == 3", "3"),
    ("```python\nassert fizz_buzz(79) == 3\n```", "3"),
    ("# Answer:\nassert fizz_buzz(79) == 3  # 0, 77 and 78", "3"),
    ("Let's execute...\n5. So it returns 3.\n\nAnswer:\nassert fizz_buzz(79) == 3", "3"),
    ("[ANSWER]assert f(1) == 2[/ANSWER]\nno, recount\n[ANSWER]assert f(1) == 4", "4"),  # last tag
    ('assert f("x9j") == "x9ja"\nassert fizz_buzz(79) == 3', "3"),  # few-shot echoed first
    ("assert in_order(1, 2) == true", "true"),  # JSON spelling, read later
    ("assert g([1]) == [\n    1,\n    2,\n]\nDone.", "[\n1,\n2,\n]"),  # multi-line, lines stripped
    ("assert f(1) == 7, which matches the trace", "7"),  # trailing prose cut
    ("Answer: assert fizz_buzz(79) == 3", "3"),
    ("**Final Answer:** `7`", "7"),
    ("Answer: 7 (two disjoint ranges)", "7 (two disjoint ranges)"),  # read by grading
    ("`assert f(2) == 'b'`", "'b'"),  # inline code
    ("[TRACE]\nstate: {}\nline: f('hi')\ndelta state: {'s': 'hi'}\n[/TRACE]\nAnswer:\n"
     "assert f('hi') == 'bhihia'", "'bhihia'"),  # chain of code
    ("assert fizz_buzz(79) == 3\nAnswer: 2", "2"),  # the last answer-bearing line wins
    ("[TRACE]\nstate: {}\nline: total = 0\ndelta state: {'total': 0}", None),  # cut off
    ("The function returns 3.", None),  # prose only: no bare-line guess
    ("assert fizz_buzz(79) == ??", None),
    ("assert f(1) == 3\nAnswer: assert f(1) == ??", "3"),  # an unparsable assertion is skipped
    ("", None),
]  # fmt: skip
PROBE_CORPUS = [
    ("Answer: 2", "2"),
    ("The loop ...\nAnswer: total = 2, condition = True", "total = 2, condition = True"),
    ("Answer:\n```python\n{3, 4, 5, 6}\n```", "{3, 4, 5, 6}"),
    ("I think total is 2.\nassert total == 2", "2"),
    ("Answer: 1\nWait, let me recount.\nAnswer: 2\n\nNote: 77 has two sevens.", "2"),
    ("[TRACE]\nline: total = 0\ndelta state: {'total': 0}\n[/TRACE]\nAnswer: 2", "2"),
    ("Answer: `[[1, 7]]`.", "[[1, 7]]"),
    ("**Answer:** **'bccd'**.", "'bccd'"),
    ("total is 2", None),
]


@pytest.mark.parametrize(("text", "expected"), OUTPUT_CORPUS + PROBE_CORPUS)
def test_extraction_corpus(text: str, expected: str | None) -> None:
    found = extract_answer(text)
    if expected is None:
        assert isinstance(found, ParseFailure) and found.text == text
    else:
        assert found == Answer(expected)
    output, probe = ITEMS["36_2"], ITEMS["Fine/36_0#1"]
    assert OUTPUT.extract(output, text) == PROBE.extract(probe, text) == found  # one rule


def test_ancestor_extraction_needs_a_closing_fence() -> None:
    assert ancestor_output("```python\nassert f(1) == 3\n```") == Answer("3")
    assert ancestor_output("assert f(1) == 2\n```\nassert f(1) == [1, 2] \n```") == Answer("[1, 2]")
    assert ancestor_output("# Answer:\nassert f(1) == 3") == Answer("")  # the paper's prompts
    item = ITEMS["36_2"]
    assert OUTPUT.extract(item, "x == 1\n```", mode="official") == Answer("1")
    with pytest.raises(ValueError, match="robust"):
        OUTPUT.extract(item, "x", mode="official-openai")


def _grade(item: Item, texts: list[str], grading: Grading) -> list[tuple[bool, Reason]]:
    answers = [OUTPUT.extract(item, text) for text in texts]
    scores = tasks.get(item.task).plan(item, answers, grading).resolve()  # literals: no job
    return [(score.correct, score.reason) for score in scores]


def test_output_grading_project_and_ancestor() -> None:
    ok, wrong = (True, Reason.CORRECT), (False, Reason.WRONG)
    boolean = ITEMS["9001_0"]  # gold JSON "true"
    texts = ["assert in_order(1, 2) == True", "Answer: true", "Answer: 1", "Answer: ???", "nothing"]
    assert _grade(boolean, texts, Grading.STRICT) == [
        ok,
        ok,
        wrong,
        (False, Reason.NOT_LITERAL),
        (False, Reason.NO_ANSWER),
    ]
    crash = (False, Reason.BAD_TRUTH)  # upstream's ast.literal_eval("true") raises
    assert _grade(boolean, texts, Grading.OFFICIAL) == [crash] * 4 + [(False, Reason.NO_ANSWER)]
    number = ITEMS["3034_0"]  # gold "7"
    texts = ["Answer: 7.0", "Answer: 7 (two ranges)", "Answer: '7'", "Answer: (7,)"]
    assert _grade(number, texts, Grading.STRICT) == [ok, ok, wrong, wrong]
    assert _grade(number, texts, Grading.OFFICIAL) == [ok, wrong, wrong, wrong]  # no prose cut
    listed = dataclasses.replace(number, truth="[1, 2]")
    texts = ["assert f() == (1, 2)", "assert f() == [1, 2.0000000001]"]
    assert _grade(listed, texts, Grading.STRICT) == [ok, ok]  # tuples as lists, float tolerance
    assert _grade(listed, texts, Grading.OFFICIAL) == [wrong, wrong]
    bare = dataclasses.replace(number, truth='"u"')  # the ancestor reads a bare word as a string
    assert _grade(bare, ["Answer: u"], Grading.OFFICIAL) == [ok]
    assert _grade(bare, ["Answer: u"], Grading.STRICT) == [(False, Reason.NOT_LITERAL)]


def test_unparsable_answers_are_counted_not_dropped() -> None:
    item = ITEMS["Fine/36_0#0"]
    answers = [
        PROBE.extract(item, t) for t in ("no answer here", "Answer: ???", "Answer: 3", "Answer: 3")
    ]
    scores = PROBE.plan(item, answers).resolve()
    assert [(s.sample, s.correct, s.reason) for s in scores] == [
        (0, False, Reason.NO_ANSWER),
        (1, False, Reason.NOT_LITERAL),
        (2, True, Reason.CORRECT),
        (3, True, Reason.CORRECT),
    ]
    assert PROBE.score(item, ParseFailure("nothing")).reason is Reason.NO_ANSWER


@pytest.mark.parametrize(
    ("text", "correct"),
    [
        ("total = 2, condition = True", True),
        ("condition: True; total: 2", True),  # by name, any order
        ("(2, True)", True),  # positional, the question's order
        ("{'total': 2, 'condition': True}", True),
        ('{"total": 2, "cond": true}', True),  # other names: positional values
        ("2, True (77 holds two sevens)", True),
        ("(True, 2)", False),
        ("total = 2", False),  # a part is missing
        ("(2, 1)", False),  # bools equal only bools
        ("2", False),
    ],
)
def test_multi_part_probe_matching(text: str, correct: bool) -> None:
    item = ITEMS["Fine/36_0#1"]  # gold {'total': 2, 'condition': True}
    assert PROBE.score(item, Answer(text)).correct is correct


@pytest.mark.parametrize(
    ("gold", "text", "correct"),
    [
        ("'else'", "else", True),  # a str gold matches the bare word
        ("'else'", "the else branch", False),
        ("'f'", "'f'", True),
        ("'5'", "5", False),  # a literal of another type is not the string
        ("16", "b = 16", True),  # one name = value part
        ("16", "b = 15", False),
        ("float('inf')", "inf", True),
        ("True", "1", False),
        ("{1, 2}", "{2, 1}", True),
        ("[1, 2]", "(1, 2)", True),
        ("2", "2 (after the increment)", True),
    ],
)
def test_single_value_probe_matching(gold: str, text: str, correct: bool) -> None:
    from codereasoner import values

    assert match_value(values.parse(gold), text) is correct


def test_the_registry_dispatches_on_the_item() -> None:
    assert {item.task for item in ITEMS.values()} == {OUTPUT_TASK, PROBE_TASK}
    output, probe = ITEMS["36_0"], ITEMS["Fine/36_0#0"]
    assert isinstance(tasks.get(output.task), CoreOutput)
    assert isinstance(tasks.get(probe.task), CoreProbe)
    assert tasks.get(output.task).prompt(output) == OUTPUT.prompt(output)
    assert tasks.get(probe.task).prompt(probe) == PROBE.prompt(probe)
    probe = ITEMS["Fine/3034_2#0"]
    assert tasks.get(probe.task).score(probe, Answer("[[1, 7]]")).correct


def test_check_trace_on_fixture_probes(pool: Pool) -> None:
    options = TraceOptions(finish_untraced=True)
    probes = [item for item in ITEMS.values() if item.task == "core_probe"]
    for item in probes:
        traced = trace_call(pool, program(item), parse_call(item.call), options)
        check = check_trace(item, traced.trace)
        assert check.distance == 0, item.id
        assert check.target_line == item.metadata["target_line_number"], item.id
        wrong = dataclasses.replace(item, truth="[[1, 8]]" if "3034_2" in item.id else "99")
        if item.metadata["multi_part"]:
            wrong = dataclasses.replace(item, truth="{'total': 5, 'condition': True}")
        assert check_trace(wrong, traced.trace).distance is None, item.id
    first = ITEMS["Fine/36_0#0"]  # total is 3 only after the loop, at step 173
    traced = trace_call(pool, program(first), parse_call(first.call), options)
    for step, distance in ((175, 0), (174, 0), (172, 1), (171, 2), (169, None), (3, None)):
        moved = {**first.metadata, "target_step_index": step}
        assert check_trace(dataclasses.replace(first, metadata=moved), traced.trace).distance == (
            distance
        ), step
