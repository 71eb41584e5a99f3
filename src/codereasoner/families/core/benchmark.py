"""CoRE (Gao et al., Findings of ACL 2026): 60 problems, output prediction over equivalent
implementations (``core_io.json``) and intermediate-state probes (``core_qa.json``).

Probe policy (docs/benchmark-rules.md, CoRE). Every record of ``core_qa.json`` is read and checked;
item ids are ``<id>#<n>``, ``n`` counting the records that share an ``id`` in file order. Gold:

- a ``ground_truth`` that :func:`values.parse` reads (Python or JSON spellings, ``inf``) is the
  gold value, as published, even where our tracer disagrees (tests list those probes);
- a dict ``ground_truth`` is a multi-part gold: each value is parsed, names kept in order;
- free text is replaced by :data:`ANSWER_KEY`, written by hand: it restates the value(s) the text
  states (several parts become a dict gold, in the question's order); descriptive parts ("why",
  "how") are not graded. Each entry holds a digest of the text it restates; a mismatch or a free
  text without an entry is an error;
- not gradable, hence not items (listed by :func:`skipped_probes`): the null probe ``Fine/63_6``
  and the entries of :data:`EXCLUDED` (no value stated, or none that any answer could match).

Output samples have no ``func_name``: the entry point comes from the code
(:func:`~codereasoner.families.core.programs.entry_point`);
implementations are the distinct ``code`` texts of a problem. Hidden probe fields
(``reasoning``, ``target_*``, ``answer_type``, ``complexity_type``) go to metadata, never to the
prompt fields.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codereasoner import values
from codereasoner.benchmarks.cache import LOCAL, DataUnavailable, Source
from codereasoner.benchmarks.spec import Benchmark, Metrics
from codereasoner.execution import CallSyntaxError
from codereasoner.execution.call import check_entry
from codereasoner.families.core.output import OUTPUT_TASK
from codereasoner.families.core.probe import PROBE_TASK
from codereasoner.families.core.programs import entry_point
from codereasoner.files import parse_json
from codereasoner.tasks import Extraction, Item

COMMIT = "d735fad4b6de791eae544b59e726bfb8586095b7"
UPSTREAM = f"https://github.com/ZJUSig/CoRE/tree/{COMMIT}"
_RAW = f"https://raw.githubusercontent.com/ZJUSig/CoRE/{COMMIT}/"
QA = Source(
    "core_qa.json",
    _RAW + "core_qa.json",
    sha256="26e51a7a5a27d58231241fdb17d73f93b3266d2133b5f3eb31c7b627036dc1c2",
)
IO = Source("core_io.json", _RAW + "core_io.json")  # sha256 recorded at the first download
GIT_BLOBS = {"core_qa.json": "12323cb9eba949e31ecb2be41d885c9a08dd3da8",
             "core_io.json": "0a25555dbbdacd11d804c8928ed2c6df26526edc"}  # fmt: skip

# item id -> (sha256[:12] of the published text, restated gold); a dict gold has several parts.
ANSWER_KEY: dict[str, tuple[str, str]] = {
    "Fine/64_11#0": ("5afd03d09857", "{'condition': False, 'count': 3}"),
    "Fine/70_7#0": ("6809c70ebd14",
                    "{'left': 4, 'right': 3, 'toggle': True, 'result': [-5, 5, -5, 5, 0, 2, 2, 2]}"),
    "Fine/110_4#0": ("a28b2782d308",
                     "{'odd_count_lst1': 3, 'even_count_lst2': 0, 'condition': False}"),
    "Fine/153_14#0": ("a44f75216f2b", "{'condition': True, 'best_strength': 2}"),
    "Fine/158_9#0": ("d8aa40e78076", "{'condition': True, 'answer': 'footbott'}"),
    "Fine/2785_9#0": ("9d22a82f347e", "0"),  # "swaps remains 0"; the "how" part is descriptive
    "Fine/2847_5#0": ("49ceb643ee02", "{'pairs': 2, 'word_dict': {'cd': 0, 'ac': 0, 'zz': 1}}"),
    "Fine/2917_12#0": ("327196c69776", "{'condition': True, 'count': 9}"),
    "Fine/3188_13#1": ("2ed263c206ae", "{'sum(grid[a])': 2, 'condition': True}"),
    "Fine/3210_8#0": ("ed0c9ad1037a", "{'vowels': 0, 'consonants': 1}"),
    "Fine/3227_9#0": ("a065842dd847", "16"),  # "b = 16"
    "Fine/3450_14#0": ("c6a70fa8090d", "{'condition': True, 'direction': -1}"),
    "Fine/3450_17#0": ("7dd530c4d36d", "'else'"),
    "Fine/3508_4#0": ("3accfcb7e11e", "False"),  # "(n & 1) evaluated to False, ..."
    "Fine/3540_13#1": ("252f10c83610", "'f'"),
    "Fine/3600_7#0": ("7e0be4ec61a3", "'bccdd'"),  # "'bccd' + 'd' = 'bccdd'"
    "Fine/40_21#0": ("e346c80e2744", "{'i': 0, 'j': 1, 'k': 3}"),
    "Fine/3446_8#1": ("2c69a86b4076", "True"),  # "True (since 4 % (4 * 1) == 0 is True)"
}  # fmt: skip
# item id -> (sha256[:12] of the published text, why no answer can be graded against it)
EXCLUDED: dict[str, tuple[str, str]] = {
    "Fine/128_18#0": ("42237422ff88", "states no value ('depends on prior state'); the input "
                      "is [] and the loop never runs"),
    "Fine/150_5#0": ("c34dba7803af", "'return y' names a statement, not the two values asked"),
    "Fine/150_38#0": ("f7217c71a3c2", "a TypeError under a false premise: n is the int 1"),
    "Fine/96_16#0": ("5f49e33e1399", "a memory address ('<range_iterator object at 0x...>')"),
}  # fmt: skip
NULL_PROBE = "null probe: question, ground_truth and target step are all null"
DIMENSIONS = {
    "A": ("arithmetic", "modulo", "index"),
    "L": ("condition", "logic", "boolean", "branch", "control"),
    "S": ("state", "accumul", "mutation"),
    "B": ("boundar", "termination", "last iteration", "early", "break", "exit"),
}
_FAMILIES = (("rewrite:", "rewrite"), ("given", "given"), ("deepseek", "DeepSeek"), ("claude", "Claude"), ("gemini", "Gemini"),
             ("qwen", "Qwen"), ("o1", "OpenAI"), ("4o", "OpenAI"), ("gpt", "OpenAI"))  # fmt: skip
_JSON = (str, int, float, bool, list, dict, type(None))
__all__ = [
    "BENCHMARKS",
    "CORE",
    "GENERATED",
    "IO",
    "OUTPUT",
    "PROBE",
    "QA",
    "load",
    "skipped_probes",
]


def load(paths: Mapping[str, Path], benchmark: str, kinds: tuple[str, ...]) -> list[Item]:
    """Output items (``core_io.json``) then probe items (``core_qa.json``), for ``kinds``."""
    items = []
    if OUTPUT_TASK in kinds:
        items += load_outputs(paths[IO.filename], benchmark)
    if PROBE_TASK in kinds:
        items += load_probes(paths[QA.filename], benchmark)
    return items


# ---------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------


def read_records(path: Path, fields: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A JSON list (or JSON Lines) of objects holding ``fields``; ``_where`` names each one."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataUnavailable(f"{path}: cannot read ({exc})") from None
    try:
        data = parse_json(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise DataUnavailable(
                f"{path}: invalid JSON at line {exc.lineno} ({exc.msg})"
            ) from None
        data = _json_lines(path, text)
    if not isinstance(data, list):
        raise DataUnavailable(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    for index, record in enumerate(data):
        where = f"{path}: record {index}"
        if not isinstance(record, dict):
            raise DataUnavailable(f"{where}: expected an object, got {type(record).__name__}")
        where += f" ({record['id']!r})" if isinstance(record.get("id"), str) else ""
        for name, kind in fields.items():
            if name not in record:
                raise DataUnavailable(f"{where}: missing field {name!r}")
            if not isinstance(record[name], kind):
                got = type(record[name]).__name__
                raise DataUnavailable(f"{where}: field {name!r} has type {got}")
        record["_where"] = where
    return data


def _json_lines(path: Path, text: str) -> list[Any]:
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                rows.append(parse_json(line))
            except ValueError as exc:
                raise DataUnavailable(f"{path}:{number}: invalid JSON ({exc})") from None
    return rows


def git_blob(path: Path) -> str:
    """The file's git blob id, to compare with :data:`GIT_BLOBS` (upstream's exact bytes)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def problem_key(record_id: str) -> str:
    """``Fine/36_11`` and ``36_0`` -> ``36``: after the last ``/``, before the next ``_``."""
    return record_id.rsplit("/", 1)[-1].split("_", 1)[0]


