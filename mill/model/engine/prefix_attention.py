"""Generation over a context prefix that every row of a decode batch shares, kept once.

Few-shot prompts with fixed exemplars (GSM8K-CoT, BBH, MMLU per subject, any task whose
few-shot sampler is ``first_n``) start every request of a batch with the same hundreds of
tokens. A plain decode batch computes those tokens' keys and values once per row, stores
them once per row and reads them once per row at every decoding step. Here they are
computed once (a batch-1 forward), stored once (``[1, kv_heads, P, head_dim]`` per layer)
and read once per step for all rows; each row's cache holds only its own suffix and its
generated tokens.

The model runs unchanged except for its attention function: :func:`activate` switches the
model's ``config._attn_implementation`` to :data:`NAME`, registered in ``transformers``'
``AttentionInterface``, which attends over the shared prefix plus the row's own keys and
values (from the layer's cache). Its mask comes from :class:`SharedPrefix` (each row's
left padding inside the suffix region, causal order), not from the model: the registered
mask function returns None. Positions are the caller's (``P + j`` for suffix token ``j``),
so every row sees exactly the positions, keys and values of its full, unshared context.

Prefill of the rows' own tokens runs ``scaled_dot_product_attention`` over the prefix's
and the row's keys joined for that call; a decoding step computes the scores of the prefix
(one product for all rows) and of the row's own keys, and one fp32 softmax over both.
Results differ from unshared generation's only by floating-point order (in half precision
a step's scores round to the model's dtype before the fp32 softmax, as ``transformers``'
eager attention's do).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from mill.model.engine.kv import PromptTable

NAME = "mill_shared_prefix"
"""The attention implementation registered with ``transformers``."""

MIN_SHARED_PREFIX = 32
"""Rows of a decode batch share their prefix only from this many tokens on (below it the
extra batch-1 forward and the unfused attention cost more than they save)."""

BLOCK_ROWS = 8
"""A decoding step reads the rows' own keys and values in blocks of consecutive slots, each
up to its longest row's column (not every row up to the longest of all): at least this many
rows a block (below it another product costs more than the columns it skips)."""

MAX_BLOCKS = 8
"""At most this many blocks a decoding step (the products' count per layer)."""

_ACTIVE: ContextVar[SharedPrefix | None] = ContextVar("mill_shared_prefix", default=None)
"""The prefix the running forward attends over, per thread (another model generating in
another thread never sees it; one model object generates in one thread at a time)."""


class SharedPrefix:
    """The shared prefix's keys and values per layer, and what each row attends to in its
    own cache, set by the caller before each forward: a prefill's left padding
    (:meth:`set_pad`: ``pad[b]`` leading slots of row ``b`` are never attended, causal
    order), or a decoding step's columns (:meth:`set_valid`: ``valid[b, u]``, slot
    ``b`` may read column ``u``; :class:`mill.model.engine.kv.SlotCache.mask`).
    """

    def __init__(self, keys: list[torch.Tensor] | None, values: list[torch.Tensor] | None) -> None:
        """``keys``/``values`` None: no prefix (only the repeats' prompts are shared,
        :meth:`set_prompts`)."""
        self.keys, self.values = keys, values
        self.length = int(keys[0].shape[2]) if keys else 0
        self.pad: torch.Tensor | None = None
        self.valid: torch.Tensor | None = None
        self.blocks: list[tuple[int, int, int]] = []
        self.prompts: _PromptStep | None = None
        self._mask: tuple[tuple[int, int, torch.device], torch.Tensor] | None = None

    def set_pad(self, pad: torch.Tensor) -> None:
        self.pad, self.valid, self._mask, self.prompts = pad, None, None, None
        self.blocks = []  # a prefill's rows are not the slots a decoding step's blocks are

    def set_valid(self, valid: torch.Tensor) -> None:
        """``valid[b, u]``: slot ``b`` may read column ``u`` (its columns a prefix of the
        row, as :meth:`mill.model.engine.kv.SlotCache.mask` makes them)."""
        self.pad, self.valid, self._mask, self.prompts = None, valid, None, None
        self.blocks = own_blocks(valid.sum(dim=1).tolist())

    def set_prompts(self, table: PromptTable, entries: Sequence[int]) -> None:
        """For the next decoding step (after :meth:`set_valid`): slot ``b`` also attends to
        the whole prompt of ``table`` entry ``entries[b]`` (-1: none), between the prefix
        and its own cache (sampled repeats of one context;
        :class:`~mill.model.engine.kv.PromptTable`)."""
        self.prompts = _PromptStep(table, entries)

    def mask(self, q: int, n: int, device: torch.device) -> torch.Tensor:
        """``[rows, q, n]``: may query ``n - q + i`` attend to suffix slot ``u``? (not
        padding, not in the future). The same for every layer of one forward on one
        device (a model dispatched over GPUs has layers on several): kept."""
        if self._mask is not None and self._mask[0] == (q, n, device):
            return self._mask[1]
        if self.valid is not None:
            if q != 1 or self.valid.shape[1] != n:
                raise RuntimeError(f"decoding mask of {self.valid.shape[1]} columns for {n} keys")
            self._mask = ((q, n, device), self.valid.to(device)[:, None, :])
            return self._mask[1]
        assert self.pad is not None
        slots = torch.arange(n, device=device)
        queries = torch.arange(n - q, n, device=device)
        allowed = (slots[None, None, :] >= self.pad.to(device)[:, None, None]) & (
            slots[None, None, :] <= queries[None, :, None]
        )
        self._mask = ((q, n, device), allowed)
        return allowed


def _check_supported(kwargs: dict[str, object], dropout: float) -> None:
    """Refuses what this attention does not implement (a model that asks for it)."""
    for unsupported in ("sliding_window", "softcap", "s_aux", "sinks"):
        if kwargs.get(unsupported) is not None:
            raise RuntimeError(f"shared-prefix attention does not support {unsupported}")
    if dropout:
        raise RuntimeError("shared-prefix attention is for inference (dropout must be 0)")


def _prefill(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    allowed: torch.Tensor,
    prefix: tuple[torch.Tensor | None, torch.Tensor | None] | None,
    group: int,
    scale: float,
) -> torch.Tensor:
    """Prefill of the rows' own tokens: the prefix (its keys and values, when there is
    one) joins each row's keys for this one call, and the fused kernel never holds the
    ``[q, P + n]`` scores (on GPU). Returns ``[B, q, H, D]``."""
    rows, q = query.shape[0], query.shape[2]
    keys, values, full = key, value, allowed[:, None]
    if prefix is not None:
        prefix_k, prefix_v = prefix
        assert prefix_k is not None and prefix_v is not None
        length = prefix_k.shape[2]
        keys = torch.cat([prefix_k.expand(rows, -1, -1, -1), key], dim=2)
        values = torch.cat([prefix_v.expand(rows, -1, -1, -1), value], dim=2)
        full = torch.cat([allowed.new_ones((rows, q, length)), allowed], dim=-1)[:, None]
    if group > 1:
        keys = keys.repeat_interleave(group, dim=1)
        values = values.repeat_interleave(group, dim=1)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, keys, values, attn_mask=full, scale=scale
    )
    return out.transpose(1, 2).contiguous()


