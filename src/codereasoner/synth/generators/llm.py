"""The ``llm`` generator: a teacher model writes one concise function and one literal call.

Candidate ``i`` asks for the catalog method the offline generator schedules for ``i`` under
constraints drawn from ``(seed, i)``. The reply contract (stated in the prompt):

* exactly one fenced code block (```` ```python ````) holding exactly one top-level ``def`` and
  nothing else at top level (no imports, no other statements; comments are fine);
* exactly one call of that function with literal arguments, given as a line ``[CALL] f(...)``
  outside the block; ``# call: f(...)`` inside the block and CRUXEval's
  ``assert f(...) == ??`` are accepted as the same thing;
* a leading ``<think>...</think>`` section (reasoning models) is ignored.

Anything else is rejected with a ``parse`` drop naming the reason (:data:`PARSE_REASONS`).
Replies are logged to ``generations.jsonl`` so that a resumed run re-reads them instead of asking
the model again.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codereasoner.execution import CallSyntaxError, parse_call
from codereasoner.models.base import Backend, Completion, Request, Sampling
from codereasoner.models.thinking import visible_text
from codereasoner.synth.case import Candidate, Constraints, Drop

if TYPE_CHECKING:
    from codereasoner.synth.generators import GeneratorSettings

PROMPT_ID = "synth-teacher-v1"
PARSE = "parse"
PARSE_REASONS = (
    "empty_reply",
    "truncated",
    "no_code_block",
    "multiple_code_blocks",
    "syntax_error",
    "no_function",
    "multiple_functions",
    "import",
    "top_level_code",
    "no_call",
    "multiple_calls",
    "call_not_literal",
    "call_wrong_function",
)
MAX_DEPTH = 3

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_CALL_TAG = re.compile(r"^[ \t]*\[CALL\][ \t]*(.+?)[ \t]*(?:\[/CALL\])?[ \t]*$", re.MULTILINE)
_CALL_COMMENT = re.compile(r"^[ \t]*#[ \t]*call:[ \t]*(.+?)[ \t]*$", re.MULTILINE | re.IGNORECASE)
_ASSERT = re.compile(r"^[ \t]*assert[ \t]+(.+?)[ \t]*==[ \t]*\?\?[ \t]*$", re.MULTILINE)

_CONTROL_WORDS = {"if": "an `if` statement", "for": "a `for` loop", "while": "a `while` loop"}
_EXTRA_WORDS = {
    "try": "a `try`/`except` block",
    "comprehension": "a comprehension",
    "break": "a `break`",
    "continue": "a `continue`",
    "slicing": "slicing",
}


def _describe_control(control: Sequence[str]) -> str:
    if not control:
        return "straight-line code: no loops and no conditionals"
    parts = [_CONTROL_WORDS[kind] for kind in control]
    nested = parts[0] + "".join(f" containing {part}" for part in parts[1:])
    return f"{nested} (nesting depth {len(control)})"


def build_prompt(method: str, constraints: Constraints) -> str:
    """The teacher prompt for one case (our own wording of its contract, docs/synth.md)."""
    nested = (
        "pass the result of one call directly as an argument of another call (e.g. `g(x.m(...))`)"
        if constraints.nested_calls
        else "do not nest calls inside the arguments of other calls"
    )
    others = (
        "you may also use other built-in methods and functions"
        if constraints.other_methods
        else f"use no built-in methods other than `{method}`"
    )
    lines = [
        "Write a short Python test case for one built-in method.",
        "",
        f"Method: `{method}`",
        "",
        f"Write one concise function `f` whose result depends on `{method}`, and one call of "
        "`f` with literal arguments.",
        "Constraints:",
        f"- control flow: {_describe_control(constraints.control)};",
        f"- nested calls: {nested};",
        f"- other methods: {others};",
    ]
    if constraints.extras:
        lines.append("- also use: " + ", ".join(_EXTRA_WORDS[e] for e in constraints.extras) + ";")
    lines += [
        "Rules:",
        "- no imports, no printing, no input/output, no randomness, no clocks; the function is "
        "deterministic and finishes at once;",
        "- 3 to 15 lines; the returned value's repr is at most 50 characters;",
        "- the call's arguments are literals only (str, int, float, bool, None, and lists, "
        "tuples, dicts and sets of those).",
        "",
        "Reply in exactly this format and nothing else:",
        "```python",
        "def f(...):",
        "    ...",
        "```",
        "[CALL] f(<literal arguments>)",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ParsedReply:
    code: str
    entry_point: str
    input_repr: str


class ReplyError(ValueError):
    """A reply that breaks the contract; ``reason`` is one of :data:`PARSE_REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def parse_reply(text: str) -> ParsedReply:
    """The function and call in a teacher reply, or :class:`ReplyError` (see the module doc)."""
    body = visible_text(text)  # one linear pass; a lazy <think>.*?</think> was quadratic
    if not body:
        raise ReplyError("empty_reply", "the reply is empty")
    blocks = _FENCE.findall(body)
    if not blocks:
        raise ReplyError("no_code_block", "no ```python code block")
    if len(blocks) > 1:
        raise ReplyError("multiple_code_blocks", f"{len(blocks)} code blocks, expected one")
    block = blocks[0]
    outside = _FENCE.sub("", body)
    calls = [
        *_CALL_TAG.findall(outside),
        *_ASSERT.findall(outside),
        *_CALL_COMMENT.findall(block),
        *_ASSERT.findall(block),
    ]
    code = _ASSERT.sub("", _CALL_COMMENT.sub("", block))
    code = "\n".join(line.rstrip() for line in code.strip("\n").splitlines()).strip("\n")
    function = _one_function(code)
    if not calls:
        raise ReplyError("no_call", "no [CALL] line with a call of the function")
    if len(calls) > 1:
        raise ReplyError("multiple_calls", f"{len(calls)} calls, expected one")
    call_text = calls[0].strip()
    try:
        call = parse_call(call_text, max_chars=2000)
    except CallSyntaxError as exc:
        raise ReplyError("call_not_literal", f"{call_text[:80]!r}: {exc}") from None
    if call.entry != function:
        raise ReplyError(
            "call_wrong_function", f"the call names {call.entry!r}, the function is {function!r}"
        )
    return ParsedReply(code, function, _argument_text(call_text))


