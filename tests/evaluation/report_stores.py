"""Run stores for the report tests, written the way the runner writes them, with real scores.

Each ``add_*`` loads real benchmark items, extracts and grades real (fixture or official)
generations with the project's own scoring, and stores prompts, items, completions, scores and
the same report ``codereasoner score --json`` prints. :func:`legend_overlaps` checks a written
page in headless Chromium.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from codereasoner import benchmarks, tasks
from codereasoner.evaluation import score
from codereasoner.evaluation.reports import pass_report
from codereasoner.evaluation.store import connect
from codereasoner.execution import Pool
from codereasoner.families.core.report import core_report
from codereasoner.families.reval import benchmark as reval
from codereasoner.families.reval.report import reval_report
from codereasoner.families.reval.scoring import score_reval
from codereasoner.models.base import Sampling, prompt_hash
from codereasoner.tasks import Answer, Extracted, Extraction, Grading, Item, Score, Style

SAMPLING = Sampling(temperature=0.2, top_p=0.95, max_tokens=256)
CREATED = 1_790_000_000.0  # fixed, so that reports of these stores are reproducible


def new_store(
    run_dir: Path, model: str, run_id: str, benches: Sequence[str], n: int = 10
) -> sqlite3.Connection:
    """A fresh store with its ``run`` row (status ``done``; ``n`` samples per item at most)."""
    connection = connect(run_dir / "run.sqlite", create=True)
    config = {
        "benchmarks": list(benches),
        "n": n,
        "sampling": json.loads(SAMPLING.key()),
        "style": "direct",
        "extraction": "official",
        "grading": "official",
    }
    connection.execute(
        "INSERT INTO run VALUES (?, ?, ?, ?, ?, 'done', '')",
        (run_id, model, CREATED, CREATED + 60, json.dumps(config)),
    )
    connection.commit()
    return connection


def _store_samples(
    connection: sqlite3.Connection,
    model: str,
    bench_name: str,
    items: Sequence[Item],
    prompts: Mapping[str, str],
    texts: Mapping[str, Sequence[str]],
    category_key: str,
    scores: Mapping[str, Sequence[Score]],
) -> None:
    for item in items:
        hashed = prompt_hash(prompts[item.id])
        connection.execute(
            "INSERT OR IGNORE INTO prompts VALUES (?, ?, 0, NULL)", (hashed, prompts[item.id])
        )
        category = str(item.metadata.get(category_key, item.task or "?"))
        connection.execute(
            "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                bench_name,
                item.id,
                item.task,
                hashed,
                item.truth,
                category,
                json.dumps(dict(item.metadata), default=str),
            ),
        )
        for sample, text in enumerate(texts[item.id]):
            connection.execute(
                "INSERT INTO completions VALUES (?, ?, ?, ?, ?, 'stop', NULL, NULL, 0.5, ?)",
                (model, hashed, SAMPLING.key(), sample, text, CREATED),
            )
        for verdict in scores[item.id]:
            connection.execute(
                "INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    bench_name,
                    item.id,
                    verdict.sample,
                    verdict.answer,
                    int(verdict.correct),
                    verdict.reason.value,
                    verdict.detail,
                    int(verdict.skipped),
                ),
            )


def _result(connection: sqlite3.Connection, bench_name: str, report: dict[str, Any]) -> None:
    connection.execute(
        "INSERT INTO results VALUES (?, ?, ?)", (bench_name, json.dumps(report), CREATED + 30)
    )
    connection.commit()


def add_official(
    connection: sqlite3.Connection,
    model: str,
    bench_name: str,
    data_dir: Path,
    generations: Path,
    pool: Pool,
    *,
    limit: int | None = None,
    replace: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Grade an official ``{id: [answers]}`` file (first ``limit`` items; ``replace`` swaps
    every sample of an item for that text) and store it; returns the report."""
    bench = benchmarks.get(bench_name)
    items = bench.load(data_dir)[:limit]
    raw = json.loads(generations.read_text())
    texts = {
        item.id: [replace[item.id]] * len(raw[item.id])
        if replace and item.id in replace
        else list(raw[item.id])
        for item in items
    }
    answers: dict[str, list[Extracted]] = {key: [Answer(t) for t in v] for key, v in texts.items()}
    ks = [1, 5] if min(len(v) for v in texts.values()) >= 5 else [1]
    scored = score(bench, items, answers, pool)
    prompts = {item.id: tasks.get(item.task).prompt(item) for item in items}
    _store_samples(
        connection, model, bench_name, items, prompts, texts, bench.breakdown, scored.scores
    )
    report = pass_report(scored, None, ks, str(generations), "official", 0.0).to_dict()
    _result(connection, bench_name, report)
    return report


