"""Evaluation runner: harness CPU per sample, and requests in flight, against a baseline.

The replay server runs in its own process (its CPU is not counted). Two measurements:

1. harness overhead, zero-latency server: ``codereasoner.evaluation.runner.Runner`` over
   CRUXEval-O and -I (prompt building, the completion cache, one SQLite transaction per request,
   extraction, grading, the report). Reported: CPU ms per sample of this process, all threads,
   as a whole and without the HTTP client (the CPU inside ``backend.generate`` other than the
   runner's own storage callback); sandbox workers are other processes and are not counted.
   Baseline: a naive sequential harness doing the same work one sample at a time (urllib POST,
   extract, ``task.score`` through the same pool, an INSERT and a commit per sample).
2. concurrency, 200 ms server: the most requests the server saw in flight at once during a
   runner pass (target: at least 256), and the throughput against the sequential baseline on a
   subset (its wall time scales linearly: one request at a time).

    python bench/runner.py [--data-dir /work/shared/data] [--latency 0.2] [--concurrency 512]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from codereasoner import benchmarks, tasks
from codereasoner.evaluation.runner import Runner, RunSettings, load_items
from codereasoner.execution import Pool
from codereasoner.models import Completion, Request, load_backend
from codereasoner.models.base import OnResult
from codereasoner.models.replay_server import ReplayProcess
from codereasoner.tasks import OFFICIAL_LIMITS

BENCHES = ("cruxeval-o", "cruxeval-i")


class Metered:
    """A backend wrapper that separates the HTTP client's CPU from the runner's callback."""

    def __init__(self, backend: object) -> None:
        self.backend = backend
        self.generate_cpu = 0.0
        self.callback_cpu = 0.0

    @property
    def model_id(self) -> str:
        return self.backend.model_id  # type: ignore[attr-defined]

    def preflight(self) -> None:
        self.backend.preflight()  # type: ignore[attr-defined]

    def close(self) -> None:
        self.backend.close()  # type: ignore[attr-defined]

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        def timed(index: int, completions: list[Completion]) -> None:
            start = time.thread_time()
            on_result(index, completions)
            self.callback_cpu += time.thread_time() - start

        start = time.process_time()
        self.backend.generate(requests, timed)  # type: ignore[attr-defined]
        self.generate_cpu += time.process_time() - start


def run_ours(url: str, data_dir: Path, pool: Pool, concurrency: int, out: Path) -> dict:
    backend = Metered(load_backend(f"openai:replay@{url}", concurrency=concurrency))
    settings = RunSettings(BENCHES, data_dir=data_dir)
    started, cpu = time.perf_counter(), time.process_time()
    with Runner(out, backend, settings, pool_factory=lambda: pool) as runner:  # type: ignore[arg-type]
        summary = runner.run()
    cpu = time.process_time() - cpu
    samples = sum(report["samples"] for report in summary.reports.values())
    client = backend.generate_cpu - backend.callback_cpu
    return {
        "samples": samples,
        "wall_s": time.perf_counter() - started,
        "cpu_ms": 1000 * cpu / samples,
        "harness_cpu_ms": 1000 * (cpu - client) / samples,
    }


def run_baseline(url: str, data_dir: Path, pool: Pool, out: Path, limit: int | None = None) -> dict:
    """One sample at a time: POST, extract, grade, INSERT + commit."""
    connection = sqlite3.connect(out)
    connection.execute(
        "CREATE TABLE IF NOT EXISTS scores (bench TEXT, id TEXT, text TEXT, "
        "correct INTEGER, PRIMARY KEY (bench, id))"
    )
    started, cpu, samples = time.perf_counter(), time.process_time(), 0
    for name in BENCHES:
        bench = benchmarks.get(name)
        items = load_items(bench, data_dir)[:limit]
        for item in items:
            task = tasks.get(item.task)
            prompt = task.prompt(item, "direct")
            body = json.dumps(
                {
                    "model": "replay",
                    "prompt": prompt,
                    "max_tokens": 1024,
                    "temperature": 0.0,
                    "stop": ["[/ANSWER]"],
                }
            ).encode()
            request = urllib.request.Request(
                f"{url}/completions", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request) as response:
                text = json.loads(response.read())["choices"][0]["text"]
            verdict = task.score(item, task.extract(item, text, "direct"), pool)
            connection.execute(
                "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)",
                (name, item.id, text, int(verdict.correct)),
            )
            connection.commit()
            samples += 1
    cpu = time.process_time() - cpu
    connection.close()
    return {
        "samples": samples,
        "wall_s": time.perf_counter() - started,
        "cpu_ms": 1000 * cpu / samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(__file__).resolve().parents[1].parent / "shared" / "data",
    )
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=512)
    parser.add_argument(
        "--baseline-subset",
        type=int,
        default=40,
        help="items per benchmark for the sequential baseline at --latency",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Pool(limits=OFFICIAL_LIMITS) as pool:
        root = Path(tmp)
        with ReplayProcess(latency_s=0.0) as server:
            ours = run_ours(server.url, args.data_dir, pool, args.concurrency, root / "ours0")
            base = run_baseline(server.url, args.data_dir, pool, root / "base0.sqlite")
        print(f"1. harness, zero-latency server, {ours['samples']} samples (CRUXEval-O and -I)")
        print(
            f"   ours:     {ours['cpu_ms']:.3f} ms CPU/sample in all "
            f"({ours['harness_cpu_ms']:.3f} ms without the HTTP client), "
            f"wall {ours['wall_s']:.2f} s"
        )
        print(
            f"   baseline: {base['cpu_ms']:.3f} ms CPU/sample, wall {base['wall_s']:.2f} s "
            "(sequential: POST, extract, grade, commit per sample)"
        )
        print(
            f"   ratio baseline/ours: CPU {base['cpu_ms'] / ours['cpu_ms']:.2f}x, "
            f"wall {base['wall_s'] / ours['wall_s']:.2f}x"
        )
        with ReplayProcess(latency_s=args.latency) as server:
            ours = run_ours(server.url, args.data_dir, pool, args.concurrency, root / "ours1")
            in_flight = server.stats()["max_in_flight"]
            server.reset()
            base = run_baseline(
                server.url, args.data_dir, pool, root / "base1.sqlite", args.baseline_subset
            )
            base_in_flight = server.stats()["max_in_flight"]
        ours_rate = ours["samples"] / ours["wall_s"]
        base_rate = base["samples"] / base["wall_s"]
        print(
            f"2. concurrency, {1000 * args.latency:.0f} ms server, --concurrency {args.concurrency}"
        )
        print(
            f"   ours:     {in_flight} requests in flight at most, {ours_rate:.0f} samples/s "
            f"({ours['samples']} samples in {ours['wall_s']:.2f} s)"
        )
        print(
            f"   baseline: {base_in_flight} in flight, {base_rate:.1f} samples/s "
            f"({base['samples']} samples in {base['wall_s']:.2f} s)"
        )
        print(f"   ratio ours/baseline throughput: {ours_rate / base_rate:.1f}x")


if __name__ == "__main__":
    main()
