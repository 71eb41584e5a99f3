"""The task-kind registry (name = ``Item.task``), and each kind's oracle against its own rules:
the oracle's completion, extracted by the kind's ``extract`` (default mode) and graded by its
``score`` (default grading), is correct on real items of every registered kind."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from codereasoner import tasks
from codereasoner.execution import Pool
from codereasoner.families import cruxeval as cruxeval_family
from codereasoner.families import livecodebench as lcb_family
from codereasoner.families.core import benchmark as core
from codereasoner.families.cruxeval import benchmark as cruxeval
from codereasoner.families.livecodebench import benchmark as livecodebench
from codereasoner.families.reval import benchmark as reval
from codereasoner.models.oracle import oracle_completion
from codereasoner.tasks import Item, OutputPrediction, Score, TaskKind
from codereasoner.tasks.oracle import NoOracleAnswer
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

BUILTIN = (
    "output_prediction",
    "lcb_execution",
    "input_prediction",
    "test_output_prediction",
    "coverage",
    "state",
    "path",
    "output",
    "core_output",
    "core_probe",
)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Where the server stops the completion (docs/benchmark-rules.md, "Stop sequences"; the phind style stops at "# done"):
# the oracle writes the closing text too, as a model would.
TAGGED = ("output_prediction", "input_prediction", "coverage", "state", "path", "output")
STOPS = {**dict.fromkeys(TAGGED, ("[/ANSWER]",)), "lcb_execution": ("###",)}
PER_KIND = 40  # items per kind: the first ones of the data
# REval programs whose questions are asked: HumanEval, ClassEval, and bytearray states.
REVAL_PROGRAMS = {"DREval/0", "DREval/85", "DREval/94"}


# -- the registry --------------------------------------------------------------------------------


def test_every_builtin_kind_is_registered_under_its_item_task() -> None:
    assert set(BUILTIN) <= set(tasks.names())
    for name in BUILTIN:
        kind = tasks.get(name)
        assert kind.name == name
        assert kind.styles, name
    execution = tasks.get("lcb_execution")
    assert isinstance(execution, OutputPrediction)
    assert execution.templates["cot"] == lcb_family.TEMPLATES.text("execution_cot.txt")
    crux = tasks.get("output_prediction")
    assert isinstance(crux, OutputPrediction) and crux.styles == ("direct", "cot", "phind")
    assert crux.templates["cot"] == cruxeval_family.TEMPLATES.text("output_cot.txt")


def test_an_unknown_name_is_a_one_line_error_naming_the_known_ones() -> None:
    with pytest.raises(ValueError) as raised:
        tasks.get("haiku_prediction")
    message = str(raised.value)
    assert message == (
        f"unknown task kind 'haiku_prediction'; expected one of {', '.join(tasks.names())}"
    )
    assert "\n" not in message and "output_prediction, input_prediction, " in message
    with pytest.raises(ValueError, match="unknown task kind 'haiku_prediction'"):
        tasks.unregister("haiku_prediction")


def test_a_taken_name_cannot_be_registered_again() -> None:
    registered = tasks.get("output_prediction")
    with pytest.raises(ValueError, match="'output_prediction' is already registered"):
        tasks.register(
            OutputPrediction("output_prediction", {"direct": "{code}"})
        )  # another object
    tasks.register(registered)  # the same object again: nothing changes
    assert tasks.get("output_prediction") is registered
    assert tasks.names().count("output_prediction") == 1
    nameless = OutputPrediction("output_prediction", {"direct": "{code}"})
    nameless.name = ""
    with pytest.raises(ValueError, match="non-empty string name"):
        tasks.register(nameless)


def test_a_registered_kind_serves_its_items_until_unregistered() -> None:
    kind = OutputPrediction("test_registry_echo", {"direct": "{code}"})
    item = Item("e", "echo", kind.name, program="def f(x):\n    return x", call="f(1)", truth="1")
    tasks.register(kind)
    try:
        assert tasks.get(item.task) is kind and kind.name in tasks.names()
        assert oracle_completion(item, "direct") == "assert f(1) == 1\n[/ANSWER]"
        assert tasks.get(item.task).score(item, tasks.get(item.task).extract(item, "1")).correct
    finally:
        assert tasks.unregister(kind.name) is kind
    assert kind.name not in tasks.names()
    with pytest.raises(NoOracleAnswer, match="no oracle for task kind 'test_registry_echo'"):
        oracle_completion(item, "direct")


def test_oracle_completion_is_the_items_kinds_oracle() -> None:
    item = Item(
        "o",
        "cruxeval-o",
        "output_prediction",
        program="def f(x):\n    return x",
        call="f('a')",
        truth="'a'",
    )
    for style in ("direct", "cot", "phind"):
        assert oracle_completion(item, style) == tasks.get(item.task).oracle(item, style)
    assert oracle_completion(item, "phind") == " 'a' # done"
    lcb = replace(item, task="lcb_execution")
    assert oracle_completion(lcb, "cot") == oracle_completion(item, "cot")


def test_the_state_oracle_writes_what_state_grading_accepts(pool: Pool) -> None:
    """A bytearray's recorded value is a bytes literal, which upstream reads as bytes."""
    state = tasks.get("state")
    item = Item("s", "reval", "state", truth='[["bytearray", "b\'ab\'"]]', truth_format="json")
    text = state.oracle(item, "direct")
    assert text == "bytearray(b'ab'); bytearray\n[/ANSWER]"
    assert state.score(item, state.extract(item, text), pool).correct  # read in the sandbox
    plain = replace(item, truth='[["int", "1"], ["int", "2"]]')
    assert state.oracle(plain, "direct") == "1; int\n[/ANSWER]"
    opaque = replace(item, truth='[["bs4.Tag", null]]')
    with pytest.raises(NoOracleAnswer, match=r"no expected state \(bs4\.Tag\)"):
        state.oracle(opaque, "direct")


