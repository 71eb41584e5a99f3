"""``codereasoner core build``: CoRE's 60 problems regenerated (rewrites, tests, probes), the
oracle scoring 100% on the result through the unchanged CoRE loader, resume after SIGKILL with
the same bytes, other sources, and bad input."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import codereasoner
from codereasoner import benchmarks, values
from codereasoner.cli import app
from codereasoner.execution import Batch, Pool, Program, parse_call
from codereasoner.families.core.build import IO_FILE, PROBLEMS_FILE, QA_FILE, SUMMARY_FILE
from codereasoner.families.core.programs import PREAMBLE, entry_point
from codereasoner.programs import CC_MIN, JACCARD_MAX
from tests.conftest import SHARED_DATA, synth_cases

pytestmark = pytest.mark.full_data

CORE_QA = SHARED_DATA / "core" / "core_qa.json"
needs_core = pytest.mark.skipif(not CORE_QA.exists(), reason="needs ../shared/data/core")
OUTPUTS = (IO_FILE, QA_FILE, SUMMARY_FILE, PROBLEMS_FILE)


def _build(out: Path, *extra: str) -> dict:
    args = ["core", "build", "--out", str(out), "--workers", "2", "--json", *extra]
    done = CliRunner().invoke(app, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def _content_key() -> str:
    """What the full build depends on: the package's code and templates and CoRE's data."""
    digest = hashlib.sha256(CORE_QA.read_bytes())
    package = Path(codereasoner.__file__).parent
    for path in sorted(package.rglob("*")):
        if path.suffix in {".py", ".c", ".json", ".txt"}:
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="module")
def core_gen(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict]:
    """The full build, kept in pytest's cache under its content key: a second session with the
    same code and data resumes the finished build (nothing to do) instead of building again."""
    if not CORE_QA.exists():
        pytest.skip("needs ../shared/data/core")
    cache = request.config.cache  # None under -p no:cacheprovider
    name = f"core-gen-{_content_key()}"
    out = tmp_path_factory.mktemp(name) if cache is None else cache.mkdir(name)
    summary = _build(out, "--from", "core", "--data-dir", str(SHARED_DATA))
    return out, summary


@needs_core
def test_every_core_problem_gets_four_rewrites_and_four_probes_each(
    core_gen: tuple[Path, dict],
) -> None:
    out, summary = core_gen
    assert summary["problems"]["built"] == 60 and not summary["problems"]["skipped"]
    problems = [json.loads(line) for line in (out / PROBLEMS_FILE).read_text().splitlines()]
    for problem in problems:
        rewrites = [impl for impl in problem["implementations"] if impl["rewrites"]]
        assert len(rewrites) >= 4, problem["problem"]
        for impl in rewrites:  # CoRE's filters, as recorded
            assert impl["jaccard"] <= JACCARD_MAX and impl["complexity"] >= CC_MIN
        for impl in problem["implementations"]:
            assert len(impl["probes"]["items"]) >= 4, (problem["problem"], impl["rewrites"])
            assert entry_point(impl["code"]) == problem["entry"]
    assert set(summary["probes"]["dimensions"]) == {"Arithmetic", "Logic", "State", "Boundary"}
    assert len(summary["implementations"]["rewrite_kinds"]) >= 8
    kept = summary["tests"]["kept_per_problem"]
    assert kept["mean"] <= summary["tests"]["candidates_per_problem"]["mean"]


@needs_core
def test_rewrites_return_the_recorded_outputs_in_the_sandbox(
    core_gen: tuple[Path, dict], pool: Pool
) -> None:
    """Every output item's gold is what its implementation returns (checked again here)."""
    out, _ = core_gen
    records = json.loads((out / IO_FILE).read_text())
    by_code: dict[str, list[dict]] = {}
    for record in records:
        by_code.setdefault(record["code"], []).append(record)
    batches, golds = [], []
    for code, group in by_code.items():
        entry = entry_point(code)
        assert entry is not None
        calls = [parse_call(f"{entry}({record['input']})") for record in group]
        batches.append(Batch(Program(code, entry, preamble=PREAMBLE), calls))
        golds.append([values.parse(record["output"]) for record in group])
    for results, expected in zip(pool.run_all(batches), golds, strict=True):
        assert [result.parsed_value() for result in results] == expected


