"""OpenAI-compatible backend: requests in flight and client CPU per sample, against a baseline.

The replay server runs in its own process (its CPU is not counted) and answers every request
after a fixed latency (200 ms by default). Both clients send the same raw-completion requests:
  * ours: ``OpenAIBackend.generate`` (retries, timeouts, parsing into ``Completion`` objects);
  * baseline: a bare aiohttp loop (one session, a semaphore, ``json.loads``; no retries and no
    result objects), the least a Python HTTP client can do.
Prints the most requests the server saw in flight at once, client CPU ms per sample (process
time of this process, all threads) and wall time, and the CPU ratio ours / baseline.

    python bench/backend.py [--requests 2048] [--samples 1] [--latency 0.2] [--concurrency 512]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable

import aiohttp

from codereasoner.models import Completion, Request, Sampling
from codereasoner.models.openai import OpenAIBackend
from codereasoner.models.replay_server import ReplayProcess


def prompts(count: int) -> list[str]:
    return [f"def f(x):\n    return x * {i}\nassert f({i}) == ??" for i in range(count)]


def run_ours(url: str, texts: list[str], samples: int, concurrency: int) -> int:
    backend = OpenAIBackend("replay", url, concurrency=concurrency)
    sampling = Sampling(temperature=0.8, max_tokens=64)
    requests = [Request(text, samples=tuple(range(samples)), sampling=sampling) for text in texts]
    received: list[list[Completion]] = []
    backend.generate(requests, lambda index, completions: received.append(completions))
    return sum(len(completions) for completions in received)


def run_baseline(url: str, texts: list[str], samples: int, concurrency: int) -> int:
    async def main() -> int:
        semaphore = asyncio.Semaphore(concurrency)
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one(text: str) -> int:
                body = {
                    "model": "replay",
                    "prompt": text,
                    "n": samples,
                    "max_tokens": 64,
                    "temperature": 0.8,
                }
                async with semaphore, session.post(url + "/completions", json=body) as response:
                    return len(json.loads(await response.read())["choices"])

            return sum(await asyncio.gather(*(one(text) for text in texts)))

    return asyncio.run(main())


def measure(
    name: str,
    client: Callable[[str, list[str], int, int], int],
    server: ReplayProcess,
    args: argparse.Namespace,
) -> float:
    server.reset()
    texts = prompts(args.requests)
    cpu, wall = time.process_time(), time.perf_counter()
    served = client(server.url, texts, args.samples, args.concurrency)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    stats = server.stats()
    assert served == args.requests * args.samples, (name, served)
    per_sample_ms = 1000 * cpu / served
    print(
        f"{name:9s} samples={served:6d} max_in_flight={stats['max_in_flight']:4d} "
        f"wall={wall:6.2f}s cpu={cpu:6.2f}s cpu/sample={per_sample_ms:.3f} ms"
    )
    return per_sample_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2048)
    parser.add_argument("--samples", type=int, default=1, help="samples per request (n)")
    parser.add_argument("--latency", type=float, default=0.2, help="server latency, seconds")
    parser.add_argument("--concurrency", type=int, default=512)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with ReplayProcess(latency_s=args.latency) as server:
        ours, base = [], []
        for _ in range(args.runs):
            base.append(measure("baseline", run_baseline, server, args))
            ours.append(measure("ours", run_ours, server, args))
    print(
        f"client CPU per sample: ours {min(ours):.3f} ms, baseline {min(base):.3f} ms, "
        f"ratio {min(ours) / min(base):.2f}x (best of {args.runs})"
    )


if __name__ == "__main__":
    main()
