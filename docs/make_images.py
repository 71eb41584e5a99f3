"""Regenerate every image in docs/images: the HTML report's screenshots and synthesis's summary.

    .venv/bin/python docs/make_images.py [--data-dir DIR] [--chromium PATH]

The report compares three real runs, made with ``codereasoner eval`` on CRUXEval-O, CoRE's
probes and REval: the oracle on 10 items (the self-check) and two scripted OpenAI-compatible
servers (``models/replay_server.py``) answering from the oracle's completions on some prompts
(a fixed, hash-chosen share) and wrongly on the others, one on 20 items and one on 10. The page
is rendered by headless Chromium. ``summary.png`` is what ``codereasoner synth --generator
offline --n 400 --seed 0 --no-decontam`` writes. Nothing outside the temporary folder changes
but docs/images.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from codereasoner.models.replay_server import Query, ReplayServer

DOCS = Path(__file__).resolve().parent
IMAGES = DOCS / "images"
BENCHES = "cruxeval-o,core-probe,reval"
WRONG = "[ANSWER]\nNone\n[/ANSWER]"
CODEREASONER = Path(sys.executable).with_name("codereasoner")


def codereasoner(*args: str | Path) -> None:
    done = subprocess.run([str(CODEREASONER), *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"codereasoner {args[0]} failed: {done.stderr.strip()}")


def evaluate(out: Path, model: str, limit: int, data_dir: Path | None) -> None:
    data = ["--data-dir", str(data_dir)] if data_dir else []
    codereasoner("eval", "--model", model, "--bench", BENCHES, "--limit", str(limit), *data,
                 "--out", out)  # fmt: skip


def oracle_answers(run: Path) -> dict[str, str]:
    with sqlite3.connect(run / "run.sqlite") as connection:
        rows = connection.execute(
            "SELECT p.text, c.text FROM completions c JOIN prompts p ON p.hash = c.prompt_hash"
        )
        return dict(rows)


def model(answers: dict[str, str], right_in_ten: int) -> Callable[[Query], str]:
    """A scripted model: right on about ``right_in_ten`` prompts in ten (chosen by hash)."""

    def reply(query: Query) -> str:
        share = int(hashlib.sha256(query.prompt.encode()).hexdigest(), 16) % 10
        return answers.get(query.prompt, WRONG) if share < right_in_ten else WRONG

    return reply


def screenshot(chromium: str, page: Path, shot: Path, height: int, profile: Path) -> None:
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={profile}", f"--window-size=1280,{height}", f"--screenshot={shot}",
         page.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip


def report_images(work: Path, data_dir: Path | None, chromium: str) -> None:
    runs = {name: work / name for name in ("answers", "oracle", "model-a", "model-b")}
    evaluate(runs["answers"], "oracle", 20, data_dir)
    evaluate(runs["oracle"], "oracle", 10, data_dir)
    answers = oracle_answers(runs["answers"])
    for name, limit, right in (("model-a", 20, 7), ("model-b", 10, 4)):
        with ReplayServer(reply=model(answers, right), model=name) as server:
            evaluate(runs[name], f"openai:{name}@{server.url}", limit, data_dir)
    page = work / "report.html"
    codereasoner("report", runs["oracle"], runs["model-a"], runs["model-b"], "--out", page)
    screenshot(chromium, page, IMAGES / "report.png", 1500, work / "profile")
    # the REval section: its plot (legend beside the bars) and its wide table
    text = page.read_text(encoding="utf-8")
    (work / "reval.html").write_text(_only_section(text, "reval"), encoding="utf-8")
    screenshot(chromium, work / "reval.html", IMAGES / "report-reval.png", 1100, work / "profile")


def _only_section(page: str, benchmark: str) -> str:
    """The page with its body cut to one benchmark's section (the same styles)."""
    head = page[: page.index("<body>") + len("<body>")]
    marker = f"<h2>{benchmark}</h2>"
    start = page.rindex("<section", 0, page.index(marker))
    end = page.index("</section>", start) + len("</section>")
    return f"{head}{page[start:end]}</body></html>\n"


def summary_image(work: Path) -> None:
    out = work / "synth"
    codereasoner("synth", "--generator", "offline", "--n", "400", "--seed", "0", "--no-decontam",
                 "--out", out)  # fmt: skip
    shutil.copyfile(out / "summary.png", IMAGES / "summary.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="benchmark data root")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    options = parser.parse_args()
    IMAGES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="codereasoner-images-") as folder:
        work = Path(folder)
        report_images(work, options.data_dir, options.chromium)
        summary_image(work)
    for image in sorted(IMAGES.glob("*.png")):
        print(image.relative_to(DOCS.parent))


if __name__ == "__main__":
    main()
