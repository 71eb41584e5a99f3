"""Decontamination: tokens, the three rules, loading, and planted CRUXEval near-duplicates."""

from __future__ import annotations

import ast
import random
import textwrap
from pathlib import Path

import pytest

from codereasoner.benchmarks.programs import load_benchmark_programs
from codereasoner.synth.decontam import (
    BenchmarkIndex,
    BenchmarkProgram,
    Match,
    near_view,
    python_tokens,
)
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.full_data

CRUXEVAL = SHARED_DATA / "cruxeval"
needs_cruxeval = pytest.mark.skipif(
    not (CRUXEVAL / "cruxeval.jsonl").exists(), reason="shared CRUXEval data not available"
)

# A small benchmark written for these tests: the idiom ``for i in range(len(items)):`` occurs in
# every program, so it is common; each program also has something of its own.
OWN = [
    BenchmarkProgram(
        "toy",
        "t0",
        "def f(items):\n    total = 0\n    for i in range(len(items)):\n"
        "        total += items[i] * 3\n    return total",
        ("f([1, 2, 3])", "18"),
    ),
    BenchmarkProgram(
        "toy",
        "t1",
        "def f(items):\n    out = []\n    for i in range(len(items)):\n"
        "        out.append(items[i].replace('---', '~'))\n    return out",
        ("f(['a-b', 'c'])",),
    ),
    BenchmarkProgram(
        "toy",
        "t2",
        "def f(items, marker):\n    for i in range(len(items)):\n"
        "        if items[i] == marker:\n            return i\n    return -1",
        ("f(['quokka', 'wombat'], 'wombat')",),
    ),
    BenchmarkProgram(
        "toy",
        "t3",
        "def f(sentence):\n    words = sentence.split()\n"
        "    for i in range(len(words)):\n        words[i] = words[i][::-1]\n"
        "    return ' '.join(words)",
        ("f('stressed desserts')",),
    ),
]


@pytest.fixture(scope="module")
def toy() -> BenchmarkIndex:
    """The ``specific`` rule (only informative 10-grams count)."""
    return BenchmarkIndex(OWN, rule="specific")


@pytest.fixture(scope="module")
def literal() -> BenchmarkIndex:
    """The default: the paper's literal rule (any shared 10-gram counts)."""
    return BenchmarkIndex(OWN)


def rules(matches: list[Match]) -> set[tuple[str, str]]:
    return {(m.item_id, m.rule) for m in matches}


def test_tokens_drop_comments_line_breaks_and_indentation() -> None:
    code = "def f(x):  # comment\n\n    return (x +\n            1)  # more\n"
    assert [t.text for t in python_tokens(code)] == [
        "def",
        "f",
        "(",
        "x",
        ")",
        ":",
        "return",
        "(",
        "x",
        "+",
        "1",
        ")",
    ]
    # Text that does not tokenise to the end keeps what was read.
    assert [t.text for t in python_tokens("f('abc', [1,")] == [
        "f",
        "(",
        "'abc'",
        ",",
        "[",
        "1",
        ",",
    ]


def test_near_view_ignores_names_literals_and_formatting() -> None:
    one = "def f(text):\n    '''doc'''\n    return text.split(',')[0]"
    two = "def g(s):   # other\n    return (s.split(';')[1])"
    assert near_view(one) == near_view(two)
    assert near_view(one) != near_view(two.replace("split", "rsplit"))


def test_unrelated_code_matches_nothing(toy: BenchmarkIndex) -> None:
    code = (
        "def f(d, key):\n    if key in d:\n        return sorted(d[key])\n    return d.get('x', [])"
    )
    assert toy.check(code, "f({'k': [3, 1]}, 'k')") == []


def test_a_copied_informative_10gram_is_caught(toy: BenchmarkIndex) -> None:
    code = (
        "def g(names, n):\n    result = []\n    for name in names[:n]:\n"
        "        out.append(items[i].replace('---', '~'))\n    return result"
    )
    matches = toy.check(code)
    assert rules(matches) == {("t1", "ngram10")}
    shared = next(m.detail for m in matches if m.rule == "ngram10")
    assert len(shared.split()) == 10
    assert shared in " ".join(t.text for t in python_tokens(code))
    assert shared in " ".join(t.text for t in python_tokens(OWN[1].code))


