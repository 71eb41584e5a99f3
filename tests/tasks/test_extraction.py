"""Answer extraction on messy model outputs: upstream rules (quirks included) and robust rules."""

from __future__ import annotations

import pytest

from codereasoner import tasks
from codereasoner.families.cruxeval import extraction as crux
from codereasoner.families.livecodebench import extraction as lcb
from codereasoner.tasks import Answer, Item, ParseFailure
from codereasoner.tasks import extraction as ex

# ---------------------------------------------------------------------------------------
# upstream: CRUXEval
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "cot", "expected"),
    [
        ("assert f(17) == 17\n", False, "17"),  # direct prompt, stopped at [/ANSWER]
        (' "x9ja" ', False, '"x9ja"'),  # Phind: the prompt ends with '==', stopped at '# done'
        ("assert f('x') == 'a==b'", False, "'a"),  # quirk: text between first and second '=='
        # quirk: without the stop string the trailing lines stay in the answer
        (
            "assert f(1) == 2\n[/ANSWER]\n\n[PYTHON]\ndef f(x):\n",
            False,
            "2\n[/ANSWER]\n\n[PYTHON]\ndef f(x):",
        ),
        ("[ANSWER]\nassert f(1) == 2", False, "2"),  # tags ignored outside CoT, '==' still cut
        ("Step 1: x == 3.\n[/THOUGHT]\n[ANSWER]\nassert f(3) == 9\n", True, "9"),
        # quirk: CoT without [ANSWER] keeps the whole text, so the first '==' of the reasoning wins
        ("Step 1: x == 3 so y == 4\nassert f(3) == 9", True, "3 so y"),
        # several [ANSWER] tags: the text between the first and the second
        ("[ANSWER]\nassert f(1) == 2\n[ANSWER]\nassert f(1) == 3", True, "2"),
        ("I do not know", False, "I do not know"),  # no '==': the whole text, judged later
    ],
)
def test_cruxeval_output_upstream_rules(completion: str, cot: bool, expected: str) -> None:
    assert ex.cruxeval_output(completion, cot=cot) == expected


def test_cruxeval_openai_path_uses_the_last_line_without_tags() -> None:
    text = "Let me think.\nThe function doubles.\n'abab'"
    assert ex.cruxeval_output(text, cot=True, openai=True) == "'abab'"
    assert ex.cruxeval_output(text, cot=True) == text.strip()  # HF path: the whole text
    assert crux.cruxeval_input("thinking\nf(3)", cot=True, openai=True) == "f(3)"


@pytest.mark.parametrize(
    ("completion", "cot", "expected"),
    [
        ("assert f(1, 2) == 3", False, "f(1, 2)"),
        ("assert f (1, 2) == 3", False, "f(1, 2)"),  # 'assert f' dropped, the rest stripped
        ("f([1, 2])", False, "f([1, 2])"),
        ("assert f('a==b') == 1", False, "f('a"),  # quirk: cut at the first '=='
        ("[THOUGHT]x[/THOUGHT]\n[ANSWER]\nassert f(16) == 17\n", True, "f(16)"),
        ("[ANSWER]\nassert f(1) == 2\n[/ANSWER] then assert f(5) == 6", True, "f(1)"),
    ],
)
def test_cruxeval_input_upstream_rules(completion: str, cot: bool, expected: str) -> None:
    assert crux.cruxeval_input(completion, cot=cot) == expected


# ---------------------------------------------------------------------------------------
# upstream: LiveCodeBench
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "cot", "expected"),
    [
        ("assert distinct(a = [1, 2]) == [-1, 1]\n[/ANSWER]", False, "[-1, 1]"),
        ("assert g(x = 1) == [\n1,\n2]\n", False, "["),  # quirk: first line only without [/ANSWER]
        ("reasoning\n[ANSWER]\nassert g(x = 1) == 5\n[/ANSWER]", True, "5"),
        ("We check x == 2 so...\nassert g() == 7", True, "2 so..."),  # quirk: first '==' wins
        ("assert g() == 'done'\n###", False, "'done'"),
    ],
)
def test_lcb_execution_upstream_rules(completion: str, cot: bool, expected: str) -> None:
    assert lcb.lcb_execution(completion, cot=cot) == expected


