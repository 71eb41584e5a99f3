"""Probes from traces: visible-only questions, truths that an independent instrumentation of
the program confirms in the real sandbox, at least four per CoRE implementation, every kind."""

from __future__ import annotations

import ast
import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codereasoner import values
from codereasoner.execution import (
    Batch,
    Call,
    CallSyntaxError,
    Pool,
    Program,
    Status,
    TraceOptions,
    parse_call,
)
from codereasoner.families.core.programs import entry_point
from codereasoner.programs.probes import DIMENSIONS, KINDS, Probe, probes_for
from codereasoner.trace import ExecutionTrace, trace_batches, trace_call
from tests.conftest import SHARED_DATA, synth_cases

pytestmark = pytest.mark.full_data

CORE_PREAMBLE = "from typing import *"
CRUX_PROGRAMS = 150
LIMIT = 8
SAMPLE = 150  # probes checked against instrumentation


@dataclass(frozen=True)
class Case:
    corpus: str
    source: str
    entry: str
    call: Call
    preamble: str = ""


@dataclass(frozen=True)
class Probed:
    case: Case
    trace: ExecutionTrace
    probes: list[Probe]


def _core() -> list[Case]:
    records = json.loads((SHARED_DATA / "core" / "core_qa.json").read_text())
    inputs: dict[str, set[str]] = {}
    for record in records:
        inputs.setdefault(record["source_code"], set()).add(record["input"])
    cases = []
    for source, texts in inputs.items():
        entry = entry_point(source)
        assert entry is not None
        for text in sorted(texts):
            cases.append(Case("core", source, entry, parse_call(f"{entry}({text})"), CORE_PREAMBLE))
    return cases


def _cruxeval() -> list[Case]:
    lines = (SHARED_DATA / "cruxeval" / "cruxeval.jsonl").read_text().splitlines()
    cases = []
    for line in lines[:CRUX_PROGRAMS]:
        record = json.loads(line)
        try:
            cases.append(Case("cruxeval", record["code"], "f", parse_call(f"f({record['input']})")))
        except CallSyntaxError:  # a few inputs are expressions, not literals
            continue
    return cases


def _synth(out: Path) -> list[Case]:
    synth_cases(out, n=24, seed=16)
    cases = []
    for line in (out / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        cases.append(Case("synth", case["code"], "f", parse_call(case["call"])))
    return cases


def _frame(entry: str) -> str:
    return entry.replace("()", "")


@pytest.fixture(scope="module")
def probed(pool: Pool, tmp_path_factory: pytest.TempPathFactory) -> list[Probed]:
    """Every case traced once (batched) and probed."""
    if not (SHARED_DATA / "core" / "core_qa.json").exists():
        pytest.skip("needs ../shared/data (core, cruxeval)")
    cases = _core() + _cruxeval() + _synth(tmp_path_factory.mktemp("probes") / "synth")
    work = [(Program(c.source, c.entry, preamble=c.preamble), [c.call]) for c in cases]
    found = []
    for number, (case, (traced,)) in enumerate(zip(cases, trace_batches(pool, work), strict=True)):
        if traced.trace is None:
            continue
        rng = random.Random(number)
        probes = probes_for(
            case.source, traced.trace, frame=_frame(case.entry), limit=LIMIT, rng=rng
        )
        found.append(Probed(case, traced.trace, probes))
    return found


# ---------------------------------------------------------------------------------------
# visible information only
# ---------------------------------------------------------------------------------------

_QUOTED_LINE = re.compile(r"line (\d+) \(`([^`]*)`\)")
_BACKTICKED = re.compile(r"`([^`]*)`")
_ORDINAL = re.compile(r"\b\d+(?:st|nd|rd|th)\b")
_NUMBER = re.compile(r"\d+")


def _loop_values(source: str, trace: ExecutionTrace) -> set[str]:
    """Texts of the values the entry frame's ``for`` targets take."""
    names = {
        sub.id
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.For)
        for sub in ast.walk(node.target)
        if isinstance(sub, ast.Name)
    }
    return {
        text
        for step in trace.steps
        if step.fid == 0
        for name, text in step.changes.items()
        if name in names and text is not None
    }


