"""Mill's engine as an lm-eval ``LM`` in Python (``MillLM``): the device lm-eval hands every
model (its default ``cuda:0``) on a machine without it."""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

import pytest

from tests.lmeval.conftest import skip_without_lm_eval

pytestmark = [skip_without_lm_eval]

STORIES = Path(str(resources.files("mill.resources").joinpath("models", "stories260k")))


@pytest.mark.parametrize("device", [None, "cuda", "cuda:0", "cuda:7", "cpu"])
def test_mill_lm_falls_back_from_a_missing_cuda_device(
    device: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    import torch

    from mill.lm_eval.model import MillLM

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the fallback is for machines without it")
    kwargs = {} if device is None else {"device": device}
    with caplog.at_level(logging.INFO, logger="lm_eval.mill"):
        lm = MillLM(pretrained=str(STORIES), **kwargs)
    assert lm.engine.device.type == "cpu"
    assert next(lm.engine.model.parameters()).device.type == "cpu"
    fallback = [r.getMessage() for r in caplog.records if r.name == "lm_eval.mill"]
    if device is not None and device.startswith("cuda"):
        assert fallback == [
            f"Device {device!r} not available (Cuda Available? False, 0 GPU(s)): using cpu"
        ]
    else:
        assert fallback == []
    # and it answers: the log-likelihood of a continuation, on the CPU
    from lm_eval.api.instance import Instance

    request = Instance("loglikelihood", {}, ("Once upon a time", " there was"), 0)
    ((logprob, _),) = lm.loglikelihood([request])
    assert logprob < 0.0


@pytest.mark.slow
def test_registering_mill_keeps_lm_eval_models() -> None:
    """lm-eval fills its model registry only while it is empty: importing Mill's model first
    (as the parity tests do in one process) must leave ``hf`` and the rest findable (in a
    fresh interpreter: this one may have filled the registry already)."""
    import sys

    from tests.helpers import run_process

    code = (
        "import mill.lm_eval.model\n"
        "from lm_eval.api.registry import get_model, model_registry\n"
        "assert 'mill' in model_registry and 'hf' in model_registry, sorted(model_registry)\n"
        "print(get_model('mill').__name__)\n"
    )
    out = run_process(sys.executable, "-c", code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "MillLM"
