"""The vLLM backend without vLLM: the sampling mapping, the call plan and the missing-vllm error."""

from __future__ import annotations

import importlib.util

import pytest

from codereasoner.models import BackendError, Request, Sampling, SpecError, load_backend
from codereasoner.models.vllm import Call, VLLMBackend, plan_calls, sampling_params


def test_sampling_params_mapping() -> None:
    sampling = Sampling(temperature=0.7, top_p=0.95, max_tokens=256, stop=("[/ANSWER]", "\n\n"))
    assert sampling_params(sampling, n=4) == {
        "n": 4,
        "temperature": 0.7,
        "top_p": 0.95,
        "max_tokens": 256,
        "stop": ["[/ANSWER]", "\n\n"],
    }
    assert sampling_params(Sampling(), seed=3) == {
        "n": 1,
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": 1024,
        "seed": 3,
    }


def test_call_plans() -> None:
    greedy = plan_calls(Request("p", samples=(0, 1, 2)))
    assert greedy == [Call((0, 1, 2), sampling_params(Sampling(), 1), copies=True)]
    seeded = Sampling(temperature=1.0, seed=10)
    plans = plan_calls(Request("p", samples=(3, 5), sampling=seeded))
    assert [(c.samples, c.params["seed"], c.params["n"]) for c in plans] == [
        ((3,), 13, 1),
        ((5,), 15, 1),
    ]
    unseeded = plan_calls(Request("p", samples=(0, 1, 2), sampling=Sampling(temperature=1.0)))
    assert [(c.samples, c.params["n"], "seed" in c.params) for c in unseeded] == [
        ((0, 1, 2), 3, False)
    ]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_missing_vllm_names_the_install_command() -> None:
    model = load_backend("vllm:Qwen/Qwen2.5-Coder-7B-Instruct", tensor_parallel_size=2)
    assert (
        isinstance(model, VLLMBackend) and model.model_id == "vllm:Qwen/Qwen2.5-Coder-7B-Instruct"
    )
    assert model.engine_options["tensor_parallel_size"] == 2
    with pytest.raises(BackendError, match=r"pip install 'codereasoner\[vllm\]'"):
        model.preflight()
    with pytest.raises(BackendError, match="need vllm, which is not installed"):
        model.generate([Request("p")], lambda index, completions: None)


def test_vllm_options_are_checked() -> None:
    with pytest.raises(SpecError, match="concurrency"):
        load_backend("vllm:/models/x", concurrency=8)
    with pytest.raises(BackendError, match="batch_size"):
        load_backend("vllm:/models/x", batch_size=0)
