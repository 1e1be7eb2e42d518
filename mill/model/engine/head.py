"""The LM head on scored positions only, in fp32, a block of positions and vocabulary at a
time.

lm-evaluation-harness runs ``log_softmax`` over the whole ``[batch, seq, vocab]`` logits
tensor and an ``argmax`` over it. Here the head runs only on the hidden states of
positions that are scored, each such position once even when several requests score a
token there (the choices of a question all score their first token at the context's last
position). For each position it needs three numbers, never the whole distribution:

* ``lse = log(sum_v exp(z_v))``, the log-partition function,
* the target's logit ``z_t``, giving ``log p(t) = (z_t - m) - log(sum_v exp(z_v - m))``
  with ``m`` the running maximum (the order of operations of ``log_softmax``),
* the argmax (``is_greedy``: ``argmax_v z_v == t``; ``log_softmax`` is monotone, so this is
  lm-eval's argmax of the log-probabilities).

On CPU the vocabulary is walked in tiles (``vocab_tile`` columns, :class:`Head`) with an
online log-sum-exp: each ``[rows, tile]`` block of logits stays in the core's cache while
it is reduced, so the head costs its matrix product and little more (a full-vocabulary
``log_softmax`` reads and writes every logit several times through main memory, 40% on top
of the product for GPT-2's 50257 tokens). On GPU one tile is the whole vocabulary. The
result equals ``log_softmax`` up to fp32 rounding (a few 1e-7 relative per token).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol, cast

import torch

BLOCK_ELEMENTS = 1 << 22
"""Logits materialised at once with the whole vocabulary as one tile (16 MiB of fp32)."""
CPU_VOCAB_TILE = 1024
"""Vocabulary columns per tile on CPU (fastest of 256-4096 on the project machine)."""
TILE_ELEMENTS = 1 << 20
"""Logits materialised at once when the vocabulary is tiled (4 MiB, a 1024-row block)."""
CPU_STEP_TILE = 2048
"""Vocabulary entries per tile of a decoding step's head on CPU (:func:`argmax_tiles`,
:func:`rows_of_product`; fastest of 1,024-8,192 for 16-128 rows of GPT-2's head on the
project machine)."""
CPU_GREEDY_MIN_ROWS = 16
"""Below this many rows one product over the whole vocabulary is faster than tiles."""


class Head(Protocol):
    """What :func:`score_positions` needs from a model's LM head."""

    vocab_size: int
    vocab_tile: int | None
    """Columns of the vocabulary reduced at a time; None: the whole vocabulary at once."""

    def logits(self, hidden: torch.Tensor, lo: int = 0, hi: int | None = None) -> torch.Tensor:
        """fp32 logits of vocabulary entries ``[lo, hi)`` for hidden states ``[m, dim]``."""
        ...

    def loaded(self) -> AbstractContextManager[None]:
        """Hold the head's weights ready for many ``logits`` calls (an offloaded head)."""
        ...