def add_core(
    connection: sqlite3.Connection,
    model: str,
    data_dir: Path,
    generations: Path,
    unsure: Sequence[str] = (),
) -> dict[str, Any]:
    """Grade CoRE JSON Lines completions under both gradings, as ``score --bench core``;
    the items in ``unsure`` get a completion with no answer instead."""
    bench = benchmarks.get("core")
    items = bench.load(data_dir)
    texts: dict[str, list[str]] = {}
    for line in generations.read_text().splitlines():
        record = json.loads(line)
        text = "I cannot tell." if record["id"] in unsure else record["completion"]
        texts.setdefault(record["id"], []).append(text)
    by_id = {item.id: item for item in items}
    answers = {
        key: [
            tasks.get(by_id[key].task).extract(by_id[key], text, "direct", Extraction.ROBUST)
            for text in value
        ]
        for key, value in texts.items()
    }
    project = score(bench, items, answers, None, grading=Grading.STRICT)
    prompts = {item.id: tasks.get(item.task).prompt(item) for item in items}
    _store_samples(
        connection, model, "core", items, prompts, texts, bench.breakdown, project.scores
    )
    report = core_report(bench, items, answers, str(generations), "jsonl").to_dict()
    _result(connection, "core", report)
    return report


def reval_items(data_dir: Path, pool: Pool, cache: Path) -> list[Item]:
    paths = {name: data_dir / name for name in (reval.DATA.filename, reval.TASKS.filename)}
    return reval.load(paths, pool=pool, cache=cache)


def add_reval(
    connection: sqlite3.Connection, model: str, items: Sequence[Item], pool: Pool, right: int
) -> dict[str, Any]:
    """Answer every ``right``-th REval question with its gold text, the rest with nonsense."""
    texts = {
        item.id: [item.truth if index % right == 0 else "I am not sure."]
        for index, item in enumerate(items)
    }
    answers = {
        item.id: [
            tasks.get(item.task).extract(item, text, Style.DIRECT, Extraction.OFFICIAL)
            for text in texts[item.id]
        ]
        for item in items
    }
    scored = score_reval(items, answers, pool)
    prompts = {item.id: tasks.get(item.task).prompt(item) for item in items}
    _store_samples(connection, model, "reval", items, prompts, texts, "kind", scored.scores)
    report = reval_report(
        benchmarks.get("reval"),
        scored,
        {},
        Style.DIRECT,
        Extraction.OFFICIAL,
        generations="built by the test",
        fmt="jsonl",
    ).to_dict()
    _result(connection, "reval", report)
    return report


# Injected into a test copy of the page: per plot, the rendered boxes of its legend and of its
# data marks (bars, points: the ids plots.py gives them), and the marks the legend overlaps.
OVERLAPS = """<script>(() => {
  const overlaps = [];
  let plots = 0, marks = 0;
  for (const svg of document.querySelectorAll("figure svg")) {
    const legend = svg.querySelector('[id$="-legend"]');
    if (!legend) continue;
    plots += 1;
    const box = legend.getBoundingClientRect();
    for (const mark of svg.querySelectorAll('[id*="-mark_"]')) {
      marks += 1;
      const r = mark.getBoundingClientRect();
      if (r.left < box.right && box.left < r.right && r.top < box.bottom && box.top < r.bottom)
        overlaps.push(mark.id);
    }
  }
  const pre = document.createElement("pre");
  pre.id = "overlaps";
  pre.textContent = JSON.stringify({plots, marks, overlaps});
  document.body.appendChild(pre);
})();</script>"""
# A control: the same legends moved over the plots' data, which the check must catch.
MOVED = '<style>g[id$="-legend"] { transform: translate(-45%, 40%); }</style>'


def legend_overlaps(
    chromium: str, page: Path, tmp_path: Path, moved: bool = False
) -> dict[str, Any]:
    """What the injected script found in headless Chromium (``--dump-dom``): ``plots`` (with a
    legend), ``marks`` (their bars and points) and ``overlaps`` (the marks under a legend)."""
    text = page.read_text(encoding="utf-8").replace("</body>", OVERLAPS + "</body>")
    if moved:
        text = text.replace("</head>", MOVED + "</head>")
    copy = tmp_path / f"overlaps-{'moved' if moved else 'as-written'}.html"
    copy.write_text(text, encoding="utf-8")
    browser = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu",
        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1600",
    ]  # fmt: skip
    dom = subprocess.run(
        [*browser, "--dump-dom", copy.as_uri()], capture_output=True, text=True, timeout=90
    ).stdout
    found = re.search(r'<pre id="overlaps">([^<]*)</pre>', dom)
    assert found, dom[-2000:]
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result