@pytest.mark.parametrize(
    ("completion", "codellama", "expected"),
    [
        ("```python\nassert double([1]) == [2]\n```", False, "assert double([1]) == [2]"),
        (
            "assert a() == 1\ntext\nassert a() == 2  ",
            False,
            "assert a() == 2  ",
        ),  # last, unstripped
        ("```\n    assert x(1) == 1\n```", False, "    assert x(1) == 1"),  # indented: fenced block
        ("Here:\n```python\nr = x([1])\n```\nand\n```\nprint(1)\n```", False, "r = x([1])"),
        ("```Python\ny = 2\n```", False, "y = 2"),
        ("[PYTHON]\n  assert f(1) == 2\n[/PYTHON]", True, "  assert f(1) == 2"),
        ("[PYTHON]\n  assert f(1) == 2\n[/PYTHON]", False, ""),  # other styles look for backticks
        ("The answer is 4.", False, ""),
    ],
)
def test_lcb_test_output_upstream_rules(completion: str, codellama: bool, expected: str) -> None:
    assert lcb.lcb_test_output(completion, codellama=codellama) == expected


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("assert double([1, 2, 3]) == [2, 4, 6]", "[2, 4, 6]"),
        ("# says assert\nassert x(1) == 5 # trailing", "5"),
        ("[2, 4, 6]", "[2, 4, 6]"),  # a bare literal is accepted
        ("assert x(1) ==", "Invalid syntax"),
        ("# assert", "Empty statement"),
        ("x = 1  # assert", "Not an assert statement"),
        ("assert x(1)", "Not an equality assertion"),
        ("assert a < b == c", "Not an equality assertion"),
        ("assert a == b == c", "b"),
        # lines end where str.splitlines ends them, as upstream's grader splits
        *(
            (f"# note{sep}assert x(1) == 5", "5")
            for sep in (
                "\r",
                "\x0b",
                "\x0c",
                "\x1c",
                "\x1d",
                "\x1e",
                "\x85",
                "\u2028",
                "\u2029",
                "\r\n",
            )
        ),
    ],
)
def test_lcb_assert_rhs(prediction: str, expected: str) -> None:
    assert lcb.lcb_assert_rhs(prediction) == expected


# ---------------------------------------------------------------------------------------
# robust rules: one corpus of messy outputs
# ---------------------------------------------------------------------------------------

HALLUCINATED_NEXT_EXAMPLE = (
    "[ANSWER]\nassert f(1) == 2\n[/ANSWER]\n\n[PYTHON]\ndef f(x):\n    return x + 1\n"
    "assert f(??) == 5\n[/PYTHON]\n[ANSWER]\nassert f(4) == 5\n[/ANSWER]"
)

VALUE_CORPUS = [
    (HALLUCINATED_NEXT_EXAMPLE, "2"),  # multiple tags: the first block answers our question
    ("[ANSWER]\nassert f('a') == 'b'\n", "'b'"),  # missing closing tag
    ("```python\nassert f([1, 2]) == [2, 1]\n```", "[2, 1]"),  # code fence
    ("~~~\nassert f(0) == 0\n~~~", "0"),
    ("assert f(3) == 9 because 3 squared is 9", "9"),  # trailing prose on the line
    ("assert f(3) == 9 " + "and so on " * 300, "9"),  # a long tail of prose
    ("[ANSWER]\nassert f(1) == 2\n[/ANSWER]\nI hope this helps!", "2"),  # trailing prose after tags
    ("assert f('x') == 'a==b'", "'a==b'"),  # '==' inside the literal
    (
        "assert f(2) == [\n    1,\n    2,\n]\n[/ANSWER]",
        "[\n    1,\n    2,\n]",
    ),  # multi-line literal
    ('assert f(0) == {"ok": true, "v": null}', '{"ok": true, "v": null}'),  # JSON spellings kept
    ("I'll use [ANSWER] tags.\n[/THOUGHT]\n[ANSWER]\nassert f(1) == 2\n[/ANSWER]", "2"),
    ("assert f(17) == 17 # done", "17"),
    (" 17 # done", "17"),  # Phind continuation: no assertion at all
    ("**Answer:** `42`", "42"),
    ("Final answer: [1, 2]", "[1, 2]"),
    ("assert sumOfSquares(nums = [1, 2, 3]) == 14\n[/ANSWER]", "14"),  # LiveCodeBench style
]