@needs_core
def test_the_core_loader_reads_the_build_and_the_oracle_scores_100(
    core_gen: tuple[Path, dict], tmp_path: Path
) -> None:
    out, summary = core_gen
    items = benchmarks.get("core-gen").load(out)
    kinds = Counter(item.task for item in items)
    assert kinds["core_output"] == summary["output_items"]
    assert kinds["core_probe"] == summary["probes"]["total"]
    runs = tmp_path / "run"
    args = ["eval", "--model", "oracle", "--bench", "core-gen", "--data-dir", str(out)]
    done = CliRunner().invoke(app, [*args, "--out", str(runs), "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    scores = json.loads(done.stdout)["headline"]["core-gen"]
    for name in ("I", "Is", "W", "Ws", "RCS"):
        assert scores[name] == pytest.approx(100.0), (name, scores)


@needs_core
def test_probe_records_keep_core_fields_and_say_only_visible_things(
    core_gen: tuple[Path, dict],
) -> None:
    out, _ = core_gen
    records = json.loads((out / QA_FILE).read_text())
    core_keys = set(json.loads(CORE_QA.read_text())[0])
    for record in records:
        assert core_keys <= set(record)
        question = record["question"].lower()
        assert "step" not in question and "trace" not in question, record["question"]
        line = record["probe"]["line"]
        assert record["target_line_number"] == line - 1
        shown = record["source_code"].splitlines()[line - 1].strip()
        assert shown, record["question"]
        values.parse(record["ground_truth"])


def _command(out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "codereasoner",
        "core",
        "build",
        "--from",
        "core",
        "--data-dir",
        str(SHARED_DATA),
        "--out",
        str(out),
        "--limit",
        "8",
        "--workers",
        "1",
        *extra,
    ]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted build of the first eight problems, as the interrupted ones are run."""
    if not CORE_QA.exists():
        pytest.skip("needs ../shared/data/core")
    out = tmp_path_factory.mktemp("core-reference") / "reference"
    subprocess.run(_command(out), check=True, capture_output=True, timeout=600)
    return out


@needs_core
def test_sigkill_then_resume_writes_the_same_bytes(tmp_path: Path, reference: Path) -> None:
    out = tmp_path / "killed"
    child = subprocess.Popen(_command(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    problems = out / PROBLEMS_FILE
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and child.poll() is None:
        if problems.exists() and problems.read_text().count("\n") >= 3:
            break
        time.sleep(0.05)
    finished_first = child.poll() is not None
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert finished_first or problems.read_text().count("\n") < 8
    with problems.open("a") as handle:
        handle.write('{"problem": "torn')  # a line cut short by the kill
    resumed = subprocess.run(_command(out), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    done = json.loads((out / SUMMARY_FILE).read_text())
    assert done["problems"]["built"] == 8


@needs_core
def test_sigterm_is_one_line_and_the_resume_writes_the_same_bytes(
    tmp_path: Path, reference: Path
) -> None:
    out = tmp_path / "stopped"
    child = subprocess.Popen(
        _command(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    problems = out / PROBLEMS_FILE
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and child.poll() is None:
        if problems.exists() and problems.read_text().count("\n") >= 2:
            break
        time.sleep(0.05)
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=300)
    if child.returncode != 0:  # it may have finished first on a fast machine
        assert child.returncode == 143, stderr
        (line,) = [line for line in stderr.splitlines() if line.startswith("error:")]
        assert (
            line.startswith("error: interrupted by SIGTERM (re-run") and "Traceback" not in stderr
        )
    resumed = subprocess.run(_command(out), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


@needs_core
def test_other_settings_and_foreign_folders_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    _build(out, "--from", "core", "--data-dir", str(SHARED_DATA), "--limit", "1")
    before = {name: (out / name).read_bytes() for name in OUTPUTS}
    args = ["core", "build", "--from", "core", "--data-dir", str(SHARED_DATA), "--out", str(out)]
    done = CliRunner().invoke(app, [*args, "--limit", "1", "--seed", "3"])
    assert done.exit_code == 2
    assert "--seed: 0 there, 3 now" in done.output and "Traceback" not in done.output
    assert {name: (out / name).read_bytes() for name in OUTPUTS} == before
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / QA_FILE).write_text("[]")
    done = CliRunner().invoke(app, ["core", "build", "--from", "core", "--out", str(foreign)])
    assert done.exit_code == 2 and "not a core build folder" in done.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--from", "nonsense"], "--from 'nonsense': expected one of core, cruxeval"),
        (["--from", "synth:/nowhere"], "/nowhere/cases.jsonl: not found"),
        (["--from", "core", "--variants", "0"], "--variants 0: expected a positive number"),
        (["--from", "core", "--probes", "-1"], "--probes -1: expected a positive number"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, arguments: list[str], message: str) -> None:
    out = tmp_path / "out"
    done = CliRunner().invoke(app, ["core", "build", *arguments, "--out", str(out)])
    assert done.exit_code == 2
    assert message in done.output and "Traceback" not in done.output
    assert not (out / PROBLEMS_FILE).exists()


def test_from_synthesized_cases(tmp_path: Path) -> None:
    cases = synth_cases(tmp_path / "synth", 40, seed=5)
    out = tmp_path / "gen"
    summary = _build(out, "--from", f"synth:{cases}", "--limit", "8")
    assert summary["problems"]["chosen"] == 8
    built = summary["problems"]["built"]
    assert built >= 1, summary["problems"]
    items = benchmarks.get("core-gen").load(out)
    assert {item.task for item in items} == {"core_output", "core_probe"}


@pytest.mark.skipif(
    not (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").exists(), reason="needs cruxeval data"
)
@pytest.mark.parametrize("source", ["cruxeval", "reval"])
def test_from_benchmarks(tmp_path: Path, source: str) -> None:
    summary = _build(
        tmp_path / "gen", "--from", source, "--data-dir", str(SHARED_DATA), "--limit", "6"
    )
    assert summary["problems"]["chosen"] == 6
    assert summary["problems"]["built"] + sum(summary["problems"]["skipped"].values()) == 6


FIZZ_BUZZ_REWRITE = """\
def fizz_buzz(n: int):
    sevens = 0
    k = 0
    while k < n:
        if not (k % 11 and k % 13):
            sevens += sum(1 for ch in str(k) if ch == '7')
        k += 1
    return sevens
"""


@needs_core
def test_an_llm_rewriter_through_a_real_server_is_checked_like_the_rewrites(
    tmp_path: Path,
) -> None:
    """A model's equivalent rewrite is kept (kind llm); its wrong one is rejected."""
    from codereasoner.models.replay_server import Query, ReplayServer

    def reply(query: Query) -> str:
        wrong = FIZZ_BUZZ_REWRITE.replace("'7'", "'1'")
        return f"```python\n{FIZZ_BUZZ_REWRITE if query.choice == 0 else wrong}```\n"

    with ReplayServer(reply=reply) as server:
        summary = _build(
            tmp_path / "gen",
            "--from",
            "core",
            "--data-dir",
            str(SHARED_DATA),
            "--limit",
            "1",
            "--rewriter",
            f"openai:{server.model}@{server.url}",
        )
    implementations = summary["implementations"]
    assert implementations["rewrite_kinds"].get("llm", 0) >= 1
    assert implementations["rejections"]["not_equivalent"] >= 1
    (problem,) = [
        json.loads(line) for line in (tmp_path / "gen" / PROBLEMS_FILE).read_text().splitlines()
    ]
    assert any(impl["code"] == FIZZ_BUZZ_REWRITE for impl in problem["implementations"])


def test_an_unreachable_rewriter_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    done = CliRunner().invoke(
        app, ["core", "build", "--from", "core", "--out", str(out), "--rewriter", "nonsense:x"]
    )
    assert done.exit_code == 2 and "--rewriter" in done.output and "Traceback" not in done.output


SET_ORDER = """\
def f(words, k):
    seen = set(words)
    order = []
    for w in seen:
        order.append(w)
    total = 0
    for w in words:
        if w in seen and len(w) > k:
            total += len(w)
        elif len(w) == k or w == 'x':
            total -= 1
    return total
"""


def test_nothing_kept_depends_on_the_hash_seed(tmp_path: Path, pool: Pool) -> None:
    """Set iteration order of strings changes with the hash seed: a probed run must trace the
    same under both seeds, and every output must be the same."""
    from codereasoner.execution import TraceOptions
    from codereasoner.families.core.build import BuildSettings, build
    from codereasoner.families.core.sources import SourceProblem, SourceProblems
    from codereasoner.trace import trace_call

    calls = ("f(['kiwi', 'banana', 'fig', 'apple'], 3)", "f(['ab', 'abc'], 2)", "f(['x'], 1)")
    problems = SourceProblems([SourceProblem("sets", "sets", (SET_ORDER,), "f", calls)])
    settings = BuildSettings(source="test", probes=3)
    with Pool(1, isolation="bubblewrap", hash_seed=1) as other:
        build(settings, tmp_path / "gen", (pool, other), problems=problems)
        records = json.loads((tmp_path / "gen" / QA_FILE).read_text())
        assert records
        for record in records:
            program = Program(record["source_code"], "f", preamble=PREAMBLE)
            call = parse_call(f"f({record['input']})")
            traces = [
                trace_call(p, program, call, TraceOptions(max_steps=2000)).trace
                for p in (pool, other)
            ]
            assert traces[0] is not None and traces[1] is not None
            assert traces[0].steps == traces[1].steps, record["question"]


def test_a_resume_that_reads_other_programs_is_refused(tmp_path: Path) -> None:
    cases = synth_cases(tmp_path / "synth", 12, seed=2)
    out = tmp_path / "gen"
    _build(out, "--from", f"synth:{cases}", "--limit", "1")
    lines = (cases / "cases.jsonl").read_text().splitlines(keepends=True)
    (cases / "cases.jsonl").write_text("".join(lines[:-1]))  # the data changed under the folder
    args = ["core", "build", "--from", f"synth:{cases}", "--out", str(out), "--limit", "1"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2 and "the programs read" in done.output, done.output
