"""LiveCodeBench code execution (``livecodebench/execution-v2``) and test output prediction
(``livecodebench/test_generation``), both split ``test``, read from JSON Lines: the split's parquet
files fetched from the Hugging Face dataset repository at a pinned revision (through
``huggingface_hub``, concatenated in name order into the cache as JSON Lines), or an export written
with ``datasets`` (records orientation).
"""

from __future__ import annotations

import ast
import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codereasoner.benchmarks.cache import DataUnavailable, hub_source
from codereasoner.benchmarks.records import read_jsonl, unique_ids
from codereasoner.benchmarks.spec import Benchmark, Stops
from codereasoner.execution.call import SITE_PACKAGES_PREAMBLE
from codereasoner.families.livecodebench import TEMPLATES
from codereasoner.files import parse_json
from codereasoner.tasks import Item

COMMIT = "28fef95ea8c9f7a547c8329f2cd3d32b92c1fa24"
UPSTREAM = f"https://github.com/LiveCodeBench/LiveCodeBench/tree/{COMMIT}"
# The test split: every parquet shard under data/ (`test-00000-of-00001.parquet`, or with the hash
# suffix older `datasets` versions add, or several), read in name order. The revisions (and test
# output prediction's parquet sha256) are the dataset commits public projects pinning
# LiveCodeBench list, with its code at COMMIT; they were not checked against the Hub from here,
# which is out of reach. The cache's manifest records the commit each download resolved to and
# the files it read, and the sha256 of the JSON Lines written from them, as for every file.
SPLIT_PATTERN = "data/test-*.parquet"
EXECUTION_REVISION = "fcf5430809253fd78c5dc5b57573ca673e6e43c2"
TEST_GENERATION_REVISION = "6f3ac40bbecf81eba15899139d279b077f2816fd"
EXECUTION = hub_source(
    "execution-v2.jsonl", "livecodebench/execution-v2", EXECUTION_REVISION, SPLIT_PATTERN
)
TEST_GENERATION = hub_source(
    "test_generation.jsonl",
    "livecodebench/test_generation",
    TEST_GENERATION_REVISION,
    SPLIT_PATTERN,
    upstream_sha256="4826aa00c059d6d47a099606ceed2d0e51d3aeeb1868f1bcf349a038bb64b4b1",
)

# Upstream's BASE_IMPORTS (docs/benchmark-rules.md), run before every program, in its order, so that
# `bisect` ends up as the module. As upstream, numpy and pandas must be installed (Debian:
# python3-numpy, python3-pandas, for the sandbox's interpreter): without them every answer fails.
BASE_IMPORTS = """\
from itertools import accumulate, chain, combinations, count, permutations, product, groupby, islice, repeat
from copy import deepcopy
from string import ascii_lowercase
from math import floor, log2, log10, sqrt, comb, gcd, ceil, inf, isqrt
from collections import defaultdict, deque, Counter
from bisect import bisect, bisect_left, bisect_right, insort
from heapq import heappush, heappop, heapify, merge
from functools import reduce, cache, lru_cache
from random import randrange, shuffle
from operator import itemgetter, sub
from re import search as re_search
from os.path import commonprefix
from typing import List, Tuple, Dict, Set, Optional, Union, Any, Callable, Iterable, Iterator, Generator
import copy
import string
import math
import collections
import bisect
import heapq
import functools
import random
import itertools
import operator
import re
import numpy as np
import pandas as pd
from math import log, prod
from collections import deque, defaultdict, Counter, OrderedDict
from itertools import accumulate, permutations, combinations, product, groupby, islice, chain, repeat, zip_longest, cycle
from functools import lru_cache, reduce, partial
from operator import iand
import sys
"""

EXECUTION_FIELDS = {"id": str, "function_name": str, "code": str, "input": str, "output": str}
TEST_FIELDS: dict[str, type | tuple[type, ...]] = {
    "question_content": str,
    "starter_code": str,
    "question_id": (str, int),
    "test_id": int,
    "test": str,
    "difficulty": str,
}
_METADATA = ("question_id", "question_title", "contest_id", "difficulty", "numsteps", "problem_id")


def load_execution(paths: Mapping[str, Path], benchmark: str) -> list[Item]:
    """Items ordered by the number in ``id`` (``sample_12`` -> 12), as upstream prompts them."""
    path = paths[EXECUTION.filename]
    rows = read_jsonl(path, EXECUTION_FIELDS)
    unique_ids(path, rows, "id")
    for row in rows:
        _sample_number(path, row)
    items = []
    for row in sorted(rows, key=lambda r: _sample_number(path, r)):
        items.append(
            Item(
                id=row["id"],
                benchmark=benchmark,
                task="lcb_execution",
                program=f"{SITE_PACKAGES_PREAMBLE}{BASE_IMPORTS}\n{row['code']}",
                entry=row["function_name"],
                call=row["input"],
                truth=row["output"],
                fields={"code": row["code"], "input": row["input"]},
                metadata=_metadata(row),
            )
        )
    return items


