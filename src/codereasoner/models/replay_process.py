"""The replay server in a process of its own (``python -m codereasoner.models.replay_server``),
so that its CPU is not counted as the caller's; its counters are read over HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Sequence

from codereasoner.files import parse_json

__all__ = ["ReplayProcess"]


class ReplayProcess:
    """``python -m codereasoner.models.replay_server`` in a child process; a context manager.

    Options: ``latency_s``, ``fail`` (statuses for each prompt's first attempts),
    ``retry_after_s``, ``api_key``, ``model``, ``completions`` (a recorded-completions file)
    and ``missing``. :meth:`stats` reads the child's counters.
    """

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        fail: Sequence[int] = (),
        retry_after_s: float | None = None,
        api_key: str | None = None,
        model: str = "replay",
        completions: str | os.PathLike[str] | None = None,
        missing: str = "error",
    ) -> None:
        self.command = [sys.executable, "-m", "codereasoner.models.replay_server", "--port", "0"]
        self.command += ["--latency", str(latency_s), "--model", model]
        if completions is not None:
            self.command += ["--completions", os.fspath(completions), "--missing", missing]
        if fail:
            self.command += ["--fail", ",".join(str(status) for status in fail)]
        if retry_after_s is not None:
            self.command += ["--retry-after", str(retry_after_s)]
        self._api_key = api_key
        self._process: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start(self) -> ReplayProcess:
        env = None
        if self._api_key is not None:
            env = {**os.environ, "REPLAY_API_KEY": self._api_key}
            self.command += ["--api-key-env", "REPLAY_API_KEY"]
        self._process = subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True, env=env)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        match = re.search(r":(\d+)/v1", line)
        if not match:
            self.stop()
            raise RuntimeError(f"replay server did not start (it printed {line!r})")
        self.port = int(match.group(1))
        return self

    def _headers(self) -> dict[str, str]:
        return {} if self._api_key is None else {"Authorization": f"Bearer {self._api_key}"}

    def stats(self) -> dict[str, int]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/replay/stats", headers=self._headers()
        )
        with urllib.request.urlopen(request) as response:
            return parse_json(response.read())

    def reset(self) -> None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/replay/reset",
            data=b"",
            method="POST",
            headers=self._headers(),
        )
        with urllib.request.urlopen(request):
            pass

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._process = None

    def __enter__(self) -> ReplayProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