def shared_prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: object,
) -> tuple[torch.Tensor, None]:
    """``transformers`` attention function: ``query [B, H, q, D]`` over the shared prefix
    (``[1, Hkv, P, D]``) and the rows' own ``key``/``value`` (``[B, Hkv, n, D]``, the
    layer's cache after this step's update). Returns ``[B, q, H, D]``."""
    shared = _ACTIVE.get()
    if shared is None:
        raise RuntimeError(f"attention {NAME!r} used outside mill.model.engine.prefix_attention")
    _check_supported(kwargs, dropout)
    layer = int(module.layer_idx)  # type: ignore[arg-type]
    length = shared.length
    prefix_k = shared.keys[layer] if shared.keys else None
    prefix_v = shared.values[layer] if shared.values else None
    rows, heads, q, dim = query.shape
    kv_heads, n = key.shape[1], key.shape[2]
    group = heads // kv_heads  # query head h reads kv head h // group (as repeat_kv)
    scale = dim**-0.5 if scaling is None else scaling
    allowed = shared.mask(q, n, query.device)  # [rows, q, n]
    if q > 1:
        prefix = None if not length else (prefix_k, prefix_v)
        return _prefill(query, key, value, allowed, prefix, group, scale), None
    # a decoding step (one query per row): [rows * group, D] x [D, P] per kv head, so the
    # prefix is read once for all rows; a shared prompt once for all its repeats
    # (_PromptStep); the scores, [rows, heads, P + W + n], are small
    grouped = query.reshape(rows, kv_heads, group, dim)
    parts = []
    if length:
        assert prefix_k is not None
        flat = grouped.transpose(0, 1).reshape(kv_heads, rows * group, dim)
        prefix_scores = torch.matmul(flat, prefix_k[0].transpose(-1, -2))
        parts.append(prefix_scores.view(kv_heads, rows, group, length).transpose(0, 1))
    prompts = shared.prompts
    if prompts is not None:
        parts.append(prompts.scores(layer, grouped))
    blocks = shared.blocks if len(shared.blocks) > 1 else [(0, rows, n)]
    own_scores = _own_scores(grouped, key, blocks)
    parts.append(own_scores.masked_fill(~allowed[:, None], float("-inf")))
    scores = torch.cat(parts, dim=-1).float() * scale
    probs = torch.softmax(scores, dim=-1).to(value.dtype)
    out = _own_read(probs[..., scores.shape[-1] - n :], value, blocks)
    if length:
        assert prefix_v is not None
        prefix_probs = probs[..., :length].transpose(0, 1).reshape(kv_heads, rows * group, length)
        from_prefix = torch.matmul(prefix_probs, prefix_v[0])
        out = out + from_prefix.view(kv_heads, rows, group, dim).transpose(0, 1)
    if prompts is not None:
        out = out + prompts.read(layer, probs[..., length : length + prompts.width])
    return out.reshape(rows, 1, heads, dim), None


