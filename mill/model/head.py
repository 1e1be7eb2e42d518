"""The LM head on scored positions only, in fp32, a chunk of positions at a time.

lm-evaluation-harness runs ``log_softmax`` over the whole ``[batch, seq, vocab]`` logits
tensor. Here the head runs only on the hidden states of positions that are scored, each
such position once even when several requests score a token there (the choices of a
question all score their first token at the context's last position), and in chunks
small enough that a ``[chunk, vocab]`` block is the largest thing ever materialised
(16 MiB by default): rolling perplexity over long documents never holds a ``[seq, vocab]``
tensor. Within a chunk the arithmetic is lm-eval's: fp32 ``log_softmax`` row by row, then
the target's entry and (when asked) ``argmax == target``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

CHUNK_ELEMENTS = 1 << 22
"""Logits computed at once: chunk rows x vocab <= this (16 MiB of fp32)."""


def score_positions(
    logits_fn: Callable[[torch.Tensor], torch.Tensor],
    hidden: torch.Tensor,
    rows: torch.Tensor,
    targets: torch.Tensor,
    vocab_size: int,
    greedy: bool = True,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probability of each (position, target) entry and whether it is the argmax.

    Args:
        logits_fn: fp32 logits of the LM head for hidden states ``[m, dim] -> [m, V]``.
        hidden: hidden states of the scored positions, ``[m, dim]``.
        rows: for each entry, the row of ``hidden`` it scores, ``[n]``.
        targets: for each entry, the token scored, ``[n]``.
        vocab_size: V (sets the chunk size).
        greedy: also return ``argmax == target`` per entry (skipped for perplexity).
        chunk_elements: bound on ``chunk rows x V``.

    Returns:
        ``(logprobs [n] fp32, is_argmax [n] bool or None)``, in entry order.
    """
    device = hidden.device
    rows, targets = rows.to(device), targets.to(device)
    order = torch.argsort(rows, stable=True)
    sorted_rows, sorted_targets = rows[order], targets[order]
    n, m = rows.shape[0], hidden.shape[0]
    step = max(1, chunk_elements // max(1, vocab_size))
    logprobs = torch.empty(n, dtype=torch.float32, device=device)
    is_argmax = torch.empty(n, dtype=torch.bool, device=device) if greedy else None
    bounds = torch.searchsorted(sorted_rows, torch.arange(0, m + step, step, device=device))
    for c, start in enumerate(range(0, m, step)):
        lo, hi = int(bounds[c]), int(bounds[c + 1])
        if lo == hi:
            continue
        lsm = torch.log_softmax(logits_fn(hidden[start : start + step]), dim=-1)
        local = sorted_rows[lo:hi] - start
        tgt = sorted_targets[lo:hi]
        idx = order[lo:hi]
        logprobs[idx] = lsm[local, tgt]
        if is_argmax is not None:
            is_argmax[idx] = lsm.argmax(-1)[local] == tgt
        del lsm
    return logprobs, is_argmax
