"""Held-out methods: ``export --methods`` keeps one share of the catalog methods, the shares
are disjoint and cover every record, the split is recorded beside the output and is the same
for the same seed whatever else was drawn; bad flags are one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codereasoner.training.cases import read_cases
from codereasoner.training.method_split import SPLITS, MethodSplit, manifest_path, split_cases
from tests.commands import invoke
from tests.conftest import synth_cases

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("method-split")
    synth = synth_cases(folder / "synth", n=40, seed=3)
    out = folder / "distill"
    done = invoke(
        "distill", "--teacher", "oracle", "--cases", str(synth), "--out", str(out), "--k", "1",
        "--style", "direct", "--workers", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return synth, out


def exported(source: Path, out: Path, *flags: str) -> list[dict[str, object]]:
    done = invoke("export", "--from", str(source), "-f", "trl-grpo", "-o", str(out), *flags)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_the_shares_are_disjoint_cover_every_record_and_are_recorded(
    distilled: tuple[Path, Path], tmp_path: Path
) -> None:
    synth, source = distilled
    every = exported(source, tmp_path / "all.jsonl")
    by_share = {
        share: exported(source, tmp_path / f"{share}.jsonl", "--methods", share) for share in SPLITS
    }
    ids = [{row["case_id"] for row in rows} for rows in by_share.values()]
    assert all(ids) and sum(map(len, ids)) == len(set().union(*ids))  # disjoint, none empty
    assert set().union(*ids) == {row["case_id"] for row in every}
    manifest = json.loads(manifest_path(tmp_path / "test.jsonl").read_text(encoding="utf-8"))
    assert manifest["kept"] == "test" and manifest["seed"] == 0
    methods = manifest["methods"]
    assert set(methods) == set(SPLITS)
    cases = {case.id: case for case in read_cases(synth / "cases.jsonl")}
    for share, found in zip(SPLITS, ids, strict=True):
        assert {cases[case_id].method for case_id in found} <= set(methods[share])
        held = split_cases(cases.values(), MethodSplit(), share)
        assert {case.id for case in held} >= found  # the evaluation's cases of the same share
    # the train share is the larger one, as its percentage says
    assert len(methods["train"]) > max(len(methods["validation"]), len(methods["test"]))


def test_a_method_keeps_its_share_whatever_else_is_split() -> None:
    split = MethodSplit(seed=7)
    names = [f"str.method{i}" for i in range(400)]
    shares = {name: split.of(name) for name in names}
    assert all(split.of(name) == shares[name] for name in reversed(names))
    counts = {share: list(shares.values()).count(share) for share in SPLITS}
    assert 230 <= counts["train"] <= 330 and 30 <= counts["test"] <= 90
    assert any(MethodSplit(seed=8).of(name) != shares[name] for name in names)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--methods", "dev"], "--methods 'dev': expected one of train, validation, test"),
        (["--methods", "test", "--method-split", "50,50"], "adding up to 100"),
        (["--methods", "test", "--method-split", "a,b,c"], "expected three whole percentages"),
    ],
)
def test_bad_split_flags_are_one_line(
    distilled: tuple[Path, Path], tmp_path: Path, flags: list[str], message: str
) -> None:
    out = tmp_path / "x.jsonl"
    done = invoke("export", "--from", str(distilled[1]), "-f", "trl-sft", "-o", str(out), *flags)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not out.exists()
