"""Reports over runs of different item subsets, made by the real CLI (``eval --limit``): item
counts, scores over the common items, the oracle's self-check label, standard errors, readable
plots (legends beside the data) and failure boxes that lead with the question.

The runs: the oracle on 12 and on 24 items (self-checks), a scripted server on 12 items
answering 6 right ("small"), one on 24 items answering right only the 12 beyond the first 12
("large"), and one on 24 items wrong only where small is right ("wide", 75%). small's and
large's own scores tie (50%); over the 12 common items small leads 50% to 0% (6 paired wins, no
loss: an exact sign test gives p = 0.03), so only a comparison on the common items stars small,
and the oracle's 100% is never starred. The self-checks never shrink the common items: beside
the 12-item oracle, large and wide compare on their 24 (wide wins 6 items and loses none).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from codereasoner.evaluation.report import load_runs, plots
from codereasoner.evaluation.runner import SELF_CHECK
from codereasoner.models.replay_server import Query, ReplayServer
from tests.conftest import SHARED_DATA
from tests.evaluation.report_stores import legend_overlaps

CODEREASONER = Path(sys.executable).with_name("codereasoner")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BENCH = "cruxeval-o"
WRONG = "[ANSWER]\nNone\n[/ANSWER]"

pytestmark = [
    pytest.mark.full_data,
    pytest.mark.skipif(
        not (SHARED_DATA / "cruxeval").exists(), reason="shared CRUXEval data not present"
    ),
]


def codereasoner(*args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CODEREASONER), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200", **env},
    )


def evaluate(out: Path, model: str, limit: int, bench: str = BENCH) -> None:
    done = codereasoner(
        "eval", "--model", model, "--bench", bench, "--limit", str(limit),
        "--data-dir", SHARED_DATA, "--out", out, "--workers", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def answers(store: Path) -> dict[str, str]:
    """The oracle's completion of each prompt of the benchmark in a run store."""
    with sqlite3.connect(store / "run.sqlite") as connection:
        return dict(
            connection.execute(
                "SELECT p.text, c.text FROM completions c JOIN prompts p ON p.hash = c.prompt_hash "
                "JOIN items i ON i.prompt_hash = p.hash WHERE i.benchmark = ?",
                (BENCH,),
            )
        )


def verdicts(store: Path) -> list[int]:
    with sqlite3.connect(store / "run.sqlite") as connection:
        rows = connection.execute("SELECT correct FROM scores WHERE benchmark = ?", (BENCH,))
        return [int(correct) for (correct,) in rows]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("subsets")
    names = ("oracle", "oracle-24", "small", "large", "wide", "none", "two")
    found = {name: root / name for name in names}
    evaluate(found["oracle"], "oracle", 12, f"{BENCH},core-probe,reval")
    evaluate(found["oracle-24"], "oracle", 24)
    first, every = answers(found["oracle"]), answers(found["oracle-24"])

    half = set(sorted(first)[:6])

    def small(query: Query) -> str:  # right on 6 of the first 12 items
        return first[query.prompt] if query.prompt in half else WRONG

    def large(query: Query) -> str:  # right only on the items beyond the first 12
        return WRONG if query.prompt in first else every.get(query.prompt, WRONG)

    with ReplayServer(reply=small, model="small") as server:
        evaluate(found["small"], f"openai:small@{server.url}", 12)

    def wide(query: Query) -> str:  # wrong only where small is right
        return WRONG if query.prompt in half else every.get(query.prompt, WRONG)

    with ReplayServer(reply=large, model="large") as server:
        evaluate(found["large"], f"openai:large@{server.url}", 24)
    with ReplayServer(reply=wide, model="wide") as server:
        evaluate(found["wide"], f"openai:wide@{server.url}", 24)
    pair = set(sorted(first)[:2])  # two of the first 12, so inside any 20

    def two(query: Query) -> str:  # right on 2 of 20 items
        return every[query.prompt] if query.prompt in pair else WRONG

    with ReplayServer(reply=lambda query: WRONG, model="none") as server:
        evaluate(found["none"], f"openai:none@{server.url}", 20)
    with ReplayServer(reply=two, model="two") as server:
        evaluate(found["two"], f"openai:two@{server.url}", 20)
    return found


