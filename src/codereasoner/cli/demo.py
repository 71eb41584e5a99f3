"""``codereasoner demo``: an offline, end-to-end demonstration of the execution engine.

Runs CRUXEval-style output-prediction items in the sandbox to get ground truth, grades a set of
model answers (right, wrong, unparsable and adversarial) in the parent, and shows hostile programs
being contained.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from codereasoner import values
from codereasoner.cli.common import IsolationFlag, check_file, console, fail, open_pool, safe_markup
from codereasoner.execution import Batch, Limits, Program, Status, parse_call
from codereasoner.files import write_atomic


@dataclass(frozen=True)
class DemoItem:
    name: str
    source: str
    call: str
    answer: str  # what a model might answer for the output


ITEMS = [
    DemoItem(
        "filter vowels",
        "def f(text):\n    return [c for c in text if c not in 'aeiou']",
        "f('banana')",
        "['b', 'n', 'n']",
    ),
    DemoItem(
        "running total",
        "def f(nums):\n    total = 0\n    for n in nums:\n        if n % 2:\n"
        "            total += n\n    return total",
        "f([1, 2, 3, 4, 5])",
        "9",
    ),
    DemoItem(
        "dict inversion",
        "def f(d):\n    return {v: k for k, v in d.items()}",
        "f({'a': 1, 'b': 2})",
        "{2: 'b', 1: 'a'}",
    ),
    DemoItem(
        "tuple vs list", "def f(x):\n    return tuple(sorted(x))", "f([3, 1, 2])", "[1, 2, 3]"
    ),
    DemoItem("JSON spelling", "def f(s):\n    return s.isdigit()", "f('123')", "true"),
    DemoItem("wrong answer", "def f(s):\n    return s.upper().count('A')", "f('abracadabra')", "4"),
    DemoItem(
        "always-equal answer",
        "def f(x):\n    return x * 2",
        "f(21)",
        "type('X', (), {'__eq__': lambda s, o: True})()",
    ),
    DemoItem("answer that calls f", "def f(x):\n    return x * 2", "f(21)", "f( 21)"),
    DemoItem(
        "set rendering",
        "def f(words):\n    return set(w[0] for w in words)",
        "f(['apple', 'avocado', 'banana'])",
        "{'b', 'a'}",
    ),
    DemoItem(
        "infinite loop", "def f(n):\n    while n > 0:\n        n += 1\n    return n", "f(1)", "0"
    ),
    DemoItem(
        "reads /etc/shadow", "def f():\n    return open('/etc/shadow').read()[:10]", "f()", "''"
    ),
    DemoItem("fork bomb", "import os\ndef f():\n    while True:\n        os.fork()", "f()", "None"),
    DemoItem("memory bomb", "def f():\n    return len('x' * (8 << 30))", "f()", "8589934592"),
    DemoItem(
        "connects out",
        "import socket\ndef f():\n    return socket.create_connection(('1.1.1.1', 80)) and 1",
        "f()",
        "1",
    ),
]


def grade(answer_text: str, result_value: object, result_ok: bool) -> tuple[str, str]:
    """Verdict for one answer, decided here in the parent from parsed literals."""
    if not result_ok:
        return "no ground truth", "dim"
    try:
        answer = values.parse(answer_text)
    except values.ValueParseError as exc:
        return f"wrong (unparsable: {exc})", "red"
    if values.equal(answer, result_value, "strict"):
        return "correct", "green"
    return "wrong", "red"


def demo_command(
    out: Annotated[
        Path | None, typer.Option(help="Also write one JSON record per item here.")
    ] = None,
    isolation: IsolationFlag = "auto",
) -> None:
    """Run the built-in demonstration: ground truth in the sandbox, verdicts in the parent."""
    if out is not None:
        check_file("--out", out)  # before anything runs
    limits = Limits(timeout_s=1.0, memory_mb=256)
    with open_pool(limits=limits, isolation=isolation, show_progress=False) as pool:
        batches = [Batch(Program(item.source), [parse_call(item.call)]) for item in ITEMS]
        results = [batch[0] for batch in pool.map(batches)]
        description = pool.isolation
    table = Table(
        title="codereasoner demo: output prediction, executed in the sandbox", title_justify="left"
    )
    for column in ("item", "call", "sandbox result", "model answer", "verdict"):
        table.add_column(column, overflow="fold")
    records = []
    for item, result in zip(ITEMS, results, strict=True):
        truth = result.parsed_value() if result.ok and result.is_literal else None
        verdict, style = grade(item.answer, truth, result.ok and result.is_literal)
        shown = (
            result.value
            if result.ok
            else f"{result.status.value}: {result.exception_type or ''}".rstrip(": ")
        )
        status_style = "green" if result.ok else "yellow"
        table.add_row(
            safe_markup(item.name),
            safe_markup(item.call),
            f"[{status_style}]{safe_markup(shown or '')}[/]",
            safe_markup(item.answer),
            f"[{style}]{safe_markup(verdict)}[/]",
        )
        records.append(
            {
                "item": item.name,
                "call": item.call,
                "result": result.to_dict(),
                "answer": item.answer,
                "verdict": verdict,
            }
        )
    console.print(table)
    contained = sum(result.status is not Status.OK for result in results)
    console.print(f"[dim]sandbox: {description}[/]")
    console.print(
        f"{len(ITEMS)} items; {contained} hostile or failing programs contained; "
        "every verdict was computed in the parent from parsed literals."
    )
    if out is not None:
        try:
            write_atomic(out, "".join(json.dumps(record) + "\n" for record in records))
        except OSError as exc:
            fail(f"--out {out}: cannot write ({exc.strerror or exc})")
        console.print(f"records written to {safe_markup(out)}")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_command)
