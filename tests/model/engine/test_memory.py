"""Generation's default KV-cache budget (mill.model.engine.memory)."""

from __future__ import annotations

import pytest
from transformers import GPT2Config, LlamaConfig

from mill.model.engine import memory
from mill.model.engine.memory import auto_cache_budget, available_bytes, kv_bytes_per_token


def test_kv_bytes_per_token_follow_the_shape() -> None:
    gpt2 = GPT2Config(n_layer=6, n_embd=384, n_head=6)
    assert kv_bytes_per_token(gpt2, 4) == 2 * 6 * 384 * 4  # keys and values, every layer
    # grouped-query attention: only the KV heads are cached (TinyLlama-1.1B's shape)
    llama = LlamaConfig(
        num_hidden_layers=22, hidden_size=2048, num_attention_heads=32, num_key_value_heads=4
    )
    assert kv_bytes_per_token(llama, 2) == 2 * 22 * 4 * 64 * 2


def test_the_budget_is_the_weights_bytes_within_memory_and_bounds() -> None:
    per_token = 2 * 6 * 384 * 4
    # a small model: the 512 MiB floor
    assert auto_cache_budget(per_token, 120 << 20, 16 << 30) == (512 << 20) // per_token
    # a bigger one: as many bytes as its weights
    assert auto_cache_budget(per_token, 600 << 20, 16 << 30) == (600 << 20) // per_token
    # little memory left: an eighth of it, never below the minimum
    assert auto_cache_budget(per_token, 600 << 20, 1 << 30) == (128 << 20) // per_token
    assert auto_cache_budget(per_token, 600 << 20, 1 << 20) == memory.MIN_TOKENS
    assert auto_cache_budget(1, 10 << 30, None) == memory.MAX_TOKENS


def test_available_memory_is_read_on_cpu() -> None:
    free = available_bytes("cpu")
    assert free is not None and free > 64 << 20


def test_the_model_picks_its_budget_unless_given(gpt2) -> None:
    per_token = kv_bytes_per_token(gpt2.model.config, 4)
    weights = sum(p.numel() * 4 for p in gpt2.model.parameters())
    assert gpt2.cache_budget == auto_cache_budget(per_token, weights, available_bytes("cpu")) or (
        # MemAvailable moved between the two reads: the same rule within a few tokens
        gpt2.cache_budget == pytest.approx(auto_cache_budget(per_token, weights, None), rel=0.05)
    )
    from mill.model.hf import HFCausalLM

    given = HFCausalLM(gpt2.pretrained, cache_budget=4096)
    assert given.cache_budget == 4096


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_the_budget_reads_free_gpu_memory() -> None:
    import torch

    free = available_bytes(torch.device("cuda", 0))
    assert free is not None and 0 < free <= torch.cuda.get_device_properties(0).total_memory
