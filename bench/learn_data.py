"""Programs for ``bench/learn.py``: compositions of operations on a digit, split by family.

A program applies one to three operations to its argument ``x`` (a digit, 0 to 9) in turn; its
*family* is the sequence of operations. Every operation is a bijection on the ten digits, so a
backward answer is as hard as a forward one (no operation answers for itself) and the only items a
copy rule solves are the fixed points of the composition, which the evaluation drops.

Digits, not strings: a model of a few hundred thousand parameters trained from scratch on CPU for
minutes learns a lookup per operation, but not positional string operations (reversal, rotation:
about 1% of training items right after 600 chain-SFT steps in an earlier design).

Ordered pairs of operations (a, b), b not the inverse of a, are split three ways: training
pairs, validation pairs and test pairs. Training sees every operation alone and every training
pair; validation and test see the programs of length 2 made of one of their own held-out pairs,
and those of length 3 that hold one of their own pairs and none of the other held-out split's.
So no evaluated program is a training program, every evaluated program has two operations
adjacent that training never put together, and most are longer than anything trained. Some
compositions compute the same function as a training program (additions commute, for one); the
evaluation drops those families too, so every evaluated function is new.

Ground truth and reasoning chains come from the sandbox: each call is traced
(``codereasoner.trace``), the forward chain is the tracer's own text rendering, and the
backward chain is the same trace read from the return value back to the argument.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codereasoner.execution import Executor, Program, TraceOptions
from codereasoner.trace import trace_batches

DIRECTIONS = ("forward", "backward")
ANSWER_TAGS = ("<Answer>", "</Answer>")
REASONING_TAGS = ("<Reasoning>", "</Reasoning>")
ENTRY = "f"
VARIABLE = "x"
ARGUMENTS = tuple(range(10))
SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Operation:
    name: str
    statement: str  # one line of the program body, rebinding ``x``
    inverse: str | None  # the operation in the set that undoes it, if any


# One shape for every statement: each chain line then has the same length, so what a step
# reads (the operation, the value before it) sits at fixed distances from what it writes.
OPERATIONS = (
    Operation("add1", "x = (x + 1) % 10", None),
    Operation("add4", "x = (x + 4) % 10", None),
    Operation("mul3", "x = (x * 3) % 10", "mul7"),
    Operation("mul7", "x = (x * 7) % 10", "mul3"),
    Operation("flip", "x = (9 - x) % 10", "flip"),
    Operation("xor1", "x = (x ^ 1) % 10", "xor1"),
)
BY_NAME = {operation.name: operation for operation in OPERATIONS}

Pair = tuple[str, str]


def pairs() -> list[Pair]:
    """Ordered pairs that compose to something other than the identity."""
    return [
        (first.name, second.name)
        for first, second in itertools.product(OPERATIONS, repeat=2)
        if second.name != first.inverse
    ]


@dataclass(frozen=True)
class FamilySplit:
    """Which adjacent pairs each split owns (the pairs of the other two never occur in it)."""

    train: tuple[Pair, ...]
    validation: tuple[Pair, ...]
    test: tuple[Pair, ...]


def split_pairs(held_per_split: int, seed: int) -> FamilySplit:
    """Hold ``held_per_split`` pairs out for validation and as many for test, at random, such
    that every operation still occurs first and second in some training pair."""
    candidates = pairs()
    shuffler = random.Random(seed)
    for _ in range(1000):
        shuffler.shuffle(candidates)
        validation = candidates[:held_per_split]
        test = candidates[held_per_split : 2 * held_per_split]
        train = candidates[2 * held_per_split :]
        if all(
            any(pair[position] == operation.name for pair in train)
            for operation in OPERATIONS
            for position in (0, 1)
        ):
            return FamilySplit(tuple(sorted(train)), tuple(sorted(validation)), tuple(sorted(test)))
    raise ValueError(f"cannot hold out {held_per_split} pairs per split and still train on all")


def family_split_of(family: tuple[str, ...], split: FamilySplit) -> str | None:
    """The split a family belongs to, or None when it is in none (a length-3 family of
    training pairs only, or one holding pairs of both held-out splits)."""
    adjacent = set(itertools.pairwise(family))
    if len(family) == 1:
        return "train"
    if len(family) == 2:
        (pair,) = adjacent
        for name in SPLITS:
            if pair in getattr(split, name):
                return name
        return None  # a pair whose second undoes its first
    if not adjacent <= set(split.train) | set(split.validation) | set(split.test):
        return None
    in_validation = bool(adjacent & set(split.validation))
    in_test = bool(adjacent & set(split.test))
    if in_validation != in_test:
        return "validation" if in_validation else "test"
    return None


def families(split: FamilySplit, max_length: int = 3) -> dict[str, list[tuple[str, ...]]]:
    """Every family of length 1 to ``max_length``, by split (length 3 is never trained)."""
    found: dict[str, list[tuple[str, ...]]] = {name: [] for name in SPLITS}
    for length in range(1, max_length + 1):
        for family in itertools.product([op.name for op in OPERATIONS], repeat=length):
            name = family_split_of(family, split)
            if name is not None and not (name == "train" and length > 2):
                found[name].append(family)
    return found


def source(family: Sequence[str]) -> str:
    body = "".join(f"    {BY_NAME[name].statement}\n" for name in family)
    return f"def {ENTRY}({VARIABLE}):\n{body}    return {VARIABLE}\n"


def family_id(family: Sequence[str]) -> str:
    return ">".join(family)


@dataclass(frozen=True)
class Case:
    """One call of one program, with its traced truth and both reasoning chains."""

    family: str
    length: int
    code: str
    call: str
    argument: str  # the argument's literal
    output: str  # the return value's literal
    forward_chain: str
    backward_chain: str

    @property
    def case_id(self) -> str:
        return f"{self.family}:{self.argument}"


Step = tuple[int, str, str]  # a statement's line, the value of ``x`` before it ran and after


def chain_line(code: str, step: Step, direction: str) -> str:
    """A step as ``L<line>  <statement>  <known> -> <found>``: forward the value before the line
    ran, then after; backward after, then before (``<-``)."""
    line, before, after = step
    statement = code.splitlines()[line - 1].strip()
    shown = f"{before} -> {after}" if direction == "forward" else f"{after} <- {before}"
    return f"L{line}  {statement}  {shown}"


def chains(code: str, steps: Sequence[Step], argument: str, output: str) -> tuple[str, str]:
    """The forward chain (from the call down to the return value) and the backward one (from
    the return value up to the call)."""
    call = f"call {ENTRY}({VARIABLE}={argument})"
    forward = [call, *(chain_line(code, step, "forward") for step in steps), f"return {output}"]
    backward = [f"return {output}"]
    backward += [chain_line(code, step, "backward") for step in reversed(steps)]
    backward.append(call)
    return "\n".join(forward), "\n".join(backward)


def trace_cases(pool: Executor, work: Iterable[tuple[str, ...]]) -> list[Case]:
    """Run and trace each family's program on every digit in the sandbox."""
    chosen = list(work)
    batches = []
    for family in chosen:
        program = Program(source(family))
        batches.append((program, [program.call(argument) for argument in ARGUMENTS]))
    cases: list[Case] = []
    traced_all = trace_batches(pool, batches, TraceOptions())
    for family, traced in zip(chosen, traced_all, strict=True):
        code = source(family)
        for argument, call in zip(ARGUMENTS, traced, strict=True):
            trace = call.trace
            if not call.result.ok or trace is None or trace.return_value is None:
                raise RuntimeError(f"{family_id(family)}({argument}) failed: {call.result}")
            value = str(argument)
            steps: list[Step] = []
            for step in trace.steps:
                if step.ret is not None:
                    break
                # a step that leaves ``x`` as it was records no change
                after = step.changes.get(VARIABLE) or value
                steps.append((step.line, value, after))
                value = after
            forward, backward = chains(code, steps, str(argument), trace.return_value)
            cases.append(
                Case(
                    family_id(family),
                    len(family),
                    code,
                    f"{ENTRY}({argument})",
                    str(argument),
                    trace.return_value,
                    forward,
                    backward,
                )
            )
    return cases


