"""Run a document's shell lines as a reader would: in one scratch folder, in order, with the
project's environment, each to its end. Lines that cannot run here are reported with their
reason (``steps.why_not_here``); every other line must exit 0.

The reader's own files that the docs assume (``prog.py``, CRUXEval's official samples, a
generations file, the data root, files downloaded by hand) are provided, and the download cache
is filled from the data root by ``bench fetch --from``, the documented offline path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.docs_run.steps import Step, read_steps, words_of

INPUTS = Path(__file__).resolve().parent / "inputs"
REPOSITORY = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# one benchmark of each dataset the data root holds in its download form (CoRE's built files are
# not: its lines pass --data-dir ./data)
CACHED = ("cruxeval-o", "reval")
SAMPLES = "cruxeval/samples/sample_codellama-7b_temp0.2_output_generations.json"
ASSIGNMENT = re.compile(r"^(?:export\s+)?([A-Z_][A-Z0-9_]*)=")


@dataclass
class Outcome:
    step: Step
    status: str  # ran, skipped, failed
    seconds: float = 0.0
    detail: str = ""

    def line(self) -> str:
        said = f" ({self.detail})" if self.detail else ""
        return f"{self.status:7} {self.seconds:7.1f} s  {self.step}{said}"


class DocumentRun:
    """One document's lines in ``folder``; servers it starts are stopped by :meth:`close`."""

    def __init__(
        self, folder: Path, data: Path | None, timeout_s: float, cache: Path | None = None
    ) -> None:
        self.folder = folder
        self.data = data
        self.timeout_s = timeout_s
        self.logs = folder / ".logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS",)}
        self.env.update(
            PATH=f"{BIN}{os.pathsep}{self.env.get('PATH', '')}",
            HF_HUB_OFFLINE="1",
            CODEREASONER_CACHE=str(cache or folder / ".cache"),
            PYTHONPATH=str(REPOSITORY / "src"),
        )
        self.servers: list[subprocess.Popen[bytes]] = []
        self.generations_written = False

    def prepare(self) -> None:
        shutil.copy(INPUTS / "prog.py", self.folder / "prog.py")
        # the reader types the lines in a checkout: its recipes are at hand
        (self.folder / "recipes").symlink_to(REPOSITORY / "recipes")
        if self.data is None:
            return
        (self.folder / "data").symlink_to(self.data)
        (self.folder / "downloads").symlink_to(self.data / "cruxeval")
        shutil.copy(self.data / SAMPLES, self.folder / "samples.json")

    def fill_cache(self) -> None:
        """The download cache, from the data root (``bench fetch --from``), once per cache."""
        if self.data is None:
            return
        for name in CACHED:
            self._quiet("bench", "fetch", name, "--from", str(self.data))

    def run(self, step: Step) -> Outcome:
        if step.skip is not None:
            return Outcome(step, "skipped", detail=step.skip)
        started = time.monotonic()
        try:
            detail = self._run(step)
        except subprocess.TimeoutExpired:
            detail = f"still running after {self.timeout_s:.0f} s"
        seconds = time.monotonic() - started
        return Outcome(step, "failed" if detail else "ran", seconds, detail or "")

    def _run(self, step: Step) -> str | None:
        words = words_of(step.text)
        if words[:1] == ["kill"]:
            self._stop(self.servers.pop())
            return None
        assigned = ASSIGNMENT.match(step.text)
        if assigned:
            return self._assign(step.text, assigned.group(1))
        if step.background:
            return self._serve(step)
        self._reader_generations(words)
        log = self.logs / f"{step.number}.log"
        with log.open("wb") as out:
            done = subprocess.run(
                ["bash", "-c", step.text], cwd=self.folder, env=self.env, stdout=out,
                stderr=subprocess.STDOUT, timeout=self.timeout_s, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        if "gens.jsonl" in step.text and "--out gens.jsonl" in step.text:
            self.generations_written = True
        if done.returncode != 0:
            return f"exit {done.returncode}: {last_line(log)}"
        return None

    def _assign(self, text: str, name: str) -> str | None:
        done = subprocess.run(
            ["bash", "-c", f'{text}\nprintf "%s" "${name}"'], cwd=self.folder, env=self.env,
            capture_output=True, text=True, timeout=self.timeout_s,
        )  # fmt: skip
        if done.returncode != 0:
            return f"exit {done.returncode}: {done.stderr.strip()[-200:]}"
        self.env[name] = done.stdout
        return None

    def _serve(self, step: Step) -> str | None:
        port = re.search(r"--port[ =](\d+)", step.text)
        log = (self.logs / f"{step.number}.log").open("wb")
        server = subprocess.Popen(
            ["bash", "-c", f"exec {step.text}"], cwd=self.folder, env=self.env, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.servers.append(server)
        if port is None:
            return None
        deadline = time.monotonic() + min(self.timeout_s, 600)
        while time.monotonic() < deadline:
            if server.poll() is not None:
                return f"the server exited ({server.returncode}): {last_line(Path(log.name))}"
            with socket.socket() as probe:
                probe.settimeout(1)
                if probe.connect_ex(("127.0.0.1", int(port.group(1)))) == 0:
                    return None
            time.sleep(0.5)
        return f"no server on port {port.group(1)}"

    def _reader_generations(self, words: list[str]) -> None:
        """The reader's ``gens.jsonl`` for a ``score`` line that reads one no earlier line
        wrote: the oracle's answers to the line's benchmark, exported as any run's are."""
        if "gens.jsonl" not in words or self.generations_written or words[1:2] != ["score"]:
            return
        bench = words[words.index("--bench") + 1]
        run = self.folder / ".reader" / bench
        extra = ["--data-dir", str(self.data)] if self.data is not None else []
        self._quiet("eval", "--model", "oracle", "--bench", bench, "--out", str(run), *extra)
        target = self.folder / "gens.jsonl"
        target.unlink(missing_ok=True)
        self._quiet("export-generations", str(run), "--bench", bench, "--out", str(target))

    def _quiet(self, *args: str) -> None:
        done = subprocess.run(
            ["codereasoner", *args], cwd=self.folder, env=self.env, capture_output=True,
            text=True, timeout=self.timeout_s,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"codereasoner {' '.join(args)}: {done.stderr.strip()[-300:]}")

    def _stop(self, server: subprocess.Popen[bytes]) -> None:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()

    def close(self) -> None:
        while self.servers:
            self._stop(self.servers.pop())


def last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][-240:] if lines else "no output"


def fill_cache(cache: Path, data: Path, *, timeout_s: float = 3600) -> None:
    DocumentRun(cache / "filling", data, timeout_s, cache).fill_cache()


def run_document(
    document: Path,
    folder: Path,
    data: Path | None,
    *,
    timeout_s: float = 3600,
    cache: Path | None = None,
) -> list[Outcome]:
    """Every line of ``document``, in order, with the download cache ``cache`` (filled by
    :func:`fill_cache`; default: an empty one in ``folder``); the outcomes are also written to
    ``folder/outcomes.json``."""
    runner = DocumentRun(folder, data, timeout_s, cache)
    outcomes: list[Outcome] = []
    try:
        runner.prepare()
        for step in read_steps(document):
            outcomes.append(runner.run(step))
            print(outcomes[-1].line(), flush=True)
    finally:
        runner.close()
        records = [
            {"line": str(o.step), "status": o.status, "seconds": round(o.seconds, 1),
             "detail": o.detail}
            for o in outcomes
        ]  # fmt: skip
        (folder / "outcomes.json").write_text(json.dumps(records, indent=1) + "\n")
    return outcomes