def load_test_output(paths: Mapping[str, Path], benchmark: str) -> list[Item]:
    """Items ordered by ``(question_id, test_id)``; only ``test[0]`` of each row is asked."""
    path = paths[TEST_GENERATION.filename]
    rows = read_jsonl(path, TEST_FIELDS)
    items = []
    for row in rows:
        test = _first_test(path, row)
        name = function_name(path, row)
        arguments = ", ".join(test["input"].split("\n"))
        items.append(
            Item(
                id=f"{row['question_id']}_{row['test_id']}",
                benchmark=benchmark,
                task="test_output_prediction",
                entry=name,
                call=f"{name}({arguments})",
                truth=test["output"],
                truth_format="json",
                fields={
                    "question_content": row["question_content"],
                    "starter_code": row["starter_code"],
                    "func_name": name,
                    "testcase_args": arguments,
                },
                metadata={**_metadata(row), "test_id": row["test_id"]},
            )
        )
    items.sort(key=lambda item: _order_key(item.metadata["question_id"], item.metadata["test_id"]))
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise DataUnavailable(f"{path}: duplicate (question_id, test_id) {item.id!r}")
        seen.add(item.id)
    return items


def function_name(path: Path, row: dict[str, Any]) -> str:
    """The one ``def`` in the starter code (any depth); upstream's rules, errors named."""
    where = f"{path}:{row['_line']}"
    try:
        tree = ast.parse(row["starter_code"])
    except SyntaxError as exc:
        raise DataUnavailable(f"{where}: starter_code does not parse ({exc.msg})") from None
    names = [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    if len(names) > 1:
        raise DataUnavailable(f"{where}: starter_code defines {len(names)} functions; expected one")
    return names[0] if names else "None"


def _first_test(path: Path, row: dict[str, Any]) -> dict[str, str]:
    where = f"{path}:{row['_line']}"
    try:
        tests = parse_json(row["test"])
    except ValueError as exc:
        raise DataUnavailable(f"{where}: field 'test' is not a JSON string ({exc})") from None
    if not isinstance(tests, list) or not tests or not isinstance(tests[0], dict):
        raise DataUnavailable(f"{where}: field 'test' must decode to a non-empty list of objects")
    first = tests[0]
    for key in ("input", "output"):
        if not isinstance(first.get(key), str):
            raise DataUnavailable(f"{where}: test[0].{key} must be a string")
    return first


def _sample_number(path: Path, row: dict[str, Any]) -> int:
    head, _, number = row["id"].rpartition("_")
    if not head or not number.isdecimal():
        raise DataUnavailable(
            f"{path}:{row['_line']}: id {row['id']!r} is not of the form sample_N"
        )
    return int(number)


def _order_key(question_id: object, test_id: object) -> tuple[Any, ...]:
    return (str(type(question_id)), question_id, test_id)


def _metadata(row: dict[str, Any]) -> dict[str, Any]:
    data = {key: row[key] for key in _METADATA if key in row}
    if "contest_date" in row:
        data["contest_date"] = _date(row["contest_date"])
    return data


def _date(value: object) -> str:
    """ISO text; exports may hold milliseconds since the epoch (pandas' default)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return str(value)


_LICENSE = "code MIT (c) 2024 LiveCodeBench; HF datasets 'cc' (variant unspecified)"
# Upstream stops raw completions at '###' and sends chat prompts with no stop sequence.
_STOPS = Stops(raw=("###",), chat=())

EXECUTION_BENCHMARK = Benchmark(
    name="lcb-execution",
    title="LiveCodeBench code execution",
    description="predict the value a LeetCode-style function call returns",
    tasks=("lcb_execution",),
    dataset="livecodebench",
    sources=(EXECUTION,),
    parse=lambda paths: load_execution(paths, benchmark="lcb-execution"),
    license=_LICENSE,
    upstream=UPSTREAM,
    counts={"items": 479, "questions": 92},
    breakdown="difficulty",
    breakdown_note="difficulty field of the data",
    metric_note="pass@1 x 100; upstream: n=10, T=0.2",
    stops=_STOPS,
    system=TEMPLATES.text("execution_system.txt"),
)
TEST_OUTPUT_BENCHMARK = Benchmark(
    name="lcb-test-output",
    title="LiveCodeBench test output prediction",
    description="predict a test's output from the problem statement and signature (no code)",
    tasks=("test_output_prediction",),
    dataset="livecodebench",
    sources=(TEST_GENERATION,),
    parse=lambda paths: load_test_output(paths, benchmark="lcb-test-output"),
    license=_LICENSE,
    upstream=UPSTREAM,
    counts={"items": 442, "questions": 182},
    breakdown="difficulty",
    breakdown_note="difficulty field of the data",
    metric_note="pass@1, pass@5 reported x 100 here (upstream prints a fraction); n=10, T=0.2",
    stops=_STOPS,
    system=TEMPLATES.text("test_output_system_generic.txt"),
    decontaminate=False,  # its prompts show a statement and a signature, no program
)
BENCHMARKS = (EXECUTION_BENCHMARK, TEST_OUTPUT_BENCHMARK)
