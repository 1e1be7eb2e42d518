"""device_map: a model dispatched over devices by accelerate (here CPU and disk offload, the
part of big-model placement a CPU machine can run) scores exactly like the plain model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mill.errors import ConfigError, ModelError
from mill.model.random import random_gpt2, random_gpt2_dir
from mill.types import GenerationArgs, OutputType, Request
from tests.helpers import docs_requests

SPLIT = {
    "transformer.wte": "cpu",
    "transformer.wpe": "cpu",
    "transformer.h.0": "cpu",
    "transformer.h.1": "disk",
    "transformer.ln_f": "disk",
    "lm_head": "cpu",
}


def _requests() -> list[Request]:
    contexts = [f"Question {d}: which one?\nAnswer:" for d in range(3)]
    return docs_requests(contexts, ["the red one", "blue", "none of them at all"])


@pytest.mark.slow  # real model, seconds of compute
@pytest.mark.parametrize("device_map", ["auto", "split"])
def test_dispatched_model_scores_like_the_plain_one(device_map: str, tmp_path: Path) -> None:
    plain = random_gpt2()
    kwargs = (
        {"device_map": "auto", "max_memory": {"cpu": "2MB"}}  # too small: offload to disk
        if device_map == "auto"
        else {"device_map": SPLIT}
    )
    model = random_gpt2(offload_folder=str(tmp_path), **kwargs)
    assert "disk" in set(model.model.hf_device_map.values())  # really dispatched
    assert model.identity() == plain.identity()  # placement is not identity
    want = plain.loglikelihood(_requests())
    got = model.loglikelihood(_requests())
    assert [r.logprob for r in got] == [r.logprob for r in want]
    assert [r.is_greedy for r in got] == [r.is_greedy for r in want]
    gen = [
        Request(
            OutputType.GENERATIVE,
            "g",
            0,
            0,
            "Once upon a time",
            generation=GenerationArgs(until=("\n",), max_gen_toks=8),
        )
    ]
    assert model.generate_until(gen)[0].text == plain.generate_until(gen)[0].text


def test_placement_options_need_device_map() -> None:
    with pytest.raises(ModelError, match="need model.device_map"):
        random_gpt2(max_memory={"cpu": "1GB"})


@pytest.mark.slow  # real model, seconds of compute
def test_device_map_from_the_config(compose, tmp_path: Path) -> None:
    from mill.runner.job import run_job

    base = [
        "model=hf",
        f"model.pretrained={random_gpt2_dir()}",
        "model.name=g",
        "task.limit=3",
        "report.progress=never",
    ]
    run_job(compose(*base), tmp_path / "plain")
    dispatched = [
        *base,
        "model.device_map=auto",
        "model.max_memory={cpu:2MB}",
        f"model.offload_folder={tmp_path / 'offload'}",
    ]
    run_job(compose(*dispatched), tmp_path / "dispatched")
    a, b = (
        (tmp_path / name / "samples" / "arc_easy.jsonl").read_text()
        for name in ("plain", "dispatched")
    )
    assert a == b
    with pytest.raises(ConfigError, match="one process"):
        run_job(compose(*dispatched, "runner.num_processes=2"), tmp_path / "dp")
    manifest = json.loads((tmp_path / "dp" / "manifest.json").read_text())
    assert manifest["status"] == "failed"


def test_one_accelerator_loads_its_weights_straight_onto_it() -> None:
    """Not a host copy first (a 1.1B model peaked at 7.3 GiB of host RSS that way on an
    H100, lm-eval at 5.5 GiB): ``device_map={"": device}``, as lm-eval passes."""
    import torch

    from mill.model.hf import load_placement

    assert load_placement(torch.device("cpu"), {}) == {}
    assert load_placement(torch.device("cuda", 1), {}) == {"device_map": {"": "cuda:1"}}
    assert load_placement(torch.device("cuda"), {}) == {"device_map": {"": "cuda"}}
    asked = {"device_map": "auto", "max_memory": {0: "10GiB"}}
    assert load_placement(torch.device("cuda"), asked) is asked  # the user's dispatch wins


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_the_weights_never_stop_on_the_host() -> None:
    from mill.model.hf import HFCausalLM

    model = HFCausalLM(str(random_gpt2_dir()), device="cuda")
    assert {p.device.type for p in model.model.parameters()} == {"cuda"}
    plain = random_gpt2()
    got = [r.logprob for r in model.loglikelihood(_requests())]
    want = [r.logprob for r in plain.loglikelihood(_requests())]
    assert got == pytest.approx(want, abs=1e-4)


def test_auto_is_cuda_where_there_is_one_else_the_cpu() -> None:
    import torch

    from mill.model.hf import resolve_device

    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)  # named, never probed
