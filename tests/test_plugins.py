"""A benchmark with its own prompt from an installed package, through entry points: no file of
this project changes, and ``bench list``, ``eval``, ``export-generations`` and ``score`` take it.

The package is a real distribution on ``PYTHONPATH`` (a module and its ``dist-info`` with
``entry_points.txt``, as pip installs one); every command runs as a user runs it, in a process
of its own.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = textwrap.dedent(
    '''
    """A toy output-prediction benchmark with a prompt of its own."""
    import ast

    from codereasoner.benchmarks import Benchmark, Stops
    from codereasoner.benchmarks.cache import LOCAL, Source
    from codereasoner.benchmarks.records import read_jsonl
    from codereasoner.models import BackendType, Completion
    from codereasoner.programs import Rewrite
    from codereasoner.tasks import Item, OutputPrediction

    PROMPT = "TOY PROMPT. Complete the assertion.\\n{code}\\nassert f({input}) == "


    def parse(paths):
        rows = read_jsonl(paths["toy.jsonl"], {"id": str, "code": str, "input": str, "output": str})
        return [
            Item(row["id"], "toy-own", "toy_output", program=row["code"],
                 call=f"f({row['input']})", truth=row["output"], fields=row)
            for row in rows
        ]


    # output prediction read and graded as CRUXEval-O is, with the toy's own prompt
    KIND = OutputPrediction("toy_output", {"direct": PROMPT})
    BENCHMARK = Benchmark(
        name="toy-own", title="Toy with its own prompt", description="three tiny functions",
        tasks=("toy_output",), dataset="toy-own",
        sources=(Source("toy.jsonl", "your own file", kind=LOCAL),), parse=parse,
        license="CC0", upstream="tests/test_plugins.py", counts={"items": 3},
        metric_note="pass@k x 100", stops=Stops(raw=("[/ANSWER]",)), breakdown="id",
        breakdown_note="each item alone",
    )


    def parse_prompted(paths):
        return [
            Item(item.id, "toy-prompted", "output_prediction", program=item.program,
                 call=item.call, truth=item.truth, fields=item.fields)
            for item in parse(paths)
        ]


    class Constant:
        """A backend that gives every prompt the same answer (spec const:TEXT)."""

        def __init__(self, text):
            self.text = text

        @property
        def model_id(self):
            return f"const:{self.text}"

        def preflight(self):
            """Nothing to check."""

        def generate(self, requests, on_result):
            for index, request in enumerate(requests):
                on_result(index, [Completion(sample, self.text) for sample in request.samples])

        def close(self):
            """Nothing to release."""


    BACKEND = BackendType("const", "toyplugin:Constant", "the same answer to every prompt",
                          form="TEXT")


    def open_with_pass(tree, rng):
        """A ``pass`` opens every function: equivalent, and a new text."""
        functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
        for function in functions:
            function.body.insert(0, ast.Pass())
        return bool(functions)


    REWRITE = Rewrite("toy_pass", "a pass statement opens every function", open_with_pass)


    # A prompt of its own with a built-in task kind: one declaration, no class.
    PROMPTED = Benchmark(
        **{**BENCHMARK.__dict__, "name": "toy-prompted", "tasks": ("output_prediction",),
           "parse": parse_prompted, "prompts": {"direct": "TOY OWN " + PROMPT}},
    )


    # A metric family that is not pass@k: the share of items whose every sample is right.
    from dataclasses import dataclass
    from typing import ClassVar

    from codereasoner.evaluation.families import MetricFamily
    from codereasoner.evaluation.generations import read_generations
    from codereasoner.evaluation.reports import Metric
    from codereasoner.evaluation.score_options import ScoreOutcome
    from codereasoner.evaluation.scoring import score


    @dataclass(frozen=True)
    class ShareReport:
        kind: ClassVar[str] = "toy-share"
        benchmark: str
        items: int
        share_right: float  # percent

        def headline(self):
            return {"share right": self.share_right}

        def to_dict(self):
            return {"benchmark": self.benchmark, "items": self.items,
                    "share_right": self.share_right}

        @classmethod
        def from_dict(cls, data):
            return cls(str(data["benchmark"]), int(data["items"]), float(data["share_right"]))

        def metrics(self):
            return (Metric("share right", self.share_right, "%"),)

        def breakdowns(self):
            return ()


    def shared(bench, items, scores):
        right = sum(all(s.correct for s in scores[item.id]) for item in items)
        return ShareReport(bench.name, len(items), 100.0 * right / max(len(items), 1))


    class Share(MetricFamily):
        name = "toy-share"
        report_type = ShareReport
        uses_grading = strict_report = pass_at_k = False
        marker_keys = ("share_right",)

        def grade(self, bench, items, answers, pool, grading, limits, memo=None):
            return score(bench, items, answers, pool(), grading=grading, limits=limits,
                         memo=memo).scores

        def score_file(self, bench, items, options, pool):
            _, answers = read_generations(options.generations, items, options.extract)
            scores = self.grade(bench, items, answers, pool, options.grading, options.limits)
            return ScoreOutcome(shared(bench, items, scores), scores)

        def report(self, bench, items, scores, run):
            return shared(bench, items, scores)


    SHARE = Share()
    SHARED = Benchmark(**{**BENCHMARK.__dict__, "name": "toy-share", "metrics": "toy-share"})
    '''
)
ENTRY_POINTS = """\
[codereasoner.tasks]
toy_output = toyplugin:KIND

