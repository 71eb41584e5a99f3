"""The process reward: chains that state a probed value wrongly score below chains that state
it rightly, with the same final answer (issue 16's acceptance), through the TRL reward functions
a recipe lists and through the module verl loads; and the statement parser on its own."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from codereasoner import values
from codereasoner.cli import app
from codereasoner.training.grpo_rewards import REWARDS, RewardContext, resolve_reward
from codereasoner.training.process import (
    MAX_COLUMN_CHARS,
    ProbedValue,
    judge_chain,
    parse_column,
    probes_column,
    process_score,
    stated_values,
)
from codereasoner.training.recipe import load_recipe
from codereasoner.training.replay_teacher import other_literal
from tests.training.conftest import RECIPES, ProbeDistill

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


def chains_per_direction(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str]]:
    """Per direction, rows with a checkable probed value: (row, right chain, wrong chain)."""
    found = []
    for direction in ("forward", "backward", "probe"):
        chosen = [
            (row, entry)
            for row in rows
            if row["direction"] == direction
            for entry in parse_column(row["probes"])[:1]
            if entry.complete
        ][:3]
        assert chosen, direction
        for row, entry in chosen:
            answer = final_answer(row)
            found.append(
                (row, chain(entry, entry.truth, answer), chain(entry, false_value(entry), answer))
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
    functions = [resolve_reward(name, context, "recipe") for name in recipe.train.rewards]
    return functions, list(recipe.config.reward_weights)


def test_a_false_probed_value_scores_below_a_true_one_in_trl_and_verl(
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
        for row, right, wrong in chains_per_direction(rows):
            columns = {k: [v, v] for k, v in row.items() if k != "prompt"}
            totals = [0.0, 0.0]
            outcome: list[Any] = []
            for function, weight in zip(functions, weights, strict=True):
                got = function(prompts=[row["prompt"]] * 2, completions=[right, wrong], **columns)
                outcome = outcome or got
                totals = [total + weight * value for total, value in zip(totals, got, strict=True)]
            assert outcome == [2.0, 2.0], row  # the same, right, final answer
            assert totals[1] < totals[0] == 2.0, row
            line = verl_by_prompt[row["prompt"][0]["content"]]
            scored = [
                module.compute_score(
                    line["data_source"],
                    text,
                    line["reward_model"]["ground_truth"],
                    line["extra_info"],
                    process_weight=0.5,
                )
                for text in (right, wrong)
            ]
            assert scored[1]["score"] < scored[0]["score"] == 2.0
            assert scored[0]["correct"] == scored[1]["correct"] == 1.0
            assert scored[0]["process"] == 0.0 > scored[1]["process"] >= -0.5
            off = module.compute_score(
                line["data_source"], wrong, line["reward_model"]["ground_truth"], line["extra_info"]
            )
            assert off["score"] == 2.0 and "process" not in off  # off unless asked for
    finally:
        for function in functions:
            getattr(function, "close", lambda: None)()


def test_the_process_reward_is_listed_and_not_a_default() -> None:
    recipe = load_recipe("grpo", RECIPES / "cpu-tiny-grpo.yaml")
    assert "process" in REWARDS and "process" not in recipe.train.rewards
    with pytest.raises(ValueError, match="column 'probes'"):
        REWARDS["process"](RewardContext(recipe.train, recipe.config))(completions=["x = 1"])


ENTRY = ProbedValue("total", 4, "6", ("0", "1", "3", "6"), ("1", "3", "6"))
OTHER = ProbedValue("seen", 5, "[1, 2]", ("[]", "[1]", "[1, 2]"), ("[1]", "[1, 2]"))


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
    assert stated_values(text, ["total"]) == [("total", "3", None)]
    assert judge_chain(text.replace("3", "4"), [ENTRY]).false == 1
    assert judge_chain(text, [ENTRY]).false == 0


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


def test_the_term_is_the_false_share_times_the_weight() -> None:
    column = probes_column([ENTRY, OTHER])
    right = "total = 1\nseen = [1]\ntotal = 6\n<Answer>6</Answer>"
    assert process_score(right, column) == 0.0
    # one false statement over two probed variables costs half the weight
    one_false = "total = 1\nseen = [2]\ntotal = 6\nseen = []\n<Answer>6</Answer>"
    assert process_score(one_false, column, weight=2.0) == -1.0
    assert process_score("total = 5\n<Answer>6</Answer>", column, weight=2.0) == -1.0
    assert process_score("total = 5\nseen = [3]\n<Answer>6</Answer>", column) == -1.0
    # true statements never dilute a false one, and a repeated one counts once
    padded = "total = 1\n" * 19 + "seen = [1]\n" * 19 + "total = 5\n" * 3 + "<Answer>6</Answer>"
    assert process_score(padded, column) == process_score("total = 5", column) == -0.5
    assert process_score("No values stated. <Answer>6</Answer>", column) == 0.0
    assert process_score("<Reasoning>.</Reasoning><Answer>total = 99</Answer>", column) == 0.0
    # at the probed line, the value must be one the line leaves (0 is the value before it)
    assert process_score("After line 4, total = 0.", column) == -0.5
    assert process_score("After line 9, total = 0.", column) == 0.0
    # a variable whose values were not all kept is not judged
    partial = probes_column([ProbedValue("total", 4, "6", ("6",), ("6",), complete=False)])
    assert process_score("total = 5", partial) == 0.0
    assert process_score("total = 5", "[]") == 0.0


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
    assert process_score(false, column, direction="backward", call="f(3)") == -1.0
    assert process_score(false, column, direction="backward", call="f( 3 )") == -1.0
    assert process_score(false, column, direction="backward", call="f(4)") == 0.0  # other input
    assert process_score(false, column, direction="forward", call="f(4)") == -1.0


def test_a_statement_right_before_a_tag_is_read() -> None:
    assert stated_values("<Reasoning>total = 5</Reasoning>", ["total"]) == [("total", "5", None)]
    assert stated_values("total = 5<6", ["total"]) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("out = [1].</Reasoning>", [("out", "[1]", None)]),
        ("out = [1] (after line 7)", [("out", "[1]", 7)]),
        ("out equals [0]!", [("out", "[0]", None)]),
        ("step = 3.</Reasoning>", [("step", "3", None)]),
        ("out = [1] + [2]", []),
        ("out = f(1)", []),
    ],
)
def test_sentence_ends_and_asides_end_a_statement(
    text: str, expected: list[tuple[str, str, int | None]]
) -> None:
    assert stated_values(text, ["out", "step"]) == expected
