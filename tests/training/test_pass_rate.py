"""``export --pass-rate``: GRPO prompts the starting model always or never solves are left out.

The tiny model is taught, in seconds of next-token training, one case's two prompts: the forward
one with its right answer only (always solved), the backward one with a right answer and a wrong
one (sometimes solved); it gets the other prompts wrong. ``codereasoner distill`` samples it 8
times per prompt (the hf backend, answers verified in the real sandbox), and ``export
--pass-rate`` keeps the prompts whose pass rate is strictly between the bounds. The pass rates
are the reward's own grading (``score_batch``) of the stored samples.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.execution import Pool
from codereasoner.training.rewards import Sample, score_batch
from tests.conftest import synth_cases
from tests.training.test_grpo_reward import teach

pytestmark = pytest.mark.train

CASE = "off-0-0"  # f(172) returns [0, 0, 0]
TAUGHT = {
    f"{CASE}/forward": ["<Answer>[0, 0, 0]</Answer>"],
    f"{CASE}/backward": ["<Answer>f(172)</Answer>", "<Answer>172</Answer>"],  # 172: not a call
}
K = 8
SAMPLING = ["--temperature", "1.0", "--max-tokens", "24", "--workers", "2"]


@dataclass(frozen=True)
class Sampled:
    distill: Path  # the teacher's distillation: the prompts to export
    rates: Path  # the taught model's samples of the same prompts
    model: Path
    synth: Path


def invoke(*args: str) -> str:
    """The command's output, its words joined by single spaces (rich wraps long lines)."""
    done = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return " ".join(done.output.split())


def refused(*args: str) -> str:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.output
    return lines[0]


def records(folder: Path) -> dict[str, dict[str, object]]:
    lines = (folder / "distilled.jsonl").read_text(encoding="utf-8").splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


def pass_rates(folder: Path) -> dict[str, float]:
    rates = {}
    for record_id, record in records(folder).items():
        tried = record["n_tried"]
        assert isinstance(tried, int) and isinstance(record["rejected"], list)
        rates[record_id] = (tried - len(record["rejected"])) / tried
    return rates


def exported_ids(path: Path) -> list[str]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [f"{row['case_id']}/{row['direction']}" for row in rows]


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A few synthesized cases and their oracle distillation (the prompts GRPO would train on)."""
    folder = tmp_path_factory.mktemp("pass-rate")
    synth = synth_cases(folder / "synth", n=4, seed=0)
    distill = folder / "distill"
    invoke("distill", "--teacher", "oracle", "--cases", str(synth), "--out", str(distill),
           "--k", "1", "--workers", "2")  # fmt: skip
    return synth, distill


@pytest.fixture(scope="module")
def sampled(
    distilled: tuple[Path, Path], tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Sampled:
    synth, distill = distilled
    folder = tmp_path_factory.mktemp("sampled")
    prompts = records(distill)
    rows = [
        {"prompt": [{"role": "user", "content": prompts[record_id]["prompt"]}], "targets": targets}
        for record_id, targets in TAUGHT.items()
    ]
    model = teach(tiny_model, folder / "model", rows, steps=120)
    rates = folder / "rates"
    invoke("distill", "--teacher", f"hf:{model}", "--cases", str(synth), "--out", str(rates),
           "--k", str(K), *SAMPLING)  # fmt: skip
    return Sampled(distill, rates, model, synth)


@pytest.mark.slow
def test_export_leaves_out_the_prompts_the_model_always_or_never_solves(
    sampled: Sampled, tmp_path: Path
) -> None:
    rates = pass_rates(sampled.rates)
    assert rates.keys() == records(sampled.distill).keys()  # every prompt was sampled
    assert rates[f"{CASE}/forward"] == 1.0  # the premise: always, sometimes, never solved
    assert 0.0 < rates[f"{CASE}/backward"] < 1.0
    assert 0.0 in rates.values()
    between = [record_id for record_id, rate in rates.items() if 0.0 < rate < 1.0]

    out = tmp_path / "grpo.jsonl"
    line = invoke("export", "--from", str(sampled.distill), "--format", "trl-grpo",
                  "--out", str(out), "--pass-rate", str(sampled.rates))  # fmt: skip
    assert exported_ids(out) == between  # in the distillation's order
    easy = sum(rate == 1.0 for rate in rates.values())
    hard = sum(rate == 0.0 for rate in rates.values())
    assert f"({K} samples each, {sampled.rates}): kept {len(between)} in (0, 1)" in line
    assert f"left out {easy} at or above 1, {hard} at or below 0" in line

    # verl's rows: the same prompts, indexed from 0
    from datasets import Dataset

    parquet = tmp_path / "rl.parquet"
    invoke("export", "--from", str(sampled.distill), "--format", "verl", "--out", str(parquet),
           "--pass-rate", str(sampled.rates))  # fmt: skip
    verl = Dataset.from_parquet(str(parquet))
    info = verl["extra_info"]
    assert [f"{row['case_id']}/{row['direction']}" for row in info] == between
    assert [row["index"] for row in info] == list(range(len(between)))

    # other bounds, exclusive at both ends: the backward prompt's rate is one
    backward = rates[f"{CASE}/backward"]
    for above, below in ((-1.0, backward), (0.0, 2.0)):
        other = tmp_path / f"bounds-{above}-{below}.jsonl"
        invoke("export", "--from", str(sampled.distill), "--format", "trl-grpo",
               "--out", str(other), "--pass-rate", str(sampled.rates),
               "--pass-above", str(above), "--pass-below", str(below))  # fmt: skip
        kept = [record_id for record_id, rate in rates.items() if above < rate < below]
        assert exported_ids(other) == kept


@pytest.mark.slow
def test_the_pass_rates_are_the_rewards_grading_of_the_samples(
    sampled: Sampled, pool: Pool
) -> None:
    """Every stored sample of the sampling run, graded again by the GRPO reward's core: a
    prompt's pass count is its samples that earn the reward."""
    prompts = records(sampled.distill)
    with sqlite3.connect(sampled.rates / "run.sqlite") as db:
        stored = db.execute(
            "SELECT items.item_id, completions.text, completions.finish_reason FROM items "
            "JOIN completions ON completions.prompt_hash = items.prompt_hash"
        ).fetchall()
    samples, ids = [], []
    for record_id, text, finish in stored:
        row = prompts[record_id]
        samples.append(
            Sample(
                str(row["direction"]), str(row["code"]), str(row["entry_point"]),
                str(row["call"]), str(row["output"]), str(row["case_id"]), text,
                truncated=finish == "length",
            )
        )  # fmt: skip
        ids.append(record_id)
    assert len(samples) == K * len(prompts)
    rewards = score_batch(samples, pool).rewards
    earned = {record_id: 0 for record_id in prompts}
    for record_id, reward in zip(ids, rewards, strict=True):
        assert reward is not None  # no sandbox failure
        earned[record_id] += reward > 0
    rates = pass_rates(sampled.rates)
    assert {record_id: n / K for record_id, n in earned.items()} == rates