def _own_scores(
    grouped: torch.Tensor, key: torch.Tensor, blocks: list[tuple[int, int, int]]
) -> torch.Tensor:
    """``[rows, Hkv, group, n]`` scores of each row's query over its slot's keys, each block
    of slots (:func:`own_blocks`) up to its width; the columns past it are zeros, which the
    caller's mask hides (no row of the block reads them)."""
    if len(blocks) == 1:
        return torch.matmul(grouped, key.transpose(-1, -2))
    rows, kv_heads, group, _ = grouped.shape
    out = grouped.new_zeros((rows, kv_heads, group, key.shape[2]))
    for start, end, width in blocks:
        keys = key[start:end, :, :width].transpose(-1, -2)
        out[start:end, ..., :width] = torch.matmul(grouped[start:end], keys)
    return out


def _own_read(
    probs: torch.Tensor, value: torch.Tensor, blocks: list[tuple[int, int, int]]
) -> torch.Tensor:
    """``[rows, Hkv, group, D]``: each slot's values weighted by ``probs`` (``[rows, Hkv,
    group, n]``), each block up to its width (the probabilities past it are zero)."""
    if len(blocks) == 1:
        return torch.matmul(probs, value)
    return torch.cat(
        [
            torch.matmul(probs[start:end, ..., :width], value[start:end, :, :width])
            for start, end, width in blocks
        ]
    )