def family(model: str) -> str:
    """The generator family of Fig. 5 (o1, 4o-mini -> OpenAI, deepseek-* -> DeepSeek, ...)."""
    lowered = model.lower()
    return next((name for key, name in _FAMILIES if key in lowered), "other")


def dimensions(complexity_type: str | None) -> tuple[str, ...]:
    """A/L/S/B from the free-text label, by keyword (docs/benchmark-rules.md)."""
    text = (complexity_type or "").lower()
    return tuple(key for key, words in DIMENSIONS.items() if any(w in text for w in words))


def _arguments(where: str, text: str, field: str) -> None:
    try:
        parse_json(f"[{text}]")
    except ValueError:
        try:
            values.parse(f"[{text}]")
        except values.ValueParseError as exc:
            raise DataUnavailable(
                f"{where}: field {field!r} is not a list of literals ({exc})"
            ) from None


def _gold_output(where: str, value: object) -> tuple[str, str]:
    """The output as text and its format (JSON first, as upstream, then a Python literal)."""
    text = value if isinstance(value, str) else json.dumps(value)
    try:
        parse_json(text)
        return text, "json"
    except ValueError:
        pass
    try:
        values.parse(text)
    except values.ValueParseError as exc:
        raise DataUnavailable(f"{where}: field 'output' is not a literal ({exc})") from None
    return text, "python"


