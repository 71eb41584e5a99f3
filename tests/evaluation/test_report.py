"""Reports over real run stores: loading, comparison, escaping, links, plots, a real browser."""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from codereasoner.evaluation.metrics import wilson_interval as wilson
from codereasoner.evaluation.report import ReportDataError, load_runs, plots, render, write_report
from codereasoner.evaluation.report.data import run_labels
from codereasoner.evaluation.runner import SELF_CHECK
from codereasoner.execution import Pool
from tests.commands import Ran
from tests.commands import invoke as cli
from tests.conftest import SHARED_DATA
from tests.evaluation.report_stores import (
    add_core,
    add_official,
    add_reval,
    legend_overlaps,
    new_store,
    reval_items,
)

pytestmark = pytest.mark.full_data

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HOSTILE = "<script>alert('pwned')</script>"
HOSTILE_MODEL = "model-b <img src=x onerror=alert(1)> $5"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Built:
    root: Path
    runs: list[Path]
    reports: dict[str, dict[str, dict[str, Any]]]  # run folder -> benchmark -> stored report


@pytest.fixture(scope="module")
def built(pool: Pool, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Two runs over the same fixture benchmarks; run b answers worse, one answer hostile."""
    root = tmp_path_factory.mktemp("runs")
    items = reval_items(FIXTURES / "reval", pool, root / "cache")
    reports: dict[str, dict[str, dict[str, Any]]] = {}
    for folder, model, replace, unsure, right in (
        ("a", "model-a", None, (), 2),
        ("b", HOSTILE_MODEL, {"sample_0": HOSTILE}, ("36_0", "36_1", "Fine/36_0#0"), 3),
    ):
        connection = new_store(root / folder, model, folder, ["cruxeval-o", "core", "reval"])
        crux = FIXTURES / "cruxeval"
        reports[folder] = {
            "cruxeval-o": add_official(
                connection,
                model,
                "cruxeval-o",
                crux,
                crux / "output_generations.json",
                pool,
                replace=replace,
            ),
            "core": add_core(
                connection,
                model,
                FIXTURES / "core",
                FIXTURES / "core" / "generations.jsonl",
                unsure,
            ),
            "reval": add_reval(connection, model, items, pool, right),
        }
        connection.close()
    return Built(root, [root / "a", root / "b"], reports)


class PageParser(HTMLParser):
    """Ids, in-page links, scripts and external references of a page, and its score cells."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.external: list[str] = []
        self.scripts = 0
        self.table = 0
        self.in_scores = False
        self.cell: dict[str, Any] | None = None
        self.score_rows: list[list[dict[str, Any]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "id" in found:
            self.ids.append(str(found["id"]))
        for name in ("href", "src"):
            value = found.get(name)
            if value is None:
                continue
            if value.startswith("#"):
                self.links.append(value[1:])
            else:
                self.external.append(value)
        if tag == "script" or any(name.startswith("on") for name in found):
            self.scripts += 1
        if tag == "table" and found.get("class") == "scores":
            self.in_scores = True
        if self.in_scores and tag == "tr":
            self.score_rows.append([])
        if self.in_scores and tag == "td":
            self.cell = {"class": found.get("class"), "text": "", "href": None}
        if self.cell is not None and tag == "a":
            self.cell["href"] = found.get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.in_scores = False
        if tag == "td" and self.cell is not None:
            self.score_rows[-1].append(self.cell)
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell["text"] += data


def parse(page: str) -> PageParser:
    parser = PageParser()
    parser.feed(page)
    return parser


def stored_failures(run: Path, benchmark: str) -> int:
    with sqlite3.connect(run / "run.sqlite") as connection:
        return connection.execute(
            "SELECT count(*) FROM scores WHERE benchmark=? AND (correct=0 OR skipped=1)",
            (benchmark,),
        ).fetchone()[0]


def test_load_reads_reports_failures_and_completions(built: Built) -> None:
    (run,) = load_runs([built.runs[0]], examples=2)
    assert (run.model, run.id, run.status) == ("model-a", "a", "done")
    assert sorted(run.benchmarks) == ["core", "cruxeval-o", "reval"]
    crux = run.benchmarks["cruxeval-o"]
    stored = built.reports["a"]["cruxeval-o"]
    assert crux.kind == "pass@k"
    assert [(m.name, m.value) for m in crux.metrics] == [
        ("pass@1", stored["pass@1"]),
        ("pass@5", stored["pass@5"]),
    ]
    assert set(crux.breakdowns[0].rows) == set(stored["breakdown"]["rows"])
    assert (
        run.benchmarks["core"].metric("RCS").value
        == (built.reports["a"]["core"]["variants"]["project"]["mean"]["RCS"])
    )
    assert (
        run.benchmarks["reval"].metric("average acc").value
        == built.reports["a"]["reval"]["avg_acc"]
    )
    raw = json.loads((FIXTURES / "cruxeval" / "output_generations.json").read_text())
    truths = {
        json.loads(line)["id"]: json.loads(line)["output"]
        for line in (FIXTURES / "cruxeval" / "cruxeval.jsonl").read_text().splitlines()
    }
    for name, result in run.benchmarks.items():
        assert result.total_failures == stored_failures(built.runs[0], name) > 0
        assert all(len(shown) <= 2 for shown in result.failures.values())
    for shown in crux.failures.values():
        for failure in shown:
            assert failure.completion == raw[failure.item_id][failure.sample]
            assert failure.answer == failure.completion  # official format: already extracted
            assert failure.expected == truths[failure.item_id]
            assert failure.prompt and "[ANSWER]" in failure.prompt
            assert failure.reason != "correct"
    assert load_runs([built.runs[0]], examples=0)[0].benchmarks["core"].failures == {
        key: () for key in run.benchmarks["core"].failures
    }


def _sign_test(wins: int, losses: int) -> float:
    trials = wins + losses
    tail = sum(math.comb(trials, k) for k in range(min(wins, losses) + 1)) / 2**trials
    return min(1.0, 2 * tail) if trials else 1.0


def test_comparison_of_two_runs_marks_the_best_only_where_a_paired_test_says_so(
    built: Built,
) -> None:
    runs = load_runs(built.runs)
    labels = run_labels(runs)
    assert labels == ["model-a", HOSTILE_MODEL]
    page = parse(render(runs))
    rows = {}
    for row in page.score_rows:
        texts = [cell["text"].split(" (")[0].strip() for cell in row]
        if len(row) >= 3:
            rows[texts[-3]] = row[-2:]
    shares = [
        {
            key: sum(s.correct for s in v) / len(v)
            for key, v in run.benchmarks["cruxeval-o"].verdicts.items()
        }
        for run in runs
    ]
    wins = sum(shares[0][key] > shares[1][key] for key in shares[0])
    losses = sum(shares[0][key] < shares[1][key] for key in shares[0])
    for metric in ("pass@1", "pass@5"):
        values = [built.reports[f]["cruxeval-o"][metric] for f in "ab"]
        items = [built.reports[f]["cruxeval-o"]["items"] for f in "ab"]
        assert values[0] != values[1]
        cells = rows[metric]
        intervals = [wilson(v / 100, n) for v, n in zip(values, items, strict=True)]
        assert [c["text"] for c in cells] == [
            f"{v:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"
            for v, (lo, hi) in zip(values, intervals, strict=True)
        ]
        assert all(lo < v / 100 < hi for v, (lo, hi) in zip(values, intervals, strict=True))
        separated = _sign_test(wins, losses) < 0.05 and (wins > losses) == (values[0] > values[1])
        winner = values.index(max(values)) if separated else None
        assert [c["class"] == "best" for c in cells] == [i == winner for i in range(2)]
    ties = [name for name, cells in rows.items() if cells[0]["text"] == cells[1]["text"]]
    assert ties and all(rows[name][0]["class"] is None for name in ties)


def test_hostile_text_is_escaped_and_nothing_external(built: Built) -> None:
    runs = load_runs(built.runs)
    hostile = [
        f for f in runs[1].benchmarks["cruxeval-o"].failures["list"] if f.item_id == "sample_0"
    ]
    assert hostile and hostile[0].completion == HOSTILE
    page = render(runs)
    assert HOSTILE not in page and "<img" not in page
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page
    assert "model-b &lt;img src=x onerror=alert(1)&gt; $5" in page
    parsed = parse(page)
    assert parsed.scripts == 0
    assert parsed.external == []
    assert "http://" not in page.replace("http://www.w3.org/", "")  # SVG namespaces only
    assert "https://" not in page


def test_every_link_resolves_and_every_score_links_to_failures(built: Built) -> None:
    runs = load_runs(built.runs)
    page = parse(render(runs))
    assert len(page.ids) == len(set(page.ids))
    assert page.links and set(page.links) <= set(page.ids)
    scores = [row for row in page.score_rows if row and not row[-3]["text"].startswith("items")]
    score_cells = [cell for row in scores for cell in row[-2:]]
    assert score_cells and all(cell["href"].startswith("#fail-r") for cell in score_cells)
    failure_anchors = [
        anchor for anchor in page.links if re.fullmatch(r"fail-r\d-b\d-c\d+", anchor)
    ]
    assert failure_anchors  # per-category cells link to their category's examples


def test_plots_are_valid_svg_and_the_page_is_deterministic(built: Built) -> None:
    runs = load_runs(built.runs)
    labels = run_labels(runs)
    made = {
        "scores": plots.scores_plot(runs, labels),
        "passk": plots.passk_plot(runs, labels, "cruxeval-o"),
        "breakdown": plots.breakdown_plot(runs, labels, "cruxeval-o", 0),
        "core": plots.core_plot(runs, labels, "core"),
        "reval": plots.reval_plot(runs, labels, "reval"),
    }
    assert plots.core_plot(runs, labels, "cruxeval-o") is None
    for name, svg in made.items():
        assert svg is not None, name
        root = ElementTree.fromstring(svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        texts = "".join(root.itertext())
        assert "model-a" in texts and "$5" in texts, name  # labels literal, '$' not mathtext
    page = render(runs)
    for svg in re.findall(r"<svg.*?</svg>", page, flags=re.S):
        ElementTree.fromstring(svg)
    assert page.count("<svg") == 8
    assert render(load_runs(built.runs)) == page


def test_bad_stores_give_one_line_errors(built: Built, tmp_path: Path) -> None:
    with pytest.raises(ReportDataError, match=r"nowhere/run\.sqlite: no run store here"):
        load_runs([tmp_path / "nowhere"])
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ReportDataError, match=r"junk\.sqlite: not a readable run store"):
        load_runs([junk])
    for name, sql, message in (
        ("version", "PRAGMA user_version=7", "schema version 7, expected 1"),
        (
            "result",
            "UPDATE results SET report='{oops' WHERE benchmark='core'",
            r"results\.report of 'core': not valid JSON",
        ),
        (
            "shape",
            "UPDATE results SET report='{\"pass@1\": \"high\"}' WHERE benchmark='core'",
            r"results\.report of 'core': unexpected shape",
        ),
        ("norun", "DELETE FROM run", "table run holds 0 rows, expected 1"),
    ):
        copy = tmp_path / name
        shutil.copytree(built.runs[0], copy)
        with sqlite3.connect(copy / "run.sqlite") as connection:
            connection.execute(sql)
        with pytest.raises(ReportDataError, match=message) as caught:
            load_runs([copy])
        assert "\n" not in str(caught.value) and str(copy) in str(caught.value)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package: chromium)")
@pytest.mark.browser
def test_page_renders_in_headless_chromium(built: Built, tmp_path: Path) -> None:
    from PIL import Image

    out = write_report(load_runs(built.runs), tmp_path / "report.html")
    shot = tmp_path / "shot.png"
    browser = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1280,2000",
    ]
    subprocess.run(
        [*browser, f"--screenshot={shot}", out.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )
    with Image.open(shot) as image:
        pixels = image.convert("RGB")
    assert pixels.size == (1280, 2000)
    colours = pixels.getcolors(maxcolors=1 << 20) or []
    count = {colour: n for n, colour in colours}
    non_white = sum(n for colour, n in count.items() if min(colour) < 235)
    assert len(count) > 200  # text, plots and tables, not a blank or error page
    assert non_white > 0.03 * 1280 * 2000
    assert count.get((31, 119, 180), 0) > 1000  # run a's bars: the inline SVG rendered
    assert count.get((238, 240, 246), 0) > 500  # header cells: the inline CSS applied
    dom = subprocess.run(
        [*browser, "--dump-dom", out.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout
    assert 'class="scores"' in dom and ">model-a</th>" in dom
    assert dom.count("<svg") == 8 and "<script" not in dom
    # every plot's legend (bars, CoRE's points) beside the data as Chromium lays it out; the
    # same legends moved over the data are caught
    found = legend_overlaps(CHROMIUM, out, tmp_path)
    assert found["plots"] == 8 and found["marks"] > 40 and found["overlaps"] == []
    assert legend_overlaps(CHROMIUM, out, tmp_path, moved=True)["overlaps"]


def test_cli_writes_the_page_and_prints_tables(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "site" / "report.html"
    out.parent.mkdir()
    done = cli("report", *built.runs, "--out", out, "--json", "--examples", "1")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["report"] == str(out) and out.read_text().startswith("<!DOCTYPE html>")
    assert summary["scores"]["cruxeval-o"]["pass@1"] == {
        "model-a": built.reports["a"]["cruxeval-o"]["pass@1"],
        HOSTILE_MODEL: built.reports["b"]["cruxeval-o"]["pass@1"],
    }
    assert summary["failures"]["core"]["model-a"] == stored_failures(built.runs[0], "core")
    # --examples 1: one per category
    assert out.read_text().count('<details class="failure"') == sum(
        len(run.benchmarks[name].failures)
        for run in load_runs(built.runs)
        for name in run.benchmarks
    )
    done = cli("report", built.runs[0], "--out", out)
    assert done.returncode == 0, done.stderr
    assert "pass@1" in done.stdout and "cruxeval-o" in done.stdout
    assert f"report: {out}" in done.stdout.replace("\n", "")


def test_cli_bad_path_is_one_line_exit_2_and_keeps_the_old_page(
    built: Built, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    out.write_text("previous report")
    done = cli("report", built.runs[0], tmp_path / "missing", "--out", out)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "missing/run.sqlite" in done.stderr
    assert out.read_text() == "previous report"
    done = cli("report", built.runs[0], "--examples", "-1", "--out", out)
    assert (done.returncode, done.stderr.count("\n")) == (2, 1)


def one_error_line(done: Ran, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --out"), done.stderr
    assert "Traceback" not in done.stderr and all(word in lines[0] for word in words), lines[0]


def test_cli_never_writes_over_a_run_or_into_a_missing_folder(built: Built, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(built.runs[0], run)
    (run / "results.json").write_text("{}")
    before = {path.name: path.read_bytes() for path in run.iterdir()}
    link = tmp_path / "link.sqlite"
    link.symlink_to(run / "run.sqlite")
    (tmp_path / "sub").mkdir()
    for given, out in (
        (run, run / "run.sqlite"),
        (run, link),  # a symlink to the store
        (run, tmp_path / "sub" / ".." / "run" / "run.sqlite"),
        (run / "run.sqlite", run / "results.json"),
        (link, run / "run.sqlite-wal"),
    ):
        one_error_line(cli("report", given, "--out", out), "own file", "give another file")
    assert {path.name: path.read_bytes() for path in run.iterdir()} == before
    missing = tmp_path / "nowhere" / "deeper" / "r.html"
    one_error_line(cli("report", run, "--out", missing), "does not exist")
    assert not (tmp_path / "nowhere").exists()
    afile = tmp_path / "afile"
    afile.write_text("a file")
    one_error_line(cli("report", run, "--out", afile / "r.html"), "is not a folder")
    assert afile.read_text() == "a file"
    done = cli("report", run, "--out", run / "report.html")  # beside the store: allowed
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(
    not (SHARED_DATA / "cruxeval" / "samples").exists(), reason="shared CRUXEval data not present"
)
def test_official_cruxeval_samples(pool: Pool, tmp_path: Path) -> None:
    """The official Code Llama 7B samples (first 40 items): real failures in a real page."""
    data = SHARED_DATA / "cruxeval"
    connection = new_store(tmp_path / "codellama", "codellama-7b", "official", ["cruxeval-o"])
    gens = data / "samples" / "sample_codellama-7b_temp0.2_output_generations.json"
    report = add_official(connection, "codellama-7b", "cruxeval-o", data, gens, pool, limit=40)
    connection.close()
    (run,) = load_runs([tmp_path / "codellama"], examples=2)
    result = run.benchmarks["cruxeval-o"]
    assert result.metric("pass@5").value == report["pass@5"]
    assert result.scored_samples == 400 and result.total_failures == stored_failures(
        tmp_path / "codellama", "cruxeval-o"
    )
    page = parse(render([run]))
    assert set(page.links) <= set(page.ids) and page.scripts == 0


def test_report_on_real_runner_output(tmp_path: Path) -> None:
    """Runs written by the evaluation runner: a scripted OpenAI-compatible server vs the oracle."""
    from codereasoner.evaluation.runner import Runner, RunSettings
    from codereasoner.models import load_backend
    from codereasoner.models.replay_server import Query, ReplayServer

    calls = itertools.count()

    def reply(query: Query) -> str:  # every other request: a hostile completion
        return HOSTILE if next(calls) % 2 == 0 else "42"

    settings = RunSettings(
        benchmarks=("cruxeval-o",),
        n=2,
        data_dir=FIXTURES / "cruxeval",
        workers=1,
        isolation="bubblewrap",
    )
    with ReplayServer(reply=reply) as server:
        for folder, spec in (("replay", f"openai:replay@{server.url}"), ("oracle", "oracle")):
            with Runner(tmp_path / folder, load_backend(spec), settings) as runner:
                runner.run()
    runs = load_runs([tmp_path / "replay", tmp_path / "oracle"], examples=5)
    replay, oracle = (run.benchmarks["cruxeval-o"] for run in runs)
    assert oracle.total_failures == 0 and oracle.metric("pass@1").value == 100.0
    assert replay.total_failures == replay.scored_samples == 12
    shown = [failure for failures in replay.failures.values() for failure in failures]
    assert {failure.completion for failure in shown} == {HOSTILE, "42"}
    assert all(failure.prompt and failure.expected for failure in shown)
    page = render(runs)
    parsed = parse(page)
    assert HOSTILE not in page and parsed.scripts == 0
    assert set(parsed.links) <= set(parsed.ids)
    # the oracle's 100 is a self-check: labelled, never "best"
    assert [cell["class"] for cell in parsed.score_rows[2][-2:]] == [None, None]
    assert page.count(">SELF-CHECK</span>") >= 2 and SELF_CHECK in page


def test_a_run_still_running_shows_its_failures_without_scores(
    built: Built, tmp_path: Path
) -> None:
    copy = tmp_path / "running"
    shutil.copytree(built.runs[0], copy)
    with sqlite3.connect(copy / "run.sqlite") as connection:
        connection.execute("DELETE FROM results WHERE benchmark='cruxeval-o'")
        connection.execute("UPDATE run SET status='failed', message='<b>backend</b> gone'")
    (run,) = load_runs([copy])
    result = run.benchmarks["cruxeval-o"]
    assert (result.kind, result.metrics, run.status) == ("other", (), "failed")
    assert result.total_failures == stored_failures(copy, "cruxeval-o")
    page = render([run])
    assert "no result stored yet" in page and "&lt;b&gt;backend&lt;/b&gt; gone" in page
    parsed = parse(page)
    assert set(parsed.links) <= set(parsed.ids)