def _invisible(probe: Probe, item: Probed) -> list[str]:
    """What in the question a model could not see in the listing, the call or the loop values."""
    question, source = probe.question, item.case.source
    shown = source.splitlines()
    problems = [word for word in ("step", "trace") if word in _BACKTICKED.sub("", question).lower()]
    for number, code in _QUOTED_LINE.findall(question):
        if not 1 <= int(number) <= len(shown) or shown[int(number) - 1].strip() != code:
            problems.append(f"line {number} is not `{code}`")
    rest = _QUOTED_LINE.sub("", question)
    for span in _BACKTICKED.findall(rest):
        if span.isidentifier() and not re.search(rf"\b{re.escape(span)}\b", source):
            problems.append(f"`{span}` is not in the source")
    rest = _ORDINAL.sub("", _BACKTICKED.sub("", rest))
    visible = source + item.case.call.render() + " ".join(_loop_values(source, item.trace))
    numbers = set(_NUMBER.findall(visible))
    problems += [f"number {n}" for n in _NUMBER.findall(rest) if n not in numbers]
    return problems


def test_questions_mention_only_visible_information(probed: list[Probed]) -> None:
    checked = 0
    for item in probed:
        for probe in item.probes:
            problems = _invisible(probe, item)
            assert not problems, f"{probe.question}\n{problems}\n{item.case.source}"
            checked += 1
    assert checked >= 1000


# ---------------------------------------------------------------------------------------
# truths against an independent instrumentation (AST rewrite, run in the sandbox)
# ---------------------------------------------------------------------------------------

# The instrumented program finds, without the tracer, (1) the value at the probe's locator and
# (2) which execution of the target the question's words name: loops count their own iterations
# and note their variables at the top of the body, and each execution of the target is matched
# against the iterations the question names. Hooks count only in the entry frame instance (the
# first frame that enters the entry function), except call returns, which count every call.
HOOKS = """
import sys as _probe_sys
_probe_log = []
_probe_counts = {}
_probe_entry = []
_probe_current = {}
_probe_matches = []

def _probe_enter():
    if not _probe_entry:
        _probe_entry.append(_probe_sys._getframe(1))

def _probe_mine():
    return _probe_sys._getframe(2) is _probe_entry[0]

def _probe_where():
    for line, number, name, value in _PROBE_LEVELS:
        count, seen = _probe_current.get(line, (0, None))
        if number is not None and count != number:
            return False
        if name is not None and not (type(seen) is type(value) and seen == value):
            return False
    return True

def _probe_match(execution):
    _probe_counts["matched"] = _probe_counts.get("matched", 0) + 1
    if len(_probe_matches) < 2000:
        _probe_matches.append(execution)

def _probe_at(key):
    if not _probe_mine():
        return 0
    _probe_counts[key] = _probe_counts.get(key, 0) + 1
    if _probe_where():
        _probe_match(_probe_counts[key])
    return _probe_counts[key]

def _probe_test(key, wanted, value):
    if _probe_mine():
        _probe_counts[key] = _probe_counts.get(key, 0) + 1
        if _probe_where():
            _probe_match(_probe_counts[key])
        if _probe_counts[key] == wanted:
            _probe_log.append(repr(bool(value)))
    return value

def _probe_reset(line):
    if _probe_mine():
        _probe_current[line] = (0, None)

def _probe_iteration(line, value):
    if _probe_mine():
        _probe_current[line] = (_probe_current.get(line, (0, None))[0] + 1, value)

def _probe_is(key, wanted):
    return _probe_mine() and _probe_counts.get(key) == wanted

def _probe_body(line):
    if _probe_mine():
        key = ("body", line, _probe_counts.get(("run", line), 0))
        _probe_counts[key] = _probe_counts.get(key, 0) + 1

def _probe_return(value):
    if _probe_mine():
        _probe_log.append(repr(value))
    return value

def _probe_call(name):
    _probe_counts[("call", name)] = _probe_counts.get(("call", name), 0) + 1
    return _probe_counts[("call", name)]

def _probe_returned(number, wanted, value):
    if number == wanted:
        _probe_log.append(repr(value))
    return value
"""
DRIVER = """
def _probe_main(*args, **kwargs):
    try:
        {entry}(*args, **kwargs)
    except Exception:
        pass
    return _probe_log, _probe_counts, _probe_matches
"""
_LEVELS = re.compile(r" in (the (?:iteration|\d+\w\w iteration) of the loop on line .*)\?", re.S)
_BY_VALUE = re.compile(
    r"the iteration of the loop on line (\d+) \(`[^`]*`\) where `(\w+)` is (.*)", re.S
)
_BY_NUMBER = re.compile(r"the (\d+)\w\w iteration of the loop on line (\d+) \(`[^`]*`\)$")
_REPEAT = re.compile(r"\) (?:runs|evaluate to True or False when tested) for the (\d+)\w\w time")
Level = tuple[int, int | None, str | None, object]  # loop line, iteration, variable, its value


