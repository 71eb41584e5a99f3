"""Reading generations files: both formats, and one-line errors for every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codereasoner import benchmarks, tasks
from codereasoner.evaluation import GenerationsError, read_generations
from codereasoner.tasks import Answer, Item, ParseFailure

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cruxeval"
BENCH = benchmarks.get("cruxeval-o")
ITEMS = BENCH.load(FIXTURES)
IDS = [item.id for item in ITEMS]


def robust(item: Item, text: str) -> Answer | ParseFailure:
    return tasks.get(item.task).extract(item, text, "direct", "robust")


def write(tmp_path: Path, text: str, name: str = "gens.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_official_format(tmp_path: Path) -> None:
    fmt, answers = read_generations(FIXTURES / "output_generations.json", ITEMS, robust)
    assert fmt == "official" and list(answers) == IDS
    assert answers["sample_0"][4] == Answer("f([1, 2, 3])")  # already extracted: taken as is


def test_jsonl_format_extracts_completions(tmp_path: Path) -> None:
    lines = [
        {"id": i, "sample": s, "completion": f"[ANSWER]\nassert f(x) == {s}\n[/ANSWER]"}
        for i in IDS
        for s in (1, 0)
    ]
    lines[0] = {"id": IDS[0], "sample": 1, "answer": "'given as is'"}
    lines.append({"id": IDS[0], "sample": 2, "completion": "no answer here"})
    path = write(tmp_path, "\n".join(json.dumps(line) for line in lines) + "\n", "gens.jsonl")
    fmt, answers = read_generations(path, ITEMS, robust)
    assert fmt == "jsonl"
    assert answers[IDS[0]][:2] == [Answer("0"), Answer("'given as is'")]
    assert isinstance(answers[IDS[0]][2], ParseFailure)  # kept, and scored as a failure
    assert answers[IDS[1]] == [Answer("0"), Answer("1")]


def test_single_line_jsonl(tmp_path: Path) -> None:
    one = [item for item in ITEMS if item.id == "sample_0"]
    path = write(tmp_path, json.dumps({"id": "sample_0", "sample": 0, "answer": "[2, 6]"}))
    assert read_generations(path, one, robust) == ("jsonl", {"sample_0": [Answer("[2, 6]")]})


def official(**overrides: object) -> str:
    data: dict[str, object] = {item_id: ["1"] for item_id in IDS}
    data.update(overrides)
    return json.dumps(data)


def sample_line(item_id: str = "sample_0", sample: object = 0, **fields: object) -> str:
    return json.dumps({"id": item_id, "sample": sample, **(fields or {"answer": "1"})})


ALL_LINES = "\n".join(sample_line(item_id) for item_id in IDS)

BAD = [
    (None, r"gens.json: no such file"),
    ("", r"gens.json: empty file"),
    (
        '{"sample_0": ["1"],',
        r"gens.json: invalid JSON at line 1 column 20 \(Expecting property name",
    ),
    ("[1, 2]", r"gens.json: top level is a list; expected an object"),
    (
        official(sample_0="1"),
        r"gens.json: record 'sample_0': expected a list of generation strings, got a string",
    ),
    (
        official(sample_1=["1", 2]),
        r"gens.json: record 'sample_1' generation 1: expected a string, got a number",
    ),
    (official(sample_77=["1"]), r"gens.json: record 'sample_77': unknown id for cruxeval-o"),
    (
        json.dumps({"sample_0": ["1"]}),
        r"gens.json: 5 of 6 ids have no generations \(first: 'sample_1'\)",
    ),
    (official(sample_2=[]), r"gens.json: record 'sample_2': no generations; expected at least one"),
    (ALL_LINES + "\nnot json", r"gens.json:7: invalid JSON"),
    (ALL_LINES + "\n[1]", r"gens.json:7: expected a JSON object, got a list"),
    (
        ALL_LINES + '\n{"sample": 0, "answer": "1"}',
        r"gens.json:7: field 'id' must be a string, got null",
    ),
    (
        ALL_LINES + "\n" + sample_line(sample=-1),
        r"gens.json:7: field 'sample' must be an integer >= 0, got -1",
    ),
    (
        ALL_LINES + "\n" + sample_line(sample="1"),
        r"gens.json:7: field 'sample' must be an integer >= 0, got '1'",
    ),
    (
        ALL_LINES + "\n" + sample_line(),
        r"gens.json:7: duplicate sample 0 of 'sample_0' \(first on line 1\)",
    ),
    (
        ALL_LINES + "\n" + sample_line(sample=2),
        r"gens.json: 'sample_0' has samples 0, 2; sample 1 is missing",
    ),
    (
        ALL_LINES + "\n" + sample_line(sample=1, answer="1", completion="x"),
        r"gens.json:7: give exactly one of",
    ),
    (
        ALL_LINES + "\n" + sample_line(sample=1, text="x"),
        r"gens.json:7: give exactly one of 'completion'",
    ),
    (
        ALL_LINES + "\n" + sample_line(sample=1, completion=3),
        r"gens.json:7: field 'completion' must be a string",
    ),
    (ALL_LINES + "\n" + sample_line("zzz"), r"gens.json: record 'zzz': unknown id"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_generations_give_one_line_errors(
    tmp_path: Path, text: str | None, message: str
) -> None:
    path = tmp_path / "gens.json" if text is None else write(tmp_path, text)
    with pytest.raises(GenerationsError, match=message) as caught:
        read_generations(path, ITEMS, robust)
    assert "\n" not in str(caught.value)


def test_subset_keeps_the_items_the_file_has_in_item_order(tmp_path: Path) -> None:
    """``score --subset``: the ids given, in the benchmark's order; none at all is an error,
    and without it the refusal names the flag."""
    path = write(tmp_path, json.dumps({"sample_4": ["1"], "sample_1": ["2", "3"]}))
    fmt, answers = read_generations(path, ITEMS, robust, subset=True)
    assert fmt == "official" and list(answers) == ["sample_1", "sample_4"]
    assert answers["sample_1"] == [Answer("2"), Answer("3")]
    with pytest.raises(GenerationsError, match=r"4 of 6 ids have no generations.*--subset"):
        read_generations(path, ITEMS, robust)
    with pytest.raises(GenerationsError, match=r"gens.json: no generations; expected at least"):
        read_generations(write(tmp_path, "{}"), ITEMS, robust, subset=True)
    unknown = write(tmp_path, official(sample_77=["1"]))
    with pytest.raises(GenerationsError, match="record 'sample_77': unknown id"):
        read_generations(unknown, ITEMS, robust, subset=True)
