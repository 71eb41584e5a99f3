"""``codereasoner report --layout table3``: runs in rows, headline scores in columns, their avg.

The runs are real runner output (fixture data, real sandbox, real ``run.sqlite``): the oracle
(every answer right), a scripted server answering ``42`` to everything, and the oracle on the
pass@k benchmarks only (a run missing benchmarks).
"""

from __future__ import annotations

import json
import math
import shutil
from html.parser import HTMLParser
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from codereasoner.cli import app
from codereasoner.evaluation.report import choose_labels, load_runs, render, table3
from codereasoner.evaluation.report.data import ReportDataError
from codereasoner.evaluation.runner import SELF_CHECK, Runner, RunSettings
from codereasoner.execution import Pool
from codereasoner.models import load_backend
from codereasoner.models.replay_server import Query, ReplayServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BENCH = ("cruxeval-i", "cruxeval-o", "reval", "core")
PASS_AT_K = ("cruxeval-i", "cruxeval-o")
COLUMNS = [
    "core I",
    "cruxeval-i pass@1",
    "cruxeval-o pass@1",
    "reval coverage acc",
    "reval state acc",
    "reval path acc",
    "reval output acc",
]
REVAL_KINDS = ("coverage", "state", "path", "output")


def _run(out: Path, spec: str, benches: tuple[str, ...], pool: Pool) -> dict[str, Any]:
    settings = RunSettings(benches, data_dir=FIXTURES, limit=4)
    with Runner(out, load_backend(spec), settings, pool_factory=lambda: pool) as runner:
        return runner.run().reports


@pytest.fixture(scope="module")
def runs(pool: Pool, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Folder -> the reports its run stored; the folders are ``raw``, ``full``, ``rl-only``."""
    root = tmp_path_factory.mktemp("table3")

    def reply(query: Query) -> str:
        return "42"

    with ReplayServer(reply=reply) as server:
        raw = _run(root / "raw", f"openai:replay@{server.url}", BENCH, pool)
    return {
        "root": root,
        "raw": raw,
        "full": _run(root / "full", "oracle", BENCH, pool),
        "rl-only": _run(root / "rl-only", "oracle", PASS_AT_K, pool),
    }


def expected_scores(reports: dict[str, Any]) -> dict[str, float]:
    """The Table 3 cells, read from the stored reports by hand."""
    found = {f"{name} pass@1": reports[name]["pass@1"] for name in PASS_AT_K if name in reports}
    if "core" in reports:
        found["core I"] = reports["core"]["variants"]["project"]["mean"]["I"]
    if "reval" in reports:
        reval = reports["reval"]
        accuracies = {"coverage": reval["coverage"]["acc"]}
        accuracies |= {kind: reval[kind] for kind in REVAL_KINDS[1:]}
        found |= {f"reval {kind} acc": 100 * accuracies[kind] for kind in REVAL_KINDS}
    return found


def expected_errors(reports: dict[str, Any]) -> dict[str, float | None]:
    """The standard errors of the Table 3 cells (percent), read from the stored reports (None:
    none stored, e.g. REval's jackknife with a single program)."""
    found = {f"{name} pass@1": reports[name]["stderr"]["pass@1"] for name in PASS_AT_K}
    found["core I"] = reports["core"]["variants"]["project"]["mean"].get("stderr", {}).get("I")
    errors = reports["reval"]["stderr"]
    accuracies = {"coverage": errors.get("coverage", {}).get("acc")}
    accuracies |= {kind: errors.get(kind) for kind in REVAL_KINDS[1:]}
    found |= {
        f"reval {kind} acc": None if error is None else 100 * error
        for kind, error in accuracies.items()
    }
    return found


def expected_counts(reports: dict[str, Any]) -> dict[str, int | None]:
    """The items each Table 3 proportion is over (None: CoRE's I, not a proportion of items)."""
    found: dict[str, int | None] = {f"{name} pass@1": reports[name]["items"] for name in PASS_AT_K}
    found["core I"] = None
    found |= {f"reval {kind} acc": reports["reval"]["items"][kind] for kind in REVAL_KINDS}
    return found


def cell(score: float, error: float | None, count: int | None) -> str:
    """A proportion over known items with its Wilson 95% interval (computed here by its
    formula), else the score with its standard error where one was measured."""
    if count:
        p, z = score / 100, 1.959963984540054
        centre = (p + z * z / (2 * count)) / (1 + z * z / count)
        half = (
            z * math.sqrt(p * (1 - p) / count + z * z / (4 * count * count)) / (1 + z * z / count)
        )
        low, high = max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))
        return f"{score:.2f} [{100 * low:.2f}, {100 * high:.2f}]"
    return f"{score:.2f}" + (f" \u00b1 {error:.2f}" if error else "")


def cli(*args: str | Path) -> Result:
    """The command in this process (click's runner), 160 columns wide."""
    runner = CliRunner(env={"COLUMNS": "160"})
    return runner.invoke(app, ["report", *map(str, args)], catch_exceptions=False)


def folders(runs: dict[str, Any], *names: str) -> list[Path]:
    return [runs["root"] / name for name in names]


