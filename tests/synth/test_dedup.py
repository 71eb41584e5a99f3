"""Exact and AST-normalised deduplication."""

from __future__ import annotations

from codereasoner.synth.case import Candidate, Constraints
from codereasoner.synth.dedup import AST, EXACT, Deduper, normalise

CODE = """def f(text, sep):
    parts = text.split(sep)
    return [p.upper() for p in parts if len(p) > 1]"""

# The same program: other names, a docstring, comments, annotations, other formatting.
DISGUISED = '''def f(s: str, delimiter: str) -> list:
    """Split and shout."""
    # split first
    chunks = s.split( delimiter )   # trailing comment

    return [c.upper()
            for c in chunks
            if len(c) > 1]
'''


def case(ident: str, code: str = CODE, input_repr: str = "'ab,c', ','") -> Candidate:
    return Candidate(ident, "str.split", code, input_repr, Constraints())


def test_exact_duplicates_name_the_first_case() -> None:
    dedup = Deduper()
    assert dedup.seen(case("a")) is None
    assert dedup.seen(case("b")) == "a"
    assert dedup.match(case("c")) == ("a", EXACT)
    assert len(dedup) == 1


def test_renamed_reformatted_code_with_an_equivalent_input_is_an_ast_duplicate() -> None:
    dedup = Deduper()
    dedup.seen(case("a"))
    assert dedup.match(case("b", DISGUISED, "'ab,c',','")) == ("a", AST)
    assert dedup.seen(case("c", DISGUISED, '"ab,c", ","')) == "a"
    drop = dedup.check(case("d", DISGUISED))
    assert drop is not None and (drop.stage, drop.reason, drop.detail) == (
        "dedup",
        AST,
        "same as a",
    )


def test_different_inputs_or_behaviour_are_not_duplicates() -> None:
    dedup = Deduper()
    dedup.seen(case("a"))
    assert dedup.seen(case("b", input_repr="'ab,c', ';'")) is None
    assert dedup.seen(case("c", input_repr="'ab,c', ',', ")) == "a"  # same arguments
    # Built-ins and methods are not renamed: other calls make other programs.
    assert dedup.seen(case("d", CODE.replace("upper", "lower"))) is None
    assert dedup.seen(case("e", CODE.replace("len(p)", "sum(p)"))) is None
    assert dedup.seen(case("f", CODE.replace("> 1", "> 2"))) is None
    # Swapping which parameter is used where changes the program.
    assert dedup.seen(case("g", CODE.replace("text.split(sep)", "sep.split(text)"))) is None


def test_register_false_only_looks() -> None:
    dedup = Deduper()
    assert dedup.seen(case("a"), register=False) is None
    assert dedup.seen(case("b")) is None
    assert dedup.seen(case("c")) == "b"


def test_keyword_arguments_follow_the_renaming() -> None:
    dedup = Deduper()
    dedup.seen(case("a", input_repr="'ab,c', sep=','"))
    renamed = CODE.replace("sep", "by")
    assert dedup.seen(case("b", renamed, "'ab,c', by=','")) == "a"
    assert dedup.seen(case("c", renamed, "'ab,c', sep=','")) is None  # another keyword


def test_unparseable_code_still_deduplicates_exactly() -> None:
    dedup = Deduper()
    broken = "def f(x:\n    return x"
    assert dedup.seen(case("a", broken)) is None
    assert dedup.seen(case("b", broken)) == "a"
    assert dedup.seen(case("c", broken + " ")) is None


def test_normalise_renames_by_first_appearance() -> None:
    code, names = normalise("def g(b, a):\n    '''doc'''\n    c = a + b  # note\n    return c")
    assert code == "def v0(v1, v2):\n    v3 = v2 + v1\n    return v3"
    assert names == {"g": "v0", "b": "v1", "a": "v2", "c": "v3"}
