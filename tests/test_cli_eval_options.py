"""What an lm-eval user reaches for, as ``eval`` takes it: items by id (``--ids``,
``--ids-file``), more generation options (``--gen-kwargs``), a system message (``--system``) and a
chat template (``--chat-template``). Each is recorded in the run, part of what a resume must
keep, and reaches the model: a real local server (the replay server on 127.0.0.1) records every
request body it gets, and the tiny local model renders and samples."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from codereasoner.models.replay_server import Query, ReplayServer
from tests.commands import invoke, one_error_line

FIXTURES = Path(__file__).resolve().parent / "fixtures"
WRONG = "[ANSWER]\nNone\n[/ANSWER]"


def run_config(out: Path) -> dict[str, Any]:
    with sqlite3.connect(out / "run.sqlite") as connection:
        (config,) = connection.execute("SELECT config FROM run").fetchone()
    return dict(json.loads(config))


def stored_ids(out: Path) -> list[str]:
    with sqlite3.connect(out / "run.sqlite") as connection:
        return [row[0] for row in connection.execute("SELECT item_id FROM items ORDER BY rowid")]


@pytest.fixture
def server() -> Any:
    bodies: list[dict[str, Any]] = []

    def reply(query: Query) -> str:
        bodies.append(query.params)
        return WRONG

    with ReplayServer(reply=reply, model="m") as running:
        running.bodies = bodies  # type: ignore[attr-defined]
        yield running


def eval_args(model: str, out: Path, *extra: str) -> list[str]:
    return ["eval", "--model", model, "--bench", "cruxeval-o", "--data-dir", str(FIXTURES),
            "--out", str(out), *extra]  # fmt: skip


def test_ids_choose_the_items_and_a_resume_keeps_them(server: Any, tmp_path: Path) -> None:
    model, out = f"openai:m@{server.url}", tmp_path / "run"
    done = invoke(*eval_args(model, out, "--ids", "sample_4, sample_1,sample_4"))
    assert done.returncode == 0, done.stderr
    assert sorted(stored_ids(out)) == ["sample_1", "sample_4"]
    assert run_config(out)["ids"] == ["sample_4", "sample_1"]
    assert len(server.bodies) == 2
    listed = tmp_path / "ids.txt"
    listed.write_text("# the two items\nsample_4\n\nsample_1\n")
    again = invoke(*eval_args(model, out, "--ids-file", str(listed)))
    assert again.returncode == 0, again.stderr and len(server.bodies) == 2  # nothing asked again
    other = invoke(*eval_args(model, out, "--ids", "sample_2"))
    assert "holds a run of --ids" in one_error_line(other.stderr)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--ids", "sample_1,nothing"], "--ids: 'nothing' is no item of cruxeval-o"),
        (["--ids", "sample_1", "--limit", "3"], "no --limit or --skip beside it"),
        (["--ids", "sample_1", "--ids-file", "x"], "give one of them"),
        (["--ids-file", "/no/such/ids.txt"], "--ids-file /no/such/ids.txt: no such file"),
        (["--gen-kwargs", "top_k=-1"], "--gen-kwargs top_k=-1: expected an integer >= 0"),
        (["--gen-kwargs", "topk=3"], "unknown option (did you mean top_k?)"),
        (["--gen-kwargs", "temperature=0.5"], "set it with --temperature"),
        (["--gen-kwargs", "repetition_penalty=0"], "expected a number > 0"),
        (["--system", "be brief"], "--chat (raw prompts have no system message)"),
        (["--chat-template", "x.jinja"], "applies to hf and openai models, not oracle"),
    ],
)
def test_bad_options_are_one_line_before_anything_runs(
    tmp_path: Path, extra: list[str], said: str
) -> None:
    done = invoke(*eval_args("oracle", tmp_path / "run", *extra))
    assert done.returncode == 2 and said in one_error_line(done.stderr), done.stderr
    assert not (tmp_path / "run").exists()


def test_gen_kwargs_system_and_template_reach_the_server_and_key_the_run(
    server: Any, tmp_path: Path
) -> None:
    template = tmp_path / "plain.jinja"
    template.write_text("{% for m in messages %}{{ m['content'] }}\n{% endfor %}")
    options = [
        "--ids", "sample_1", "--chat", "--system", "Answer tersely.", "--chat-template",
        str(template), "--gen-kwargs", '{"top_k": 20, "repetition_penalty": 1.1, "stop": "##"}',
    ]  # fmt: skip
    model, out = f"openai:m@{server.url}", tmp_path / "run"
    done = invoke(*eval_args(model, out, *options))
    assert done.returncode == 0, done.stderr
    (body,) = server.bodies
    assert body["top_k"] == 20 and body["repetition_penalty"] == 1.1
    assert body["stop"][-1] == "##" and len(body["stop"]) >= 2  # the benchmark's, then ours
    assert body["messages"][0] == {"role": "system", "content": "Answer tersely."}
    assert body["chat_template"] == template.read_text()
    config = run_config(out)
    assert config["system"] == "Answer tersely."
    assert config["sampling"]["top_k"] == 20 and config["sampling"]["stop"] == ["##"]
    changed = invoke(*eval_args(model, out, *options[:-1], '{"top_k": 21}'))
    assert "--gen-kwargs top_k" in one_error_line(changed.stderr)
    template.write_text("{% for m in messages %}>> {{ m['content'] }}\n{% endfor %}")
    retemplated = invoke(*eval_args(model, out, *options))
    assert "another model" in one_error_line(retemplated.stderr) or "holds a run of" in (
        retemplated.stderr
    )


@pytest.mark.train
def test_the_tiny_model_samples_with_top_k_and_renders_its_template(
    tiny_model: Path, tmp_path: Path
) -> None:
    """top_k=1 leaves one token to draw: sampling at any temperature is then greedy decoding.
    A template file replaces the tokenizer's own, and its text is part of the model's identity."""
    from codereasoner.models import Request, Sampling, load_backend
    from codereasoner.models.base import backend_identity

    backend = load_backend(f"hf:{tiny_model}")
    greedy = Sampling(max_tokens=12)
    sampled = Sampling(temperature=1.5, max_tokens=12, seed=3, top_k=1)
    requests = [Request(prompt, (0,), greedy) for prompt in ("def f(x):", "assert f(")]
    requests += [Request(r.prompt, (0,), sampled) for r in requests]
    found: dict[int, str] = {}
    backend.preflight()
    backend.generate(requests, lambda index, done: found.__setitem__(index, done[0].text))
    assert found[2] == found[0] and found[3] == found[1]
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}<<{{ m['content'] }}>>{% endfor %}")
    templated = load_backend(f"hf:{tiny_model}", chat_template=str(template))
    templated.preflight()
    ids = templated._encode(Request("hello", (0,), greedy, chat=True))
    assert templated._tokenizer.decode(ids).startswith("<<hello>>")
    assert backend_identity(templated) != backend_identity(backend)
    with pytest.raises(Exception, match="not one of the tokenizer's template names"):
        load_backend(f"hf:{tiny_model}", chat_template="no-such-name").preflight()


def test_the_repetition_penalty_follows_transformers_rule() -> None:
    """A seen token's positive logit is divided by the penalty, a negative one multiplied: with
    a strong penalty the greedy choice moves off the token already in the sequence."""
    torch = pytest.importorskip("torch")
    from codereasoner.models.hf_decode import DecodeRow, _Chooser

    logits = torch.tensor([[4.0, 3.0, -1.0]])
    plain = DecodeRow([0], 0.0, 1.0, 0, ())
    penalized = DecodeRow([0, 2], 0.0, 1.0, 0, (), repetition_penalty=2.0)
    assert _Chooser(torch, [plain])(logits.clone(), [0], [[]]).tolist() == [0]
    penalized_logits = logits.clone()
    assert _Chooser(torch, [penalized])(penalized_logits, [0], [[]]).tolist() == [1]
    assert penalized_logits.tolist() == [[2.0, 3.0, -2.0]]


def test_a_run_logged_to_an_offline_tracker(tmp_path: Path) -> None:
    """wandb's offline mode writes the run's records to WANDB_DIR; read back, they hold the
    run's config and each benchmark's headline number as the run store has it."""
    pytest.importorskip("wandb")
    from wandb.proto import wandb_internal_pb2
    from wandb.sdk.internal import datastore

    out = tmp_path / "run"
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true"}
    done = invoke(*eval_args("oracle", out, "--log-to", "wandb", "--log-project", "p"), env=env)
    assert done.returncode == 0, done.stderr
    assert "logged to wandb: 2 values in project p" in done.stderr
    (records,) = list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))
    store = datastore.DataStore()
    store.open_for_scan(str(records))
    summary: dict[str, str] = {}
    config: dict[str, str] = {}
    while (data := store.scan_data()) is not None:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "summary":
            summary |= {item.key: item.value_json for item in record.summary.update if item.key}
        elif kind == "run":
            config |= {item.key: item.value_json for item in record.run.config.update}
            assert record.run.project == "p" and record.run.display_name == "run"
    assert json.loads(summary["cruxeval-o/pass@1"]) == 100.0
    assert json.loads(summary["cruxeval-o/items"]) == 6
    assert json.loads(config["model"]) == "oracle"
    assert json.loads(config["benchmarks"]) == ["cruxeval-o"]


def test_an_unknown_or_missing_tracker_is_one_line(tmp_path: Path) -> None:
    done = invoke(*eval_args("oracle", tmp_path / "run", "--log-to", "mlflow"))
    assert "--log-to 'mlflow': expected one of wandb, trackio" in one_error_line(done.stderr)
    assert not (tmp_path / "run").exists()