def report(*args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    done = codereasoner("report", *args, **env)
    assert done.returncode == 0, done.stderr
    return done


def test_counts_and_the_common_items_decide_the_comparison(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    paths = [runs["oracle"], runs["small"], runs["large"]]
    summary = json.loads(report(*paths, "--out", tmp_path / "r.html", "--json").stdout)
    labels = [run["label"] for run in summary["runs"]]
    assert labels == ["oracle", "small", "large"]  # short names, not the servers' URLs
    assert [run["self_check"] for run in summary["runs"]] == [True, False, False]
    assert summary["items"][BENCH] == {
        "items": {"oracle": 12, "small": 12, "large": 24},
        "common_items": 12,
        "same_items": False,
        "comparable": True,
        "own_items": [],  # the oracle holds exactly the 12 common items
    }
    own = summary["scores"][BENCH]["pass@1"]
    large = verdicts(runs["large"])
    assert own["large"] == pytest.approx(100 * statistics.fmean(large))
    assert own == {"oracle": 100.0, "small": 50.0, "large": 50.0}
    common = summary["common_item_scores"][BENCH]["pass@1"]
    assert common == {"oracle": 100.0, "small": 50.0, "large": 0.0}
    # the standard error over items: the sample standard deviation of per-item pass@1 / sqrt(n)
    error = summary["stderr"][BENCH]["pass@1"]["large"]
    assert error == pytest.approx(100 * statistics.stdev(large) / math.sqrt(len(large)))


def test_the_terminal_table_stars_on_the_common_items_only(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    paths = (runs["oracle"], runs["small"], runs["large"])
    out = report(*paths, "--out", tmp_path / "r.html", FORCE_COLOR="1").stdout
    assert "oracle (SELF-CHECK)" in out and SELF_CHECK in out
    lines = out.splitlines()
    items = next(line for line in lines if "items, common: 12" in line)
    assert [cell.strip() for cell in items.split("│")[3:6]] == ["12", "12", "24"]
    (row,) = [line.split("│")[3:6] for line in lines if "pass@1" in line]
    assert ["\x1b[1" in cell for cell in row] == [False, True, False]  # small, on the 12


def test_labels_are_markup_safe_and_name_every_layout(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "r.html"
    done = report(runs["small"], runs["large"], "--label", "run[/b] one", "--out", out)
    assert "run[/b] one" in done.stdout and "Traceback" not in done.stderr
    page = out.read_text()
    assert "run[/b] one" in page and ">large</th>" in page


def figures(runs: dict[str, Path]) -> list[Figure]:
    loaded = load_runs([runs["oracle"], runs["small"], runs["large"]])
    labels = ["oracle", "small", "large"]
    found = [
        plots.scores_figure(loaded, labels),
        plots.passk_figure(loaded, labels, BENCH),
        plots.reval_figure(loaded, labels, "reval"),
        plots.breakdown_figure(loaded, labels, "reval", 0),
    ]
    return [figure for figure in found if figure is not None]


def test_legends_sit_beside_the_bars_and_fonts_are_readable(runs: dict[str, Path]) -> None:
    shown = figures(runs)
    assert len(shown) == 4
    for figure in shown:
        canvas = FigureCanvasAgg(figure)
        figure.draw(canvas.get_renderer())
        renderer = canvas.get_renderer()
        (legend,) = figure.legends
        box = legend.get_window_extent(renderer)
        marks = [patch for axes in figure.axes for patch in axes.patches]
        marks += [line for axes in figure.axes for line in axes.lines]
        marks += [group for axes in figure.axes for group in axes.collections]
        assert marks
        for mark in marks:
            extent = mark.get_window_extent(renderer)
            if extent.width > 0 or extent.height > 0:
                assert not box.overlaps(extent), (figure.axes[0].get_title(), extent, box)
        assert figure.get_figwidth() >= 5.5
        assert min(text.get_fontsize() for text in legend.get_texts()) >= 9


def test_the_headline_plot_shows_every_benchmark_with_counts(runs: dict[str, Path]) -> None:
    loaded = load_runs([runs["oracle"], runs["large"]])
    figure = plots.scores_figure(loaded, ["oracle", "large"])
    assert figure is not None
    ticks = [tick.get_text() for tick in figure.axes[0].get_xticklabels()]
    assert [tick.split("\n")[0] for tick in ticks] == ["core-probe", BENCH, "reval"]
    # one count per run, in run order ('-': the run lacks it); the self-check is not compared
    assert ticks[1].endswith("n=12/24") and ticks[0].endswith("n=14/-")
    # the bars: each run's own score (large: 50% on its 24; the oracle: 100% on its 12)
    bars = [patch.get_height() for patch in figure.axes[0].patches]
    assert bars == [100.0, 100.0, 100.0, 50.0]
    order = plots.scores_figure(load_runs([runs["large"], runs["small"], runs["wide"]]), "lsw")
    assert order is not None
    (tick,) = [tick.get_text() for tick in order.axes[0].get_xticklabels()]
    assert tick.endswith("n=24/12/24\non 12 common")  # not deduplicated, not sorted


def test_a_self_check_never_shrinks_the_common_items(runs: dict[str, Path], tmp_path: Path) -> None:
    paths = (runs["oracle"], runs["large"], runs["wide"])
    out = tmp_path / "r.html"
    summary = json.loads(report(*paths, "--out", out, "--json").stdout)
    assert summary["items"][BENCH] == {
        "items": {"oracle": 12, "large": 24, "wide": 24},
        "common_items": 24,  # large's and wide's, not the oracle's 12
        "same_items": True,
        "comparable": True,
        "own_items": ["oracle"],
    }
    assert summary["scores"][BENCH]["pass@1"] == {"oracle": 100.0, "large": 50.0, "wide": 75.0}
    assert BENCH not in summary["common_item_scores"]
    page = out.read_text()
    scores = page[page.index('class="scores"') :]
    scores = scores[: scores.index("</table>")]
    assert "on its own 12 items" in scores and "a SELF-CHECK on its own items" in scores
    crux = scores[scores.index(f">{BENCH}<") :]
    row = crux[crux.index("pass@1") : crux.index("</tr>", crux.index("pass@1"))]
    cells = row.split("<td")[1:]
    values = [re.sub(r"<[^>]*>", "", cell.split(">", 1)[1]).split(" ")[0] for cell in cells]
    assert values == ["100.00", "50.00", "75.00"]
    assert ['class="best"' in cell for cell in cells] == [False, False, True]
    table = json.loads(report(*paths, "--layout", "table3", "--json", "--out", out).stdout)
    rows = table["table3"]["rows"]
    assert [row["scores"][f"{BENCH} pass@1"] for row in rows] == [100.0, 50.0, 75.0]


def test_failure_boxes_lead_with_the_question(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    report(runs["small"], "--out", out, "--examples", "2")
    page = out.read_text()
    (run,) = load_runs([runs["small"]], examples=2)
    failure = next(iter(run.benchmarks[BENCH].failures.values()))[0]
    assert failure.prompt and 0 < failure.preamble < len(failure.prompt)
    preamble, question = failure.prompt[: failure.preamble], failure.question
    assert question and "assert f(" in question and question not in preamble
    box = page[page.index('<details class="failure"') :]
    box = box[: box.index("</dl></details>")]
    assert box.index('class="question"') < box.index("full prompt") < box.index("<details>")


def browser(tmp_path: Path) -> list[str]:
    return [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1600",
    ]  # fmt: skip


def dom_and_shot(page: Path, tmp_path: Path) -> tuple[str, Path]:
    command = browser(tmp_path)
    shot = tmp_path / "shot.png"
    subprocess.run([*command, f"--screenshot={shot}", page.as_uri()], timeout=90, check=True,
                   capture_output=True)  # fmt: skip
    dom = subprocess.run(
        [*command, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=90
    ).stdout
    return dom, shot


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
@pytest.mark.browser
def test_headless_chromium_shows_counts_common_items_and_the_self_check(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    from PIL import Image

    out = tmp_path / "report.html"
    report(runs["oracle"], runs["small"], runs["large"], "--out", out)
    dom, shot = dom_and_shot(out, tmp_path)
    scores = dom[dom.index('class="scores"') :]
    scores = scores[: scores.index("</table>")]
    assert "scores over the 12 they all hold" in scores
    assert "own: 50.00" in scores and "on 24 items" in scores
    assert scores.count(">SELF-CHECK</span>") == 1 and SELF_CHECK in dom
    crux = scores[scores.index(f">{BENCH}<") :]
    start = crux.index("pass@1")
    row = crux[start : crux.index("</tr>", start)]
    cells = row.split("<td")[1:]
    assert ['class="best"' in cell for cell in cells] == [False, True, False]
    # REval's by-source table (six columns per run) scrolls in its own box, headed by labels
    reval = dom[dom.index("<h2>reval</h2>") :]
    table = reval[reval.index('<table class="breakdown"') - len('<div class="wide">') :]
    assert table.startswith('<div class="wide"><table class="breakdown"')
    head = table[: table.index("</tr>")]
    # only the runs holding REval have columns (the oracle's); none is all "-"
    assert ">oracle" in head and ">large</th>" not in head and ">small</th>" not in head
    assert "127.0.0.1" not in re.sub(r'title="[^"]*"', "", head)
    with Image.open(shot) as image:
        assert image.size == (1280, 1600)
        colours: Any = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 200
    # no legend covers a bar or point (it once hid the oracle's REval bar), as Chromium lays
    # the page out; moved over the data, the same legends are caught
    found = legend_overlaps(str(CHROMIUM), out, tmp_path)
    assert found["plots"] == dom.count("<svg") >= 4 and found["marks"] >= 20
    assert found["overlaps"] == []
    assert legend_overlaps(str(CHROMIUM), out, tmp_path, moved=True)["overlaps"]


def test_table3_compares_on_the_common_items_too(runs: dict[str, Path], tmp_path: Path) -> None:
    paths = (runs["oracle-24"], runs["small"], runs["large"])
    out = tmp_path / "r.html"
    summary = json.loads(report(*paths, "--layout", "table3", "--json", "--out", out).stdout)
    table = summary["table3"]
    assert table["columns"] == [f"{BENCH} pass@1"]
    scores = [row["scores"][f"{BENCH} pass@1"] for row in table["rows"]]
    assert scores == [100.0, 50.0, 0.0]  # over the 12 items all three hold
    assert [row["self_check"] for row in table["rows"]] == [True, False, False]
    assert f"{BENCH} pass@1 (12): those scores are over the items they all hold" in table["note"]
    section = out.read_text()
    section = section[section.index('id="table3"') : section.index('id="runs"')]
    assert "on 12 common" in section
    assert [cell.startswith(' class="best"') for cell in section.split("<td")[1:]] == [
        False, False, False,  # oracle: name, score, avg (a self-check: never best)
        False, True, True,  # small: 50 over the common items, the best score and avg
        False, False, False,  # large: 0 over the common items (50 over all its own)
    ]  # fmt: skip


def test_a_run_keeps_its_colour_and_runs_without_a_benchmark_are_left_out(
    runs: dict[str, Path],
) -> None:
    """Per-benchmark plots show only the runs holding the benchmark, each in the colour it has
    everywhere (its place among the report's runs); no two runs share a colour."""
    loaded = load_runs([runs["large"], runs["oracle"]])
    labels = ["large", "oracle"]
    reval = plots.reval_figure(loaded, labels, "reval")
    passk = plots.passk_figure(loaded, labels, BENCH)
    assert reval is not None and passk is not None
    (reval_legend,) = reval.legends
    assert [text.get_text() for text in reval_legend.get_texts()] == ["oracle"]
    oracle = plots.color(1)
    assert {to_hex(patch.get_facecolor()) for patch in reval.axes[0].patches} == {oracle}
    colours = {to_hex(patch.get_facecolor()) for patch in passk.axes[0].patches}
    assert colours == {plots.color(0), oracle}
    assert len({plots.color(index) for index in range(64)}) == 64


def test_zero_of_twenty_has_an_interval_and_two_of_twenty_is_not_best(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """The Wald error collapses at 0% (0.00 +- 0.00); the Wilson interval of 0/20 is
    [0, 16.11]. 2/20 against 0/20 is two paired wins and no loss (p = 0.5): no best mark."""
    out = tmp_path / "r.html"
    paths = (runs["none"], runs["two"])
    text = report(*paths, "--out", out, FORCE_COLOR="1").stdout
    (row,) = [line.split("│")[3:5] for line in text.splitlines() if "pass@1" in line]
    assert [cell.strip() for cell in row] == ["0.00 [0.00, 16.11]", "10.00 [2.79, 30.10]"]
    assert not any("\x1b[1" in cell for cell in row) and "± 0.00" not in text
    page = out.read_text()
    assert 'class="best"' not in page and "0.00 [0.00, 16.11]" in page
    table = json.loads(report(*paths, "--layout", "table3", "--json", "--out", out).stdout)
    assert [row["interval95"][f"{BENCH} pass@1"] for row in table["table3"]["rows"]] == [
        [0.0, pytest.approx(16.11, abs=0.005)],
        [pytest.approx(2.79, abs=0.005), pytest.approx(30.10, abs=0.005)],
    ]