# Ten tokens shared with every toy program, all of them common there.
GENERIC = (
    "def g(items):\n    best = None\n    for i in range(len(items)):\n"
    "        best = max(best or 0, abs(i))\n    return best"
)


def test_the_literal_rule_is_the_default_and_counts_a_generic_10gram(
    literal: BenchmarkIndex,
) -> None:
    assert literal.rule == "literal" == BenchmarkIndex([]).rule
    matches = literal.check(GENERIC)
    assert {m.rule for m in matches} == {"ngram10"}
    assert {m.item_id for m in matches} == {"t0", "t1", "t2"}  # t3 loops over words
    assert {m.detail for m in matches} == {"for i in range ( len ( items ) )"}
    # A copied informative 10-gram, short strings and near duplicates: the same under both.
    informative = "def g(x):\n    return out.append(items[i].replace('---', '~'))"
    assert rules(literal.check(informative)) >= {("t1", "ngram10")}
    with pytest.raises(ValueError, match="decontam_rule 'loose': expected literal or specific"):
        BenchmarkIndex(OWN, rule="loose")


def test_a_generic_10gram_is_not_evidence_under_the_specific_rule(toy: BenchmarkIndex) -> None:
    code = GENERIC
    assert toy.rule == "specific"
    assert not any(m.rule == "ngram10" for m in toy.check(code))
    assert not toy.informative(python_tokens("for i in range(len(items)):"))
    assert toy.informative(python_tokens("x.replace('---', '~')"))  # a distinctive literal
    assert not toy.informative(python_tokens("x.replace('-', '~')"))  # too short to be evidence
    assert not toy.informative(python_tokens("for ab, cd in x:"))  # too short to be evidence


def test_short_benchmark_strings_match_exactly(toy: BenchmarkIndex) -> None:
    matches = toy.check("def f(a, b):\n    return a.index(b)", "f(['quokka', 'wombat'], 'wombat')")
    assert ("t2", "short_exact") in rules(matches)
    # The same tokens in another order, or generic short strings ([1, 2, 3]), do not match.
    assert toy.check("def f(a, b):\n    return a.index(b)", "f(['wombat', 'quokka'], 'x')") == []
    assert toy.check("def f(a):\n    return a[0] + 1", "f([1, 2, 3])") == []


def test_renamed_reformatted_program_with_a_changed_constant_is_a_near_duplicate(
    toy: BenchmarkIndex,
) -> None:
    disguised = textwrap.dedent('''\
        def h(phrase):
            """Reverse each word."""
            parts = phrase.split()   # words
            for k in range(len(parts)):
                parts[k] = parts[k][::-2]

            return '-'.join(parts)
        ''')
    matches = toy.check(disguised)
    assert [m for m in matches if m.rule == "near_duplicate"] == [
        Match("toy", "t3", "near_duplicate", "jaccard 1.00")
    ]
    assert Match("toy", "t3", "near_duplicate", "x").to_dict() == {
        "benchmark": "toy",
        "item_id": "t3",
        "rule": "near_duplicate",
        "detail": "x",
    }


def test_prefix_filtered_near_duplicates_equal_brute_force() -> None:
    rng = random.Random(0)
    lines = [
        "x = a + b",
        "y = x * 2",
        "if y > 3:",
        "    y -= 1",
        "z = [y] * 2",
        "for q in z:",
        "    x += q",
        "w = str(x)",
        "v = w.upper()",
        "u = len(v)",
    ]
    programs = []
    for number in range(60):
        body = rng.sample(lines, rng.randint(3, len(lines)))
        body = [line.strip() for line in body]
        programs.append(
            BenchmarkProgram(
                "rand", f"r{number}", "def f(a, b):\n    " + "\n    ".join(body) + "\n    return a"
            )
        )
    index = BenchmarkIndex(programs, near_threshold=0.6)
    views = {p.item_id: near_view(p.code) for p in programs}
    shingles = {
        key: {tuple(view[i : i + 5]) for i in range(len(view) - 4)} for key, view in views.items()
    }
    for probe in programs[:30]:
        mine = shingles[probe.item_id]
        expected = {
            key
            for key, theirs in shingles.items()
            if len(mine & theirs) / len(mine | theirs) >= 0.6
        }
        found = {m.item_id for m in index.check(probe.code) if m.rule == "near_duplicate"}
        assert found == expected and probe.item_id in found


