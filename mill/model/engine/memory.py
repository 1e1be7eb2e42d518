"""The default KV-cache budget of generation: how many tokens one decode batch may hold.

A decode batch holds rows x (context + new tokens) tokens of keys and values in every
layer. The more rows, the fewer decoding steps, and the more memory. ``model.cache_budget``
sets the number of tokens; left null, :func:`auto_cache_budget` picks it from the model's
shape and the memory there is:

* the cache may take as many bytes as the model's weights (at least
  :data:`MIN_CACHE_BYTES`): its peak stays within the weights' order of magnitude, as a
  harness that decodes a batch of 8 rows (lm-eval's usual setting) does; for a small
  model the floor decides (measured, 6 x 384 GPT-2 on 2 CPU cores, GSM8K 8-shot, 50
  rows of 1,024 tokens: 256 MiB gave 29.1 s of scoring and 0.87 GiB peak RSS, 512 MiB
  24.2 s and 1.11 GiB, against lm-eval's 1.19 GiB at batch 8);
* and at most :data:`AVAILABLE_SHARE` of the memory available now (``MemAvailable`` on
  CPU, free GPU memory on CUDA), so a busy machine gets smaller batches, not an
  out-of-memory kill;
* within [:data:`MIN_TOKENS`, :data:`MAX_TOKENS`]; the upper bound matters only for
  tiny models, whose per-step cost is mostly fixed: stories260k (1,280 bytes a token),
  GSM8K 0-shot, 200 rows of ~500 tokens, 2 CPU cores: 65,536 tokens (two waves of ~110
  rows) 11.1 and 9.9 s of scoring, 131,072 (one wave) 8.6 and 7.9 s, the same peak RSS
  (0.55 GiB).
"""

from __future__ import annotations

from typing import Any

MIN_CACHE_BYTES = 512 << 20
"""The cache may always take this much (small models: a few thousand tokens otherwise)."""

AVAILABLE_SHARE = 1 / 8
"""At most this share of the memory available when the model is loaded."""

MIN_TOKENS = 2048
MAX_TOKENS = 262144


def kv_bytes_per_token(config: Any, element_size: int) -> int:
    """Bytes of keys and values one token takes in the cache, over all layers."""
    config = getattr(config, "text_config", None) or config
    layers = int(config.num_hidden_layers)
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    head_dim = getattr(config, "head_dim", None) or int(config.hidden_size) // heads
    return 2 * layers * kv_heads * int(head_dim) * element_size


def available_bytes(device: Any) -> int | None:
    """Memory available to this process now on ``device`` (None when unknown)."""
    if getattr(device, "type", str(device)) == "cuda":
        import torch

        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def auto_cache_budget(per_token: int, weights_bytes: int, available: int | None) -> int:
    """Tokens of KV cache one decode batch may hold (see the module docs)."""
    allowed = max(weights_bytes, MIN_CACHE_BYTES)
    if available is not None:
        allowed = min(allowed, int(available * AVAILABLE_SHARE))
    tokens = allowed // max(per_token, 1)
    return int(min(MAX_TOKENS, max(MIN_TOKENS, tokens)))
