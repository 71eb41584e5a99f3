"""A scripted teacher for offline smoke runs of ``codereasoner distill``: the replay server,
answering the prompts of synthesized cases like a plausible teacher.

    python -m codereasoner.training.replay_teacher --cases runs/smoke/synth --wrong 0.25 &
    codereasoner distill --teacher openai:teacher@http://127.0.0.1:8001/v1 \\
        --cases runs/smoke/synth --out runs/smoke/distill --k 2

It knows the prompts of the cases' items (both directions, styles ``reasoning`` and ``direct``,
with or without ``--hint trace``; a raw prompt or a chat's last user message) and answers with
the task kind's oracle answer, after a short reasoning in the reasoning style. For a
deterministic share ``wrong`` of (prompt, choice) pairs (a hash of the seed, the prompt and the
choice index) it answers wrong instead, so that rejection sampling has something to reject:
forward, another literal (the output of a case with the same code, else a changed value);
backward, the call of a case with the same code and another output, else the value itself
(not a call). With ``probes`` (``--probes-per-case N``: the probes distill draws, from our
trace of each call) it also knows the probe items, and answers them wrong with another literal.
Any other prompt gets the replay server's echo.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from codereasoner import tasks, values
from codereasoner.benchmarks.cache import DataUnavailable
from codereasoner.benchmarks.case_files import Case, cases_file, read_cases
from codereasoner.execution import Pool
from codereasoner.families.cases.benchmark import PROBE, case_items
from codereasoner.families.cases.probe import PROBE_TASK
from codereasoner.families.cases.reasoning import DIRECTIONS, FORWARD_TASK, ReasoningStyle
from codereasoner.models.replay_server import Query, ReplayServer, echo_reply
from codereasoner.programs.probes import Probe
from codereasoner.tasks import Item
from codereasoner.training.cases import draw_probes, trace_cases

__all__ = ["ReplayTeacher", "main", "other_literal", "probes_of"]

KEY_ENV = "OPENAI_API_KEY"  # what the openai: backend sends by default
_SENTINEL = "\x00hint\x00"  # stands for the hint while finding where a prompt shows it


class ReplayTeacher:
    """The reply function (:meth:`reply`) of a teacher that knows ``cases``; see the module."""

    def __init__(
        self,
        cases: Sequence[Case],
        *,
        wrong: float = 0.25,
        seed: int = 0,
        probes: Mapping[str, Sequence[Probe]] | None = None,
    ) -> None:
        if not 0 <= wrong <= 1:
            raise ValueError(f"--wrong {wrong}: expected a share between 0 and 1")
        self.wrong = wrong
        self.seed = seed
        directions = (*DIRECTIONS, PROBE) if probes is not None else tuple(DIRECTIONS)
        items = case_items(cases, directions, probes=probes)
        self.prompts: dict[str, tuple[Item, str]] = {}  # prompt without hint -> item, style
        self.hint_marks: set[tuple[str, str]] = set()  # (text before, text after) a hint
        for item in items:
            kind = tasks.get(item.task)
            for style in ReasoningStyle:
                plain = kind.prompt(item, style)
                self.prompts.setdefault(plain, (item, style))
                hinted = kind.prompt(
                    replace(item, fields={**item.fields, "hint": _SENTINEL}), style
                )
                self.hint_marks.add(_hint_marks(plain, hinted))
        outputs = {case.id: values.parse(case.output) for case in cases}
        by_code: dict[tuple[str, str], list[Case]] = {}
        for case in cases:
            by_code.setdefault((case.code, case.entry_point), []).append(case)
        self.wrong_answers = {
            item.id: _wrong_answer(item, by_code[(item.program, item.entry)], outputs)
            for item in items
        }

    def find(self, prompt: str) -> tuple[Item, str] | None:
        """The item and style ``prompt`` asks, with or without a hint; None when unknown."""
        if prompt in self.prompts:
            return self.prompts[prompt]
        for before, after in self.hint_marks:
            for plain in _without_hint(prompt, before, after):
                if plain in self.prompts:
                    return self.prompts[plain]
        return None

    def answers_wrong(self, prompt: str, choice: int) -> bool:
        digest = hashlib.sha256(f"{self.seed}\x00{choice}\x00{prompt}".encode()).digest()
        return int.from_bytes(digest[:8], "big") < self.wrong * 2**64

    def reply(self, query: Query) -> str:
        found = self.find(query.prompt)
        if found is None:
            return echo_reply(query)
        item, style = found
        if self.answers_wrong(query.prompt, query.choice):
            answer = f"<Answer>{self.wrong_answers[item.id]}</Answer>"
        else:
            answer = tasks.get(item.task).oracle(item, ReasoningStyle.DIRECT)
        if style == ReasoningStyle.DIRECT:
            return answer
        return f"<Reasoning>{_reasoning(item, answer)}</Reasoning>\n{answer}"


def _hint_marks(plain: str, hinted: str) -> tuple[str, str]:
    """The text the prompt puts before and after a hint: ``hinted`` is ``plain`` with
    ``before + _SENTINEL + after`` inserted at one place."""
    start = 0
    while start < len(plain) and plain[start] == hinted[start]:
        start += 1
    inserted = hinted[start : start + len(hinted) - len(plain)]
    before, _, after = inserted.partition(_SENTINEL)
    return before, after


def _without_hint(prompt: str, before: str, after: str) -> Iterator[str]:
    """``prompt`` with a hint between ``before`` and ``after`` cut out, for every end the hint
    may have (a trace may hold the text that follows it)."""
    start = prompt.find(before)
    if start < 0 or not before:
        return
    end = prompt.rfind(after)
    while end >= start + len(before):
        yield prompt[:start] + prompt[end + len(after) :]
        end = prompt.rfind(after, 0, end)


def _reasoning(item: Item, answer: str) -> str:
    stated = answer.removeprefix("<Answer>").removesuffix("</Answer>")
    if item.task == PROBE_TASK:
        return f"Following {item.entry} step by step for {item.call}, the asked value is {stated}."
    if item.task == FORWARD_TASK:
        return f"Following {item.entry} step by step for {item.call}, it returns {stated}."
    return f"{item.entry} has to return {item.truth}; {stated} is a call that does."


def _wrong_answer(item: Item, same_code: Sequence[Case], outputs: Mapping[str, object]) -> str:
    """A wrong answer: what a case with the same code and another output says (its output, or
    its call), else another literal (forward) or the value itself (backward)."""
    if item.task == PROBE_TASK:
        return other_literal(item.truth)
    truth = outputs[item.metadata["case_id"]]
    sibling = next((c for c in same_code if not values.equal(outputs[c.id], truth)), None)
    if item.task == FORWARD_TASK:
        return other_literal(item.truth) if sibling is None else sibling.output
    return item.truth if sibling is None else sibling.call


def other_literal(text: str) -> str:
    """A literal whose value differs from that of ``text``: one more, the first element
    dropped, reversed, or else ``None`` or ``0``."""
    value = values.parse(text)
    candidates: list[object] = []
    if isinstance(value, bool):
        candidates.append(not value)
    elif isinstance(value, (int, float)):
        candidates.append(value + 1)
    elif isinstance(value, (str, bytes, list, tuple)):
        candidates += [value[1:], value[::-1]]
    candidates += [None, 0]
    return next(values.render(c) for c in candidates if not values.equal(c, value))


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the teacher in the foreground until SIGINT or SIGTERM; the first line printed is
    its URL, as ``python -m codereasoner.models.replay_server`` prints it."""
    parser = argparse.ArgumentParser(
        prog="python -m codereasoner.training.replay_teacher",
        description="The replay server answering synthesized cases like a teacher, some wrong.",
    )
    parser.add_argument(
        "--cases",
        type=Path,
        required=True,
        help="a 'codereasoner synth' folder, or a file of cases (any name)",
    )
    parser.add_argument("--port", type=int, default=8001, help="0 picks a free port")
    parser.add_argument(
        "--wrong", type=float, default=0.25, help="share of (prompt, choice) pairs answered wrong"
    )
    parser.add_argument("--seed", type=int, default=0, help="which pairs are answered wrong")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--model", default="teacher", help="the only model name served")
    parser.add_argument(
        "--probes-per-case",
        type=int,
        default=0,
        help="also answer the probe items distill --probes-per-case N asks (0: none)",
    )
    parser.add_argument(
        "--api-key-env",
        default=KEY_ENV,
        help="require the key held in this environment variable on every route, as "
        f"'Bearer KEY' (default {KEY_ENV}, which the openai: backend sends): the server answers "
        "from the ground truth, and 127.0.0.1 is open to every local user",
    )
    parser.add_argument(
        "--no-key",
        action="store_true",
        help="serve without a key (only on a machine no one else uses)",
    )
    args = parser.parse_args(argv)
    api_key = None if args.no_key else os.environ.get(args.api_key_env)
    if not args.no_key and not api_key:
        _fail(
            f"--api-key-env {args.api_key_env}: the variable is unset or empty; the teacher "
            f"requires a key (e.g. export {args.api_key_env}=$(python -c 'import secrets; "
            "print(secrets.token_hex(16))')), or --no-key on a machine no one else uses"
        )
    path = cases_file(args.cases)
    try:
        cases = read_cases(path)
        if not cases:
            raise DataUnavailable(f"{path}: no cases")
        probes = probes_of(cases, args.probes_per_case) if args.probes_per_case > 0 else None
        teacher = ReplayTeacher(cases, wrong=args.wrong, seed=args.seed, probes=probes)
        server = ReplayServer(
            port=args.port,
            reply=teacher.reply,
            latency_s=args.latency,
            model=args.model,
            api_key=api_key,
        )
    except (DataUnavailable, ValueError) as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"--port {args.port}: cannot listen ({exc.strerror or exc})")
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    with server:
        print(f"replay teacher on {server.url} ({len(cases)} cases)", flush=True)
        stopped.wait()


def probes_of(cases: Sequence[Case], per_case: int) -> dict[str, list[Probe]]:
    """The probes distill's items ask of ``cases`` (traced in a sandbox pool opened here)."""
    with Pool() as pool:
        return draw_probes(cases, trace_cases(pool, cases), per_case)[0]


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()