def _argument_text(call_text: str) -> str:
    """The text between the call's parentheses, cut with the AST's (UTF-8 byte) offsets."""
    node = ast.parse(call_text, mode="eval").body
    assert isinstance(node, ast.Call)
    arguments: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
    if not arguments:
        return ""
    lines = call_text.encode("utf-8").splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    first, last = arguments[0], arguments[-1]
    assert last.end_lineno is not None and last.end_col_offset is not None  # set by ast.parse
    begin = starts[first.lineno - 1] + first.col_offset
    end = starts[last.end_lineno - 1] + last.end_col_offset
    return call_text.encode("utf-8")[begin:end].decode("utf-8").strip()


def _one_function(code: str) -> str:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        raise ReplyError("syntax_error", f"the code block does not parse: {exc}") from None
    functions = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions.append(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            raise ReplyError("import", f"line {node.lineno}: {ast.unparse(node)}")
        else:
            raise ReplyError(
                "top_level_code", f"line {node.lineno}: top-level {type(node).__name__}"
            )
    if not functions:
        raise ReplyError("no_function", "no top-level def")
    if len(functions) > 1:
        raise ReplyError("multiple_functions", f"{len(functions)} top-level defs, expected one")
    return functions[0]


def schedule(seed: int, index: int, generator: Any = None) -> tuple[str, Constraints]:
    """The method and constraints asked for candidate ``index``: the offline generator's method
    schedule, and constraints drawn from ``(seed, index)``."""
    from codereasoner.synth.constraints import sample_constraints
    from codereasoner.synth.generators.offline import OfflineGenerator

    method = (generator or OfflineGenerator(seed)).method_for(index)
    name = method if isinstance(method, str) else method.qualname
    rng = random.Random(f"llm-constraints:{seed}:{index}")
    return name, sample_constraints(rng, MAX_DEPTH)


class LLMSource:
    """Candidates from a teacher model; replies are logged and re-read on resume."""

    def __init__(
        self,
        backend: Backend,
        seed: int,
        log_path: Path,
        temperature: float = 0.7,
        max_tokens: int = 1024,
    ) -> None:
        self.backend = backend
        self.seed = seed
        self.log_path = log_path
        self.name = f"llm:{backend.model_id}"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._cache: dict[int, dict[str, Any]] | None = None
        self._new: list[str] = []
        self._scheduler: Any = None
        self.teacher = {
            "model": backend.model_id,
            "temperature": temperature,
            "prompt_id": PROMPT_ID,
        }

    def _cached(self) -> dict[int, dict[str, Any]]:
        if self._cache is None:
            self._cache = {}
            if self.log_path.exists():
                with open(self.log_path, encoding="utf-8") as handle:
                    for line in handle:
                        entry = json.loads(line)
                        self._cache[int(entry["index"])] = entry
        return self._cache

    def produce(self, indices: range) -> list[Candidate | Drop]:
        cache = self._cached()
        if self._scheduler is None:
            from codereasoner.synth.generators.offline import OfflineGenerator

            self._scheduler = OfflineGenerator(self.seed)
        asks = {index: schedule(self.seed, index, self._scheduler) for index in indices}
        missing = [index for index in indices if index not in cache]
        requests = [self._request(index, *asks[index]) for index in missing]

        def store(position: int, completions: list[Completion]) -> None:
            index = missing[position]
            method, constraints = asks[index]
            entry = {
                "index": index,
                "method": method,
                "constraints": constraints.to_dict(),
                "prompt_id": PROMPT_ID,
                "prompt_hash": requests[position].prompt_hash(),
                "model": self.backend.model_id,
                "temperature": self.temperature,
                "text": completions[0].text,
                "finish_reason": completions[0].finish_reason,
            }
            cache[index] = entry

        if requests:
            self.backend.generate(requests, store)
            self._new += [json.dumps(cache[index], ensure_ascii=True) + "\n" for index in missing]
        return [self._candidate(index, *asks[index], cache[index]) for index in indices]

    def _request(self, index: int, method: str, constraints: Constraints) -> Request:
        sampling = Sampling(
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed * 1_000_003 + index,
        )
        return Request(build_prompt(method, constraints), sampling=sampling, chat=True)

    def _candidate(
        self, index: int, method: str, constraints: Constraints, entry: dict[str, Any]
    ) -> Candidate | Drop:
        candidate_id = f"llm-{self.seed}-{index:06d}"
        if entry.get("finish_reason") == "length":
            return Drop(candidate_id, PARSE, "truncated", "the reply hit max_tokens")
        try:
            parsed = parse_reply(entry["text"])
        except ReplyError as error:
            return Drop(candidate_id, PARSE, error.reason, error.detail[:300])
        return Candidate(
            candidate_id,
            method,
            parsed.code,
            parsed.input_repr,
            constraints,
            generator=f"llm:{entry['model']}",
            entry_point=parsed.entry_point,
        )

    def committed_lines(self) -> list[str]:
        lines, self._new = self._new, []
        return lines

    def preflight(self) -> None:
        """Check that the teacher answers (an unreachable one is one error, not n drops)."""
        self.backend.preflight()

    def close(self) -> None:
        self.backend.close()


def build_source(settings: GeneratorSettings) -> LLMSource:
    """The llm generator's candidate source (the registry's entry point): option ``model`` is
    a model spec (``openai:NAME@URL``, see :func:`codereasoner.models.load_backend`) or a
    backend built by the caller; replies are logged to ``generations.jsonl`` in the run's
    folder."""
    model = settings.options["model"]
    if isinstance(model, str):
        from codereasoner.models import load_backend

        backend: Backend = load_backend(model)
    else:
        backend = model
    return LLMSource(backend, settings.seed, settings.out / "generations.jsonl")