def test_rows_columns_and_averages(runs: dict[str, Any], tmp_path: Path) -> None:
    paths = folders(runs, "raw", "full", "rl-only")
    done = cli(*paths, "--layout", "table3", "--json", "--out", tmp_path / "r.html")
    assert done.exit_code == 0, done.stderr
    table = json.loads(done.stdout)["table3"]
    assert table["columns"] == COLUMNS and table["unit"] == "percent"
    assert [row["label"] for row in table["rows"]] == ["raw", "full", "rl-only"]
    for row in table["rows"]:
        expected = expected_scores(runs[row["label"]])
        assert {k: v for k, v in row["scores"].items() if v is not None} == pytest.approx(expected)
        assert row["avg"] == pytest.approx(fmean(expected.values()))
        assert row["missing"] == [column for column in COLUMNS if column not in expected]
    raw, full, rl_only = table["rows"]
    # every score's standard error, as stored (percent); none where the score is missing
    for row in (raw, full):
        assert row["stderr"] == pytest.approx(expected_errors(runs[row["label"]]))
    assert rl_only["stderr"]["core I"] is None and rl_only["stderr"]["cruxeval-o pass@1"] == 0.0
    assert [row["self_check"] for row in table["rows"]] == [False, True, True]
    assert full["avg"] == 100.0 and not full["missing"]
    assert raw["avg"] < 100.0 and raw["scores"]["cruxeval-o pass@1"] == 0.0
    assert rl_only["missing"] == ["core I", *COLUMNS[3:]] and rl_only["avg"] == 100.0
    assert "unweighted mean" in table["note"] and "its avg is over those it has" in table["note"]


def test_labels_name_the_runs_in_order(runs: dict[str, Any], tmp_path: Path) -> None:
    paths = folders(runs, "raw", "full", "rl-only")
    labels = ("--label", "base", "--label", "tuned")
    done = cli(*paths, "--layout", "table3", *labels, "--json", "--out", tmp_path / "r.html")
    assert done.exit_code == 0, done.stderr
    summary = json.loads(done.stdout)
    assert [row["label"] for row in summary["table3"]["rows"]] == ["base", "tuned", "rl-only"]
    assert [run["label"] for run in summary["runs"]] == ["base", "tuned", "rl-only"]
    assert set(summary["scores"]["cruxeval-o"]["pass@1"]) == {"base", "tuned", "rl-only"}


def test_the_terminal_table(runs: dict[str, Any], tmp_path: Path) -> None:
    paths = folders(runs, "full", "rl-only")
    done = cli(*paths, "--layout", "table3", "--out", tmp_path / "r.html")
    assert done.exit_code == 0, done.stderr
    text = done.stdout
    assert "Table 3 layout" in text and "avg" in text and "scores per benchmark" not in text
    rows = [line.strip("│ ") for line in text.splitlines() if line.startswith("│")]
    full = next(row for row in rows if row.startswith("full"))
    errors, counts = expected_errors(runs["full"]), expected_counts(runs["full"])
    shown = [cell(100.0, errors[name], counts[name]) for name in COLUMNS]
    assert [text.strip() for text in full.split("│")[1:]] == [*shown, "100.00"]
    # a proportion at 100% keeps a lower bound below it: no "± 0.00" anywhere
    assert sum("[" in text for text in shown) == len(COLUMNS) - 1 and "± 0.00" not in full
    assert full.startswith("full (SELF-CHECK)")  # the oracle's run, tagged
    flagged = next(row for row in rows if row.startswith("rl-only"))
    assert flagged.count("-") >= len(COLUMNS) - 2 and "100.00*" in flagged
    assert "unweighted mean" in text.replace("\n", " ")
    assert SELF_CHECK in text.replace("\n", " ")