[codereasoner.metric_families]
toy-share = toyplugin:SHARE

[codereasoner.benchmarks]
toy-own = toyplugin:BENCHMARK
toy-prompted = toyplugin:PROMPTED
toy-share = toyplugin:SHARED

[codereasoner.backends]
const = toyplugin:BACKEND

[codereasoner.rewrites]
toy_pass = toyplugin:REWRITE
"""
ROWS = [
    {"id": "toy_0", "code": "def f(x):\n    return x * 2", "input": "21", "output": "42"},
    {"id": "toy_1", "code": "def f(s):\n    return s[::-1]", "input": "'abc'", "output": "'cba'"},
    {"id": "toy_2", "code": "def f(n):\n    return [n] * n", "input": "2", "output": "[2, 2]"},
]


# Programs with room for rewrites CoRE's filters keep (the toy rows are too short to differ).
LOOPS = [
    {"id": "toy_0", "code": "def f(xs):\n    total = 0\n    for x in xs:\n        if x > 0 and x % 2 == 0:\n            total += x\n    return total",
     "input": "[1, 2, 4, -6]", "output": "6"},
    {"id": "toy_1", "code": "def f(s):\n    out = []\n    for ch in s:\n        if ch not in out:\n            out.append(ch)\n    return ''.join(out)",
     "input": "'abca'", "output": "'abc'"},
]  # fmt: skip


def install(site: Path, entry_points: str = ENTRY_POINTS) -> None:
    """The package as pip lays it out: the module and its dist-info."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "toyplugin.py").write_text(PLUGIN)
    info = site / "toyplugin-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