@pytest.mark.slow
def test_sampling_resumes_and_more_samples_add_to_the_pass_rates(
    sampled: Sampled, tmp_path: Path
) -> None:
    rates = tmp_path / "rates"
    shutil.copytree(sampled.rates, rates)
    base = ["distill", "--teacher", f"hf:{sampled.model}", "--cases", str(sampled.synth),
            "--out", str(rates), *SAMPLING]  # fmt: skip
    items = len(records(sampled.distill))
    again = invoke(*base, "--k", str(K))
    assert f"0 samples generated now, {K * items} cached" in again  # nothing asked twice
    more = invoke(*base, "--k", str(K + 2))
    assert f"{2 * items} samples generated now, {K * items} cached" in more
    assert {record["n_tried"] for record in records(rates).values()} == {K + 2}
    out = tmp_path / "grpo.jsonl"
    line = invoke("export", "--from", str(sampled.distill), "--format", "trl-grpo",
                  "--out", str(out), "--pass-rate", str(rates))  # fmt: skip
    assert f"({K + 2} samples each" in line


def test_pass_rate_mistakes_are_one_line_errors(
    distilled: tuple[Path, Path], tmp_path: Path
) -> None:
    _, distill = distilled
    export = ["export", "--from", str(distill), "--out", str(tmp_path / "out.jsonl")]
    grpo = [*export, "--format", "trl-grpo"]
    assert "--format trl-grpo or verl, not trl-sft" in refused(
        *export, "--format", "trl-sft", "--pass-rate", str(distill)
    )
    assert "--pass-below needs --pass-rate DIR" in refused(*grpo, "--pass-below", "0.5")
    assert "expected above < below" in refused(
        *grpo, "--pass-rate", str(distill), "--pass-above", "0.5", "--pass-below", "0.5"
    )
    assert "no distilled.jsonl there" in refused(*grpo, "--pass-rate", str(tmp_path / "none"))
    # the oracle solves everything: nothing is left to export, and the line says why
    assert "kept 0 in (0, 1), left out" in refused(*grpo, "--pass-rate", str(distill))

    lines = (distill / "distilled.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    bad = tmp_path / "bad"
    cases = {
        "not valid JSON": "{oops",
        "field 'n_tried' expected a count of samples": json.dumps({**first, "n_tried": 0}),
        "was sampled with another prompt": json.dumps({**first, "prompt": "other"}),
        "none of the": json.dumps({**first, "id": "elsewhere"}),
    }
    for message, line in cases.items():
        bad.mkdir(exist_ok=True)
        (bad / "distilled.jsonl").write_text(line + "\n", encoding="utf-8")
        assert message in refused(*grpo, "--pass-rate", str(bad)), message
    assert not (tmp_path / "out.jsonl").exists()