class Table3Parser(HTMLParser):
    """The text of each cell of the page's Table 3 section, per row."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.cell = False, False
        self.rows, self.links, self.ids = list[list[str]](), list[str](), list[str]()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(found["id"])
        if tag == "a" and (found.get("href") or "").startswith("#"):
            self.links.append(str(found["href"])[1:])
        if tag == "section":
            self.inside = found.get("id") == "table3"
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.rows[-1].append("")
            self.cell = True

    def handle_data(self, data: str) -> None:
        if self.cell:
            self.rows[-1][-1] += data

    def handle_endtag(self, tag: str) -> None:
        self.inside = self.inside and tag != "section"
        self.cell = self.cell and tag not in ("td", "th")


def test_the_html_section(runs: dict[str, Any]) -> None:
    loaded = load_runs(folders(runs, "raw", "full", "rl-only"))
    labels = choose_labels(loaded, ["raw model"], "table3")
    page = render(loaded, labels, table3(loaded, labels))
    parsed = Table3Parser()
    parsed.feed(page)
    header, *rows = parsed.rows
    assert header == ["run", *(column.replace(" ", "", 1) for column in COLUMNS), "avg"]
    # the oracle's runs: labelled as self-checks, and never "best"
    assert [row[0] for row in rows] == ["raw model", "full SELF-CHECK", "rl-only SELF-CHECK"]
    assert 'class="best"' not in page[page.index('id="table3"') : page.index('id="runs"')]
    full, counts = expected_errors(runs["full"]), expected_counts(runs["full"])
    assert rows[1][1:] == [cell(100.0, full[name], counts[name]) for name in COLUMNS] + ["100.00"]
    assert rows[2][4:-1] == ["-"] * 4 and rows[2][-1] == "100.00*"
    errors, scores = expected_errors(runs["raw"]), expected_scores(runs["raw"])
    counts = expected_counts(runs["raw"])
    assert rows[0][1:-1] == [cell(scores[name], errors[name], counts[name]) for name in COLUMNS]
    assert all("[" in text for text in rows[0][2:-1])
    assert "table3" in parsed.links and set(parsed.links) <= set(parsed.ids)
    assert page.index('id="table3"') < page.index('id="runs"')
    assert "unweighted mean" in page and "<script" not in page
    plain = render(loaded)
    assert 'id="table3"' not in plain and ">raw model<" not in plain


def test_the_default_layout_is_unchanged(runs: dict[str, Any], tmp_path: Path) -> None:
    paths = folders(runs, "raw", "full")
    done = cli(*paths, "--json", "--out", tmp_path / "r.html")
    assert done.exit_code == 0, done.stderr
    summary = json.loads(done.stdout)
    models = [run.model for run in load_runs(paths)]
    assert models[1] == "oracle" and models[0].startswith("openai:replay")
    # the default label: the model's short name, not its server's URL
    assert "table3" not in summary and [run["label"] for run in summary["runs"]] == [
        "replay",
        "oracle",
    ]
    assert 'id="table3"' not in (tmp_path / "r.html").read_text()
    labelled = json.loads(
        cli(*paths, "--json", "--label", "mine", "--out", tmp_path / "r.html").stdout
    )
    assert [run["label"] for run in labelled["runs"]] == ["mine", "oracle"]  # the rest: model


def _one_error_line(done: Result, *words: str) -> None:
    assert done.exit_code == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_user_mistakes_are_one_line(runs: dict[str, Any], tmp_path: Path) -> None:
    paths = folders(runs, "raw", "full")
    out = tmp_path / "r.html"
    _one_error_line(cli(*paths, "--layout", "table4", "--out", out), "--layout", "table3")
    same = ("--label", "x", "--label", "x")
    _one_error_line(cli(*paths, "--layout", "table3", *same, "--out", out), "'x'", "--label")
    many = ("--label", "a", "--label", "b", "--label", "c")
    _one_error_line(cli(*paths, *many, "--out", out), "3 labels for 2 run(s)")
    _one_error_line(cli(*paths, "--label", " ", "--out", out), "empty")
    twin = tmp_path / "elsewhere" / "full"
    shutil.copytree(runs["root"] / "full", twin)
    both = (runs["root"] / "full", twin)
    _one_error_line(cli(*both, "--layout", "table3", "--out", out), "'full'", "--label")
    assert not out.exists()
    done = cli(*both, "--layout", "table3", "--label", "a", "--out", out)
    assert done.exit_code == 0, done.stderr


def test_choose_labels_directly(runs: dict[str, Any]) -> None:
    loaded = load_runs(folders(runs, "raw", "full"))
    assert choose_labels(loaded, [], "table3") == ["raw", "full"]
    assert choose_labels(loaded, [], "benchmarks") == ["replay", "oracle"]
    with pytest.raises(ReportDataError, match="--layout 'wide'"):
        choose_labels(loaded, [], "wide")


def test_a_probe_benchmark_is_headed_by_ws(pool: Pool, tmp_path: Path) -> None:
    """core-probe reports no invariance (I): its column is Ws, with the stored value."""
    stored = _run(tmp_path / "probe", "oracle", ("core-probe",), pool)
    done = cli(tmp_path / "probe", "--layout", "table3", "--json", "--out", tmp_path / "r.html")
    assert done.exit_code == 0, done.stderr
    table = json.loads(done.stdout)["table3"]
    assert table["columns"] == ["core-probe Ws"]
    ws = stored["core-probe"]["variants"]["project"]["mean"]["Ws"]
    assert table["rows"][0]["scores"]["core-probe Ws"] == pytest.approx(ws)


def test_a_cons_of_nothing_right_is_never_marked_best(runs: dict[str, Any]) -> None:
    """A model with I and W both 0 has CoRE Cons 1 by construction: shown, never starred."""
    loaded = load_runs(folders(runs, "raw", "full"))
    mean = runs["raw"]["core"]["variants"]["project"]["mean"]
    assert (mean["I"], mean["W"], mean["Cons_paper"]) == (0.0, 0.0, 1.0)
    page = render(loaded, ["raw", "full"])
    section = page[page.index("<h3>Both gradings</h3>") :]
    section = section[: section.index("</table>")]
    rows = [row for row in section.split("<tr>") if "Cons_" in row]
    assert len(rows) == 4 and not any('class="best"' in row for row in rows)
    assert "Higher is better for every score shown" in page and "everywhere" not in page
