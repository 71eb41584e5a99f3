"""REval items: prompt fields as upstream fills them (docs/benchmark-rules.md), ground truth, metadata.

Field filling, per the spec's table: HumanEval ``invocation`` is ``fn(args)`` (the input without
its final ``,)``, then ``)``), and path prompts number the code (``{N}\\t{line}\\n`` per line);
ClassEval prompts show the class source and ``{setup}\\n{input}``, where ``setup`` leaves the
first ``setUp`` line uncommented for coverage and state but not for path and output.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from codereasoner.families.reval.programs import setup_text, test_classes
from codereasoner.families.reval.truth import Pair, PairTruth
from codereasoner.tasks import Item

__all__ = ["OUTPUT_HEADER", "build_items", "reference_answer"]

OUTPUT_HEADER = "# Test code starts here. Only write the completed test code in your answer."
_HOLE = "??"
_PLACEHOLDER = "__reval_hole_{}__"


def build_items(
    pairs: Sequence[Pair], truths: Mapping[str, PairTruth], benchmark: str
) -> list[Item]:
    """All coverage items, then state, path and output items, each in pair/question order."""
    by_kind: dict[str, list[Item]] = {"coverage": [], "state": [], "path": [], "output": []}
    for pair in pairs:
        truth = truths[pair.key]
        for kind in ("coverage", "state", "path"):
            for number, (line, var) in enumerate(pair.questions):
                by_kind[kind].append(_line_item(pair, truth, kind, number, line, var, benchmark))
        by_kind["output"].append(_output_item(pair, truth, benchmark))
    return [item for kind in ("coverage", "state", "path", "output") for item in by_kind[kind]]


def _common(pair: Pair) -> dict[str, Any]:
    row = pair.row
    classeval = row["test"] is not None
    meta: dict[str, Any] = {
        "task_id": row["task_id"],
        "input_idx": pair.input_idx,
        "source": "classeval" if classeval else "humaneval",
    }
    if classeval:
        meta["test_class"] = test_classes(row["test"], row["entry_point"])[pair.input_idx].name
    return meta


def _invocation(pair: Pair, *, comment_first: bool) -> tuple[str, str]:
    row = pair.row
    case = row["inputs"][pair.input_idx]
    if row["test"] is None:
        call = f"{row['entry_point']}{case[:-2]})"
        return call, call
    test_class = test_classes(row["test"], row["entry_point"])[pair.input_idx]
    return setup_text(test_class, comment_first=comment_first) + "\n" + case.rstrip(), (
        "the above test code"
    )


def _numbered(code: str) -> str:
    return "".join(f"{number}\t{line}\n" for number, line in enumerate(code.split("\n"), 1))


def _line_item(
    pair: Pair, truth: PairTruth, kind: str, number: int, line: int, var: str, benchmark: str
) -> Item:
    row = pair.row
    code = row["code"]
    path_prompt = kind == "path"
    invocation, abbr = _invocation(pair, comment_first=path_prompt)
    fields = {
        "code": _numbered(code) if path_prompt and row["test"] is None else code,
        "invocation": invocation,
        "invocation_abbr": abbr,
        "line": str(line),
        "codeline": code.split("\n")[line - 1],
        "var": var,
    }
    truths: dict[str, list[Any]] = {
        "coverage": truth.coverage,
        "state": truth.state,
        "path": truth.path,
    }
    meta = _common(pair) | {"lineno": line, "var": var, "question": number}
    if kind == "state":
        meta["origin"] = truth.origin[number]
    return Item(
        id=f"{pair.key}/{line}/{kind}",
        benchmark=benchmark,
        task=kind,
        program=code,
        entry=row["entry_point"],
        call=invocation if row["test"] is None else row["inputs"][pair.input_idx],
        truth=json.dumps(truths[kind][number]),
        truth_format="json",
        fields=fields,
        metadata=meta,
    )


def _output_item(pair: Pair, truth: PairTruth, benchmark: str) -> Item:
    row = pair.row
    if row["test"] is None:
        invocation = "\n" + pair.output_pred
    else:
        test_class = test_classes(row["test"], row["entry_point"])[pair.input_idx]
        setup = setup_text(test_class, comment_first=True)
        invocation = f"{setup}\n{OUTPUT_HEADER}\n{pair.output_pred}"
    meta = _common(pair) | {
        "output_pred": pair.output_pred,
        "leak": _leaks(pair.output_pred),
        "bool_assert": bool(re.search(r"assert(True|False)\(\?\?\)", pair.output_pred)),
        "traced_output": truth.output,
    }
    if row["test"] is not None:
        meta["test"] = row["test"]
    reference = reference_answer(pair, truth)
    return Item(
        id=f"{pair.key}/output",
        benchmark=benchmark,
        task="output",
        program=row["code"],
        entry=row["entry_point"],
        call=row["inputs"][pair.input_idx],
        truth=reference or "",
        truth_format="source",
        fields={"code": row["code"], "invocation": invocation},
        metadata=meta,
    )


def _holes(text: str) -> str:
    parts = text.split(_HOLE)
    return "".join(
        part + (_PLACEHOLDER.format(k) if k < len(parts) - 1 else "")
        for k, part in enumerate(parts)
    )


def _leaks(output_pred: str) -> bool:
    """An assertion whose first argument is a literal while ``??`` replaced a later argument:
    the expected value is in the question (docs/benchmark-rules.md)."""
    for call in _assert_calls(_holes(output_pred)):
        args = call.args
        holes = [k for k, arg in enumerate(args) if _is_hole(arg)]
        if holes and holes[0] > 0 and _is_literal(args[0]):
            return True
    return False


def _assert_calls(source: str) -> list[ast.Call]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    named = [call for call in calls if re.match(r"assert", ast.unparse(call.func).split(".")[-1])]
    return sorted(named, key=lambda call: (call.lineno, call.col_offset))


def _is_hole(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id.startswith("__reval_hole_")


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False
    return True


def reference_answer(pair: Pair, truth: PairTruth) -> str | None:
    """The question completed with the right values: HumanEval with the traced return value,
    ClassEval with the arguments the original test passed where the question has ``??``."""
    question = pair.output_pred
    if pair.row["test"] is None:
        return question.replace(_HOLE, truth.output) if truth.output is not None else None
    original = _assert_calls(pair.row["inputs"][pair.input_idx])
    asked = _assert_calls(_holes(question))
    if len(original) != len(asked):
        return None
    fills: dict[str, str] = {}
    for mine, theirs in zip(asked, original, strict=True):
        for position, arg in enumerate(mine.args):
            if _is_hole(arg):
                if position >= len(theirs.args):
                    return None
                fills[arg.id] = ast.unparse(theirs.args[position])  # type: ignore[attr-defined]
    answer = _holes(question)
    for name, text in fills.items():
        answer = answer.replace(name, text)
    return None if "__reval_hole_" in answer else answer
