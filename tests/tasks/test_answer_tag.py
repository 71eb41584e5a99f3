"""``--extraction answer-tag``: the last ``<Answer>`` block, read by each kind's robust rules.

Every shipped benchmark, through its real task kinds and real grading (sandbox included):
the truth in the last tag is right, a wrong last tag is wrong even after a right earlier one,
no tag is no answer. CRUXEval and CoRE probes use ``/work/shared/data`` when present; REval
uses the fixture programs (the full release traces 690 pairs first), CoRE outputs and
LiveCodeBench the fixtures (no shared copy).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner import benchmarks, tasks
from codereasoner.cli import app
from codereasoner.evaluation.runner import RunError, load_items
from codereasoner.execution import CallSyntaxError, Pool, parse_call
from codereasoner.families.cases.reasoning import BACKWARD_TASK, FORWARD_TASK
from codereasoner.families.reval import benchmark as reval
from codereasoner.models.replay_server import Query, ReplayServer
from codereasoner.tasks import Answer, Extraction, Item, ParseFailure, Reason, Score, run_plans
from codereasoner.tasks.extraction import answer_tag_block, answer_tag_blocks
from codereasoner.tasks.oracle import THOUGHT, NoOracleAnswer, truth_text
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PER_BENCHMARK = 24  # items checked per benchmark (REval: per question kind, at most 6)
WRONG_VALUE = "'not the answer'"
TAG = Extraction.ANSWER_TAG


def reasoned(answer: str, before: str = "") -> str:
    return f"<Reasoning>{THOUGHT}{before}</Reasoning>\n<Answer>{answer}</Answer>"


# ---------------------------------------------------------------------------------------
# the block
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "block"), [
    ("<Reasoning>r</Reasoning><Answer> [1, 2] </Answer>", "[1, 2]"),
    ("<Answer>1</Answer> no, wait: <Answer>\n2\n</Answer> done", "2"),
    ("<ANSWER>3</answer>", "3"),  # tag names in any case
    ("<Answer>f(2)", "f(2)"),  # a final unclosed tag runs to the end, when none is closed
    ("<Answer>1</Answer><Answer>f(2)", "1"),  # a closed block wins over a cut-off one
    # an opening tag quoted in the reasoning does not swallow the text up to the real block
    ("<Reasoning>f replaces '<Answer>' with ''</Reasoning><Answer>'abc'</Answer>", "'abc'"),
    ("<Reasoning>'<Answer>x</Answer>' is shown</Reasoning><Answer>'y'</Answer>", "'y'"),
    ("<Answer>1</Answer><Answer>  </Answer>", None),  # the last block is empty
    ("<Answer></Answer>", None),
    ("[ANSWER]3[/ANSWER]", None),
    ("no tags at all", None),
])  # fmt: skip
def test_the_last_answer_block(text: str, block: str | None) -> None:
    assert answer_tag_block(text) == block


def test_closed_blocks_only_for_the_case_kinds() -> None:
    assert answer_tag_blocks("<Answer>1</Answer> <Answer>2") == ["1", "2"]
    assert answer_tag_blocks("<Answer>1</Answer> <Answer>2", closed=True) == ["1"]


# ---------------------------------------------------------------------------------------
# every shipped benchmark, through its kinds
# ---------------------------------------------------------------------------------------


def _load(name: str, pool: Pool, cache: Path) -> list[Item]:
    """Some items of each kind of the benchmark; skips a benchmark with no data here."""
    bench = benchmarks.get(name)
    if bench.dataset == "reval":
        folder = FIXTURES / "reval"
        paths = {file: folder / file for file in (reval.DATA.filename, reval.TASKS.filename)}
        found = reval.load(paths, pool=pool, cache=cache)
    else:
        found = _first_found(bench)
    per_kind = 6 if bench.dataset == "reval" else max(1, PER_BENCHMARK // len(bench.tasks))
    chosen = [[item for item in found if item.task == kind][:per_kind] for kind in bench.tasks]
    return [item for kind in chosen for item in kind if _oracle_ok(item)]


def _first_found(bench: benchmarks.Benchmark) -> list[Item]:
    for data in (SHARED_DATA, FIXTURES):
        try:
            return load_items(bench, data, download=False)
        except RunError:
            continue
    pytest.skip(f"{bench.name}: no data in {SHARED_DATA} or {FIXTURES}")


def stated(item: Item) -> str:
    """What a right answer states: the kind's robust reading of its oracle's completion."""
    kind = tasks.get(item.task)
    found = kind.extract(item, kind.oracle(item, "direct"), "direct", Extraction.ROBUST)
    assert not isinstance(found, ParseFailure), (item.id, found)
    return found.text


def _wrong_path(item: Item) -> str:
    expected = [int(line) for line in item.truth_value()]  # type: ignore[attr-defined]
    if -1 not in expected:
        return "-1"
    lines = item.program.split("\n")
    for line in lines:
        numbers = [n for n, other in enumerate(lines, 1) if other.strip() == line.strip()]
        if line.strip() and not set(numbers) & set(expected):
            return line.strip()
    raise AssertionError(f"{item.id}: every line is expected")


def _wrong_value(item: Item) -> str:
    return f"[{stated(item)}, {WRONG_VALUE}]"  # a list holding the truth is never the truth


def _wrong_call(item: Item) -> str:
    return f"{item.entry}()"  # no arguments: it raises


VALUE_KINDS = ("output_prediction", "lcb_execution", "test_output_prediction", "core_output")
WRONG: dict[str, Callable[[Item], str]] = {  # a wrong answer per task kind
    **dict.fromkeys((*VALUE_KINDS, "core_probe", FORWARD_TASK), _wrong_value),
    **dict.fromkeys(("input_prediction", BACKWARD_TASK), _wrong_call),
    "coverage": lambda item: "NO" if item.truth_value() else "YES",
    "state": lambda item: "Nil" if item.truth_value() is not None else "0; int",
    "path": _wrong_path,
    "output": lambda item: str(item.metadata["output_pred"]).replace("??", WRONG_VALUE),
}
UNCLOSED = "right, lower-case and unclosed"


def completions(item: Item) -> dict[str, str]:
    right, wrong = stated(item), WRONG[item.task](item)
    texts = {
        "right": reasoned(right),
        UNCLOSED: f"<reasoning>{THOUGHT}</reasoning><answer>{right}",
        "wrong": reasoned(wrong),
        "right earlier, wrong last": reasoned(wrong, before=f" <Answer>{right}</Answer> no:"),
        "no tag": f"<Reasoning>{THOUGHT}</Reasoning>\n{right}",
        "empty tag": reasoned(" ", before=f" <Answer>{right}</Answer>"),
    }
    if item.task in ("output_prediction", "input_prediction", "lcb_execution"):
        texts["right, as an assertion"] = reasoned(f"assert {item.call} == {truth_text(item)}")
    return texts


def expected(item: Item, case: str) -> bool | None:
    """True: graded right; False: graded wrong; None: no answer. The case kinds (rewards) take
    closed tags only."""
    if case == UNCLOSED and item.task in (FORWARD_TASK, BACKWARD_TASK):
        return None
    return EXPECTED[case]


EXPECTED = {
    "right": True,
    UNCLOSED: True,
    "right, as an assertion": True,
    "wrong": False,
    "right earlier, wrong last": False,
    "no tag": None,  # no answer
    "empty tag": None,
}


def _oracle_ok(item: Item) -> bool:
    try:
        stated(item)
    except NoOracleAnswer:
        return False
    return True


class Loaded:
    """Each benchmark's items, loaded when a test first asks for them."""

    def __init__(self, pool: Pool, cache: Path) -> None:
        self.pool, self.cache, self.items = pool, cache, dict[str, list[Item]]()

    def __getitem__(self, name: str) -> list[Item]:
        if name not in self.items:
            self.items[name] = _load(name, self.pool, self.cache)
            assert self.items[name], f"{name}: no items with an oracle answer"
        return self.items[name]


