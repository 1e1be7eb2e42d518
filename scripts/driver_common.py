"""What both benchmark drivers share (``mill_driver.py`` and ``lmeval_driver.py``).

Imports nothing from Mill and nothing heavy at import time: ``lmeval_driver.py`` runs in
lm-eval's own interpreter. Each driver finds this module next to itself (``sys.path[0]``).
"""

from __future__ import annotations

import resource
from typing import Any


def import_model_code(model_dir: str) -> None:
    """Import the model's transformers modules before the clock starts (both drivers do
    this, so library import time is never counted as work)."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    config = transformers.AutoConfig.from_pretrained(model_dir)
    MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    transformers.AutoTokenizer.from_pretrained(model_dir)


class TokenCounter:
    """Counts token positions entering the transformer body (padding included)."""

    def __init__(self, body: Any) -> None:
        self.tokens = 0
        self.calls = 0
        body.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: Any) -> None:
        ids = kwargs.get("input_ids")
        if ids is None and args:
            ids = args[0]
        if ids is None:
            embeds = kwargs.get("inputs_embeds")
            n = 0 if embeds is None else embeds.shape[0] * embeds.shape[1]
        else:
            n = ids.numel()
        self.tokens += int(n)
        self.calls += 1


def peak_rss_kib() -> int:
    """This process's peak resident set size so far, in KiB (Linux ``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
