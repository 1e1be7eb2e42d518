"""An HF model frees its weights on ``release()`` (the candidate, before a judge loads)."""

from __future__ import annotations

import gc
import weakref
from importlib import resources

from mill.model.hf import HFCausalLM


def test_release_drops_the_weights() -> None:
    lm = HFCausalLM(str(resources.files("mill.resources").joinpath("models/stories260k")))
    weights = weakref.ref(lm.model)
    lm.release()
    gc.collect()
    assert lm.model is None and weights() is None