@pytest.fixture(scope="module")
def loaded(pool: Pool, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    return Loaded(pool, tmp_path_factory.mktemp("reval-cache"))


NAMES = benchmarks.names()


def test_every_shipped_benchmark_allows_answer_tag() -> None:
    for name in NAMES:
        assert benchmarks.get(name).choose_extraction("answer-tag") is TAG


@pytest.mark.parametrize("name", NAMES)
def test_answer_tag_grades_through_the_real_kinds(name: str, loaded: Loaded, pool: Pool) -> None:
    items = loaded[name]
    texts = {item.id: completions(item) for item in items}
    verdicts = _grade(items, texts, pool, grading=None)
    for item in items:
        for (case, text), score in zip(texts[item.id].items(), verdicts[item.id], strict=True):
            assert _outcome(score) == expected(item, case), (item.id, case, text, score)
    assert {item.task for item in items} == set(benchmarks.get(name).tasks)


@pytest.mark.parametrize("name", [n for n in NAMES if benchmarks.get(n).metrics == "pass@k"])
def test_answer_tag_under_strict_grading(name: str, loaded: Loaded, pool: Pool) -> None:
    items = [item for item in loaded[name] if _literal_call(item)][:8]  # strict: literals only
    texts = {item.id: {"right": reasoned(stated(item))} for item in items}
    verdicts = _grade(items, texts, pool, grading="strict")
    assert all(score.correct for scores in verdicts.values() for score in scores), verdicts


def _literal_call(item: Item) -> bool:
    """Whether the item's own call can be a strict answer (a lambda argument cannot)."""
    try:
        parse_call(item.call)
    except CallSyntaxError:
        return False
    return True


def _grade(
    items: list[Item], texts: dict[str, dict[str, str]], pool: Pool, grading: str | None
) -> dict[str, list[Score]]:
    plans = []
    for item in items:
        kind = tasks.get(item.task)
        answers = [kind.extract(item, text, "direct", TAG) for text in texts[item.id].values()]
        plans.append(
            kind.plan(item, answers) if grading is None else kind.plan(item, answers, grading)
        )
    return {item.id: scores for item, scores in zip(items, run_plans(pool, plans), strict=True)}


def _outcome(score: Score) -> bool | None:
    return None if score.reason is Reason.NO_ANSWER else score.correct


@pytest.mark.parametrize("mode", list(Extraction))
def test_the_case_kinds_take_the_last_closed_tag_under_every_mode(mode: Extraction) -> None:
    """Their prompts ask for the tags: every mode reads them, and a cut-off answer is none."""
    case = Item("c0", "cases", FORWARD_TASK, program="def f(x):\n    return x", call="f(1)")
    kind = tasks.get(FORWARD_TASK)
    assert kind.extract(case, reasoned("1", before=" <Answer>2</Answer>"), mode=mode) == Answer("1")
    assert kind.extract(case, "<Answer>1</Answer><Answer>2", mode=mode) == Answer("1")
    assert isinstance(
        kind.extract(case, f"<Reasoning>{THOUGHT}</Reasoning><Answer>1", mode=mode), ParseFailure
    )


# ---------------------------------------------------------------------------------------
# end to end: codereasoner eval --extraction answer-tag
# ---------------------------------------------------------------------------------------


def test_eval_accepts_and_stores_answer_tag(tmp_path: Path) -> None:
    """A replay server answering every prompt like a model trained by codereasoner train."""
    bench = ("cruxeval-o", "reval", "core")
    found = {name: load_items(benchmarks.get(name), FIXTURES, download=False) for name in bench}
    answers = {
        tasks.get(item.task).prompt(item): reasoned(stated(item))
        for items in found.values()
        for item in items
        if _oracle_ok(item)
    }

    def reply(query: Query) -> str:
        return answers.get(query.prompt, "I do not know.")

    out = tmp_path / "run"
    with ReplayServer(reply=reply) as server:
        args = ["eval", "--model", f"openai:replay@{server.url}", "--out", str(out)]
        args += ["--bench", ",".join(bench), "--data-dir", str(FIXTURES), "--limit", "3"]
        done = CliRunner().invoke(
            app, [*args, "--extraction", "answer-tag", "--workers", "1", "--json"]
        )
    assert done.exit_code == 0, done.output
    reports = json.loads(done.stdout)["reports"]
    assert reports["cruxeval-o"]["extraction"] == "answer-tag"
    assert reports["cruxeval-o"]["pass@1"] == 100.0
    assert reports["reval"]["extraction"] == "answer-tag" and reports["reval"]["consistency"] == 100
    assert reports["core"]["variants"]["project"]["mean"]["I"] == 100.0
    with sqlite3.connect(out / "run.sqlite") as connection:
        config = json.loads(connection.execute("SELECT config FROM run").fetchone()[0])
    assert config["extraction"] == "answer-tag"