# -- loading -----------------------------------------------------------------------------------


@needs_cruxeval
def test_loading_records_what_was_checked_and_what_was_skipped(tmp_path: Path) -> None:
    loaded = load_benchmark_programs(SHARED_DATA, names=["cruxeval-o", "lcb-execution"])
    assert loaded.checked == ["cruxeval-o"]
    assert (
        "lcb-execution" in loaded.skipped
        and "execution-v2.jsonl" in loaded.skipped["lcb-execution"]
    )
    programs, checked = loaded  # unpacks as (programs, checked)
    assert checked == ["cruxeval-o"] and len(programs) == 800
    first = programs[0]
    assert first.benchmark == "cruxeval-o" and first.item_id == "sample_0"
    assert first.code.startswith("def f(") and first.strings[0].startswith("f(")
    # A mapping by benchmark or dataset name works too; an empty folder is skipped.
    by_dataset = load_benchmark_programs(
        {"cruxeval": CRUXEVAL, "reval": tmp_path}, names=["cruxeval-o", "reval"]
    )
    assert by_dataset.checked == ["cruxeval-o"] and "reval" in by_dataset.skipped
    with pytest.raises(ValueError, match="unknown benchmark"):
        load_benchmark_programs(SHARED_DATA, names=["no-such-bench"])


def test_without_data_nothing_is_checked_and_nothing_matches(tmp_path: Path) -> None:
    loaded = load_benchmark_programs(tmp_path, names=["cruxeval-o"], cache=tmp_path / "cache")
    assert loaded.checked == [] and list(loaded.skipped) == ["cruxeval-o"]
    assert BenchmarkIndex(loaded.programs).check("def f(x):\n    return x") == []


# -- planted CRUXEval near-duplicates ------------------------------------------------------------


