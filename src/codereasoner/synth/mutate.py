"""Type-aware mutation of a candidate's input (nothing runs here).

Operators, per type of value (each mutant chains one to three of them, mostly one, on random arguments):

* CodeReasoner's rules: ``str.random`` (a fresh random string of 5 to 20 characters) and
  ``int.shift`` (move by 1 to 5 either way);
* structure-keeping operators in the manner of EvalPlus's typed mutation: for strings insert an
  ingredient, swap two slices, duplicate a slice, delete a slice, or take an ingredient; numbers
  take an ingredient or are perturbed; booleans flip; bytes get the string operators;
  lists/tuples/sets/frozensets insert a mutated copy of an element, remove, swap, or replace an
  element with its own mutation (recursively, so element types are kept); dicts add a pair
  (mutated copies of an existing key and value), remove a pair, or mutate a value.

Ingredients are the seed input's numbers and strings (and the whitespace-separated words of its
strings) plus the string and number literals of the code, so a mutant keeps the separators,
prefixes and digits the code branches on.

:func:`mutants` is pure: the same candidate and ``random.Random`` state give the same mutants,
each with id ``<parent id>/m<k>`` and lineage ``{"parent": id, "ops": [...]}``. Retries are
bounded (EvalPlus's retry loop is not), so fewer than ``count`` mutants may come back.
:func:`prefer_new_coverage` orders executed mutants by the lines and branches they add;
:func:`select_mutants` keeps those that add a new output or new coverage (CodeReasoner keeps a
mutant only when it teaches something its parent does not) and marks the rest redundant.
"""

from __future__ import annotations

import ast
import math
import random
import string
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from codereasoner import values
from codereasoner.execution import CallSyntaxError, parse_call
from codereasoner.synth.case import Candidate
from codereasoner.synth.filters import parse_quietly

MAX_ITEMS: Final = 12  # containers do not grow past this many elements
MAX_STRING: Final = 30  # nor strings past this many characters (random strings: 5 to 20)
MAX_DEPTH: Final = 4
RANDOM_ALPHABET: Final = string.ascii_letters + string.digits
INT_SHIFT: Final = 5
STEPS: Final = (1, 1, 1, 2, 2, 3)  # chained operators per mutant: mostly one, at most three


@dataclass
class Ingredients:
    """Values a mutation may reuse, by type, in a deterministic order."""

    ints: list[int] = field(default_factory=list)
    floats: list[float] = field(default_factory=list)
    strs: list[str] = field(default_factory=list)

    def add(self, value: object) -> None:
        if type(value) is int:  # exactly int: bools are not numbers here
            if abs(value) < 10**6 and value not in self.ints:
                self.ints.append(value)
        elif type(value) is float:
            if math.isfinite(value) and value not in self.floats:
                self.floats.append(value)
        elif type(value) is str and len(value) <= MAX_STRING:
            for text in (value, *value.split()):
                if text not in self.strs:
                    self.strs.append(text)


