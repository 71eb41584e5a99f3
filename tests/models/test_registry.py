"""The backend registry: a toy backend declared here in one declaration, loaded by its spec."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence

import pytest

from codereasoner.models import (
    BACKENDS,
    BackendError,
    BackendType,
    Completion,
    ModelSpec,
    Request,
    SpecError,
    load_backend,
    parse_spec,
    register,
    spec_help,
    spec_shapes,
    unregister,
)
from codereasoner.models.base import OnResult


class ToyBackend:
    """Answers every request with its word (upper case when ``shout``)."""

    def __init__(self, word: str, *, shout: bool = False, repeat: int = 1) -> None:
        self.word = word
        self.shout = shout
        self.repeat = repeat

    @property
    def model_id(self) -> str:
        return f"toy:{self.word}"

    def preflight(self) -> None:
        """Nothing to check."""

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        text = " ".join([self.word.upper() if self.shout else self.word] * self.repeat)
        for index, request in enumerate(requests):
            on_result(index, [Completion(sample, text) for sample in request.samples])

    def close(self) -> None:
        """Nothing to release."""


def _letters(rest: str) -> tuple[str, str]:
    if not rest.isalpha():
        raise ValueError("letters only")
    return rest.lower(), ""


TOY = BackendType(
    "toy",
    f"{__name__}:ToyBackend",
    "a word said back",
    form="WORD",
    parse=_letters,
    hint="(letters only)",
    options=("shout", "repeat"),
)


@pytest.fixture
def toy() -> Iterator[BackendType]:
    register(TOY)
    try:
        yield TOY
    finally:
        unregister(TOY.name)


def test_a_declared_backend_is_parsed_loaded_and_described(toy: BackendType) -> None:
    assert BACKENDS["toy"] is toy
    assert spec_shapes()[-1] == "toy:WORD"
    assert spec_help().endswith("trace-corrupted or toy:WORD")
    assert "toy:WORD (a word said back)" in spec_help(summaries=True)
    # the spec's rest goes through the declaration's parse function
    assert parse_spec(" toy:Hello ") == ModelSpec("toy", "hello")
    with pytest.raises(
        SpecError, match=r"^model spec 'toy:h1': expected toy:WORD \(letters only\)$"
    ):
        parse_spec("toy:h1")
    with pytest.raises(SpecError, match=r"^model spec 'toy': expected .* or toy:WORD$"):
        parse_spec("toy")  # a backend with a form needs its rest
    with pytest.raises(SpecError, match=r"hf:PATH, oracle, trace, trace-corrupted or toy:WORD$"):
        parse_spec("nope:x")  # the list of shapes reads the registry
    model = load_backend("toy:Hello", shout=True, repeat=2, concurrency=None)
    assert isinstance(model, ToyBackend) and model.model_id == "toy:hello"
    seen: dict[int, list[Completion]] = {}
    model.generate([Request("p", samples=(0, 1))], lambda index, done: seen.update({index: done}))
    assert [(c.sample, c.text) for c in seen[0]] == [(0, "HELLO HELLO"), (1, "HELLO HELLO")]
    assert isinstance(load_backend(ModelSpec("toy", "abc")), ToyBackend)
    # the options come from the declaration
    with pytest.raises(
        SpecError, match=r"concurrency do not apply to toy backends \(they take: repeat, shout\)"
    ):
        load_backend("toy:x", concurrency=4)
    with pytest.raises(SpecError, match="shout do not apply to openai backends"):
        load_backend("openai:m@http://127.0.0.1:1/v1", shout=True)


def test_registering_and_removing() -> None:
    assert "toy" not in BACKENDS
    register(TOY)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register(TOY)
        assert load_backend("toy:abc").model_id == "toy:abc"
    finally:
        assert unregister("toy") is TOY
    assert "toy" not in BACKENDS and "toy" not in spec_help()
    with pytest.raises(
        SpecError,
        match="expected openai:NAME@URL, vllm:PATH, hf:PATH, oracle, trace or trace-corrupted",
    ):
        load_backend("toy:abc")
    with pytest.raises(TypeError):
        BACKENDS["toy"] = TOY  # type: ignore[index]  # read-only: register() adds backends


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="module:Class"):
        BackendType("bad", "no_colon", "x")
    with pytest.raises(ValueError, match="without ':'"):
        BackendType("a:b", "m:C", "x")
    with pytest.raises(ValueError, match="needs a form"):
        BackendType("bad", "m:C", "x", parse=_letters)


def test_the_class_is_imported_only_when_constructed() -> None:
    ghost = BackendType("ghost", "tests.models.no_such_module:Ghost", "absent", form="PATH")
    register(ghost)
    try:
        assert parse_spec("ghost:x") == ModelSpec("ghost", "x")  # parsing imports nothing
        with pytest.raises(
            BackendError,
            match=r"^ghost backends cannot be loaded: tests\.models\.no_such_module is not",
        ):
            load_backend("ghost:x")
    finally:
        unregister("ghost")


def test_heavy_libraries_wait_for_their_backend() -> None:
    # A fresh interpreter: constructing the hf and vllm backends imports no heavy library yet
    # (they import torch, transformers or vllm when the model is loaded).
    script = (
        "import sys\n"
        "from codereasoner.models import BACKENDS, load_backend\n"
        "assert 'aiohttp' not in sys.modules\n"
        "for spec in ('hf:smollm2-135m', 'vllm:some/model'):\n"
        "    load_backend(spec)\n"
        "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def test_builtin_specs_keep_their_errors() -> None:
    assert spec_shapes() == (
        "openai:NAME@URL", "vllm:PATH", "hf:PATH", "oracle", "trace", "trace-corrupted",
    )  # fmt: skip
    assert str(parse_spec("openai:m@https://h/v1/")) == "openai:m@https://h/v1"
    assert parse_spec("vllm:org/model") == ModelSpec("vllm", "org/model")
    with pytest.raises(SpecError, match=r"^model spec 'openai:m': expected openai:NAME@URL with"):
        parse_spec("openai:m")
    with pytest.raises(SpecError, match=r"expected vllm:PATH \(a local folder or hub name\)$"):
        parse_spec("vllm:")
    with pytest.raises(
        SpecError,
        match="expected openai:NAME@URL, vllm:PATH, hf:PATH, oracle, trace or trace-corrupted",
    ):
        parse_spec("oracle:x")
    with pytest.raises(SpecError, match=r"do not apply to oracle backends \(they take: none\)"):
        load_backend("oracle", batch_size=1)


def test_backend_options_parse_from_key_value_text() -> None:
    from codereasoner.models.registry import parse_options

    assert parse_options("batch_size=8,dtype=bfloat16") == {"batch_size": 8, "dtype": "bfloat16"}
    assert parse_options(" trust_remote_code=True , device=cpu ") == {
        "trust_remote_code": True,
        "device": "cpu",
    }
    assert parse_options('engine_options={"a": 1, "b": [2, 3]},max_model_len=null') == {
        "engine_options": {"a": 1, "b": [2, 3]},
        "max_model_len": None,
    }
    assert parse_options("gpu_memory_utilization=0.5") == {"gpu_memory_utilization": 0.5}
    assert parse_options("") == {}
    for bad in ("batch_size", "=3", "batch size=3", "a=1,b"):
        with pytest.raises(SpecError, match="key=value"):
            parse_options(bad)


def test_backend_options_are_checked_against_the_types_the_backend_declares(
    toy: BackendType,
) -> None:
    assert load_backend("toy:abc", repeat=2).repeat == 2  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match=r"option repeat='two': expected int"):
        load_backend("toy:abc", repeat="two")
    with pytest.raises(SpecError, match=r"option shout=1: expected bool"):
        load_backend("toy:abc", shout=1)
    with pytest.raises(SpecError, match=r"option repeat=True: expected int"):
        load_backend("toy:abc", repeat=True)
    with pytest.raises(SpecError, match=r"option batch_size='x': expected int"):
        load_backend("hf:some/model", batch_size="x")
    with pytest.raises(SpecError, match=r"option timeout_s='slow': expected float"):
        load_backend("openai:m@http://127.0.0.1:1/v1", timeout_s="slow")
    made = load_backend("openai:m@http://127.0.0.1:1/v1", timeout_s=5, extra_body={"x": 1})
    assert made.timeout_s == 5  # type: ignore[attr-defined]  # an int where a float is declared
