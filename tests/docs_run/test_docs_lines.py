"""Every shell line of the README, recipes/README.md and docs/*.md either runs as written in
the docs-run tier (tests/docs_run/test_docs_run.py) or is skipped for a stated reason that
holds on this machine. The runner itself is checked on a page of quick lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs_run.runner import run_document
from tests.docs_run.steps import (
    ROOT,
    DocumentState,
    Step,
    all_steps,
    remember,
    why_not_here,
)

pytestmark = pytest.mark.docs

REASONS = (
    "installs software",
    "needs GPUs",
    "needs a Ray cluster",
    "a benchmark or study script",
    "a usage line:",
    "needs a model server at",
    "waits for a model server",
    "stops a server",
    "downloads from the benchmark's source",
    "reads ",
    "needs the plugin the page builds",
    "needs transformers' serving extra",
)


def test_every_line_runs_or_says_why_not() -> None:
    steps = all_steps()
    unexplained = [str(step) for step in steps if step.skip and not step.skip.startswith(REASONS)]
    assert not unexplained, unexplained
    runs = [step for step in steps if step.skip is None]
    assert len(runs) >= 60, len(runs)
    commands = {
        tuple(step.text.split()[1:2]) for step in runs if step.text.startswith("codereasoner")
    }
    for command in ("eval", "score", "synth", "distill", "export", "train", "report", "core"):
        assert (command,) in commands, command


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("codereasoner eval --model vllm:Qwen/Qwen2.5-7B --bench cruxeval-o", "needs GPUs"),
        ("codereasoner eval --model openai:m@http://127.0.0.1:8000/v1", "needs a model server"),
        ("codereasoner train sft --config RECIPE.yaml", "a usage line: RECIPE.yaml"),
        ("codereasoner eval --model oracle --data-dir /path/to/data", "a usage line"),
        ("codereasoner report runs/theirs", "reads runs/theirs, the reader's own"),
        ("codereasoner bench fetch reval", "downloads"),
        ("codereasoner eval --model oracle --bench no-such-bench", "needs the plugin"),
        ("codereasoner synth --generator offline --n 1 --executor ray:HEAD:6379", "needs a Ray"),
    ],
)
def test_a_line_that_cannot_run_here_says_why(line: str, reason: str) -> None:
    said = why_not_here(Step("x.md", 1, line), DocumentState())
    assert said is not None and said.startswith(reason), said


def test_a_line_that_reads_a_skipped_lines_output_is_skipped_with_it() -> None:
    state = DocumentState()
    skipped = Step("x.md", 1, "codereasoner eval --model vllm:m --bench cruxeval-o --out runs/q")
    skipped.skip = why_not_here(skipped, state)
    remember(skipped, state)
    after = why_not_here(Step("x.md", 2, "codereasoner report runs/q"), state)
    assert after == "reads runs/q, which a skipped line writes (x.md:1)"
    runnable = Step("x.md", 3, "codereasoner synth --generator offline --n 5 --out runs/s")
    assert why_not_here(runnable, state) is None


def test_a_page_of_quick_lines_runs_as_written(tmp_path: Path) -> None:
    outcomes = run_document(ROOT / "docs" / "tracing.md", tmp_path, None, timeout_s=300)
    assert [o.status for o in outcomes] == ["ran"] * 3, [o.line() for o in outcomes]
    assert (tmp_path / "outcomes.json").is_file()


def test_a_failing_line_is_reported_with_its_last_words(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('```bash\ncodereasoner trace prog.py --call "g(1)"\n```\n')
    outcomes = run_document(page, tmp_path / "run", None, timeout_s=300)
    assert [o.status for o in outcomes] == ["failed"]
    assert outcomes[0].detail.startswith("exit ")