def ingredients(args: Iterable[object], code: str = "") -> Ingredients:
    """Ingredients from the seed arguments (recursing into containers) and the code's literals."""
    found = Ingredients()

    def collect(value: object, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(value, list | tuple | set | frozenset):
            for item in _ordered(value):
                collect(item, depth + 1)
        elif isinstance(value, dict):
            for key, item in value.items():
                collect(key, depth + 1)
                collect(item, depth + 1)
        elif isinstance(value, bytes):
            collect(value.decode("latin-1"), depth)
        else:
            found.add(value)

    for arg in args:
        collect(arg, 0)
    if code:
        try:
            tree = parse_quietly(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return found
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and type(node.value) is not bool:
                found.add(node.value)
    return found


def _ordered(items: Iterable[object]) -> list[object]:
    """Set elements in a hash-seed-independent order (by canonical rendering)."""
    if isinstance(items, set | frozenset):
        return sorted(items, key=_render_key)
    return list(items)


def _render_key(value: object) -> str:
    try:
        return values.render(value)
    except (values.NotALiteral, values.RenderLimitExceeded):
        return repr(type(value))


# ---------------------------------------------------------------------------------------
# scalar operators: (value, rng, ingredients) -> new value, or None when not applicable
# ---------------------------------------------------------------------------------------

Op = Callable[[Any, random.Random, Ingredients], Any]


def random_string(rng: random.Random) -> str:
    """CodeReasoner's string rule: a fresh random string of 5 to 20 characters."""
    return "".join(rng.choice(RANDOM_ALPHABET) for _ in range(rng.randint(5, 20)))


def str_random(value: str, rng: random.Random, found: Ingredients) -> str:
    return random_string(rng)


def str_ingredient(value: str, rng: random.Random, found: Ingredients) -> str | None:
    choices = [text for text in found.strs if text != value]
    return rng.choice(choices) if choices else None


def str_insert_ingredient(value: str, rng: random.Random, found: Ingredients) -> str | None:
    choices = [text for text in found.strs if text and len(value) + len(text) <= MAX_STRING]
    if not choices:
        return None
    at = rng.randint(0, len(value))
    return value[:at] + rng.choice(choices) + value[at:]


def _two_cuts(length: int, rng: random.Random) -> tuple[int, int]:
    start = rng.randrange(length)
    return start, rng.randint(start + 1, min(length, start + 4))


def str_swap_slices(value: str, rng: random.Random, found: Ingredients) -> str | None:
    if len(value) < 2:
        return None
    a, b, c = sorted(rng.sample(range(len(value) + 1), 3))
    swapped = value[:a] + value[b:c] + value[a:b] + value[c:]
    return swapped if swapped != value else None


def str_duplicate_slice(value: str, rng: random.Random, found: Ingredients) -> str | None:
    if not value:
        return None
    start, end = _two_cuts(len(value), rng)
    if len(value) + end - start > MAX_STRING:
        return None
    return value[:end] + value[start:end] + value[end:]


def str_delete_slice(value: str, rng: random.Random, found: Ingredients) -> str | None:
    if not value:
        return None
    start, end = _two_cuts(len(value), rng)
    return value[:start] + value[end:]


def int_shift(value: int, rng: random.Random, found: Ingredients) -> int:
    """CodeReasoner's integer rule: move by 1 to 5 either way."""
    return value + rng.choice((-1, 1)) * rng.randint(1, INT_SHIFT)


def int_ingredient(value: int, rng: random.Random, found: Ingredients) -> int | None:
    choices = [number for number in found.ints if number != value]
    return rng.choice(choices) if choices else None


def float_perturb(value: float, rng: random.Random, found: Ingredients) -> float | None:
    if not math.isfinite(value):
        return None
    if rng.random() < 0.5:
        moved = value + rng.uniform(-1, 1)
    else:
        moved = value * (1 + rng.uniform(-0.5, 0.5))
    return round(moved, 2)  # short renderings keep outputs under the length bound


def float_ingredient(value: float, rng: random.Random, found: Ingredients) -> float | None:
    choices = [number for number in found.floats if number != value]
    choices += [float(number) for number in found.ints if float(number) != value]
    return rng.choice(choices) if choices else None


def bool_flip(value: bool, rng: random.Random, found: Ingredients) -> bool:
    return not value


def _bytes_op(op: Op) -> Op:
    def apply(value: bytes, rng: random.Random, found: Ingredients) -> bytes | None:
        text = op(value.decode("latin-1"), rng, _latin1(found))
        return None if text is None else text.encode("latin-1")

    return apply


def _latin1(found: Ingredients) -> Ingredients:
    usable = [text for text in found.strs if all(ord(char) < 256 for char in text)]
    return Ingredients(found.ints, found.floats, usable)


SCALAR_OPS: Final[dict[type, dict[str, Op]]] = {
    str: {
        "str.random": str_random,
        "str.ingredient": str_ingredient,
        "str.insert_ingredient": str_insert_ingredient,
        "str.swap_slices": str_swap_slices,
        "str.duplicate_slice": str_duplicate_slice,
        "str.delete_slice": str_delete_slice,
    },
    int: {"int.shift": int_shift, "int.ingredient": int_ingredient},
    float: {"float.perturb": float_perturb, "float.ingredient": float_ingredient},
    bool: {"bool.flip": bool_flip},
    bytes: {
        "bytes.random": _bytes_op(str_random),
        "bytes.insert_ingredient": _bytes_op(str_insert_ingredient),
        "bytes.swap_slices": _bytes_op(str_swap_slices),
        "bytes.duplicate_slice": _bytes_op(str_duplicate_slice),
        "bytes.delete_slice": _bytes_op(str_delete_slice),
    },
}

# ---------------------------------------------------------------------------------------
# container operators (recursive): return (new value, op path) or None
# ---------------------------------------------------------------------------------------

Mutation = tuple[Any, str]
CONTAINER_OPS: Final = {
    "list": ("insert", "remove", "swap", "replace", "append_duplicate"),
    "dict": ("add", "remove", "replace_value"),
}


def mutate_value(
    value: Any, rng: random.Random, found: Ingredients, depth: int = 0, only: str | None = None
) -> Mutation | None:
    """One mutation of ``value`` and the name of the operator(s) used (``list.replace>int.shift``
    for a nested one), or ``None`` when no operator applies. ``only`` forces one operator."""
    kind = type(value)
    if kind in SCALAR_OPS:
        ops = SCALAR_OPS[kind]
        names = [only] if only else sorted(ops)
        rng.shuffle(names)
        for name in names:
            if name not in ops:
                continue
            new = ops[name](value, rng, found)
            if new is not None and not (type(new) is kind and new == value):
                return new, name
        return None
    if depth >= MAX_DEPTH:
        return None
    if kind in (list, tuple, set, frozenset):
        return _mutate_sequence(value, rng, found, depth, only)
    if kind is dict:
        return _mutate_dict(value, rng, found, depth, only)
    return None


def _mutate_sequence(
    value: Any, rng: random.Random, found: Ingredients, depth: int, only: str | None
) -> Mutation | None:
    kind = type(value)
    prefixes: dict[type, str] = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}
    prefix = prefixes[kind]
    items = _ordered(value)
    names = [only.split(".", 1)[1]] if only else list(CONTAINER_OPS["list"])
    rng.shuffle(names)
    for name in names:
        result = _sequence_op(name, items, rng, found, depth, kind in (set, frozenset))
        if result is None:
            continue
        new_items, inner = result
        try:
            new = kind(new_items)
        except TypeError:  # an unhashable element for a set
            continue
        if new != value:
            label = f"{prefix}.{name}" + (f">{inner}" if inner else "")
            return new, label
    return None


def _fresh_element(
    value: Any, items: list[Any], unique: bool, rng: random.Random, found: Ingredients, depth: int
) -> Mutation | None:
    """A mutation of ``value``; for sets, one that is not already an element (a few tries)."""
    for _ in range(5 if unique else 1):
        changed = mutate_value(value, rng, found, depth + 1)
        if changed is None:
            return None
        if not unique or changed[0] not in items:
            return changed
    return None


def _sequence_op(
    name: str,
    items: list[Any],
    rng: random.Random,
    found: Ingredients,
    depth: int,
    unique: bool = False,
) -> tuple[list[Any], str] | None:
    if name == "insert":
        if len(items) >= MAX_ITEMS:
            return None
        if not items:
            seed = _ingredient_seed(rng, found)
            return ([seed], "ingredient") if seed is not None else None
        copied = _fresh_element(rng.choice(items), items, unique, rng, found, depth)
        if copied is None:
            return None
        at = rng.randint(0, len(items))
        return [*items[:at], copied[0], *items[at:]], copied[1]
    if name == "remove":
        if not items:
            return None
        at = rng.randrange(len(items))
        return items[:at] + items[at + 1 :], ""
    if name == "swap":
        if len(items) < 2:
            return None
        i, j = rng.sample(range(len(items)), 2)
        swapped = list(items)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        return (swapped, "") if swapped != items else None
    if name == "replace":
        if not items:
            return None
        at = rng.randrange(len(items))
        inner = _fresh_element(items[at], items, unique, rng, found, depth)
        if inner is None:
            return None
        return [*items[:at], inner[0], *items[at + 1 :]], inner[1]
    if name == "append_duplicate":
        if not items or len(items) >= MAX_ITEMS:
            return None
        return [*items, rng.choice(items)], ""
    raise ValueError(f"unknown sequence operator {name!r}")


def _ingredient_seed(rng: random.Random, found: Ingredients) -> Any:
    pools: list[Sequence[Any]] = [pool for pool in (found.ints, found.strs) if pool]
    return rng.choice(rng.choice(pools)) if pools else None


def _mutate_dict(
    value: dict[Any, Any], rng: random.Random, found: Ingredients, depth: int, only: str | None
) -> Mutation | None:
    names = [only.split(".", 1)[1]] if only else list(CONTAINER_OPS["dict"])
    rng.shuffle(names)
    keys = list(value)
    for name in names:
        new = dict(value)
        inner = ""
        if name == "remove" and keys:
            del new[rng.choice(keys)]
        elif name == "add" and keys and len(keys) < MAX_ITEMS:
            key = mutate_value(rng.choice(keys), rng, found, depth + 1)
            item = mutate_value(new[rng.choice(keys)], rng, found, depth + 1)
            if key is None or not isinstance(key[0], Hashable) or key[0] in new:
                continue
            new[key[0]] = item[0] if item else new[rng.choice(keys)]
            inner = key[1]
        elif name == "add" and not keys:
            key, item = _ingredient_seed(rng, found), _ingredient_seed(rng, found)
            if key is None:
                continue
            new[key] = item
            inner = "ingredient"
        elif name == "replace_value" and keys:
            key = rng.choice(keys)
            changed = mutate_value(new[key], rng, found, depth + 1)
            if changed is None:
                continue
            new[key], inner = changed
        else:
            continue
        if new != value:
            return new, f"dict.{name}" + (f">{inner}" if inner else "")
    return None


# ---------------------------------------------------------------------------------------
# candidates
# ---------------------------------------------------------------------------------------


def render_input(args: Sequence[Any], kwargs: dict[str, Any]) -> str:
    """The CRUXEval-style argument text for ``args`` and ``kwargs``."""
    parts = [values.render(arg) for arg in args]
    parts += [f"{name}={values.render(value)}" for name, value in kwargs.items()]
    return ", ".join(parts)


def mutate_input(
    candidate: Candidate,
    rng: random.Random,
    steps: int | None = None,
    found: Ingredients | None = None,
) -> tuple[str, list[str]] | None:
    """A mutated ``input_repr`` and the operators applied (``arg0:str.random``), or ``None``."""
    try:
        call = parse_call(candidate.call)
    except CallSyntaxError:
        return None
    slots: list[Any] = list(call.args) + list(call.kwargs.values())
    labels = [f"arg{i}" for i in range(len(call.args))] + list(call.kwargs)
    if not slots:
        return None
    found = found or ingredients(slots, candidate.code)
    ops: list[str] = []
    for _ in range(steps if steps is not None else rng.choice(STEPS)):
        for at in rng.sample(range(len(slots)), len(slots)):
            changed = mutate_value(slots[at], rng, found)
            if changed is not None:
                slots[at] = changed[0]
                ops.append(f"{labels[at]}:{changed[1]}")
                break
    if not ops:
        return None
    args = slots[: len(call.args)]
    kwargs = dict(zip(call.kwargs, slots[len(call.args) :], strict=True))
    try:
        return render_input(args, kwargs), ops
    except (values.NotALiteral, values.RenderLimitExceeded):
        return None


def mutants(
    candidate: Candidate, rng: random.Random, count: int, max_tries: int | None = None
) -> list[Candidate]:
    """Up to ``count`` distinct mutants of ``candidate`` (inputs differ from the parent's and
    from each other), trying at most ``max_tries`` (default ``4 * count``) mutations."""
    if count <= 0:
        return []
    try:
        call = parse_call(candidate.call)
    except CallSyntaxError:
        return []
    found = ingredients([*call.args, *call.kwargs.values()], candidate.code)
    parent = candidate.lineage.get("parent", candidate.id) if candidate.lineage else candidate.id
    inherited = list(candidate.lineage.get("ops", ())) if candidate.lineage else []
    seen = {candidate.input_repr}
    made: list[Candidate] = []
    for _ in range(max_tries if max_tries is not None else 4 * count):
        if len(made) == count:
            break
        result = mutate_input(candidate, rng, found=found)
        if result is None or result[0] in seen:
            continue
        input_repr, ops = result
        seen.add(input_repr)
        made.append(
            replace(
                candidate,
                id=f"{candidate.id}/m{len(made)}",
                input_repr=input_repr,
                lineage={"parent": parent, "ops": inherited + ops},
            )
        )
    return made


# ---------------------------------------------------------------------------------------
# coverage preference
# ---------------------------------------------------------------------------------------


def prefer_new_coverage(
    parent_lines: Iterable[Hashable],
    parent_branches: Iterable[Hashable],
    scored_mutants: Iterable[tuple[Candidate, Iterable[Hashable], Iterable[Hashable]]],
) -> list[Candidate]:
    """Mutants ordered greedily by the lines and branches each adds to what the parent and the
    mutants before it cover; ties (and mutants adding nothing, at the end) keep their order."""
    covered = {("line", item) for item in _hashable(parent_lines)}
    covered |= {("branch", item) for item in _hashable(parent_branches)}
    pending = [
        (
            candidate,
            {("line", item) for item in _hashable(lines)}
            | {("branch", item) for item in _hashable(branches)},
        )
        for candidate, lines, branches in scored_mutants
    ]
    ordered: list[Candidate] = []
    while pending:
        gains = [len(reach - covered) for _, reach in pending]
        best = max(range(len(pending)), key=lambda i: (gains[i], -i))
        if gains[best] == 0:
            ordered.extend(candidate for candidate, _ in pending)
            break
        candidate, reach = pending.pop(best)
        covered |= reach
        ordered.append(candidate)
    return ordered


@dataclass(frozen=True)
class Selection:
    """The fate of each executed mutant: ``kept`` (in generation order), ``redundant`` (no
    output and no line or branch that the parent and the kept mutants lack) and
    ``not_selected`` (something new, but over the cap)."""

    kept: list[Candidate]
    redundant: list[Candidate]
    not_selected: list[Candidate]


def select_mutants(
    parent: tuple[Hashable, Iterable[Hashable], Iterable[Hashable]],
    scored_mutants: Sequence[tuple[Candidate, Hashable, Iterable[Hashable], Iterable[Hashable]]],
    limit: int,
) -> Selection:
    """Choose at most ``limit`` mutants, greedily: the one adding the most new lines and branches
    (over the parent and the mutants already chosen) first, then one with a new output among
    those adding no coverage, ties in generation order. ``parent`` and each scored mutant give
    ``(output, lines, branches)``; a mutant is *redundant* when, at the end, its output is the
    parent's or a kept mutant's and its lines and branches are all covered by them."""
    output, lines, branches = parent
    outputs = {output}
    covered = _reach(lines, branches)
    reaches = [_reach(ls, bs) for _, _, ls, bs in scored_mutants]
    pending = list(range(len(scored_mutants)))
    chosen: set[int] = set()
    while pending and len(chosen) < limit:
        scores = [(len(reaches[i] - covered), scored_mutants[i][1] not in outputs) for i in pending]
        best = max(range(len(pending)), key=lambda k: (*scores[k], -k))
        if scores[best] == (0, False):
            break
        number = pending.pop(best)
        chosen.add(number)
        outputs.add(scored_mutants[number][1])
        covered |= reaches[number]
    useful = {i for i in pending if scored_mutants[i][1] not in outputs or reaches[i] - covered}
    fate = [
        ("kept" if i in chosen else "not_selected" if i in useful else "redundant")
        for i in range(len(scored_mutants))
    ]
    groups: dict[str, list[Candidate]] = {"kept": [], "redundant": [], "not_selected": []}
    for (candidate, *_), where in zip(scored_mutants, fate, strict=True):
        groups[where].append(candidate)
    return Selection(**groups)


def _reach(lines: Iterable[Hashable], branches: Iterable[Hashable]) -> set[tuple[str, Hashable]]:
    return {("line", item) for item in _hashable(lines)} | {
        ("branch", item) for item in _hashable(branches)
    }


def _hashable(items: Iterable[Any]) -> Iterable[Hashable]:
    """Coverage items may arrive as lists from JSON (``[3, 5]`` for a branch)."""
    for item in items:
        yield tuple(item) if isinstance(item, list) else item