def score_positions(
    head: Head,
    hidden: torch.Tensor,
    rows: torch.Tensor,
    targets: torch.Tensor,
    greedy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probability of each (position, target) entry and whether it is the argmax.

    Args:
        head: the model's LM head.
        hidden: hidden states of the scored positions, ``[m, dim]``.
        rows: for each entry, the row of ``hidden`` it scores, ``[n]``.
        targets: for each entry, the token scored, ``[n]``.
        greedy: also return ``argmax == target`` per entry (skipped for perplexity).

    Returns:
        ``(logprobs [n] fp32, is_argmax [n] bool or None)``, in entry order.
    """
    device = hidden.device
    rows, targets = rows.to(device), targets.to(device)
    m = hidden.shape[0]
    vocab = head.vocab_size
    tile = min(head.vocab_tile or vocab, vocab)
    block = max(1, (TILE_ELEMENTS if tile < vocab else BLOCK_ELEMENTS) // tile)
    lse_shifted = torch.empty(m, dtype=torch.float32, device=device)
    row_max = torch.empty(m, dtype=torch.float32, device=device)
    best = torch.empty(m, dtype=torch.long, device=device) if greedy else None
    target_logit = torch.empty(rows.shape[0], dtype=torch.float32, device=device)
    order = torch.argsort(rows, stable=True)
    sorted_rows, sorted_targets = rows[order], targets[order]
    bounds = torch.searchsorted(sorted_rows, torch.arange(0, m + block, block, device=device))
    with head.loaded():
        for c, start in enumerate(range(0, m, block)):
            lo, hi = int(bounds[c]), int(bounds[c + 1])
            if lo == hi:
                continue
            local = sorted_rows[lo:hi] - start
            tgt = sorted_targets[lo:hi]
            entries = order[lo:hi]
            h = hidden[start : start + block]
            peak, total, arg = _reduce_vocab(
                head, h, tile, local, tgt, entries, target_logit, greedy
            )
            row_max[start : start + block] = peak
            lse_shifted[start : start + block] = torch.log(total)
            if best is not None:
                best[start : start + block] = cast(torch.Tensor, arg)  # greedy: an argmax
    logprobs = (target_logit - row_max[rows]) - lse_shifted[rows]
    is_argmax = None if best is None else best[rows] == targets
    return logprobs, is_argmax


def _reduce_vocab(
    head: Head,
    h: torch.Tensor,
    tile: int,
    local: torch.Tensor,
    tgt: torch.Tensor,
    entries: torch.Tensor,
    target_logit: torch.Tensor,
    greedy: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Online log-sum-exp over the vocabulary for the rows of ``h``.

    Returns the row maxima ``m``, ``sum_v exp(z_v - m)`` and (``greedy``) the argmax;
    writes the target logits of ``entries`` (rows ``local``, tokens ``tgt``) into
    ``target_logit``."""
    peak: torch.Tensor | None = None
    total: torch.Tensor | None = None
    arg: torch.Tensor | None = None
    vocab = head.vocab_size
    for v0 in range(0, vocab, tile):
        v1 = min(v0 + tile, vocab)
        z = head.logits(h, v0, v1)
        inside = (tgt >= v0) & (tgt < v1) if tile < vocab else None
        if inside is None:
            target_logit[entries] = z[local, tgt]
        elif bool(inside.any()):
            target_logit[entries[inside]] = z[local[inside], tgt[inside] - v0]
        # the max with its index costs 3x the plain max: only when is_greedy is asked for
        z_max, z_arg = z.max(-1) if greedy else (z.amax(-1), None)
        if peak is None or total is None:
            peak, arg = z_max, z_arg
            total = z.sub_(peak[:, None]).exp_().sum(-1)
            continue
        new_peak = torch.maximum(peak, z_max)
        total = total * torch.exp(peak - new_peak) + z.sub_(new_peak[:, None]).exp_().sum(-1)
        if z_arg is not None and arg is not None:  # ties keep the earlier index
            arg = torch.where(z_max > peak, z_arg + v0, arg)
        peak = new_peak
    assert peak is not None and total is not None
    return peak, total, arg


def rows_of_product(weight: torch.Tensor, hidden: torch.Tensor, tile: int) -> torch.Tensor:
    """``hidden @ weight.T`` (``[rows, vocab]``) for a decoding step's few rows on CPU.

    The product is taken as ``weight @ hidden.T``, which splits the vocabulary, not the few
    rows, across the threads (1.5-2x faster for 4-100 rows of GPT-2's head on 2 cores).
    Up to ``tile`` vocabulary entries, the result is that product's transposed view (one
    tile of :func:`argmax_tiles` is reduced once, in cache: a copy would cost more than it
    saves). A longer vocabulary is walked ``tile`` entries at a time, each ``[tile, rows]``
    result transposed into a contiguous block while it is in the core's cache: one
    product over the whole vocabulary would leave a ``[vocab, rows]`` block that every
    later pass over a row (the sampler's division, maximum, exponential and cumulative
    sum) reads with a stride of ``rows``, 21 ms instead of 8 ms a step for 50 rows of
    GPT-2's vocabulary. Each entry is the same dot product as in one whole product."""
    columns = hidden.t()
    if weight.shape[0] <= tile:
        return torch.mm(weight, columns).t()
    out = hidden.new_empty((hidden.shape[0], weight.shape[0]))
    for v0 in range(0, weight.shape[0], tile):
        out[:, v0 : v0 + tile].copy_(torch.mm(weight[v0 : v0 + tile], columns).t())
    return out


def argmax_tiles(logits: Callable[[int, int], torch.Tensor], vocab: int, tile: int) -> torch.Tensor:
    """The argmax over the vocabulary of ``logits(lo, hi)`` (``[rows, hi - lo]``), walked
    in tiles of ``tile`` entries with a running maximum: each tile is reduced while it is
    in the core's cache instead of writing the whole ``[rows, vocab]`` block to memory and
    reading it back. Ties keep the earliest index, as ``torch.argmax`` does."""
    peak: torch.Tensor | None = None
    arg: torch.Tensor | None = None
    for v0 in range(0, vocab, tile):
        z_max, z_arg = logits(v0, min(v0 + tile, vocab)).max(-1)
        if peak is None or arg is None:
            peak, arg = z_max, z_arg
            continue
        arg = torch.where(z_max > peak, z_arg + v0, arg)
        peak = torch.maximum(peak, z_max)
    assert arg is not None
    return arg