@pytest.mark.parametrize(("completion", "expected"), VALUE_CORPUS)
def test_robust_value(completion: str, expected: str) -> None:
    assert ex.robust_value(completion) == expected


@pytest.mark.parametrize(
    "completion", ["I think it is 5", "The output is unclear.", "", "[ANSWER]\n[/ANSWER]"]
)
def test_robust_value_finds_nothing_in_prose(completion: str) -> None:
    assert ex.robust_value(completion) is None


def test_robust_value_last_prefers_the_final_assertion() -> None:
    chat = (
        "First a simpler case:\n```python\nassert double([]) == []\n```\nNow the real one:\n"
        "```python\nassert double([1, 2, 3]) == [2, 4, 6]\n```\nExplanation: each is doubled."
    )
    assert ex.robust_value(chat, last=True) == "[2, 4, 6]"
    assert ex.robust_value(chat) == "[]"


CALL_CORPUS = [
    (HALLUCINATED_NEXT_EXAMPLE, "f(1)"),
    ("[ANSWER]\nassert f(\"a==b\", 2) == 'x'\n[/ANSWER]", 'f("a==b", 2)'),
    ("```\nassert f(*[1, 2]) == 3", "f(*[1, 2])"),  # fence, no closing tag
    ("The input is f([1, 2]) since it doubles.", "f([1, 2])"),
    ("assert f(\n    [1, 2],\n    3,\n) == 5", "f(\n    [1, 2],\n    3,\n)"),
    ("[ANSWER]\nassert f(16) == 17\n[/ANSWER]\nDone.", "f(16)"),
]


@pytest.mark.parametrize(("completion", "expected"), CALL_CORPUS)
def test_robust_call(completion: str, expected: str) -> None:
    assert ex.robust_call(completion) == expected


def test_robust_call_wants_the_entry_point() -> None:
    assert ex.robust_call("assert g(1) == 2") is None
    assert ex.robust_call("assert g(1) == 2", entry="g") == "g(1)"
    assert (
        ex.robust_call("assert Solution().run(1) == 2", entry="Solution().run")
        == "Solution().run(1)"
    )


def test_task_extract_modes() -> None:
    output, given = tasks.get("output_prediction"), tasks.get("input_prediction")
    item = Item("x", "cruxeval-o", "output_prediction", call="f('x')", truth="'a==b'")
    completion = "assert f('x') == 'a==b'\n"
    assert output.extract(item, completion) == Answer("'a")
    assert output.extract(item, completion, mode="robust") == Answer("'a==b'")
    assert isinstance(output.extract(item, "no idea", mode="robust"), ParseFailure)
    assert given.extract(item, "assert f('a==b') == 1", mode="robust") == Answer("f('a==b')")
    lcb = tasks.get("lcb_execution")
    assert (output.name, lcb.name) == ("output_prediction", "lcb_execution")
    assert lcb.extract(item, "assert g(a = 1) == [\n1]\n") == Answer("[")
    assert lcb.extract(item, "assert g(a = 1) == [\n1]\n", mode="robust") == Answer("[\n1]")
    with pytest.raises(ValueError, match="style 'phind' not supported"):
        lcb.extract(item, "x", style="phind")
