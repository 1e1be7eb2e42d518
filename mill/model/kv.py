"""A KV cache for greedy generation that is written in place instead of re-concatenated.

``transformers``' ``DynamicLayer`` grows with ``torch.cat`` at every decoding step, which
copies the whole cache once per generated token (quadratic traffic: for 16 rows of 900
tokens of a 6x384 model that is ~270 MB per step). :class:`GrowingLayer` keeps the cache
in storage allocated once with room for the generated tokens and hands the model views of
the filled part, so a step writes only the new token's keys and values. Rows are dropped
(retired generations) by copying the storage once, which the caller does rarely.

:class:`PrefillMerger` builds one such cache for a whole decode batch out of the caches of
several prefill chunks (left-padded to a common width), so prefill can respect the token
budget while decoding runs with many rows.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` over preallocated ``[rows, heads, capacity, dim]`` storage."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: int) -> None:
        super().__init__()
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        self._k, self._v, self._n = keys, values, length
        self._view()

    def _view(self) -> None:
        self.keys = self._k[:, :, : self._n]
        self.values = self._v[:, :, : self._n]

    def update(self, key_states, value_states, *args, **kwargs):  # type: ignore[override]
        end = self._n + key_states.shape[-2]
        if end > self._k.shape[2]:  # out of room: grow (never happens when sized right)
            extra = max(end - self._k.shape[2], self._k.shape[2])
            pad = list(self._k.shape)
            pad[2] = extra
            self._k = torch.cat([self._k, self._k.new_zeros(pad)], dim=2)
            pad[3] = self._v.shape[3]
            self._v = torch.cat([self._v, self._v.new_zeros(pad)], dim=2)
        self._k[:, :, self._n : end] = key_states
        self._v[:, :, self._n : end] = value_states
        self._n = end
        self._view()
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._k, self._v = self._k[indices], self._v[indices]
        self._view()

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._k = self._k.repeat_interleave(repeats, dim=0)
        self._v = self._v.repeat_interleave(repeats, dim=0)
        self._view()


def supports_growing(cache: object) -> bool:
    """True if every layer of ``cache`` is a plain ``DynamicLayer`` (no sliding windows)."""
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


class PrefillMerger:
    """One growing cache for all rows of a decode batch, filled chunk by chunk.

    Each prefill chunk's cache is copied in as soon as it is computed (and can then be
    dropped), right-aligned at ``[width - chunk width, width)`` so every row's last
    context token sits at ``width - 1``; the caller's attention mask marks the left
    padding. Storage has room for ``capacity`` tokens per row.
    """

    def __init__(self, config: object, rows: int, width: int, capacity: int) -> None:
        self.config, self.rows, self.width, self.capacity = config, rows, width, capacity
        self._keys: list[torch.Tensor] = []
        self._values: list[torch.Tensor] = []
        self._row = 0

    def add(self, cache: object, chunk_width: int) -> None:
        layers = cache.layers  # type: ignore[attr-defined]
        if not self._keys:
            for layer in layers:
                k, v = layer.keys, layer.values
                self._keys.append(k.new_zeros((self.rows, k.shape[1], self.capacity, k.shape[3])))
                self._values.append(v.new_zeros((self.rows, v.shape[1], self.capacity, v.shape[3])))
        n = int(layers[0].keys.shape[0])
        lo = self.width - chunk_width
        for i, layer in enumerate(layers):
            self._keys[i][self._row : self._row + n, :, lo : self.width] = layer.keys
            self._values[i][self._row : self._row + n, :, lo : self.width] = layer.values
        self._row += n

    def cache(self) -> DynamicCache:
        merged = DynamicCache(config=self.config)
        merged.layers = [
            GrowingLayer(k, v, self.width) for k, v in zip(self._keys, self._values, strict=True)
        ]
        return merged