def own_blocks(widths: Sequence[int]) -> list[tuple[int, int, int]]:
    """Consecutive slots in blocks of at least :data:`BLOCK_ROWS`, at most
    :data:`MAX_BLOCKS` of them: ``(start, end, width)``, ``width`` the most columns a slot of
    ``start:end`` reads (``widths[b]``: slot ``b``'s). Rows started together sit in
    consecutive slots, longest first, so a block's width is close to each of its rows'."""
    rows = len(widths)
    size = max(BLOCK_ROWS, -(-rows // MAX_BLOCKS))
    return [
        (start, min(rows, start + size), max(widths[start : start + size]))
        for start in range(0, rows, size)
    ]


class _PromptStep:
    """One decoding step's layout of the rows over a :class:`~mill.model.engine.kv.PromptTable`:
    the rows of entry ``e`` are laid out at ``e * R + j`` (``R``: the most rows of one
    entry), so one batched product per layer reads each live entry's keys and values
    once for all its rows; rows of no entry read nothing (their scores are masked)."""

    def __init__(self, table: PromptTable, entries: Sequence[int]) -> None:
        self.table = table
        self.hi = table.bound()
        self.per = max(Counter(e for e in entries if e >= 0).values(), default=1)
        lengths = [table.lengths[e] if e >= 0 else 0 for e in entries]
        self.width = max(lengths, default=0)
        seen: dict[int, int] = {}
        at = []
        for e in entries:
            if e < 0:
                at.append(self.hi * self.per)  # a spare row past the table's
            else:
                at.append(e * self.per + seen.get(e, 0))
                seen[e] = seen.get(e, 0) + 1
        valid = torch.arange(self.width)[None] < torch.tensor(lengths)[:, None]
        self._cpu = (torch.tensor(at), valid)
        # per device: a model dispatched over GPUs has layers (and table parts) on several
        self._on: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    def _index(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(each row's place in the table layout, its valid prompt columns) on ``device``."""
        if device not in self._on:
            self._on[device] = (self._cpu[0].to(device), self._cpu[1].to(device))
        return self._on[device]

    def _to_table(self, x: torch.Tensor) -> torch.Tensor:
        """``[rows, Hkv, group, X]`` -> ``[hi, Hkv, per * group, X]`` (spare rows zero)."""
        rows, kv_heads, group, last = x.shape
        padded = x.new_zeros((self.hi * self.per + 1, kv_heads, group, last))
        padded[self._index(x.device)[0]] = x
        laid = padded[: self.hi * self.per].view(self.hi, self.per, kv_heads, group, last)
        return laid.transpose(1, 2).reshape(self.hi, kv_heads, self.per * group, last)

    def _to_rows(self, x: torch.Tensor, group: int) -> torch.Tensor:
        """The inverse of :meth:`_to_table` (a spare row reads zeros)."""
        hi, kv_heads, _, last = x.shape
        laid = x.view(hi, kv_heads, self.per, group, last).transpose(1, 2)
        laid = laid.reshape(hi * self.per, kv_heads, group, last)
        spare = laid.new_zeros((1, kv_heads, group, last))
        return torch.cat([laid, spare])[self._index(x.device)[0]]

    def scores(self, layer: int, grouped: torch.Tensor) -> torch.Tensor:
        """``[rows, Hkv, group, W]`` scores of each row over its entry's prompt."""
        keys = self.table.keys[layer][: self.hi, :, : self.width]
        out = torch.matmul(self._to_table(grouped), keys.transpose(-1, -2))
        out = self._to_rows(out, grouped.shape[2])
        return out.masked_fill(~self._index(out.device)[1][:, None, None, :], float("-inf"))

    def read(self, layer: int, probs: torch.Tensor) -> torch.Tensor:
        """``[rows, Hkv, group, D]``: the prompt values weighted by ``probs``."""
        values = self.table.values[layer][: self.hi, :, : self.width]
        return self._to_rows(torch.matmul(self._to_table(probs), values), probs.shape[2])


def _no_mask(*args: object, **kwargs: object) -> None:
    """The model builds no mask: :class:`SharedPrefix` masks inside the attention."""
    return None


def register() -> None:
    """Register :data:`NAME` with ``transformers`` (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, shared_prefix_attention)
    AttentionMaskInterface.register(NAME, _no_mask)


@contextmanager
def activate(config: object, shared: SharedPrefix) -> Iterator[SharedPrefix]:
    """Run the model's attention as shared-prefix attention over ``shared`` inside."""
    register()
    before = config._attn_implementation  # type: ignore[attr-defined]
    config._attn_implementation = NAME  # type: ignore[attr-defined]
    token = _ACTIVE.set(shared)
    try:
        yield shared
    finally:
        _ACTIVE.reset(token)
        config._attn_implementation = before  # type: ignore[attr-defined]


def common_prefix(contexts: Sequence[Sequence[int]]) -> int:
    """Length of the longest prefix all ``contexts`` share, leaving every context at
    least one token of its own (its last token's logits start its generation)."""
    if not contexts:
        return 0
    shared = len(os.path.commonprefix([list(c) for c in contexts]))
    return max(0, min(shared, min(len(c) for c in contexts) - 1))
