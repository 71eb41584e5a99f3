"""``codereasoner train sft|grpo``: recipes, builders, curves and resume, on the tiny local model.

Everything runs for real on CPU (training.md §6-7): TRL's trainers, the sandboxed reward, the
command line in a subprocess where a kill is part of the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codereasoner import tasks
from codereasoner.execution import Pool
from codereasoner.families.cases.reasoning import DIRECTIONS
from codereasoner.tasks import Item
from codereasoner.training.curves import CURVES_JSONL, CURVES_PNG, read_curves
from codereasoner.training.recipe import RecipeError, Stage, load_recipe, read_recipe_file
from codereasoner.training.trainers import (
    DONE_FILE,
    REWARDS,
    RUN_FILE,
    build_trainer,
    last_checkpoint,
    train,
)
from tests.commands import invoke
from tests.training.conftest import CPU, RECIPES, Exported
from tests.training.test_grpo_reward import Recorder

pytestmark = pytest.mark.train

RECIPE_FILES = sorted(RECIPES.glob("*.yaml"))
TINY_SFT = RECIPES / "cpu-tiny-sft.yaml"
TINY_GRPO = RECIPES / "cpu-tiny-grpo.yaml"


def _stage(path: Path) -> Stage:
    return Stage(read_recipe_file(path)["stage"])


def _cpu_overrides(path: Path, model: Path, exported: Exported, out: Path) -> list[str]:
    stage = _stage(path)
    data = exported.sft if stage is Stage.SFT else exported.grpo
    extra = ["use_vllm=false"] if stage is Stage.GRPO else []
    return [f"model_name_or_path={model}", f"dataset={data}", f"output_dir={out}", *CPU, *extra]


def test_the_recipes_cover_the_paper_and_its_ablations() -> None:
    names = {path.stem for path in RECIPE_FILES}
    for model in ("qwen2.5-coder-7b", "qwen2.5-coder-14b", "llama3-8b"):
        assert {f"sft-{model}", f"grpo-{model}"} <= names
    assert {"ablation-it-only", "ablation-rl-only", "ablation-direct"} <= names
    assert {"cpu-tiny-sft", "cpu-tiny-grpo"} <= names
    sft = read_recipe_file(RECIPES / "sft-qwen2.5-coder-7b.yaml")  # values as written
    assert (sft["num_train_epochs"], float(sft["learning_rate"])) == ("3", 1e-5)
    grpo = read_recipe_file(RECIPES / "grpo-qwen2.5-coder-7b.yaml")
    assert float(grpo["learning_rate"]) == 1e-6
    assert (grpo["num_generations"], grpo["max_completion_length"]) == ("5", "4096")
    assert grpo["num_train_epochs"] == "2" and float(grpo["reward_correct"]) == 2.0
    # rl-only starts from the instruct model, not from the SFT output
    rl_only = read_recipe_file(RECIPES / "ablation-rl-only.yaml")
    assert rl_only["model_name_or_path"] == "Qwen/Qwen2.5-Coder-7B-Instruct"
    assert rl_only["learning_rate"] == grpo["learning_rate"]  # inherited through `base`


@pytest.mark.parametrize("path", RECIPE_FILES, ids=lambda path: path.stem)
def test_every_recipe_parses_and_builds_its_trainer(
    path: Path, tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    from trl import GRPOTrainer, SFTTrainer

    settings = read_recipe_file(path)
    recipe = load_recipe(_stage(path), path, _cpu_overrides(path, tiny_model, exported, tmp_path))
    for key in ("learning_rate", "num_train_epochs", "num_generations", "beta", "max_length"):
        if key in settings:  # the recipe's own settings reach TRL's config
            assert getattr(recipe.config, key) == pytest.approx(float(settings[key]))
    trainer = build_trainer(recipe)
    if recipe.stage is Stage.SFT:
        assert isinstance(trainer, SFTTrainer)
        return
    assert isinstance(trainer, GRPOTrainer)
    assert trainer.num_generations == int(settings["num_generations"])
    reward = trainer.reward_funcs[0]
    assert reward.__name__ == "code_reasoning"
    assert {0, 2} <= reward.eos_token_ids  # <|endoftext|> (pad) and <|im_end|>


def test_recipe_mistakes_are_one_line_errors(tiny_model: Path, exported: Exported) -> None:
    cases = [
        (["learnig_rate=1e-5"], "unknown setting 'learnig_rate' (did you mean 'learning_rate'?)"),
        (["learning_rate=fast"], "invalid float value: 'fast'"),
        (["novalue"], "expected key=value"),
        (["num_generations=1"], "at least 2 generations per prompt"),
        (["max_steps=[1]"], "override max_steps=: max_steps takes one value, not a list"),
        (["save_steps=1:30"], "override save_steps=: argument --save_steps"),
        (["isolation=bogus"], "isolation 'bogus'; expected one of auto, bubblewrap, fallback"),
        (["executor=slurm"], "override executor=: executor 'slurm': expected local, ray or ray:"),
        (["rewards=[nope]"], "override rewards=: unknown reward 'nope'"),
        (["reward_weights=[1,2,3]"], "override reward_weights=: reward_weights has 3 values"),
    ]
    base = [f"model_name_or_path={tiny_model}", f"dataset={exported.grpo}", *CPU]
    for extra, message in cases:
        with pytest.raises(RecipeError) as caught:
            load_recipe(Stage.GRPO, TINY_GRPO, [*base, *extra])
        assert message in str(caught.value)
        assert "\n" not in str(caught.value)
    # YAML 1.1 surprises do not happen: `no` stays a string, 010 is ten, 1e-5 a float
    recipe = load_recipe(
        Stage.GRPO, TINY_GRPO, [*base, "save_strategy=no", "seed=010", "learning_rate=1e-5"]
    )
    assert (recipe.config.save_strategy, recipe.config.seed) == ("no", 10)
    assert recipe.config.learning_rate == 1e-5
    with pytest.raises(RecipeError, match="a recipe for `train sft`, not `train grpo`"):
        load_recipe(Stage.GRPO, TINY_SFT)
    with pytest.raises(RecipeError, match="no such recipe file"):
        load_recipe(Stage.SFT, RECIPES / "missing.yaml")


def test_the_command_refuses_bad_recipes_and_data_in_one_line(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(exported.sft.read_text(encoding="utf-8").splitlines()[0] + "\n{oops\n")
    out = tmp_path / "out"
    runs = {
        "unknown setting 'max_lenght'": ["max_lenght=9"],
        f"{bad}:2: not a JSON object": [f"dataset={bad}"],
        "no-model: no such model folder": ["model_name_or_path=" + str(tmp_path / "no-model")],
    }
    for message, extra in runs.items():
        done = invoke(
            "train", "sft", "--config", str(TINY_SFT), f"model_name_or_path={tiny_model}",
            f"dataset={exported.sft}", f"output_dir={out}", *extra,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr
    assert not (out / RUN_FILE).exists()  # bad data leaves no run behind
    vllm = invoke(
        "train", "grpo", "--config", str(TINY_GRPO), f"model_name_or_path={tiny_model}",
        f"dataset={exported.grpo}", f"output_dir={tmp_path / 'vllm'}", "use_vllm=true",
    )  # fmt: skip
    assert vllm.returncode == 2 and "vLLM" in vllm.stderr, vllm.stderr  # training.md P10


def test_sft_loss_decreases_and_the_model_is_ready_to_evaluate(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    out = tmp_path / "sft"
    args = [
        f"model_name_or_path={tiny_model}", f"dataset={exported.sft}", f"output_dir={out}",
        "num_train_epochs=2",
    ]  # fmt: skip
    done = invoke("train", "sft", "--config", str(TINY_SFT), *args)
    assert done.returncode == 0, done.stderr
    assert f"model in {out}" in done.stdout
    losses = [entry["loss"] for entry in read_curves(out / CURVES_JSONL) if "loss" in entry]
    assert len(losses) == 20  # 40 rows, batch 4, 2 epochs, a log line per step
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.5, losses
    assert (out / CURVES_PNG).stat().st_size > 0
    assert json.loads((out / DONE_FILE).read_text())["steps"] == 20

    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(out)  # the final model, in the folder itself
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert model.num_parameters() > 0 and tokenizer.eos_token == "<|im_end|>"

    again = invoke("train", "sft", "--config", str(TINY_SFT), *args)
    assert again.returncode == 0 and "already finished (20 steps)" in again.stdout
    fewer = tmp_path / "fewer.jsonl"
    fewer.write_text("".join(exported.sft.read_text().splitlines(keepends=True)[:10]))
    other = invoke("train", "sft", "--config", str(TINY_SFT), *args, f"dataset={fewer}")
    assert other.returncode == 2
    assert "holds a run with another dataset_sha256" in other.stderr


def test_sft_with_lora_saves_the_merged_model_and_the_adapter(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    out = tmp_path / "lora"
    recipe = load_recipe(
        Stage.SFT,
        TINY_SFT,
        [
            f"model_name_or_path={tiny_model}", f"dataset={exported.sft}", f"output_dir={out}",
            "use_peft=true", "lora_r=4", "lora_alpha=8", "lora_target_modules=[q_proj,v_proj]",
            "max_steps=2", "save_strategy=no",
        ],
    )  # fmt: skip
    result = train(recipe, log=lambda line: None)
    assert result.steps == 2
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert not (out / "adapter_config.json").exists()  # the folder's model is the merged one

    from transformers import AutoModelForCausalLM

    assert AutoModelForCausalLM.from_pretrained(out).num_parameters() > 0


@pytest.mark.slow
def test_grpo_logs_rewards_equal_to_an_independent_scoring(
    taught: tuple[Path, Path], tmp_path: Path
) -> None:
    model, data = taught
    recorder = Recorder()
    REWARDS.register(lambda context: recorder, name="recorder")  # a new reward is one entry
    try:
        recipe = load_recipe(
            Stage.GRPO,
            TINY_GRPO,
            [
                f"model_name_or_path={model}", f"dataset={data}", f"output_dir={tmp_path}",
                "rewards=[code_reasoning,recorder]", "reward_weights=[1.0,0.0]",
                "num_generations=8", "per_device_train_batch_size=16", "max_completion_length=24",
                "max_steps=2", "save_strategy=no",
            ],
        )  # fmt: skip
        train(recipe, log=lambda line: None)
    finally:
        REWARDS.unregister("recorder")
    assert len(recorder.calls) == 2  # one generation batch per step
    curves = [entry for entry in read_curves(tmp_path / CURVES_JSONL) if "reward" in entry]
    assert [entry["step"] for entry in curves] == [1, 2]
    every: list[float] = []
    with Pool(1) as pool:
        for call, logged in zip(recorder.calls, curves, strict=True):
            expected = [
                _graded(pool, direction, text[-1]["content"], ids)
                for direction, text, ids in zip(
                    call["direction"], call["completions"], call["completion_ids"], strict=True
                )
            ]
            assert len(expected) == 16
            assert logged["rewards/code_reasoning/mean"] == pytest.approx(sum(expected) / 16)
            cut = sum(not ids or ids[-1] not in (0, 2) for ids in call["completion_ids"]) / 16
            assert logged["completions/clipped_ratio"] == pytest.approx(cut)  # TRL's own count
            for direction in ("forward", "backward"):
                mine = [
                    r for d, r in zip(call["direction"], expected, strict=True) if d == direction
                ]
                accuracy = sum(r > 0 for r in mine) / len(mine)
                assert logged[f"code_reasoning/accuracy/{direction}"] == pytest.approx(accuracy)
            every += expected
    assert 2.0 in every and 0.0 in every  # the taught model gives a real mix
    assert (tmp_path / CURVES_PNG).stat().st_size > 0


def _graded(pool: Pool, direction: str, text: str, ids: list[int]) -> float:
    """The paper's reward, from the task kinds directly: 2.0 for a right last <Answer> in a
    completion that ended (its last id is <|im_end|> or the pad id), else 0."""
    from tests.training.test_grpo_reward import CASE

    if not ids or ids[-1] not in (0, 2):
        return 0.0
    kind = tasks.get(DIRECTIONS[direction])
    item = Item("case", "rl", kind.name, program=CASE["code"], entry=CASE["entry_point"],
                call=CASE["call"], truth=CASE["target"])  # fmt: skip
    score = kind.score(item, kind.extract(item, text), pool, grading="strict")
    return 2.0 if score.correct else 0.0


def _wait_for_checkpoint(out: Path, process: subprocess.Popen[str], deadline: float) -> Path:
    while time.monotonic() < deadline:
        found = last_checkpoint(out)
        if found is not None:
            return found
        assert process.poll() is None, process.communicate()[1]
        time.sleep(0.2)
    raise AssertionError("no checkpoint within the deadline")


@pytest.mark.slow
def test_a_killed_grpo_run_resumes_from_its_checkpoint(
    taught: tuple[Path, Path], tmp_path: Path
) -> None:
    model, data = taught
    out = tmp_path / "grpo"
    command = [
        sys.executable, "-m", "codereasoner", "train", "grpo", "--config", str(TINY_GRPO),
        f"model_name_or_path={model}", f"dataset={data}", f"output_dir={out}",
        "max_steps=30", "save_steps=2", "max_completion_length=24",  # long enough to be killed
    ]  # fmt: skip
    first = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        checkpoint = _wait_for_checkpoint(out, first, time.monotonic() + 300)
        busy = invoke(*command[3:])  # a second run into the same folder, while the first writes
        assert busy.returncode == 2 and "another run is writing" in busy.stderr, busy.stderr
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    assert not (out / DONE_FILE).exists()
    reached = int(checkpoint.name.split("-")[1])
    assert reached < 30

    again = invoke(*command[3:])  # the resume, in this process
    assert again.returncode == 0, again.stderr
    assert "resuming from" in again.stdout
    resumed = int(again.stdout.split("resuming from")[1].split("checkpoint-")[1].split()[0])
    assert resumed >= reached
    assert json.loads((out / DONE_FILE).read_text())["steps"] == 30
    steps = [entry["step"] for entry in read_curves(out / CURVES_JSONL)]
    assert steps == list(range(1, 31))  # every step once: the redone ones replaced


@pytest.mark.slow
def test_two_processes_train_one_folder_as_one_run(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    """What `accelerate launch` does on GPUs, with torchrun and gloo on CPU: both ranks run the
    command, rank 0 holds the folder and writes the curves and the records once."""
    out = tmp_path / "ddp"
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("torchrun")), "--nproc_per_node", "2",
            "-m", "codereasoner", "train", "sft", "--config", str(TINY_SFT),
            f"model_name_or_path={tiny_model}", f"dataset={exported.sft}", f"output_dir={out}",
            "max_steps=3", "save_strategy=no",
        ],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("sft: 3 steps") == 1
    assert [entry["step"] for entry in read_curves(out / CURVES_JSONL)] == [1, 2, 3]
    assert json.loads((out / DONE_FILE).read_text())["steps"] == 3


def test_a_reward_by_import_path_and_reward_mistakes(
    tiny_model: Path, exported: Exported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_rewards.py").write_text(
        "def brevity(completions, **kwargs):\n    return [0.0 for _ in completions]\n"
    )
    monkeypatch.chdir(tmp_path)
    base = [
        f"model_name_or_path={tiny_model}", f"dataset={exported.grpo}", f"output_dir={tmp_path}",
        *CPU, "use_vllm=false",
    ]  # fmt: skip
    recipe = load_recipe(
        Stage.GRPO, TINY_GRPO, [*base, "rewards=[code_reasoning,my_rewards.brevity]"]
    )
    trainer = build_trainer(recipe)
    assert [f.__name__ for f in trainer.reward_funcs] == ["code_reasoning", "brevity"]
    mistakes = {
        "rewards=[nope]": "unknown reward 'nope'",
        "rewards=[my_rewards.missing]": "cannot be imported",
        "reward_weights=[1.0,2.0,3.0]": "reward_weights has 3 values for 2 rewards",
    }
    for override, message in mistakes.items():
        with pytest.raises(RecipeError, match=message.replace("[", r"\[")):
            build_trainer(load_recipe(Stage.GRPO, TINY_GRPO, [*base, override]))


def test_an_explicit_resume_point_must_be_a_checkpoint(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    base = [f"model_name_or_path={tiny_model}", f"dataset={exported.sft}", *CPU]
    for value, message in {
        str(tmp_path / "nowhere"): "not a complete checkpoint (no trainer_state.json",
        "true": "no complete checkpoint in",
    }.items():
        out = tmp_path / f"out-{len(value)}"
        done = invoke(
            "train", "sft", "--config", str(TINY_SFT), *base, f"output_dir={out}",
            f"resume_from_checkpoint={value}",
        )  # fmt: skip
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert not (out / RUN_FILE).exists()


@pytest.mark.slow
def test_every_rank_stops_when_another_run_holds_the_folder(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    from codereasoner.synth.writer import exclusive

    out = tmp_path / "held"
    holder = subprocess.Popen(  # another run holds the folder for the test's length
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
         "from codereasoner.synth.writer import exclusive\n"
         f"with exclusive(Path({str(out)!r})):\n    print('held', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("torchrun")), "--nproc_per_node", "2",
                "-m", "codereasoner", "train", "sft", "--config", str(TINY_SFT),
                f"model_name_or_path={tiny_model}", f"dataset={exported.sft}",
                f"output_dir={out}", "max_steps=2",
            ],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode != 0
    assert done.stderr.count("another run is writing into this folder") == 1, done.stderr[-2000:]
    assert not (out / RUN_FILE).exists() and last_checkpoint(out) is None
    with exclusive(out):  # released with its holder
        pass


def test_without_the_train_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    blocked = (
        "import sys\n"
        "sys.modules['trl'] = None  # as if the train extra were not installed\n"
        "from codereasoner.cli import main\n"
        f"sys.argv = ['codereasoner', 'train', 'sft', '--config', {str(TINY_SFT)!r}]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 2, done.stderr
    assert "train needs the train extra (trl): pip install 'codereasoner[train]'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_says_how_to_resume(
    taught: tuple[Path, Path], tmp_path: Path
) -> None:
    """A scheduler's SIGTERM: the step finishes, a checkpoint is saved, one line says so, and
    the same command resumes from it."""
    model, data = taught
    out = tmp_path / "grpo"
    command = [
        sys.executable, "-m", "codereasoner", "train", "grpo", "--config", str(TINY_GRPO),
        f"model_name_or_path={model}", f"dataset={data}", f"output_dir={out}",
        "max_steps=30", "save_steps=1000", "max_completion_length=24",
    ]  # fmt: skip
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    curves = out / CURVES_JSONL
    while not (curves.exists() and curves.read_text().strip()):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()[1]
        time.sleep(0.2)
    first.send_signal(signal.SIGTERM)
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 143, stderr
    (line,) = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert "interrupted by SIGTERM after step" in line and "re-run the same command" in line
    saved = last_checkpoint(out)
    assert saved is not None and saved.name in line and not (out / DONE_FILE).exists()
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr
    assert f"resuming from {saved}" in again.stdout
    assert json.loads((out / DONE_FILE).read_text())["steps"] == 30


@pytest.mark.parametrize(
    ("text", "said"),
    [("x: [\n", "not valid YAML"), ("stage: grpo\n", "a recipe for `train grpo`")],
)
def test_recipe_file_mistakes_are_said_before_trl_is_imported(
    tmp_path: Path, text: str, said: str
) -> None:
    """A mistake in the file or the overrides is one line at once: TRL, transformers and torch
    (seconds to import) are not loaded for it."""
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(text)
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "from codereasoner.training.recipe import RecipeError, load_recipe\n"
        "try:\n"
        f"    load_recipe('sft', Path({str(recipe)!r}))\n"
        "except RecipeError as exc:\n"
        "    print(exc)\n"
        "print(sorted(m for m in ('trl', 'transformers', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    message, loaded = done.stdout.splitlines()
    assert said in message and loaded == "[]"


def test_a_torn_checkpoint_is_skipped_and_the_run_resumes_from_an_older_one(
    tiny_model: Path, exported: Exported, tmp_path: Path
) -> None:
    """A kill while a checkpoint's trainer state was written (torn), or before it was (missing),
    must not stop every later resume: the newest checkpoint whose state parses is used, and the
    run says which it skipped and why."""
    out = tmp_path / "sft"
    args = [
        f"model_name_or_path={tiny_model}", f"dataset={exported.sft}", f"output_dir={out}",
        "max_steps=4", "save_steps=1", "save_total_limit=4",
    ]  # fmt: skip
    assert invoke("train", "sft", "--config", str(TINY_SFT), *args).returncode == 0
    (out / DONE_FILE).unlink()  # as if killed after its last checkpoint
    state = out / "checkpoint-4" / "trainer_state.json"
    state.write_text(state.read_text()[:40], encoding="utf-8")  # torn
    (out / "checkpoint-3" / "trainer_state.json").unlink()  # never written
    again = invoke("train", "sft", "--config", str(TINY_SFT), *args)
    assert again.returncode == 0, again.stderr
    said = again.stdout
    assert "skipped checkpoint-4: trainer_state.json does not parse (JSONDecodeError)" in said
    assert "skipped checkpoint-3: no trainer_state.json (not written whole)" in said
    assert f"resuming from {out / 'checkpoint-2'}" in said
    assert json.loads((out / DONE_FILE).read_text())["steps"] == 4
