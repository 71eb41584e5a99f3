"""The synthesis pipeline on planted candidates (real sandbox, real benchmark index), the
resumable writer, and small offline runs (same seed, same bytes)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codereasoner import values
from codereasoner.execution import Batch, Limits, Pool, Program, TraceOptions, parse_call
from codereasoner.synth.batching import Work, run_grouped
from codereasoner.synth.case import Candidate, Constraints, Drop
from codereasoner.synth.decontam import (
    BenchmarkIndex,
    BenchmarkProgram,
    Decontamination,
    LoadedBenchmarks,
    NoBenchmarkData,
)
from codereasoner.synth.pipeline import SynthConfig, run, trace_summary
from codereasoner.synth.writer import OutputError, RunWriter

BENCHMARK_CODE = (
    "def f(text, width):\n"
    "    result = ''\n"
    "    for index, char in enumerate(text):\n"
    "        if index % width == 0:\n"
    "            result += char.upper()\n"
    "        else:\n"
    "            result += char\n"
    "    return result"
)
# The benchmark program with every name changed: only the near-duplicate rule can see it.
RENAMED_BENCHMARK = (
    "def f(s, w):\n"
    "    out = ''\n"
    "    for i, c in enumerate(s):\n"
    "        if i % w == 0:\n"
    "            out += c.upper()\n"
    "        else:\n"
    "            out += c\n"
    "    return out"
)
GOOD = "def f(text, sep):\n    head, _, tail = text.partition(sep)\n    return tail + sep + head"
GOOD_RENAMED = "def f(s, p):\n    a, _, b = s.partition(p)\n    return b + p + a"
HASH_ORDER = (
    "def f(words):\n    out = ''\n    for w in set(words):\n        out += w[0]\n    return out"
)
# A docstring spans lines when indented: this program is never grouped with others.
DOCSTRING = 'def f(text):\n    """Swap\n    halves."""\n    half = len(text) // 2\n    return text[half:] + text[:half].upper()'
WORDS = "['pear', 'fig', 'kiwi', 'lime', 'plum', 'date', 'yuzu', 'nut']"
# Int sets: the same under every hash seed, but the answer is CPython's table layout.
SET_POP = "def f(group):\n    score = 0\n    if 3 in group:\n        score += abs(group.pop())\n    return score"
SET_SORTED = "def f(bag):\n    bag = bag.copy()\n    bag.add(len(bag))\n    return sorted(bag)[1:]"
# Every input gives True through the same lines: every mutant is redundant.
CONSTANT = "def f(text):\n    size = len(text)\n    return size >= 0"

PLANTED: list[tuple[str, str, str, tuple[str, str] | None]] = [
    # (method, code, input, expected drop (stage, reason) or None when kept)
    ("str.partition", GOOD, "'ab,cd', ','", None),
    (
        "list.index",
        "def f(xs):\n    k = xs.index(99)\n    return k + 1",
        "[1, 2]",
        ("execution", "raised"),
    ),
    ("set.add", HASH_ORDER, WORDS, ("determinism", "hash_seed_dependent")),
    ("str.partition", GOOD_RENAMED, "'ab,cd', ','", ("dedup", "ast_duplicate")),
    (
        "str.upper",
        "def f(text):\n    big = text.upper()\n    return big * 30",
        "'abcd'",
        ("execution", "output_too_long"),
    ),
    (
        "str.strip",
        "import os\ndef f(text):\n    return text.strip()",
        "' a '",
        ("static", "import"),
    ),
    ("str.upper", RENAMED_BENCHMARK, "'abc xyz', 2", ("decontam", "near_duplicate")),
    ("str.upper", DOCSTRING, "'abcdef'", None),
    (
        "list.count",
        "def f(xs):\n    n = 0\n    while True:\n        n += xs.count(1)",
        "[1]",
        ("static", "infinite_loop"),
    ),
    ("set.pop", SET_POP, "{10, 11, 2, 3}", ("determinism", "set_layout_dependent")),
    ("set.add", SET_SORTED, "{1, 10, 5}", None),
    ("str.count", CONSTANT, "'abc'", None),
]
KEPT = [f"p-{number}" for number, planted in enumerate(PLANTED) if planted[3] is None]


class PlantedSource:
    """Candidate i is PLANTED[i]; index len(PLANTED) is a parse drop (as the llm source gives)."""

    name = "planted"

    def produce(self, indices: range) -> list[Candidate | Drop]:
        out: list[Candidate | Drop] = []
        for index in indices:
            if index == len(PLANTED):
                out.append(Drop(f"p-{index}", "parse", "no_code_block", "no ```python block"))
                continue
            method, code, arguments, _ = PLANTED[index]
            constraints = Constraints(False, False, ("for",) if "for" in code else ())
            out.append(Candidate(f"p-{index}", method, code, arguments, constraints, "planted"))
        return out

    def committed_lines(self) -> list[str]:
        return []


@pytest.fixture(scope="module")
def second_pool() -> Iterator[Pool]:
    limits = Limits(timeout_s=1.0, memory_mb=256)
    with Pool(1, isolation="bubblewrap", hash_seed=1, limits=limits) as pool:
        yield pool


BENCHMARK = BenchmarkProgram("cruxeval-o", "sample_7", BENCHMARK_CODE, ("'hello world', 3",))


@pytest.fixture(scope="module")
def planted_index() -> tuple[BenchmarkIndex, list[str]]:
    return BenchmarkIndex([BENCHMARK]), ["cruxeval-o"]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _planted_run(out: Path, pools: tuple[Pool, Pool], index: tuple, **options: object) -> None:
    config = SynthConfig(out=out, n=len(PLANTED) + 1, seed=5, **options)  # type: ignore[arg-type]
    run(config, pools=pools, source=PlantedSource(), decontam=index)


def test_planted_candidates_are_kept_or_dropped_for_the_right_reason(
    tmp_path: Path, pool: Pool, second_pool: Pool, planted_index: tuple
) -> None:
    _planted_run(tmp_path, (pool, second_pool), planted_index, mutants=2, mutant_tries=6)
    cases = _lines(tmp_path / "cases.jsonl")
    dropped = {drop["id"]: drop for drop in _lines(tmp_path / "dropped.jsonl")}
    for number, (_, _, _, expected) in enumerate(PLANTED):
        if expected is None:
            assert any(case["id"] == f"p-{number}" for case in cases)
        else:
            assert (dropped[f"p-{number}"]["stage"], dropped[f"p-{number}"]["reason"]) == expected
    assert dropped[f"p-{len(PLANTED)}"]["stage"] == "parse"
    assert "p-0" in dropped["p-3"]["detail"]  # the duplicate names the case it repeats
    audit = _lines(tmp_path / "audit.jsonl")
    assert [(a["id"], a["benchmark"], a["item_id"], a["rule"]) for a in audit] == [
        ("p-6", "cruxeval-o", "sample_7", "near_duplicate")
    ]
    original = next(case for case in cases if case["id"] == "p-0")
    assert original["output"] == "'cd,ab'" and original["output_type"] == "str"
    assert original["exec"]["hashseed_stable"] and original["exec"]["lines_covered"] == [2, 3]
    assert original["exec"]["steps"] == 2 and original["mutation"] is None
    assert original["decontam"] == {
        "checked": ["cruxeval-o"],
        "missing": [],  # the (index, checked) form: what was not given, its caller knows
        "rule": "literal",
        "rules": ["ngram10", "short_exact", "near_duplicate"],
        "matches": 0,
    }
    assert original["filters"]["passed"] == [
        "static",
        "dedup",
        "decontam",
        "execution",
        "determinism",
    ]
    assert original["exec"]["set_order_checked"] is False  # no set can reach it
    sets = next(case for case in cases if case["id"] == "p-10")
    assert sets["exec"]["set_order_checked"] is True and sets["output"] == "[3, 5, 10]"
    assert "reverse" in dropped["p-9"]["detail"]
    mutants = [case for case in cases if case["mutation"]]
    assert 3 <= len(mutants) <= 6
    # CONSTANT's mutants all return True through the same lines: none is kept, each says why
    constant = [d for d in dropped.values() if d.get("parent") == "p-11"]
    assert constant and {(d["stage"], d["reason"]) for d in constant} == {("mutation", "redundant")}
    by_id = {case["id"]: case for case in cases}
    for mutant in mutants:  # every kept mutant adds an output or a line or branch
        parent = by_id[mutant["mutation"]["parent"]]
        lines = set(mutant["exec"]["lines_covered"]) <= set(parent["exec"]["lines_covered"])
        branches = {tuple(b) for b in mutant["exec"]["branches"]} <= {
            tuple(b) for b in parent["exec"]["branches"]
        }
        assert not (mutant["output"] == parent["output"] and lines and branches), mutant
    for case in cases:  # every kept case really returns its recorded output, re-run here
        result = pool.run(Program(case["code"]), parse_call(case["call"]))
        assert values.render(result.parsed_value()) == case["output"]
        assert case["input"] != original["input"] or case["id"] == "p-0"
    for mutant in mutants:
        assert mutant["mutation"]["parent"] in KEPT and mutant["mutation"]["ops"]
        assert mutant["id"].startswith(mutant["mutation"]["parent"] + "/m")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["kept"] == {"total": len(cases), "originals": 4, "mutants": len(mutants)}
    assert summary["decontam"] == {
        "skipped": None,
        "rule": "literal",
        "checked": ["cruxeval-o"],
        "missing": [],  # the (index, checked) form: what was not given, its caller knows
        "programs": 1,
        "dropped": {"near_duplicate": 1},
        "matches": {"cruxeval-o": 1},
    }
    layout = [d["id"] for d in dropped.values() if d["reason"] == "set_layout_dependent"]
    assert "p-9" in layout and all(i.startswith("p-9") for i in layout)  # it and its mutants
    assert summary["drop_reasons"]["determinism/set_layout_dependent"] == len(layout)
    assert summary["set_order_checked"] == sum(c["exec"]["set_order_checked"] for c in cases) > 0
    stages = [drop["stage"] for drop in dropped.values()]
    assert summary["dropped_by_stage"]["determinism"] == stages.count("determinism") >= 1
    assert sum(summary["dropped_by_stage"].values()) == len(dropped)
    assert (tmp_path / "summary.png").stat().st_size > 1000


def test_output_limit_is_configurable(
    tmp_path: Path, pool: Pool, second_pool: Pool, planted_index: tuple
) -> None:
    _planted_run(tmp_path, (pool, second_pool), planted_index, mutants=0, max_output_chars=5)
    dropped = {drop["id"]: drop for drop in _lines(tmp_path / "dropped.jsonl")}
    assert dropped["p-0"]["reason"] == "output_too_long"  # 'cd,ab' renders to 7 characters
    kept = _lines(tmp_path / "cases.jsonl")
    assert [case["output"] for case in kept] == ["True"]  # CONSTANT's, 4 characters


def test_writer_truncates_an_uncommitted_tail_and_refuses_other_settings(tmp_path: Path) -> None:
    writer = RunWriter(tmp_path, {"n": 3})
    writer.commit(2, {"cases.jsonl": ['{"id": 1}\n'], "dropped.jsonl": ['{"id": 2}\n']})
    with open(tmp_path / "cases.jsonl", "a") as handle:  # a killed run's partial chunk
        handle.write('{"id": 3}\n{"id": 4, "trunc')
    resumed = RunWriter(tmp_path, {"n": 3})
    assert resumed.done == 2
    assert (tmp_path / "cases.jsonl").read_text() == '{"id": 1}\n'
    assert not (tmp_path / "generations.jsonl").exists()
    with pytest.raises(OutputError, match=r"other settings \(n: 3 there, 4 now\)"):
        RunWriter(tmp_path, {"n": 4})
    foreign = tmp_path / "other"
    foreign.mkdir()
    (foreign / "cases.jsonl").write_text("x\n")
    with pytest.raises(OutputError, match="not a synth run directory"):
        RunWriter(foreign, {"n": 3})
    (tmp_path / "cases.jsonl").write_text("")  # shorter than committed: damaged, not resumed
    with pytest.raises(OutputError, match="damaged"):
        RunWriter(tmp_path, {"n": 3})


def test_grouped_batches_give_each_program_its_own_results_and_line_numbers(pool: Pool) -> None:
    programs = [
        Work(GOOD, "f", [parse_call("f('ab,cd', ',')"), parse_call("f('x', 'y')")]),
        Work(DOCSTRING, "f", [parse_call("f('abcdef')")]),  # runs alone (a docstring spans lines)
        Work(HASH_ORDER.replace("set(words)", "sorted(words)"), "f", [parse_call(f"f({WORDS})")]),
        Work("def f(n):\n    if n > 2:\n        return n\n    return -n", "f", []),
        Work(
            "def f(n):\n    if n > 2:\n        return n\n    return -n",
            "f",
            [parse_call("f(1)"), parse_call("f(5)")],
        ),
    ]
    limits = Limits(timeout_s=1.0, memory_mb=256)
    grouped = run_grouped(pool, programs, limits, TraceOptions())
    assert [offset > 0 for _, offset in grouped] == [True, False, True, False, True]
    for work, (results, offset) in zip(programs, grouped, strict=True):
        alone = [
            pool.run_all([Batch(Program(work.code), [call], limits, TraceOptions())])[0][0]
            for call in work.calls
        ]
        assert [r.value for r in results] == [r.value for r in alone]
        assert [trace_summary(r, offset) for r in results] == [trace_summary(r) for r in alone]
    assert trace_summary(grouped[4][0][0], grouped[4][1])["branches"] == [[2, "F"]]


# -- decontamination settings ------------------------------------------------------------------

# A benchmark program and a case that share only generic 10-grams (``for i in range ( len ( s )
# ) :``: keywords, built-ins and one-letter names) and are otherwise unrelated.
GENERIC_BENCHMARK = BenchmarkProgram(
    "cruxeval-o",
    "sample_9",
    "def f(s):\n    n = 0\n    for i in range(len(s)):\n        n += s.count(s[i]) * 7\n    return n",
    ("f('banana')", "26"),
)
GENERIC_CASE = (
    "def f(s):\n    out = ''\n    for i in range(len(s)):\n        out = s[i] + out\n    return out"
)


class OneSource:
    """Candidate ``i`` is ``code`` called with ``arguments``."""

    name = "one"

    def __init__(self, code: str, arguments: str) -> None:
        self.code, self.arguments = code, arguments

    def produce(self, indices: range) -> list[Candidate | Drop]:
        constraints = Constraints(False, False, ("for",))
        return [
            Candidate(f"g-{i}", "str.count", self.code, self.arguments, constraints, "one")
            for i in indices
        ]

    def committed_lines(self) -> list[str]:
        return []


def _one_run(out: Path, pools: tuple[Pool, Pool], decontam: object) -> None:
    config = SynthConfig(out=out, n=1, seed=0, mutants=0, mutant_tries=0)
    run(config, pools=pools, source=OneSource(GENERIC_CASE, "'stressed'"), decontam=decontam)


def test_a_generic_10gram_drops_a_case_under_the_literal_rule_only(
    tmp_path: Path, pool: Pool, second_pool: Pool
) -> None:
    pools = (pool, second_pool)
    outcomes = {}
    for rule in ("literal", "specific"):
        loaded = LoadedBenchmarks([GENERIC_BENCHMARK], ["cruxeval-o"], {"reval": "not found"})
        _one_run(tmp_path / rule, pools, Decontamination.against(loaded, rule))
        cases = _lines(tmp_path / rule / "cases.jsonl")
        dropped = _lines(tmp_path / rule / "dropped.jsonl")
        summary = json.loads((tmp_path / rule / "summary.json").read_text())
        assert summary["decontam"]["rule"] == summary["settings"]["decontam_rule"] == rule
        assert summary["decontam"]["missing"] == ["reval"]
        outcomes[rule] = (cases, dropped)
    cases, dropped = outcomes["literal"]
    assert cases == [] and [(d["stage"], d["reason"], d["detail"]) for d in dropped] == [
        ("decontam", "ngram10", "cruxeval-o:sample_9")
    ]
    audit = _lines(tmp_path / "literal" / "audit.jsonl")
    assert audit[0]["detail"] == "for i in range ( len ( s ) )"
    cases, dropped = outcomes["specific"]
    assert dropped == [] and [case["output"] for case in cases] == ["'desserts'"]
    assert cases[0]["decontam"]["rule"] == "specific"
    assert cases[0]["decontam"]["checked"] == ["cruxeval-o"]
    assert cases[0]["decontam"]["missing"] == ["reval"]
    # Resuming either directory with the other rule is refused, naming the rule.
    with pytest.raises(OutputError, match="decontam_rule: 'specific' there, 'literal' now"):
        loaded = LoadedBenchmarks([GENERIC_BENCHMARK], ["cruxeval-o"], {"reval": "not found"})
        _one_run(tmp_path / "specific", pools, Decontamination.against(loaded))


def test_skipping_decontamination_is_said_in_every_record_and_the_summary(
    tmp_path: Path, pool: Pool, second_pool: Pool
) -> None:
    pools = (pool, second_pool)
    _one_run(tmp_path / "skip", pools, Decontamination.skip("--no-decontam"))
    (case,) = _lines(tmp_path / "skip" / "cases.jsonl")
    assert case["decontam"] == {"checked": [], "skipped": "--no-decontam"}
    assert "decontam" not in case["filters"]["passed"]
    summary = json.loads((tmp_path / "skip" / "summary.json").read_text())
    assert summary["decontam"] == {"skipped": "--no-decontam", "checked": []}
    # Nothing given is an error, not a silent skip; an empty (index, checked) pair is a skip.
    with pytest.raises(ValueError, match="needs a decontamination decision"):
        _one_run(tmp_path / "none", pools, None)
    _one_run(tmp_path / "empty", pools, (BenchmarkIndex([]), []))
    (case,) = _lines(tmp_path / "empty" / "cases.jsonl")
    assert case["decontam"] == {"checked": [], "skipped": "no benchmark data given"}
    # A run checked against benchmarks is not resumed without them, nor with other data.
    loaded = LoadedBenchmarks([GENERIC_BENCHMARK], ["cruxeval-o"])
    with pytest.raises(OutputError, match="decontam_skipped: '--no-decontam' there, None now"):
        _one_run(tmp_path / "skip", pools, Decontamination.against(loaded, "specific"))
    _one_run(tmp_path / "data", pools, Decontamination.against(loaded, "specific"))
    other = LoadedBenchmarks([GENERIC_BENCHMARK, BENCHMARK], ["cruxeval-o"])
    with pytest.raises(OutputError, match="decontam_programs: 1 there, 2 now, decontam_sha256"):
        _one_run(tmp_path / "data", pools, Decontamination.against(other, "specific"))


def test_a_decontamination_needs_data_or_a_reason() -> None:
    with pytest.raises(NoBenchmarkData, match="no benchmark data found"):
        Decontamination.against(LoadedBenchmarks([], [], {"cruxeval-o": "not in the cache"}))
    with pytest.raises(ValueError, match=r"decontam_rule .*: expected literal or specific"):
        Decontamination.against(LoadedBenchmarks([GENERIC_BENCHMARK], ["cruxeval-o"]), "loose")
    plan = Decontamination.against(
        LoadedBenchmarks([GENERIC_BENCHMARK], ["cruxeval-o"], {"lcb-execution": "missing"})
    )
    assert plan.rule == "literal"
    assert "literal 10-gram rule" in plan.describe() and "cruxeval-o" in plan.describe()
    assert "NOT checked (data missing): lcb-execution" in plan.describe()
    assert "SKIPPED (--no-decontam)" in Decontamination.skip().describe()
    assert Decontamination.skip().check(GENERIC_CASE) == []