class _Rename(ast.NodeTransformer):
    """Consistently rename every name a program binds (parameters, locals, the function)."""

    def __init__(self, bound: set[str]) -> None:
        self.bound = bound

    def new(self, name: str) -> str:
        return f"renamed_{name}_x" if name in self.bound else name

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.new(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.new(node.arg)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.new(node.name)
        self.generic_visit(node)
        return node


def disguise(code: str) -> str:
    """Rename everything bound, re-print (other spacing and parentheses), add comments."""
    tree = ast.parse(code)
    bound = (
        {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        | {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
        | {"f"}
    )
    text = ast.unparse(_Rename(bound).visit(tree))
    return "# adapted\n" + text.replace("\n", "  # step\n", 2) + "\n"


def change_a_constant(code: str) -> str | None:
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) in (int, str):
            node.value = node.value + 7 if type(node.value) is int else node.value + "zq"
            return ast.unparse(tree)
    return None


def copy_a_10gram(index: BenchmarkIndex, code: str) -> str | None:
    """A new function holding the source lines of the first informative 10-gram of ``code``."""
    tokens = [tok for tok in _positioned(code)]
    for start in range(len(tokens) - 9):
        window = tokens[start : start + 10]
        if index.informative([tok for tok, _ in window]):
            first, last = window[0][1], window[-1][1]
            lines = textwrap.dedent("\n".join(code.splitlines()[first - 1 : last]))
            copied = textwrap.indent(lines, "    ")
            return f"def brand_new(stuff):\n    total = len(stuff)\n{copied}\n    return total\n"
    return None


def _positioned(code: str) -> list[tuple[object, int]]:
    import io
    import tokenize

    from codereasoner.synth.decontam import Token

    kept = {tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING}
    return [
        (Token(t.type, t.string), t.start[0])
        for t in tokenize.generate_tokens(io.StringIO(code).readline)
        if t.type in kept
    ]


@pytest.fixture(scope="module")
def crux() -> tuple[BenchmarkIndex, list[BenchmarkProgram]]:
    loaded = load_benchmark_programs(SHARED_DATA, names=["cruxeval-o"])
    return BenchmarkIndex(loaded.programs), loaded.programs


@needs_cruxeval
def test_planted_cruxeval_near_duplicates_are_caught(
    crux: tuple[BenchmarkIndex, list[BenchmarkProgram]],
) -> None:
    index, programs = crux
    sample = programs[::4]  # 200 programs
    missed: dict[str, list[str]] = {"disguised": [], "constant": [], "ngram": []}
    tried = dict.fromkeys(missed, 0)
    for program in sample:
        variants = {
            "disguised": disguise(program.code),
            "constant": change_a_constant(program.code),
            "ngram": copy_a_10gram(index, program.code),
        }
        for kind, variant in variants.items():
            if variant is None or variant == program.code:
                continue
            tried[kind] += 1
            wanted = {
                "disguised": "near_duplicate",
                "constant": "near_duplicate",
                "ngram": "ngram10",
            }[kind]
            if not any(
                m.item_id == program.item_id and m.rule == wanted for m in index.check(variant)
            ):
                missed[kind].append(program.item_id)
    assert tried["disguised"] == len(sample) and tried["constant"] > 150 and tried["ngram"] > 60
    assert missed == {"disguised": [], "constant": [], "ngram": []}, missed


@needs_cruxeval
def test_a_hand_made_variant_of_a_real_cruxeval_program_is_caught(
    crux: tuple[BenchmarkIndex, list[BenchmarkProgram]],
) -> None:
    index, programs = crux
    original = next(p for p in programs if p.item_id == "sample_12")
    assert "while s[:len(x)] == x" in original.code  # the program this variant is made from
    variant = textwrap.dedent("""\
        def strip_repeats(line, prefix):
            n = 0
            # drop the prefix while it repeats
            while line[:len(prefix)] == prefix and n < len(line) - len(prefix):
                line = line[len(prefix):]
                n += len(prefix)
            return line
        """)
    assert Match("cruxeval-o", "sample_12", "near_duplicate", "jaccard 1.00") in index.check(
        variant
    )


@needs_cruxeval
def test_unrelated_code_is_not_flagged_against_cruxeval(
    crux: tuple[BenchmarkIndex, list[BenchmarkProgram]],
) -> None:
    index, _ = crux
    unrelated = [
        "def f(grid):\n    rows = len(grid)\n    cols = len(grid[0])\n"
        "    return [[grid[r][c] for r in range(rows)] for c in range(cols)]",
        "def f(prices, budget):\n    bought = 0\n    for price in sorted(prices):\n"
        "        if price > budget:\n            break\n        budget -= price\n"
        "        bought += 1\n    return bought",
        "def f(word):\n    vowels = sum(1 for ch in word.lower() if ch in 'aeiou')\n"
        "    return vowels, len(word) - vowels",
    ]
    for code in unrelated:
        assert index.check(code, "f([[1, 2], [3, 4]])") == [], code


@pytest.mark.parametrize(("rule", "share"), [("literal", 0.05), ("specific", 0.02)])
def test_the_offline_generator_rarely_trips_decontamination(rule: str, share: float) -> None:
    # The literal rule flags about 3% (generic 10-grams such as ``def f ( s ) : s = s .``),
    # the specific rule under 1%.
    offline = pytest.importorskip("codereasoner.synth.generators.offline")
    if not (CRUXEVAL / "cruxeval.jsonl").exists():
        pytest.skip("shared CRUXEval data not available")
    index = BenchmarkIndex(load_benchmark_programs(SHARED_DATA).programs, rule=rule)
    generator = offline.OfflineGenerator(0)
    cases = [generator.generate(i) for i in range(300)]
    flagged = [case.id for case in cases if index.check(case.code, case.call)]
    assert len(flagged) <= share * len(cases), flagged
