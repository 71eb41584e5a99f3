"""Adversarial programs for the tracer's container re-checks, against the naive recorder.

The tracer re-fingerprints tracked containers only after lines that may mutate them. Any scheme
that narrows which containers are re-checked (by the names a line mentions, by identity, by
static analysis of the line) must still see every change below: aliases, containers inside
containers, C callbacks driven by the program (``sort(key=ys.append)``), dict keys whose
``__eq__`` is a C callable, operator overloading, properties, ``__iadd__``, generators and
comprehensions, globals, closures and ``nonlocal``. Every state of the entry frame is compared
with a brute-force recorder that renders every local at every event.
"""

from __future__ import annotations

import json

import pytest

from tests.trace import load_flat
from tests.trace.test_tracer import _naive_states, _replayed_states, load

tracer = load_flat("tracer")

# Every test runs with the C fast path and with the pure-Python line handler (conftest.py).
pytestmark = pytest.mark.usefixtures("tracer_engine")

ALIASES = """
def f(n):
    a = [n]
    b = a
    c = [a, (a,)]
    d = {"k": a, "j": [c]}
    a.append(2)
    b[0] = 5
    d["k"].append(3)
    c[0].extend(b[:1])
    e = d["j"][0]
    e[1][0].append(7)
    a += [8]
    b *= 1
    a.clear()
    del b
    a.append(n)
    return d
"""

NESTED = """
def f(n):
    counts = {}
    box = [counts]
    snapshot = {"c": counts, "n": [box], "t": (box,)}
    for w in ["a", "b", "a"]:
        counts[w] = counts.get(w, 0) + 1
    row = [0, 0]
    grid = [row, [row]]
    other = [0, 0]
    for i in range(2):
        row[i] = i + n
        grid[1][0][0] += 10
        other[i] = row[i]
    keys = counts.keys()
    counts.setdefault("z", []).append(row)
    return snapshot
"""

C_CALLBACKS = """
def f(n):
    ys = []
    zs = []
    xs = [3]
    xs.sort(key=ys.append)
    out = "".join(map(str, map(zs.append, [n, 2])))
    one = sorted([[5]], key=zs.extend)
    top = max([1], key=ys.append)
    hook = ys.append
    xs.sort(key=hook)
    lazy = map(zs.append, [7])
    text = "".join(map(str, lazy))
    xs.sort(key=hook.__self__.append)
    d = dict.fromkeys([1])
    d.update(zip(["k"], [zs]))
    zs.append(len(ys))
    return ys, zs
"""

KEY_EQ = """
def f(n):
    log = []
    class K(int):
        __eq__ = staticmethod(log.append)
        __hash__ = int.__hash__
    d = {K(1): "a"}
    d[1] = "b"
    x = d.get(1)
    s = {K(2)}
    s.add(2)
    found = [K(3)].count(3)
    return len(log)
"""

OPERATORS = """
class V:
    def __init__(self, log):
        self.log = log
    def __add__(self, other):
        self.log.append(other)
        return self
    def __iadd__(self, other):
        self.log.append(-other)
        return self
    def __lt__(self, other):
        self.log.append("lt")
        return False
    def __getitem__(self, key):
        self.log.append(("get", key))
        return key
    def __setitem__(self, key, value):
        self.log.append(("set", key, value))
    @property
    def size(self):
        self.log.append("size")
        return len(self.log)
    def __eq__(self, other):
        self.log.append("eq")
        return True
    __hash__ = object.__hash__

def f(n):
    log = []
    v = V(log)
    w = v + 1
    v += 2
    flag = v < 3
    got = v[4]
    v[5] = n
    size = v.size
    same = v == 7
    found = v in [0, 1]
    text = f"{size}"
    return log
"""