def cli(site: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "codereasoner", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": path},
    )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    install(site)
    data = tmp_path / "data"
    data.mkdir()
    (data / "toy.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return site


@pytest.mark.parametrize(
    ("bench", "prompt"), [("toy-own", "TOY PROMPT."), ("toy-prompted", "TOY OWN TOY PROMPT.")]
)
def test_an_installed_benchmark_runs_through_every_command(
    site: Path, tmp_path: Path, bench: str, prompt: str
) -> None:
    listed = cli(site, "bench", "list")
    assert listed.returncode == 0 and bench in listed.stdout, listed.stderr
    data, run = tmp_path / "data", tmp_path / "run"
    done = cli(site, "eval", "--model", "oracle", "--bench", bench, "--data-dir", data,
               "--out", run, "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["reports"][bench]["pass@1"] == 100.0
    with sqlite3.connect(run / "run.sqlite") as store:
        prompts = [text for (text,) in store.execute("SELECT text FROM prompts")]
    assert len(prompts) == 3 and all(text.startswith(prompt) for text in prompts)
    generations = tmp_path / "gens.jsonl"
    exported = cli(site, "export-generations", run, "--out", generations)
    assert exported.returncode == 0, exported.stderr
    scored = cli(site, "score", "--bench", bench, "-g", generations, "--data-dir", data,
                 "--json")  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["pass@1"] == 100.0  # eval and score agree


def test_an_installed_metric_family_shows_in_every_command(site: Path, tmp_path: Path) -> None:
    """A plugin's benchmark whose metric is not pass@k: eval, score, and report (terminal,
    JSON, HTML, Table 3) all show its number, through its family, with no file of this project
    naming it."""
    data, run = tmp_path / "data", tmp_path / "run"
    done = cli(site, "eval", "--model", "oracle", "--bench", "toy-share", "--data-dir", data,
               "--out", run, "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["reports"]["toy-share"]["share_right"] == 100.0
    assert summary["headline"]["toy-share"] == {"share right": 100.0}
    generations = tmp_path / "gens.jsonl"
    assert cli(site, "export-generations", run, "--out", generations).returncode == 0
    scored = cli(site, "score", "--bench", "toy-share", "-g", generations, "--data-dir", data)
    assert scored.returncode == 0, scored.stderr
    assert re.search(r"share right\s*│\s*100\.00\s*│\s*%", scored.stdout), scored.stdout
    as_json = cli(site, "score", "--bench", "toy-share", "-g", generations, "--data-dir", data,
                  "--json")  # fmt: skip
    assert json.loads(as_json.stdout)["share_right"] == 100.0
    page = tmp_path / "report.html"
    shown = cli(site, "report", run, "--out", page)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"share right.*100\.00", shown.stdout), shown.stdout
    assert "share right" in page.read_text() and "100.00" in page.read_text()
    scores = json.loads(cli(site, "report", run, "--out", page, "--json").stdout)["scores"]
    assert scores["toy-share"]["share right"] == {"oracle": 100.0}
    table = cli(site, "report", run, "--out", page, "--layout", "table3", "--json")
    (row,) = json.loads(table.stdout)["table3"]["rows"]
    assert row["scores"] == {"toy-share share right": 100.0}


def test_a_broken_plugin_is_one_line_naming_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "[codereasoner.benchmarks]\ntoy-own = toyplugin:MISSING\n")
    done = cli(site, "bench", "list")
    assert done.returncode == 2
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert line.startswith("error: plugin toy-own = toyplugin:MISSING") and "toyplugin" in line
    assert "cannot be loaded" in line


def test_an_installed_backend_answers_an_eval(site: Path, tmp_path: Path) -> None:
    data, run = tmp_path / "data", tmp_path / "run"
    done = cli(site, "eval", "--model", "const:42", "--bench", "toy-prompted", "--data-dir", data,
               "--out", run, "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["reports"]["toy-prompted"]
    assert report["pass@1"] == pytest.approx(100 / 3)  # "42" is toy_0's output only
    with sqlite3.connect(run / "run.sqlite") as store:
        texts = {text for (text,) in store.execute("SELECT text FROM completions")}
    assert texts == {"42"}


def test_an_installed_rewrite_is_drawn_by_a_build_that_records_it(
    site: Path, tmp_path: Path
) -> None:
    data, out = tmp_path / "loops", tmp_path / "core"
    data.mkdir()
    (data / "toy.jsonl").write_text("".join(json.dumps(row) + "\n" for row in LOOPS))
    args = ("core", "build", "--from", "toy-own", "--data-dir", data, "--out", out, "--json")
    done = cli(site, *args, "--variants", "8", "--probes", "1", "--candidates", "2")
    assert done.returncode == 0, done.stderr
    settings = json.loads((out / "build.json").read_text())["settings"]
    (recorded,) = settings["added_rewrites"]
    assert re.fullmatch(r"toy_pass:[0-9a-f]{16}", recorded), recorded  # name and source hash
    kinds = json.loads(done.stdout)["implementations"]["rewrite_kinds"]
    assert kinds.get("toy_pass", 0) >= 1, kinds  # drawn beside the built-in kinds
    # without the package, the build cannot resume: its rewrites would change behind its back
    without = tmp_path / "without"
    install(without, ENTRY_POINTS.split("[codereasoner.rewrites]")[0])
    refused = cli(without, *args, "--variants", "8", "--probes", "1", "--candidates", "2")
    assert refused.returncode == 2
    assert f"the rewrites installed packages add: ['{recorded}'] there, None now" in refused.stderr
    # a package that changed its rewrite under the same name: the build is not resumed either
    (site / "toyplugin.py").write_text((site / "toyplugin.py").read_text() + "\n# changed\n")
    changed = cli(site, *args, "--variants", "8", "--probes", "1", "--candidates", "2")
    assert changed.returncode == 2, changed.stdout
    assert "the rewrites installed packages add" in changed.stderr and recorded in changed.stderr
