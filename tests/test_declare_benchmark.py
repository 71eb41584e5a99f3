"""A benchmark is one declaration: a toy one, declared here and nowhere else, goes through
``eval --model oracle``, ``score``, ``report``, ``bench list/show/fetch`` with no other change."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codereasoner import benchmarks, tasks
from codereasoner.benchmarks import Benchmark, Metrics, Stops
from codereasoner.benchmarks.cache import Source
from codereasoner.benchmarks.records import read_jsonl
from codereasoner.cli import app
from codereasoner.evaluation.families import family_of
from codereasoner.tasks import Extraction, Item

ROWS = [
    {"id": "toy_0", "code": "def f(x):\n    return x * 2", "input": "21", "output": "42"},
    {"id": "toy_1", "code": "def f(s):\n    return s[::-1]", "input": "'abc'", "output": "'cba'"},
    {"id": "toy_2", "code": "def f(n):\n    return [n] * n", "input": "2", "output": "[2, 2]"},
]


def parse_toy(paths: Mapping[str, Path]) -> list[Item]:
    rows = read_jsonl(paths["toy.jsonl"], {"id": str, "code": str, "input": str, "output": str})
    return [
        Item(
            id=row["id"],
            benchmark="toy-o",
            task="output_prediction",
            program=row["code"],
            call=f"f({row['input']})",
            truth=row["output"],
            fields={"code": row["code"], "input": row["input"], "output": row["output"]},
            metadata={"shape": "list" if row["output"].startswith("[") else "scalar"},
        )
        for row in rows
    ]


def declare(url: str) -> Benchmark:
    return Benchmark(
        name="toy-o",
        title="Toy output prediction",
        description="predict what three tiny functions return",
        tasks=("output_prediction",),
        dataset="toy",
        sources=(Source("toy.jsonl", url),),
        parse=parse_toy,
        license="CC0",
        upstream="tests/test_declare_benchmark.py",
        counts={"items": len(ROWS)},
        breakdown="shape",
        breakdown_note="list or scalar output",
        metric_note="pass@k x 100",
        stops=Stops(raw=("[/ANSWER]",)),
    )


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 serving the toy data file."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "toy.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    handler = partial(QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/toy.jsonl"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def toy(served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Benchmark]:
    monkeypatch.setenv("CODEREASONER_CACHE", str(tmp_path / "cache"))
    bench = benchmarks.register(declare(served))
    try:
        yield bench
    finally:
        benchmarks.unregister(bench.name)


def invoke(*args: str) -> str:
    done = CliRunner().invoke(app, [str(arg) for arg in args], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.stdout


def test_a_declared_benchmark_runs_through_every_command(toy: Benchmark, tmp_path: Path) -> None:
    root = tmp_path / "data"
    fetched = invoke("bench", "fetch", "toy-o", "--data-dir", root)
    assert (root / "toy" / "toy.jsonl").is_file() and "toy-o: 3 items" in fetched
    own = tmp_path / "elsewhere" / "toy"  # the benchmark's own folder: the files go there
    invoke("bench", "fetch", "toy-o", "--data-dir", own)
    assert (own / "toy.jsonl").is_file() and not (own / "toy").exists()

    listed = invoke("bench", "list")
    assert "toy-o" in listed and "output_prediction" in listed
    for where in (root, root / "toy"):  # the data root, or the benchmark's own folder
        info = json.loads(invoke("bench", "show", "toy-o", "--data-dir", where, "--json"))
        assert info["loaded"]["items"] == 3 and info["metrics"] == "pass@k"
        assert info["styles"] == ["direct", "cot", "phind"]

    run = tmp_path / "run"
    summary = json.loads(
        invoke(
            "eval",
            "--model",
            "oracle",
            "--bench",
            "toy-o",
            "--data-dir",
            root,
            "--out",
            run,
            "--json",
        )
    )
    report = summary["reports"]["toy-o"]
    assert report["pass@1"] == 100.0 and report["items"] == 3
    assert summary["self_check"]["toy-o"]["passed"]
    assert set(report["breakdown"]["rows"]) == {"list", "scalar"}

    generations = tmp_path / "answers.jsonl"
    answers = {"toy_0": "42", "toy_1": "'abc'", "toy_2": "[2, 2]"}  # one wrong
    generations.write_text(
        "".join(
            json.dumps({"id": key, "sample": 0, "answer": value}) + "\n"
            for key, value in answers.items()
        )
    )
    for where in (root, root / "toy"):
        scored = json.loads(
            invoke("score", "--bench", "toy-o", "-g", generations, "--data-dir", where, "--json")
        )
        assert scored["pass@1"] == pytest.approx(200 / 3) and "pass@5" not in scored
        assert scored["reasons"] == {"correct": 2, "wrong_value": 1}

    page = tmp_path / "report.html"
    invoke("report", run, "--out", page)
    html = page.read_text()
    assert "toy-o" in html and "pass@1" in html and "100.00" in html


def test_a_duplicate_declaration_is_refused(toy: Benchmark) -> None:
    with pytest.raises(ValueError, match="'toy-o' is already registered"):
        benchmarks.register(declare("http://127.0.0.1:9/toy.jsonl"))
    with pytest.raises(ValueError, match="unknown task kind 'nope'"):
        benchmarks.register(Benchmark(**{**toy.__dict__, "name": "toy-x", "tasks": ("nope",)}))


def test_a_declaration_is_checked_when_made(toy: Benchmark) -> None:
    with pytest.raises(ValueError, match="metrics 'pass@K'; expected a metric family's name"):
        Benchmark(**{**toy.__dict__, "metrics": "pass@K"})
    unknown = Benchmark(**{**toy.__dict__, "metrics": "no-such-family"})  # a plugin's, maybe
    with pytest.raises(ValueError, match="unknown metric family 'no-such-family'; expected one"):
        family_of(unknown)
    with pytest.raises(ValueError, match="declares no task kinds"):
        Benchmark(**{**toy.__dict__, "tasks": ()})
    with pytest.raises(ValueError, match="default extraction 'robust' is not among"):
        Benchmark(
            **{
                **toy.__dict__,
                "extraction": Extraction.ROBUST,
                "extractions": (Extraction.OFFICIAL,),
            }
        )


def test_every_metric_family_grades_and_scores() -> None:
    from codereasoner.evaluation.families import FAMILIES, MetricFamily

    assert set(FAMILIES) == set(Metrics)
    for family in FAMILIES.values():
        for method in ("grade", "score_file", "report"):
            assert getattr(type(family), method) is not getattr(MetricFamily, method), (
                family,
                method,
            )


def test_a_failed_fetch_is_one_line_and_leaves_no_folders(toy: Benchmark, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    for where, message in ((blocked, "cannot write into"), (tmp_path / "new" / "toy", "HTTP 404")):
        benchmarks.unregister("toy-o")
        missing = Source("toy.jsonl", toy.sources[0].url.replace("toy.jsonl", "gone.jsonl"))
        benchmarks.register(Benchmark(**{**toy.__dict__, "sources": (missing,)}))
        done = CliRunner().invoke(app, ["bench", "fetch", "toy-o", "--data-dir", str(where)])
        assert done.exit_code == 2 and message in done.output, done.output
        assert len(done.output.strip().splitlines()) == 1 and done.exception is not None
    assert not (tmp_path / "new").exists()


def test_a_benchmark_may_carry_its_own_prompts(toy: Benchmark) -> None:
    item = toy.load()[0]
    assert toy.prompt(item, "direct") == tasks.get(item.task).prompt(item, "direct")
    own = Benchmark(**{**toy.__dict__, "prompts": {"direct": "MINE {code} | {input}"}})
    assert own.styles == ("direct",)  # its styles are its prompts'
    assert own.prompt(item, "direct") == f"MINE {item.fields['code']} | {item.fields['input']}"
    with pytest.raises(ValueError, match="prompts need a 'direct' template"):
        Benchmark(**{**toy.__dict__, "prompts": {"cot": "x"}})
    with pytest.raises(ValueError, match="must be a non-empty template"):
        Benchmark(**{**toy.__dict__, "prompts": {"direct": " "}})


def test_a_system_message_is_its_text_not_a_template_path(toy: Benchmark) -> None:
    chatty = Benchmark(**{**toy.__dict__, "system": "You predict outputs.\n"})
    assert chatty.system_message(chat=True) == "You predict outputs."
    assert chatty.system_message(chat=False) is None
    with pytest.raises(ValueError, match="looks like a template path; expected the message text"):
        Benchmark(**{**toy.__dict__, "system": "mine/system.txt"})


def test_an_output_kind_needs_a_direct_prompt() -> None:
    kind = tasks.OutputPrediction("toy_kind", {"direct": "{code}", "cot": "{code} think"})
    assert kind.styles == ("direct", "cot")
    with pytest.raises(ValueError, match="needs a 'direct' prompt"):
        tasks.OutputPrediction("toy_kind", {"cot": "{code}"})


def test_synthesis_decontaminates_against_a_declared_benchmark(
    toy: Benchmark, tmp_path: Path
) -> None:
    """Nothing lists the benchmarks decontamination reads: a declared one is read by default,
    its programs, calls and shown answers indexed; one declared without is left out."""
    from codereasoner.benchmarks.programs import decontamination_benchmarks, load_benchmark_programs

    root = tmp_path / "data"
    invoke("bench", "fetch", "toy-o", "--data-dir", root)
    assert "toy-o" in decontamination_benchmarks()
    loaded = load_benchmark_programs(root)
    mine = [program for program in loaded.programs if program.benchmark == "toy-o"]
    items = toy.load(root, download=False)
    assert "toy-o" in loaded.checked and len(mine) == len({item.program for item in items})
    assert all(item.truth in {s for p in mine for s in p.strings} for item in items)
    benchmarks.unregister("toy-o")
    benchmarks.register(Benchmark(**{**toy.__dict__, "decontaminate": False}))
    assert "toy-o" not in decontamination_benchmarks()