GENERATORS = """
def gen(log, n):
    for i in range(n):
        log.append(i)
        yield i

def f(n):
    log = []
    g = gen(log, n)
    first = next(g)
    squares = [log.append(i * i) for i in range(2)]
    any(log.append(-1) for _ in range(1))
    seen = {k: log.pop() for k in range(1)}
    rest = list(g)
    drained = list(map(log.append, [9]))
    return log
"""

SCOPES = """
SHARED = []

def bump(box):
    SHARED.append(len(box))
    box.append(len(SHARED))

def f(n):
    mine = SHARED
    count = n
    cells = [count]
    def inner():
        nonlocal count
        count += 1
        cells.append(count)
    inner()
    inner()
    bump(cells)
    alias = cells
    globals()["SHARED"].append("via globals")
    bump(alias)
    return mine, count
"""

PROGRAMS = {
    "aliases": ALIASES,
    "nested": NESTED,
    "c_callbacks": C_CALLBACKS,
    "key_eq": KEY_EQ,
    "operators": OPERATORS,
    "generators": GENERATORS,
    "scopes": SCOPES,
}


def _check_against_naive(source: str, args: tuple, max_chars: int = 200) -> None:
    source, function = load(source)
    trace = tracer.Tracer(source=source, max_value_chars=max_chars).call(
        function, json.loads(json.dumps(args)), {}
    )
    assert not trace["partial"], trace["partial_reason"]
    naive = _naive_states(load(source)[1], json.loads(json.dumps(args)), max_chars)
    replayed = _replayed_states(trace)
    assert naive[0][1] == trace["steps"][0]["args"]
    expected = [state for _, state in naive[1:]]
    assert len(expected) == len(replayed)
    lines = [step["line"] for step in trace["steps"] if step["fid"] == 0]
    for line, want, got in zip(lines, expected, replayed, strict=True):
        assert got == want, f"after line {line}"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_state_matches_the_naive_recorder(name: str) -> None:
    _check_against_naive(PROGRAMS[name], (1,))


# C callables reached through a descriptor or a dunder slot of a user class run on opcodes the
# tracer otherwise treats as unable to mutate (attribute load, comparison, operators) and start
# no Python frame. When a class body of the program ends holding such a callable, the tracer
# re-checks every local after every line from then on (docs/tracing.md, "Values").
HIDDEN_MUTATORS = {
    "property and staticmethod dunder": """
def f(n):
    log = []
    class A:
        p = property(log.append)
        __eq__ = staticmethod(log.append)
    a = A()
    a.p
    same = a == n
    x = 1
    return len(log)
""",
    "bare builtin method as an operator": """
def f(n):
    seen = {}
    class B:
        __add__ = seen.setdefault
        __getitem__ = seen.pop
    b = B()
    for i in range(n + 2):
        b + i
    b[0]
    return sorted(seen)
""",
    "helper defines the class, caller's containers change": """
def make(store):
    class C:
        __lt__ = store.extend
    return C()

def f(n):
    store = []
    c = make(store)
    c < [n, n]
    k = 0
    return store
""",
}


@pytest.mark.parametrize("name", sorted(HIDDEN_MUTATORS))
def test_c_callables_behind_descriptors_and_dunders(name: str) -> None:
    _check_against_naive(HIDDEN_MUTATORS[name], (1,))


PYTHON_ONLY_CLASS = """
def f(n):
    class D:
        limit = 3
        def __eq__(self, other):
            return True
        @property
        def p(self):
            return self.limit
        @staticmethod
        def s(x):
            return x
    d = D()
    return d.p + n
"""


def test_classes_of_python_functions_keep_the_fast_path() -> None:
    source, function = load(PYTHON_ONLY_CLASS)
    traced = tracer.Tracer(source=source)
    traced.call(function, (1,), {})
    assert traced.paranoid is False
    source, function = load(HIDDEN_MUTATORS["property and staticmethod dunder"])
    traced = tracer.Tracer(source=source)
    traced.call(function, (1,), {})
    assert traced.paranoid is True