# -- every kind's oracle, extracted and graded by the kind itself ---------------------------------


def _cruxeval(task: str) -> list[Item]:
    path = SHARED_DATA / "cruxeval" / "cruxeval.jsonl"
    if not path.exists():
        pytest.skip("shared CRUXEval data not present")
    benchmark = "cruxeval-o" if task == "output_prediction" else "cruxeval-i"
    return cruxeval.load({path.name: path}, task=task, benchmark=benchmark)


def _livecodebench(task: str) -> list[Item]:
    # No LiveCodeBench data is shared: the fixture rows are real rows of both datasets.
    folder = FIXTURES / "livecodebench"
    paths = {name: folder / name for name in ("execution-v2.jsonl", "test_generation.jsonl")}
    if task == "lcb_execution":
        return livecodebench.load_execution(paths, benchmark="lcb-execution")
    return livecodebench.load_test_output(paths, benchmark="lcb-test-output")


def _reval(pool: Pool, folder: Path) -> list[Item]:
    source = SHARED_DATA / "reval"
    if not source.exists():
        pytest.skip("shared REval data not present")
    lines = (source / "DREval_tasks.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["task_id"] in REVAL_PROGRAMS]
    (folder / "DREval_tasks.jsonl").write_text("\n".join(kept) + "\n")
    (folder / "DREval_data.jsonl").write_bytes((source / "DREval_data.jsonl").read_bytes())
    paths = {name: folder / name for name in ("DREval_data.jsonl", "DREval_tasks.jsonl")}
    return reval.load(paths, pool=pool, cache=folder / "cache")


def _core(task: str) -> list[Item]:
    if task == "core_output":  # not in the shared data: the fixture's rows are real ones
        return core.load({"core_io.json": FIXTURES / "core" / "core_io.json"}, "core", (task,))
    path = SHARED_DATA / "core" / "core_qa.json"
    if not path.exists():
        pytest.skip("shared CoRE data not present")
    return core.load({path.name: path}, "core", (task,))


@pytest.fixture(scope="module")
def reval_items(pool: Pool, tmp_path_factory: pytest.TempPathFactory) -> list[Item]:
    return _reval(pool, tmp_path_factory.mktemp("reval"))


def _items(name: str, request: pytest.FixtureRequest) -> list[Item]:
    """Real items of the kind: the first PER_KIND, or every question of REVAL_PROGRAMS."""
    if name in ("output_prediction", "input_prediction"):
        items = _cruxeval(name)[:PER_KIND]
    elif name in ("lcb_execution", "test_output_prediction"):
        items = _livecodebench(name)[:PER_KIND]
    elif name in ("core_output", "core_probe"):
        items = _core(name)[:PER_KIND]
    else:
        items = request.getfixturevalue("reval_items")
    items = [item for item in items if item.task == name]
    assert items, name
    return items


def _completion(kind: TaskKind, item: Item, style: str) -> str:
    text = kind.oracle(item, style)
    stops = ("# done",) if style == "phind" else STOPS.get(kind.name, ())
    found = [index for index in (text.find(stop) for stop in stops) if index >= 0]
    return text[: min(found)] if found else text


@pytest.mark.parametrize("name", BUILTIN)
def test_the_oracle_is_what_the_kinds_own_extraction_and_grading_accept(
    name: str, pool: Pool, request: pytest.FixtureRequest
) -> None:
    kind = tasks.get(name)
    graded: list[Score] = []
    unstated: list[str] = []
    for item in _items(name, request):
        for style in kind.styles:
            try:
                text = _completion(kind, item, style)
            except NoOracleAnswer as exc:
                unstated.append(str(exc))
                continue
            answer = kind.extract(item, text, style)
            graded.append(kind.score(item, answer, pool))
    wrong = [(s.item_id, s.reason.value, s.detail) for s in graded if not s.correct]
    assert wrong == []
    assert len(graded) >= len(kind.styles), (name, unstated)
    assert len(unstated) <= len(graded) // 10, unstated  # stating the truth is the rule
