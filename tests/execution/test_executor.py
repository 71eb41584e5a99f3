"""Choosing where calls run: ``--executor local|ray|ray:ADDRESS`` and $CODEREASONER_EXECUTOR."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.execution import (
    EXECUTOR_ENV,
    ExecutorSpec,
    Pool,
    Program,
    open_executor,
    parse_call,
    parse_executor,
)


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("local", ExecutorSpec()),
        ("ray", ExecutorSpec("ray")),
        ("ray:auto", ExecutorSpec("ray", "auto")),
        ("ray:10.0.0.1:6379", ExecutorSpec("ray", "10.0.0.1:6379")),
        (" ray:ray://head:10001 ", ExecutorSpec("ray", "ray://head:10001")),
    ],
)
def test_executor_specs(text: str, spec: ExecutorSpec) -> None:
    assert parse_executor(text) == spec
    assert parse_executor(str(spec)) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("docker", "executor 'docker': expected local, ray or ray:ADDRESS"),
        ("local:x", "executor 'local:x': expected local, ray or ray:ADDRESS"),
        ("ray:", "executor 'ray:': expected an address after 'ray:'"),
        ("", "executor '': expected local, ray or ray:ADDRESS"),
    ],
)
def test_bad_executor_specs_name_the_setting(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        parse_executor(text)


def test_the_environment_gives_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EXECUTOR_ENV, raising=False)
    assert parse_executor(None) == ExecutorSpec()
    monkeypatch.setenv(EXECUTOR_ENV, "ray:auto")
    assert parse_executor(None) == ExecutorSpec("ray", "auto")
    assert parse_executor("local") == ExecutorSpec()  # the flag wins
    monkeypatch.setenv(EXECUTOR_ENV, "k8s")
    with pytest.raises(ValueError, match=f"^{EXECUTOR_ENV}=k8s: expected local"):
        parse_executor(None)


def test_local_is_the_project_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EXECUTOR_ENV, raising=False)
    with open_executor(None, 1) as pool:
        assert isinstance(pool, Pool)
        result = pool.run(Program("def f(x):\n    return x * 2"), parse_call("f(21)"))
        assert result.matches(42)


@pytest.mark.parametrize(
    "command",
    [
        ["synth", "--generator", "offline", "--n", "4", "--no-decontam"],
        ["distill", "--teacher", "oracle", "--cases", "{tmp}/cases.jsonl"],
        ["eval", "--model", "oracle", "--bench", "cruxeval-o"],
        ["core", "build", "--from", "core"],
    ],
    ids=["synth", "distill", "eval", "core-build"],
)
@pytest.mark.parametrize(
    ("executor", "message"),
    [
        ("slurm", "--executor 'slurm': expected local, ray or ray:ADDRESS"),
        ("ray:127.0.0.1:1", "sandbox unavailable: cannot reach the Ray cluster at 127.0.0.1:1"),
    ],
    ids=["unknown", "unreachable"],
)
def test_every_command_refuses_a_bad_executor_before_writing(
    tmp_path: Path, command: list[str], executor: str, message: str
) -> None:
    if executor.startswith("ray"):
        pytest.importorskip("ray", reason="the Ray executor needs ray (pip install '.[ray]')")
    out = tmp_path / "out"
    arguments = [part.replace("{tmp}", str(tmp_path)) for part in command]
    result = CliRunner().invoke(app, [*arguments, "--out", str(out), "--executor", executor])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not out.exists()