def functions(cases: Iterable[Case]) -> dict[str, tuple[str, ...]]:
    """Each family's function: its outputs on the ten digits, in order."""
    outputs: dict[str, dict[str, str]] = {}
    for case in cases:
        outputs.setdefault(case.family, {})[case.argument] = case.output
    return {
        family: tuple(table[str(argument)] for argument in ARGUMENTS)
        for family, table in outputs.items()
    }


@dataclass(frozen=True)
class Data:
    """One seed's programs: the pair split, the cases of each split, and the held-out families
    left out because a training program computes the same function."""

    split: FamilySplit
    cases: dict[str, list[Case]]
    same_function: dict[str, list[str]]


def build(held_per_split: int, seed: int, pool: Executor) -> Data:
    """The seed's split, every family's cases traced in the sandbox, and the held-out families
    that compute a training function left out."""
    split = split_pairs(held_per_split, seed)
    found = families(split)
    cases = trace_cases(pool, [family for name in SPLITS for family in found[name]])
    by_split = {
        name: [case for case in cases if tuple(case.family.split(">")) in found[name]]
        for name in SPLITS
    }
    tables = functions(cases)
    trained = {tables[case.family] for case in by_split["train"]}
    same: dict[str, list[str]] = {}
    for name in SPLITS[1:]:
        same[name] = sorted({c.family for c in by_split[name] if tables[c.family] in trained})
        by_split[name] = [c for c in by_split[name] if c.family not in same[name]]
    return Data(split, by_split, same)