# ---------------------------------------------------------------------------------------
# output prediction (core_io.json)
# ---------------------------------------------------------------------------------------

IO_FIELDS = {"id": str, "input": _JSON, "output": _JSON, "code": str, "model_used": str}


def load_outputs(path: Path, benchmark: str) -> list[Item]:
    """One item per record, in file order; ``implementation`` groups identical code."""
    records = read_records(path, IO_FIELDS)
    seen: dict[str, str] = {}
    implementations: dict[tuple[str, str], str] = {}
    items = []
    for record in records:
        where, rid = record["_where"], record["id"]
        if rid in seen:
            raise DataUnavailable(f"{where}: duplicate id (first at {seen[rid]})")
        seen[rid] = where
        entry = entry_point(record["code"])
        if entry is None:
            raise DataUnavailable(f"{where}: field 'code' defines no function to call")
        raw = record["input"]
        arguments = raw if isinstance(raw, str) else json.dumps(raw)
        _arguments(where, arguments, "input")
        truth, fmt = _gold_output(where, record["output"])
        problem = problem_key(rid)
        count = sum(key[0] == problem for key in implementations)
        implementation = implementations.setdefault((problem, record["code"]), f"{problem}/{count}")
        items.append(
            Item(
                id=rid,
                benchmark=benchmark,
                task=OUTPUT_TASK,
                program=record["code"],
                entry=entry,
                call=f"{entry}({arguments})",
                truth=truth,
                truth_format=fmt,
                fields={"code": record["code"], "func_name": entry, "x": arguments},
                metadata={
                    "problem": problem,
                    "implementation": implementation,
                    "code_model": record["model_used"],
                    "family": family(record["model_used"]),
                },
            )
        )
    return items