def _asked(question: str) -> tuple[list[Level], int | None]:
    """The iterations a question names (outermost first) and which execution there, if said."""
    levels: list[Level] = []
    found = _LEVELS.search(question)
    for part in found.group(1).split(", within ") if found else []:
        by_value, by_number = _BY_VALUE.fullmatch(part), _BY_NUMBER.fullmatch(part)
        if by_value:
            line, name, stated = by_value.groups()
            levels.insert(0, (int(line), None, name, values.parse(stated)))
        else:
            assert by_number, part
            levels.insert(0, (int(by_number.group(2)), int(by_number.group(1)), None, None))
    repeat = _REPEAT.search(question)
    return levels, int(repeat.group(1)) if repeat else None


def _statement(code: str) -> ast.stmt:
    """A hook statement, its positions zeroed so that no line lookup finds it."""
    statement = ast.parse(code).body[0]
    for node in ast.walk(statement):
        if hasattr(node, "lineno"):
            node.lineno = node.end_lineno = 0  # type: ignore[attr-defined]
    return statement


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    yield from (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef))


def _own_nodes(function: ast.FunctionDef) -> Iterator[ast.AST]:
    """The function's nodes, those of nested functions and lambdas left out."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))


def _insert(tree: ast.Module, line: int, before: list[ast.stmt], after: list[ast.stmt]) -> None:
    """Put statements around the statement that starts on ``line``."""
    for node in ast.walk(tree):
        for block in ("body", "orelse", "finalbody"):
            body = getattr(node, block, None)
            for position, statement in enumerate(body if isinstance(body, list) else []):
                if isinstance(statement, ast.stmt) and statement.lineno == line:
                    body[position : position + 1] = [*before, statement, *after]  # type: ignore[index]
                    return
    raise AssertionError(f"no statement on line {line}")


def _statement_on(tree: ast.Module, line: int) -> ast.stmt:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno == line)


def _hook_call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _instrument_target(tree: ast.Module, locator: dict[str, object]) -> None:
    event, occurrence, line = locator["event"], locator["occurrence"], locator.get("line", 0)
    assert isinstance(occurrence, int) and isinstance(line, int)
    record = f"_probe_log.append(repr({locator.get('name')}))"
    if event == "after_line":
        _insert(
            tree, line, [], [_statement(f"if _probe_at({line}) == {occurrence}:\n    {record}")]
        )
    elif event in ("condition", "return"):
        node = _statement_on(tree, line)
        if isinstance(node, ast.If | ast.While):
            node.test = _hook_call(
                "_probe_test", ast.Constant(line), ast.Constant(occurrence), node.test
            )
        else:
            assert isinstance(node, ast.Return) and node.value is not None
            node.value = _hook_call("_probe_return", node.value)
    elif event in ("after_loop", "loop_count"):
        node = _statement_on(tree, line)
        assert isinstance(node, ast.For | ast.While)
        node.body.insert(0, _statement(f"_probe_body({line})"))
        end = _statement(f"if _probe_is(('run', {line}), {occurrence}):\n    {record}")
        _insert(tree, line, [_statement(f"_probe_at(('run', {line}))")], [end])
    elif event == "call_return":
        for function in _functions(tree):
            if function.name != locator["function"]:
                continue
            number = ast.Name("_probe_number", ast.Load())
            for inner in _own_nodes(function):
                if isinstance(inner, ast.Return):
                    value = inner.value or ast.Constant(None)
                    inner.value = _hook_call(
                        "_probe_returned", number, ast.Constant(occurrence), value
                    )
            function.body.insert(0, _statement(f"_probe_number = _probe_call({function.name!r})"))
            function.body.append(_statement(f"_probe_returned(_probe_number, {occurrence}, None)"))
    else:
        raise AssertionError(f"unknown locator {locator}")


def _instrument(source: str, frame: str, probe: Probe) -> tuple[str, str]:
    """The instrumented source and the hooks it needs (with the question's iterations)."""
    tree = ast.parse(source)
    _instrument_target(tree, dict(probe.locator))
    levels, _ = _asked(probe.question)
    for line, _, name, _ in levels:
        loop = _statement_on(tree, line)
        assert isinstance(loop, ast.For | ast.While)
        loop.body.insert(0, _statement(f"_probe_iteration({line}, {name or 'None'})"))
        _insert(tree, line, [_statement(f"_probe_reset({line})")], [])
    name = frame.rsplit(".", 1)[-1]
    entry = next(node for node in _functions(tree) if node.name == name)
    entry.body.insert(0, _statement("_probe_enter()"))
    hooks = HOOKS + f"\n_PROBE_LEVELS = {[level for level in levels]!r}\n"
    return ast.unparse(ast.fix_missing_locations(tree)), hooks


def _instrumented_truth(probe: Probe, log: list[str], counts: dict[object, int]) -> object:
    locator = probe.locator
    if locator["event"] == "loop_count":
        return counts.get(("body", locator["line"], locator["occurrence"]), 0)
    assert len(log) == 1, f"recorded {len(log)} values: {log[:3]}"
    return values.parse(log[0])


def _named_execution(probe: Probe, matches: list[int], total: int) -> int | None:
    """Which execution of the target the question's words name, per the instrumentation."""
    if probe.kind in ("return", "call_return"):
        return int(str(probe.locator["occurrence"]))  # one return per frame; calls by ordinal
    _, repeat = _asked(probe.question)
    if repeat is None:
        assert total == 1, f"the question names {total} executions"
        return matches[0]
    return matches[repeat - 1] if repeat <= len(matches) else None


def _check_against_instrumentation(pool: Pool, chosen: list[tuple[Probed, Probe]]) -> list[str]:
    batches = []
    for item, probe in chosen:
        case = item.case
        source, hooks = _instrument(case.source, _frame(case.entry), probe)
        program = Program(
            source,
            "_probe_main",
            preamble=case.preamble + "\n" + hooks,
            epilogue=DRIVER.format(entry=case.entry),
        )
        batches.append(Batch(program, [Call("_probe_main", case.call.args, case.call.kwargs)]))
    failures = []
    for (item, probe), (result,) in zip(chosen, pool.run_all(batches), strict=True):
        where = f"{item.case.call.render()}: {probe.question}\n{item.case.source}"
        if result.status is not Status.OK or result.value is None:
            failures.append(
                f"{where}\ninstrumented run: {result.status} {result.exception_message}"
            )
            continue
        recorded = values.parse(result.value)
        assert isinstance(recorded, tuple)
        log, counts, matches = recorded
        try:
            found = _instrumented_truth(probe, log, counts)
            named = _named_execution(probe, matches, counts.get("matched", 0))
        except AssertionError as exc:
            failures.append(f"{where}\n{exc}")
            continue
        if named != probe.locator["occurrence"]:
            failures.append(f"{where}\nthe question names execution {named}, not {probe.locator}")
        elif not values.equal(found, values.parse(probe.truth), "exact"):
            failures.append(f"{where}\ntrace says {probe.truth}, instrumentation {found!r}")
    return failures


def test_truths_match_direct_instrumentation(pool: Pool, probed: list[Probed]) -> None:
    everything = [(item, probe) for item in probed for probe in item.probes]
    rng = random.Random(16)
    chosen = rng.sample(everything, SAMPLE)
    kinds = {probe.kind for _, probe in chosen}
    chosen += [next((i, p) for i, p in everything if p.kind == k) for k in set(KINDS) - kinds]
    failures = _check_against_instrumentation(pool, chosen)
    assert not failures, f"{len(failures)} of {len(chosen)} disagree:\n\n" + "\n\n".join(
        failures[:3]
    )


# ---------------------------------------------------------------------------------------
# CoRE: at least four probes per implementation, every dimension
# ---------------------------------------------------------------------------------------


def test_every_core_implementation_gets_at_least_four_probes(probed: list[Probed]) -> None:
    per_source: Counter[str] = Counter()
    events: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    dimensions: Counter[str] = Counter()
    for item in probed:
        if item.case.corpus != "core":
            continue
        per_source[item.case.source] += len(item.probes)
        events[item.case.source] += sum(step.fid == 0 for step in item.trace.steps)
        kinds.update(probe.kind for probe in item.probes)
        dimensions.update(d for probe in item.probes for d in probe.dimensions)
    assert len(per_source) == 118
    # a program whose entry runs fewer than four lines in all has fewer things to ask about
    short = {source: count for source, count in per_source.items() if count < 4}
    assert all(count >= events[source] for source, count in short.items()), short
    assert len(short) <= 1, short
    assert set(dimensions) == set(DIMENSIONS)
    assert set(kinds) == set(KINDS)
    counts = sorted(per_source.values())
    print(f"\nprobes per CoRE implementation: min {counts[0]}, median {counts[len(counts) // 2]}")
    print(f"kinds: {dict(kinds.most_common())}\ndimensions: {dict(dimensions.most_common())}")


def test_probes_are_well_formed(probed: list[Probed]) -> None:
    for item in probed:
        assert len(item.probes) <= LIMIT
        assert len({probe.question for probe in item.probes}) == len(item.probes)
        for probe in item.probes:
            assert probe.kind in KINDS
            assert probe.dimensions and list(probe.dimensions) == [
                d for d in DIMENSIONS if d in probe.dimensions
            ]
            assert values.render(values.parse(probe.truth)) == probe.truth
            assert probe.trace_distance == probe.step + 1
            step = item.trace.steps[probe.step]
            if probe.kind != "call_return":
                assert (step.fid, step.frame) == (0, _frame(item.case.entry))
            assert json.loads(json.dumps(probe.to_dict()))["question"] == probe.question


def test_probes_are_deterministic_for_a_given_rng(probed: list[Probed]) -> None:
    for item in probed[:40]:
        again = probes_for(
            item.case.source, item.trace, frame=item.case.entry, limit=LIMIT, rng=random.Random(7)
        )
        same = probes_for(
            item.case.source, item.trace, frame=item.case.entry, limit=LIMIT, rng=random.Random(7)
        )
        assert again == same


# ---------------------------------------------------------------------------------------
# each kind on a tiny program
# ---------------------------------------------------------------------------------------

TINY = """def f(nums, k):
    total = 0
    seen = []
    for i in range(len(nums)):
        for j in range(2):
            if nums[i] > k and j != 1:
                total += nums[i] * 2 - j
        seen.append(nums[i])
        if nums[i] == 9:
            break
    n = 0
    while n < 3:
        n += 1
    return total + helper(n)

def helper(x):
    return x * 10
"""


@pytest.fixture(scope="module")
def tiny(pool: Pool) -> tuple[ExecutionTrace, list[Probe]]:
    traced = trace_call(pool, Program(TINY), parse_call("f([4, 1, 9, 7], 2)"))
    assert traced.trace is not None
    return traced.trace, probes_for(TINY, traced.trace, frame="f", limit=200, rng=random.Random(0))


def _find(probes: list[Probe], kind: str, fragment: str) -> Probe:
    found = [probe for probe in probes if probe.kind == kind and fragment in probe.question]
    assert found, f"no {kind} probe mentioning {fragment!r}"
    return found[0]


def test_loop_value_names_the_iteration_by_the_loop_variable(
    tiny: tuple[ExecutionTrace, list[Probe]],
) -> None:
    _, probes = tiny
    probe = _find(
        probes,
        "loop_value",
        "`seen` right after line 8 (`seen.append(nums[i])`) runs in the iteration of the loop on line 4 (`for i in range(len(nums)):`) where `i` is 1?",
    )
    assert probe.truth == "[4, 1]"
    assert probe.dimensions == ("State",)
    assert probe.locator == {"event": "after_line", "line": 8, "occurrence": 2, "name": "seen"}


def test_arithmetic_in_nested_loops_names_both_iterations(
    tiny: tuple[ExecutionTrace, list[Probe]],
) -> None:
    _, probes = tiny
    probe = _find(
        probes,
        "arithmetic",
        "where `j` is 0, within the iteration of the loop on line 4 (`for i in range(len(nums)):`) where `i` is 2",
    )
    assert probe.truth == str(4 * 2 + 9 * 2)
    assert probe.dimensions == ("Arithmetic", "State")
    assert (probe.nesting_depth, probe.operators) == (3, 4)  # total += nums[i] * 2 - j


def test_condition_outcome_per_iteration(tiny: tuple[ExecutionTrace, list[Probe]]) -> None:
    _, probes = tiny
    probe = _find(
        probes,
        "condition",
        "line 6 (`if nums[i] > k and j != 1:`) evaluate to True or False in the iteration of the loop on line 5 (`for j in range(2):`) where `j` is 0, within the iteration of the loop on line 4 (`for i in range(len(nums)):`) where `i` is 1?",
    )
    assert probe.truth == "False"  # nums[1] = 1 is not above k = 2
    assert probe.dimensions == ("Logic",)
    # a while test runs once more than its body: the repeated runs are told apart
    check = _find(
        probes,
        "condition",
        "line 12 (`while n < 3:`) evaluate to True or False when tested for the 4th time",
    )
    assert (check.truth, check.dimensions) == ("False", ("Logic", "Boundary"))


def test_after_loop_and_loop_exit_see_the_break(tiny: tuple[ExecutionTrace, list[Probe]]) -> None:
    _, probes = tiny
    after = _find(probes, "after_loop", "`seen` right after the loop on line 4")
    assert after.truth == "[4, 1, 9]"  # left by break at 9
    assert after.dimensions == ("State", "Boundary")
    count = _find(probes, "loop_exit", "loop on line 4 (`for i in range(len(nums)):`) start?")
    assert count.truth == "3"
    inner = _find(
        probes,
        "loop_exit",
        "loop on line 5 (`for j in range(2):`) start in the iteration of the loop on line 4 (`for i in range(len(nums)):`) where `i` is 2?",
    )
    assert inner.truth == "2"
    assert _find(probes, "loop_exit", "line 12 (`while n < 3:`)").truth == "3"


def test_accumulator_after_its_kth_update(tiny: tuple[ExecutionTrace, list[Probe]]) -> None:
    _, probes = tiny
    probe = _find(
        probes,
        "accumulator",
        "`total` right after line 7 (`total += nums[i] * 2 - j`) runs for the 2nd time?",
    )
    assert probe.truth == str(8 + 18)
    # a counter after its k-th update is k: the question would state its answer
    counter = "`n` right after line 13 (`n += 1`) runs for the 3rd time?"
    assert not [p for p in probes if p.kind == "accumulator" and counter in p.question]


def test_fallback_kinds(tiny: tuple[ExecutionTrace, list[Probe]]) -> None:
    _, probes = tiny
    assert _find(probes, "value", "`n` right after line 11 (`n = 0`) runs?").truth == "0"
    assert _find(probes, "call_return", "1st call of `helper`").truth == "30"
    assert _find(probes, "return", "line 14 (`return total + helper(n)`)").truth == str(26 + 30)


def test_tiny_probes_agree_with_instrumentation(
    pool: Pool, tiny: tuple[ExecutionTrace, list[Probe]]
) -> None:
    trace, probes = tiny
    case = Case("tiny", TINY, "f", parse_call("f([4, 1, 9, 7], 2)"))
    item = Probed(case, trace, probes)
    assert {probe.kind for probe in probes} == set(KINDS)
    assert not _check_against_instrumentation(pool, [(item, probe) for probe in probes])
    assert not [problem for probe in probes for problem in _invisible(probe, item)]


def test_a_solution_method_is_probed_under_its_qualified_name(pool: Pool) -> None:
    source = "class Solution:\n    def count(self, xs: List[int]) -> int:\n        c = 0\n        for x in xs:\n            c += x % 3\n        return c\n"
    program = Program(source, "Solution().count", preamble=CORE_PREAMBLE)
    traced = trace_call(pool, program, parse_call("Solution().count([4, 5])"))
    assert traced.trace is not None and traced.trace.steps[0].frame == "Solution.count"
    for frame in ("Solution.count", "Solution().count"):
        probes = probes_for(source, traced.trace, frame=frame, limit=8, rng=random.Random(0))
        assert len(probes) >= 4
    assert probes_for(source, traced.trace, frame="count", limit=8, rng=random.Random(0)) == []


def test_loop_variable_that_repeats_names_iterations_by_ordinal(pool: Pool) -> None:
    source = (
        "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x * 2)\n    return out\n"
    )
    traced = trace_call(pool, Program(source), parse_call("f([5, 5, 6])"))
    assert traced.trace is not None
    probes = probes_for(source, traced.trace, frame="f", limit=50, rng=random.Random(0))
    asked = [p for p in probes if p.kind == "loop_value"]
    assert asked and all("where" not in p.question and "iteration of" in p.question for p in asked)
    second = _find(probes, "loop_value", "the 2nd iteration")
    assert second.truth == "[10, 10]"


def test_markers_and_large_values_are_not_asked(pool: Pool) -> None:
    source = "class Box:\n    pass\n\ndef f(n):\n    b = Box()\n    big = list(range(n))\n    s = 0\n    for i in range(3):\n        s += i\n    return s\n"
    traced = trace_call(pool, Program(source), parse_call("f(500)"))
    assert traced.trace is not None
    probes = probes_for(source, traced.trace, frame="f", limit=50, rng=random.Random(0))
    assert probes and not [p for p in probes if p.name in ("b", "big")]


def test_a_cut_trace_asks_only_what_the_whole_run_confirms(pool: Pool) -> None:
    source = "def f(xs):\n    s = 0\n    out = []\n    for x in xs:\n        s += x\n        out.append(s)\n    return out\n"
    call = parse_call("f([1, 2, 3, 4, 1, 2])")
    traced = trace_call(pool, Program(source), call, TraceOptions(max_steps=12))
    assert traced.trace is not None and traced.trace.partial
    probes = probes_for(source, traced.trace, frame="f", limit=50, rng=random.Random(0))
    assert len(probes) >= 4
    assert not [p.question for p in probes if "where `x` is" in p.question]  # x repeats later
    item = Probed(Case("cut", source, "f", call), traced.trace, probes)
    assert not _check_against_instrumentation(pool, [(item, probe) for probe in probes])


def test_recursion_and_caught_exceptions_keep_truths_exact(pool: Pool) -> None:
    source = (
        "def f(items, depth=0):\n"
        "    total = 0\n"
        "    for item in items:\n"
        "        try:\n"
        "            value = int(item)\n"
        "        except ValueError:\n"
        "            value = f([c for c in item if c.isdigit()], depth + 1)\n"
        "        total += value\n"
        "    return total\n"
    )
    call = parse_call("f(['1', 'ab', '3', '4c'])")
    traced = trace_call(pool, Program(source), call)
    assert traced.trace is not None and len({step.fid for step in traced.trace.steps}) > 1
    probes = probes_for(source, traced.trace, frame="f", limit=50, rng=random.Random(0))
    assert len(probes) >= 4 and not [p for p in probes if p.line == 5]  # line 5 raised
    item = Probed(Case("recursive", source, "f", call), traced.trace, probes)
    assert not _check_against_instrumentation(pool, [(item, probe) for probe in probes])
