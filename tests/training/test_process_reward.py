"""The process reward: with the same right final answer, a chain that states a probed value
rightly scores above the outcome reward and one that states it wrongly below, and a chain with a
wrong answer gains nothing, through the TRL reward functions a recipe lists and through the
module verl loads; the term's properties (symmetric, bounded, padding gains nothing, no credit
without a right answer); and the statement parser on its own."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from codereasoner import values
from codereasoner.cli import app
from codereasoner.training.grpo_rewards import REWARDS, RewardContext, build_rewards
from codereasoner.training.process import (
    MAX_COLUMN_CHARS,
    ProbedValue,
    Statement,
    judge_chain,
    parse_column,
    probes_column,
    process_score,
    stated_values,
)
from codereasoner.training.recipe import RecipeError, load_recipe
from codereasoner.training.replay_teacher import other_literal
from codereasoner.training.rewards import RESPONSE_TRUNCATED
from tests.training.conftest import RECIPES, ProbeDistill

pytestmark = pytest.mark.train

VERL_MODULE = Path(__file__).resolve().parents[2] / "src/codereasoner/training/verl_reward.py"


def export_rows(source: Path, tmp_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    grpo, verl = tmp_path / "grpo.jsonl", tmp_path / "rl.parquet"
    for fmt, out in (("trl-grpo", grpo), ("verl", verl)):
        done = CliRunner().invoke(
            app,
            ["export", "--from", str(source), "-f", fmt, "-o", str(out)],
            catch_exceptions=False,
        )
        assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in grpo.read_text("utf-8").splitlines()]
    return rows, pq.read_table(verl).to_pylist()


def false_value(entry: ProbedValue) -> str:
    """A literal the probed variable never holds in the trace."""
    taken = [values.parse(text) for text in entry.history]
    candidates = [other_literal(text) for text in entry.history] + ["-987654321", "'no such'"]
    return next(c for c in candidates if not any(values.equal(values.parse(c), t) for t in taken))


def final_answer(row: dict[str, Any]) -> str:
    return row["call"] if row["direction"] == "backward" else row["target"]


def chain(entry: ProbedValue, stated: str, answer: str) -> str:
    return (
        f"<Reasoning>Running the code line by line. Right after line {entry.line} runs, "
        f"`{entry.name}` = {stated}, and so on until it returns.</Reasoning>\n"
        f"<Answer>{answer}</Answer>"
    )


def chains_per_direction(
    rows: list[dict[str, Any]],
) -> list[tuple[dict[str, Any], list[str]]]:
    """Per direction, rows with a checkable probed value, and three chains: a true value and the
    right answer, a false value and the right answer, a true value and no answer."""
    found = []
    for direction in ("forward", "backward", "probe"):
        chosen = [
            (row, entry)
            for row in rows
            if row["direction"] == direction
            for entry in parse_column(row["probes"])[:1]
            if entry.complete and entry.truth in entry.credited
        ][:3]
        assert chosen, direction
        for row, entry in chosen:
            answer = final_answer(row)
            true, false = entry.truth, false_value(entry)
            found.append(
                (
                    row,
                    [
                        chain(entry, true, answer),
                        chain(entry, false, answer),
                        chain(entry, true, ""),
                    ],
                )
            )
    return found


def trl_rewards(tmp_path: Path) -> tuple[list[Callable[..., Any]], list[float]]:
    """The reward functions and weights a GRPO recipe that lists ``process`` stands for."""
    overrides = [
        "rewards=[code_reasoning, process]",
        "reward_weights=[1.0, 1.0]",
        f"output_dir={tmp_path / 'grpo'}",
    ]
    recipe = load_recipe("grpo", RECIPES / "cpu-tiny-grpo.yaml", overrides)
    context = RewardContext(recipe.train, recipe.config)
    functions = build_rewards(recipe.train.rewards, context, "recipe")
    return functions, list(recipe.config.reward_weights)


def test_true_values_earn_false_ones_cost_and_wrong_answers_gain_nothing_in_trl_and_verl(
    probe_distill: ProbeDistill, tmp_path: Path
) -> None:
    rows, verl_rows = export_rows(probe_distill.out, tmp_path)
    functions, weights = trl_rewards(tmp_path)
    verl = importlib.util.spec_from_file_location("verl_custom_reward", VERL_MODULE)
    assert verl is not None and verl.loader is not None
    module = importlib.util.module_from_spec(verl)
    verl.loader.exec_module(module)  # as verl's get_custom_reward_fn loads it
    verl_by_prompt = {row["prompt"][0]["content"]: row for row in verl_rows}
    try:
        for row, texts in chains_per_direction(rows):
            columns = {k: [v] * 3 for k, v in row.items() if k != "prompt"}
            code, process = (
                function(prompts=[row["prompt"]] * 3, completions=texts, **columns)
                for function in functions
            )
            assert code == [2.0, 2.0, 0.0], row  # the same, right, final answer; then none
            assert process[0] > 0 > process[1] and process[2] == 0.0, row
            totals = [weights[0] * c + weights[1] * p for c, p in zip(code, process, strict=True)]
            assert totals[1] < 2.0 < totals[0], row
            line = verl_by_prompt[row["prompt"][0]["content"]]
            scored = [
                module.compute_score(
                    line["data_source"],
                    text,
                    line["reward_model"]["ground_truth"],
                    {**line["extra_info"], RESPONSE_TRUNCATED: False},
                    process_weight=0.5,
                )
                for text in texts
            ]
            assert scored[1]["score"] < 2.0 < scored[0]["score"] <= 2.5
            assert [result["correct"] for result in scored] == [1.0, 1.0, 0.0]
            assert scored[0]["process"] > 0 > scored[1]["process"] >= -0.5
            assert scored[2]["process"] == scored[2]["score"] == 0.0
            off = module.compute_score(
                line["data_source"],
                texts[1],
                line["reward_model"]["ground_truth"],
                {**line["extra_info"], RESPONSE_TRUNCATED: False},
            )
            assert off["score"] == 2.0 and "process" not in off  # off unless asked for
    finally:
        for function in functions:
            getattr(function, "close", lambda: None)()


def test_the_process_reward_is_listed_not_a_default_and_needs_the_code_reward() -> None:
    recipe = load_recipe("grpo", RECIPES / "cpu-tiny-grpo.yaml")
    assert "process" in REWARDS and "process" not in recipe.train.rewards
    with pytest.raises(RecipeError, match="needs `code_reasoning` among the rewards"):
        REWARDS["process"](RewardContext(recipe.train, recipe.config))
    code, process = build_rewards(
        ["code_reasoning", "process"], RewardContext(recipe.train, recipe.config), "recipe"
    )
    row = {"direction": "forward", "code": "def f(x):\n    return x", "entry_point": "f"}
    row |= {"call": "f(1)", "target": "1", "case_id": "c"}
    with pytest.raises(ValueError, match="column 'probes'"):
        process(completions=["<Answer>1</Answer>"], **{k: [v] for k, v in row.items()})
    code.close()


# total = 0 before a loop whose line 4 adds 1, 2 and 3; seen = [] before line 5 appends: the
# first values (0 and []) are shown in the code, the computed ones earn
ENTRY = ProbedValue(
    "total", 4, "6", ("0", "1", "3", "6"), ("1", "3", "6"), credited=("1", "3", "6"),
    runs=(("1", "1"), ("2", "3"), ("3", "6")),
)  # fmt: skip
OTHER = ProbedValue(
    "seen", 5, "[1, 2]", ("[]", "[1]", "[1, 2]"), ("[1]", "[1, 2]"), credited=("[1]", "[1, 2]")
)


@pytest.mark.parametrize(
    "text",
    [
        "total = 3",
        "`total` = 3",
        "total is 3.",
        "then total becomes 3, so",
        "total is now 3",
        "total: 3",
        "total equals 3 and we go on",
        "so `total` is 3 at this point",
    ],
)
def test_each_statement_form_is_read(text: str) -> None:
    assert stated_values(text, ["total"]) == [Statement("total", "3")]
    assert judge_chain(text.replace("3", "4"), [ENTRY]).false == 1
    assert (judge_chain(text, [ENTRY]).true, judge_chain(text, [ENTRY]).false) == (1, 0)


@pytest.mark.parametrize(
    "text",
    [
        "total = total + 3",
        "total = 3 + 4",
        "total == 3",
        "total is not 3",
        "subtotal = 3",
        "self.total = 3",
        "total[0] = 3",
        "total += 3",
        "total is the sum",
        "total = 3 if x else 4",
        "total: int",
    ],
)
def test_expressions_and_other_names_are_no_statements(text: str) -> None:
    assert stated_values(text, ["total"]) == []
    assert judge_chain(text, [ENTRY]).stated == 0


COLUMN = probes_column([ENTRY, OTHER])


def score(text: str, right: bool = True, weight: float = 1.0) -> float:
    return process_score(text, COLUMN, weight, answer_right=right)


def test_each_variable_earns_or_costs_its_share_of_the_weight() -> None:
    assert score("total = 6\n<Answer>6</Answer>", weight=2.0) == 1.0  # one of two, true
    assert score("total = 5\n<Answer>6</Answer>", weight=2.0) == -1.0  # one of two, false
    assert score("total = 1\nseen = [1]\ntotal = 6\n<Answer>6</Answer>") == 1.0
    assert score("total = 1\nseen = [3]\n<Answer>6</Answer>") == 0.0  # one true, one false
    assert score("No values stated. <Answer>6</Answer>") == 0.0
    assert score("<Reasoning>.</Reasoning><Answer>total = 99</Answer>") == 0.0  # no reasoning
    # at the probed line, the value must be one the line leaves (0 is the value before it)
    assert score("After line 4, total = 0.") == -0.5
    assert score("After line 9, total = 0.") == 0.0  # true, but the first value: restated
    # in a named iteration, the value that iteration leaves
    assert score("line 4, iteration 2: total = 3") == 0.5
    assert score("line 4 [iter 2]: total = 6") == -0.5  # a value of iteration 3
    assert score("line 9, iteration 2: total = 6") == 0.5  # not the probed line: any value
    # a variable whose values were not all kept is not judged
    incomplete = probes_column([ProbedValue("total", 4, "6", ("6",), ("6",), complete=False)])
    assert process_score("total = 5", incomplete, answer_right=True) == 0.0
    assert process_score("total = 6", incomplete, answer_right=True) == 0.0
    assert process_score("total = 5", "[]", answer_right=True) == 0.0


def test_the_term_is_symmetric() -> None:
    pairs = [
        ("total = 6", "total = 5"),
        ("seen = [1, 2]", "seen = [9]"),
        ("total = 3\nseen = [1]", "total = 2\nseen = [0]"),
        ("After line 4, total = 1.", "After line 4, total = 0."),
    ]
    for true, false in pairs:
        for weight in (0.5, 1.0, 2.0):
            assert score(true, weight=weight) == -score(false, weight=weight) > 0


CHAINS = [
    "total = 1\nseen = [1]",  # every variable true
    "total = 5\nseen = [7]",  # every variable false
    "total = 6\nseen = [7]",
    "total = 6\n" * 50 + "seen = [1]\n" * 50,
    "\n".join(f"total = {n}\nseen = [{n}]" for n in range(-5, 20)),
    "count = 3\nresult = 4",
    "",
]


def test_the_term_is_bounded_by_the_weight() -> None:
    for weight in (0.5, 1.0, 2.0):
        for right in (True, False):
            assert all(-weight <= score(c, right, weight) <= weight for c in CHAINS)
        assert score(CHAINS[0], weight=weight) == weight
        assert score(CHAINS[1], weight=weight) == score(CHAINS[1], False, weight) == -weight


def test_padding_gains_nothing() -> None:
    once = score("total = 6")
    assert score("total = 6\n" * 20) == once  # the same true value again and again
    assert score("total = 0\ntotal = 1\ntotal = 3\ntotal = 6") == once  # many values, one probe
    assert score("count = 3\nresult = [1]\ntotal = 6\nx = 4") == once  # unprobed variables
    every = "\n".join(f"total = {value}" for value in range(-3, 10))  # every candidate value
    assert score(every) == score("total = 5") < 0 < once
    assert score("total = 6\ntotal = 5") == score("total = 5")  # conflicting values: false
    assert score("total = 6\nseen = [1]\n" * 10 + "total = 5") == 0.0  # one false, one true


def test_no_credit_without_a_right_answer() -> None:
    for chain in CHAINS:
        assert score(chain, right=False) <= min(score(chain), 0.0)
    assert score("total = 1\nseen = [1]", right=False) == 0.0 < score("total = 1\nseen = [1]")
    assert score("total = 6\nseen = [7]", right=False) == -0.5  # only the loss applies
    assert score("total = 5", right=False) == score("total = 5") == -0.5


def test_the_column_is_bounded_and_read_back() -> None:
    big = [
        ProbedValue(f"v{i}", i, "'x'", tuple(repr("x" * 100 + str(j)) for j in range(24)), ())
        for i in range(8)
    ]
    text = probes_column(big)
    assert len(text) <= MAX_COLUMN_CHARS and parse_column(text) == tuple(
        big[: len(json.loads(text))]
    )
    assert parse_column(probes_column([ENTRY])) == (ENTRY,)
    with pytest.raises(ValueError, match="not JSON"):
        parse_column("[{")
    with pytest.raises(ValueError, match="'history'"):
        parse_column('[{"name": "x", "line": 1, "truth": "1", "history": "1", "at_line": []}]')


def test_a_backward_chain_is_judged_only_when_it_answers_the_cases_call() -> None:
    column = probes_column([ENTRY])
    false = "<Reasoning>total = 5</Reasoning><Answer>f(3)</Answer>"
    judged = partial(process_score, false, column, answer_right=True)
    assert judged(direction="backward", call="f(3)") == -1.0
    assert judged(direction="backward", call="f( 3 )") == -1.0
    assert judged(direction="backward", call="f(4)") == 0.0  # another input
    assert judged(direction="forward", call="f(4)") == -1.0
    true = "<Reasoning>total = 6</Reasoning><Answer>f(4)</Answer>"
    assert process_score(true, column, answer_right=True, direction="backward", call="f(3)") == 0


def test_a_statement_right_before_a_tag_is_read() -> None:
    assert stated_values("<Reasoning>total = 5</Reasoning>", ["total"]) == [Statement("total", "5")]
    assert stated_values("total = 5<6", ["total"]) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("out = [1].</Reasoning>", [Statement("out", "[1]")]),
        ("out = [1] (after line 7)", [Statement("out", "[1]", 7)]),
        ("line 7 (iteration 2.1): out = [1]", [Statement("out", "[1]", 7, "2.1")]),
        ("out equals [0]!", [Statement("out", "[0]")]),
        ("step = 3.</Reasoning>", [Statement("step", "3")]),
        ("out = [1] + [2]", []),
        ("out = f(1)", []),
    ],
)
def test_sentence_ends_and_asides_end_a_statement(text: str, expected: list[Statement]) -> None:
    assert stated_values(text, ["out", "step"]) == expected


def test_trl_logs_each_reward_under_the_recipes_name(tmp_path: Path) -> None:
    """TRL logs ``rewards/<name>``, its name unwrapping a partial to the wrapped function's:
    each term keeps the name the recipe gave it, not ``length_penalty`` or ``format_reward``."""
    from trl.trainer.utils import get_callable_name

    names = ["code_reasoning", "format", "length", "process"]
    overrides = [f"rewards=[{', '.join(names)}]", f"output_dir={tmp_path / 'grpo'}"]
    recipe = load_recipe("grpo", RECIPES / "cpu-tiny-grpo.yaml", overrides)
    functions = build_rewards(names, RewardContext(recipe.train, recipe.config), "recipe")
    assert [get_callable_name(function) for function in functions] == names
    length = REWARDS["length"](RewardContext(recipe.train, recipe.config))
    assert get_callable_name(length) == "length"
    limit = recipe.config.max_completion_length
    values = length(completion_ids=[[1] * 4, [1] * limit], completions=["a", "b"])
    assert values == [0.0, -1.0]  # the penalty still works through the wrapper