# ---------------------------------------------------------------------------------------
# probes (core_qa.json)
# ---------------------------------------------------------------------------------------

QA_FIELDS = {
    "id": str,
    "source_code": str,
    "input": str,
    "output": str,
    "meta_data": dict,
    "model_used": str,
    "question": (str, type(None)),
    "ground_truth": (str, dict, type(None)),
}


def load_probes(path: Path, benchmark: str) -> list[Item]:
    """One item per gradable probe, in file order (see the module docstring for the policy)."""
    items = []
    for item_id, record in _numbered(read_records(path, QA_FIELDS)):
        gold = _probe_gold(item_id, record)
        if gold is not None:
            items.append(_probe_item(item_id, record, benchmark, *gold))
    return items


def skipped_probes(path: Path) -> dict[str, str]:
    """Item id -> why it is not an item: the null probe(s) and :data:`EXCLUDED`."""
    skipped = {}
    for item_id, record in _numbered(read_records(path, QA_FIELDS)):
        if _probe_gold(item_id, record) is None:
            skipped[item_id] = EXCLUDED[item_id][1] if item_id in EXCLUDED else NULL_PROBE
    return skipped


def _numbered(records: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    counts: dict[str, int] = {}
    numbered = []
    for record in records:
        number = counts[record["id"]] = counts.get(record["id"], -1) + 1
        record["_where"] = f"{record['_where']} [{record['id']}#{number}]"
        numbered.append((f"{record['id']}#{number}", record))
    return numbered


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _probe_gold(item_id: str, record: dict[str, Any]) -> tuple[str, str] | None:
    """``(gold literal text, source)`` or None for a probe that is not graded."""
    where, truth, question = record["_where"], record["ground_truth"], record["question"]
    if truth is None or question is None:
        if truth is not None or question is not None:
            raise DataUnavailable(
                f"{where}: question and ground_truth must both be null or neither"
            )
        return None
    if isinstance(truth, dict):
        parts = {}
        for name, text in truth.items():
            try:
                parts[name] = values.parse(text) if isinstance(text, str) else text
            except values.ValueParseError as exc:
                raise DataUnavailable(
                    f"{where}: field 'ground_truth' part {name!r} is not a literal ({exc})"
                ) from None
        return values.render(parts), "dict"
    for table in (EXCLUDED, ANSWER_KEY):
        if item_id in table and table[item_id][0] != _digest(truth):
            raise DataUnavailable(
                f"{where}: field 'ground_truth' differs from the text the "
                "answer key restates (another data version?)"
            )
    if item_id in EXCLUDED:
        return None
    if item_id in ANSWER_KEY:
        return ANSWER_KEY[item_id][1], "answer_key"
    try:
        values.parse(truth)
    except values.ValueParseError:
        raise DataUnavailable(
            f"{where}: field 'ground_truth' is free text with no answer-key entry: {truth[:60]!r}"
        ) from None
    return truth, "literal"


def _probe_item(
    item_id: str, record: dict[str, Any], benchmark: str, gold: str, source: str
) -> Item:
    where, meta = record["_where"], record["meta_data"]
    entry = meta.get("func_name")
    try:
        check_entry(entry if isinstance(entry, str) else "")
    except CallSyntaxError:
        raise DataUnavailable(
            f"{where}: field 'meta_data.func_name' is not a callable name: {entry!r}"
        ) from None
    _arguments(where, record["input"], "input")
    _gold_output(where, record["output"])
    parts = values.parse(gold)
    multi = source == "dict" or (source == "answer_key" and isinstance(parts, dict))
    return Item(
        id=item_id,
        benchmark=benchmark,
        task=PROBE_TASK,
        program=record["source_code"],
        entry=entry,
        call=f"{entry}({record['input']})",
        truth=gold,
        fields={
            "code": record["source_code"],
            "func_name": entry,
            "input": record["input"],
            "question": record["question"],
        },
        metadata={
            "problem": problem_key(record["id"]),
            "implementation": record["id"],
            "gold_source": source,
            "multi_part": multi,
            "parts": list(parts) if multi and isinstance(parts, dict) else [],
            "dimensions": list(dimensions(record.get("complexity_type"))),
            "complexity_type": record.get("complexity_type"),
            "answer_type": record.get("answer_type"),
            "target_step_index": record.get("target_step_index"),
            "target_line_number": record.get("target_line_number"),
            "probe_model": record["model_used"],
            "code_model": meta.get("model_name"),
            "output": record["output"],
        },
    )


_LICENSE = (
    "no LICENSE file (treat as all rights reserved; ask the authors); problems from "
    "HumanEval (MIT) and LiveCodeBench ('cc')"
)


def _declare(
    name: str,
    title: str,
    description: str,
    kinds: tuple[str, ...],
    sources: tuple[Source, ...],
    counts: dict[str, int],
    *,
    dataset: str = "core",
    license: str = _LICENSE,
    upstream: str = UPSTREAM,
    decontaminate: bool = True,
    metric_note: str = "I, Is, W, Ws, RCS x 100 and Cons (both definitions), per-problem means, "
    "mean of runs (upstream: 3); on the 60-problem release, not the paper's 91",
) -> Benchmark:
    return Benchmark(
        name=name,
        title=title,
        description=description,
        tasks=kinds,
        dataset=dataset,
        sources=sources,
        parse=lambda paths: load(paths, benchmark=name, kinds=kinds),
        license=license,
        upstream=upstream,
        counts=counts,
        breakdown="problem",
        breakdown_note="per problem: CoRE scores problems, then averages them",
        metric_note=metric_note,
        metrics=Metrics.INVARIANCE_TRANSPARENCY,
        extraction=Extraction.ROBUST,
        extractions=(Extraction.OFFICIAL, Extraction.ROBUST, Extraction.ANSWER_TAG),
        group_by=("problem",),
        decontaminate=decontaminate,
    )


CORE = _declare(
    "core",
    "CoRE",
    "output prediction over equivalent implementations and intermediate-state probes of "
    "the same 60 problems",
    (OUTPUT_TASK, PROBE_TASK),
    (IO, QA),
    {"items": 2216, "outputs": 1978, "probes": 243, "graded_probes": 238, "problems": 60},
    decontaminate=False,  # its programs are those of core-output and core-probe
)
OUTPUT = _declare(
    "core-output",
    "CoRE output prediction",
    "predict f(x) for each of several functionally equivalent implementations",
    (OUTPUT_TASK,),
    (IO,),
    {"items": 1978, "implementations": 255, "problems": 60},
)
PROBE = _declare(
    "core-probe",
    "CoRE intermediate-state probes",
    "answer a question about an intermediate state of one run",
    (PROBE_TASK,),
    (QA,),
    {"items": 238, "probes": 243, "graded_probes": 238, "problems": 60},
)
# A benchmark built by 'codereasoner core build' (families/core/build.py): CoRE's files and
# loader, local data only (--data-dir the build folder).
GENERATED = _declare(
    "core-gen",
    "CoRE-style, generated",
    "a 'core build' benchmark: output prediction over verified rewrites and exact probes "
    "from our traces",
    (OUTPUT_TASK, PROBE_TASK),
    (
        Source(IO.filename, "a 'codereasoner core build' output folder", kind=LOCAL),
        Source(QA.filename, "a 'codereasoner core build' output folder", kind=LOCAL),
    ),
    {},
    dataset="core-gen",
    metric_note="I, Is, W, Ws, RCS x 100 and Cons (both definitions), per-problem means, "
    "over the problems of the build",
    license="as the programs it was built from (see the build's summary.json 'settings')",
    upstream="generated locally by 'codereasoner core build'",
    decontaminate=False,  # built here, from programs decontamination reads where they come from
)
BENCHMARKS = (CORE, OUTPUT, PROBE, GENERATED)
