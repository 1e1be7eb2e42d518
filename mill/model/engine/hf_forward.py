"""The torch side of :class:`~mill.model.hf.HFCausalLM`: hidden states, a fp32 LM head on
selected positions only, and KV-cache surgery."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from mill.model.engine.generation import Stepper
from mill.model.engine.head import (
    CPU_GREEDY_MIN_ROWS,
    CPU_STEP_TILE,
    CPU_VOCAB_TILE,
    argmax_tiles,
    rows_of_product,
)
from mill.model.engine.scoring import Forward

SHARED_PREFIX_MODELS = frozenset({"gpt2", "llama", "mistral", "qwen2"})
"""Model types whose generation shares a batch's common prefix (see
:mod:`mill.model.engine.prefix_attention`)."""


class HFForward(Forward, Stepper):
    """Runs a ``transformers`` causal LM's body and head separately."""

    def __init__(
        self, model: torch.nn.Module, device: torch.device, share_prefix: bool = True
    ) -> None:
        self.model = model
        self.share_prefix = share_prefix
        hf: Any = model  # a transformers PreTrainedModel (its config, body and head)
        self.config: Any = hf.config
        self.body = hf.base_model
        self.head = hf.get_output_embeddings()
        self.head_weight = self.head.weight
        self.head_bias = getattr(self.head, "bias", None)
        self.vocab_size = int(self.head_weight.shape[0])
        config = model.config
        self.softcap = getattr(config, "final_logit_softcapping", None)
        self.logit_scale = getattr(config, "logit_scale", None)
        self._device = device
        self._growable: bool | None = None
        self._cache_kwarg: str | None = None
        # tile the vocabulary where a [rows, vocab] block would fall out of the CPU's cache
        self.vocab_tile: int | None = CPU_VOCAB_TILE if device.type == "cpu" else None
        self._head_held = False

    @property
    def device(self) -> torch.device:
        return self._device

    def hidden(self, input_ids, attention_mask, position_ids, past, use_cache):
        from transformers import DynamicCache

        if use_cache and past is None:
            past = DynamicCache(config=self.model.config)
        # transformers >= 5.24 names the cache `cache` (`past_key_values` warns on every call)
        if self._cache_kwarg is None:
            params = inspect.signature(self.body.forward).parameters
            self._cache_kwarg = "cache" if "cache" in params else "past_key_values"
        out = self.body(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=use_cache or past is not None,
            **{self._cache_kwarg: past},
        )
        cache = out.cache if hasattr(out, "cache") else out.past_key_values
        return out.last_hidden_state, cache

    def logits(
        self, hidden: torch.Tensor, lo: int = 0, hi: int | None = None, few_rows: bool = False
    ) -> torch.Tensor:
        """fp32 logits of the LM head for vocabulary entries ``[lo, hi)``.

        ``few_rows`` (a decoding step's last positions on CPU): the product is taken as
        ``weight @ hidden.T``, a vocabulary tile at a time
        (:func:`~mill.model.engine.head.rows_of_product`): 1.5-2x faster for 4-100 rows of
        GPT-2's head on 2 cores (docs/benchmark-history.md), the same sums (differences of a few
        1e-7 relative)."""
        # a model dispatched with device_map: the head may sit on another GPU, or be
        # offloaded (accelerate's hook loads its weights for the call and drops them after)
        hook = None if self._head_held else getattr(self.head, "_hf_hook", None)
        if hook is not None:
            (hidden,), _ = hook.pre_forward(self.head, hidden)
        try:
            weight = self.head.weight[lo:hi].float()
            bias = getattr(self.head, "bias", None)
            bias = None if bias is None else bias[lo:hi].float()
            hidden = hidden.float().to(weight.device)
            if few_rows:
                logits = rows_of_product(weight, hidden, CPU_STEP_TILE)
                logits = logits if bias is None else logits + bias
            else:
                logits = F.linear(hidden, weight, bias)
        finally:
            if hook is not None:
                hook.post_forward(self.head, None)
        if self.logit_scale:
            logits = logits * self.logit_scale
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits

    @contextmanager
    def loaded(self) -> Iterator[None]:
        """Keep a dispatched head's weights on its execution device for many ``logits``
        calls (accelerate's hook would load an offloaded head once per call)."""
        hook = getattr(self.head, "_hf_hook", None)
        if hook is None or self._head_held:
            yield
            return
        hook.pre_forward(self.head, torch.empty(0))
        self._head_held = True
        try:
            yield
        finally:
            self._head_held = False
            hook.post_forward(self.head, None)

    def expand_cache(self, past, indices):
        past.batch_select_indices(indices)
        return past

    def can_share_prefix_cache(self) -> bool:
        return self.can_grow_cache()  # plain KV layers only (no sliding windows)

    def broadcast_cache(self, past, rows):
        import copy

        out = copy.copy(past)
        out.layers = []
        for layer in past.layers:
            new = copy.copy(layer)
            new.keys = layer.keys.expand(rows, *layer.keys.shape[1:])
            new.values = layer.values.expand(rows, *layer.values.shape[1:])
            out.layers.append(new)
        return out

    def supports_4d_mask(self) -> bool:
        return getattr(self.config, "_attn_implementation", None) in ("sdpa", "eager")

    def attention_mask_4d(self, allowed: torch.Tensor) -> torch.Tensor:
        if self.config._attn_implementation == "sdpa":
            return allowed
        dtype = self.head_weight.dtype  # eager adds the mask to the attention scores
        return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(
            ~allowed, torch.finfo(dtype).min
        )

    def select_cache(self, past, keep):
        past.batch_select_indices(keep)
        return past

    def can_grow_cache(self) -> bool:
        if self._growable is None:
            try:
                from transformers import DynamicCache

                from mill.model.engine.kv import supports_growing

                self._growable = supports_growing(DynamicCache(config=self.config))
            except ImportError:  # an older transformers without cache layers
                self._growable = False
        return self._growable

    def can_share_generation_prefix(self) -> bool:
        # attention modules that take the attention interface and know their layer; the
        # families whose generations are checked against the unshared path
        # (tests/model/engine/test_prefix_attention.py). Generation also needs can_grow_cache
        # (generation.shared_prefix_length checks both).
        config = getattr(self.config, "text_config", None) or self.config
        return (
            self.share_prefix
            and getattr(config, "model_type", None) in SHARED_PREFIX_MODELS
            and getattr(config, "_attn_implementation", None) in ("sdpa", "eager")
        )

    @contextmanager
    def shared_prefix(self, tokens):
        from mill.model.engine.prefix_attention import SharedPrefix, activate

        if not tokens:  # no common prefix: only repeats' prompts are shared
            shared = SharedPrefix(None, None)
        else:
            with torch.inference_mode():
                ids = torch.tensor([tokens], device=self.device)
                positions = torch.arange(len(tokens), device=self.device)[None]
                _hidden, past = self.hidden(ids, None, positions, None, True)
            shared = SharedPrefix(
                [layer.keys for layer in past.layers], [layer.values for layer in past.layers]
            )
            del past
        with activate(self.config, shared):
            yield shared

    def next_logits(self, input_ids, attention_mask, position_ids, past):
        with torch.inference_mode():
            hidden, past = self.hidden(input_ids, attention_mask, position_ids, past, True)
            return self.logits(hidden[:, -1], few_rows=self._device.type == "cpu"), past

    def next_argmax(self, input_ids, attention_mask, position_ids, past):
        """A greedy step: on CPU with at least :data:`~mill.model.engine.head.CPU_GREEDY_MIN_ROWS`
        rows the head runs tile by tile into a running argmax (32-36 ms instead of 50-58 ms
        for 50-64 rows of GPT-2's head, docs/benchmark-history.md); else the argmax of the
        logits."""
        if self._device.type != "cpu" or input_ids.shape[0] < CPU_GREEDY_MIN_ROWS:
            return super().next_argmax(input_ids, attention_mask, position_ids, past)
        with torch.inference_mode():
            hidden, past = self.hidden(input_ids, attention_mask, position_ids, past, True)
            last = hidden[:, -1]
            with self.loaded():
                tokens = argmax_tiles(
                    lambda lo, hi: self.logits(last, lo, hi, few_rows=True),
                    self.vocab_size,
                    CPU_STEP_TILE,
                )
            return tokens, past
