"""Greedy generation: chunked prefill, one KV cache written in place, per-row retirement.

Semantics are lm-evaluation-harness's ``generate_until`` with greedy decoding: contexts are
left-truncated to ``max_length - max_gen_toks`` tokens and left-padded (positions follow
the attention mask), each row gets at most ``max_gen_toks`` new tokens, stops at EOS, and
its text is the decoded new tokens (special tokens skipped) cut at the first occurrence of
each stop string. The work differs:

* Prefill runs in chunks that respect the token budget, and their caches are merged into
  one decode batch (:class:`mill.model.kv.PrefillMerger`), so decoding runs many rows per
  step without a large prefill.
* The cache is written in place (:class:`mill.model.kv.GrowingLayer`) instead of being
  re-concatenated at every step.
* A context prefix that every row of the batch shares (fixed few-shot exemplars) is
  computed, stored and read once for all rows (:mod:`mill.model.prefix_attention`), where
  the model supports it; each row's cache holds only its own suffix.
* Each row stops on its own stop string or EOS. Finished rows are dropped from the batch
  once a quarter of it has finished (dropping copies the cache, so it is not done per row),
  instead of the batch running until its slowest row is done (lm-eval's static batching).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass

import torch

from mill.model.batching import budget_batches
from mill.model.prefix_attention import MIN_SHARED_PREFIX, SharedPrefix, common_prefix
from mill.model.tokenizing import cut_at_stop


@dataclass
class Generated:
    """One finished generation."""

    text: str
    tokens: list[int]
    input_tokens: list[int]
    truncated: int
    padded: int


class Stepper:
    """What generation needs from a model: last-position logits with a cache."""

    config: object

    def next_logits(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        position_ids: torch.Tensor,
        past: object | None,
    ) -> tuple[torch.Tensor, object]:
        """fp32 logits of the last position [batch, V] and the updated cache."""
        raise NotImplementedError

    def can_grow_cache(self) -> bool:
        """Whether prefill caches can be merged into one in-place cache (no sliding layers)."""
        raise NotImplementedError

    def cache_merger(self, rows: int, width: int, capacity: int) -> object:
        """A :class:`mill.model.kv.PrefillMerger` for this model."""
        raise NotImplementedError

    def select_cache(self, past: object, keep: torch.Tensor) -> object:
        raise NotImplementedError

    def can_share_generation_prefix(self) -> bool:
        """Whether :meth:`shared_prefix` works for this model (default: no)."""
        return False

    def shared_prefix(self, tokens: list[int]) -> AbstractContextManager[SharedPrefix]:
        """Compute ``tokens``' keys and values once (positions ``0..P-1``); inside, every
        forward attends over them before each row's own cache (see
        :mod:`mill.model.prefix_attention`)."""
        raise NotImplementedError

    @property
    def device(self) -> torch.device:
        raise NotImplementedError


class _StopCheck:
    """Has a row produced a stop string? Decodes only the last few tokens per step and
    confirms a hit on the full text (a missed hit only costs extra steps: the final text is
    always cut from the full decode)."""

    def __init__(self, until: Sequence[str], decode: Callable[[list[int]], str]) -> None:
        self.until = [s for s in until if s]
        self.decode = decode
        self.tail = max((len(s) for s in self.until), default=0) + 4

    def __call__(self, tokens: list[int]) -> bool:
        if not self.until:
            return False
        text = self.decode(tokens[-self.tail :])
        if not any(s in text for s in self.until):
            return False
        full = self.decode(tokens)
        return any(s in full for s in self.until)


def _prefill(
    stepper: Stepper, contexts: list[list[int]], shared: SharedPrefix | None = None
) -> tuple[torch.Tensor, object, torch.Tensor, int]:
    """Left-padded forward over a chunk: last logits, cache, mask, width. With a
    ``shared`` prefix, ``contexts`` are the suffixes after it (positions continue from
    the prefix's length) and the padding is ``shared``'s to mask."""
    width = max(len(c) for c in contexts)
    ids = torch.zeros((len(contexts), width), dtype=torch.long)
    mask = torch.zeros((len(contexts), width), dtype=torch.long)
    for row, ctx in enumerate(contexts):
        ids[row, width - len(ctx) :] = torch.tensor(ctx)
        mask[row, width - len(ctx) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    device = stepper.device
    # without padding, no mask: attention keeps its fast causal kernel
    padded = any(len(c) != width for c in contexts)
    if shared is not None:
        shared.set_pad(torch.tensor([width - len(c) for c in contexts], device=device))
        positions, padded = positions + shared.length, False
    logits, past = stepper.next_logits(
        ids.to(device), mask.to(device) if padded else None, positions.to(device), None
    )
    return logits, past, mask, width


def shared_prefix_length(stepper: Stepper, contexts: Sequence[Sequence[int]]) -> int:
    """Tokens every one of ``contexts`` starts with, where generation keeps them once for
    all rows (at least :data:`~mill.model.prefix_attention.MIN_SHARED_PREFIX`; else 0)."""
    if not (stepper.can_grow_cache() and stepper.can_share_generation_prefix()):
        return 0
    prefix = common_prefix(contexts)
    return prefix if prefix >= MIN_SHARED_PREFIX else 0


def generate_batch(
    stepper: Stepper,
    contexts: list[list[int]],
    truncated: list[int],
    until: Sequence[str],
    max_gen_toks: int,
    eos_ids: set[int],
    decode: Callable[[list[int]], str],
    token_budget: int | None = None,
    max_rows: int | None = None,
    choose: Callable[[torch.Tensor, list[int]], list[int]] | None = None,
) -> list[Generated]:
    """Greedily continue tokenized contexts (already left-truncated) as one decode batch.

    Prefill is split into chunks of at most ``token_budget`` padded tokens (and
    ``max_rows`` rows); when the model's cache cannot be merged, each chunk decodes alone.
    ``choose(logits, rows)`` replaces the greedy pick (see :class:`SeededSampler`); ``rows``
    are the indices into ``contexts`` of the logits' rows.
    """

    def pick(logits: torch.Tensor, rows: list[int]) -> list[int]:
        return choose(logits, rows) if choose is not None else logits.argmax(-1).tolist()

    prefix = shared_prefix_length(stepper, contexts)
    with ExitStack() as scope:
        # a prefix every context starts with: computed once, attended by every row
        shared = (
            scope.enter_context(stepper.shared_prefix(contexts[0][:prefix])) if prefix else None
        )
        n = len(contexts)
        skip = 0 if shared is None else shared.length
        own = [c[skip:] for c in contexts]  # what each row's own cache holds
        order = sorted(range(n), key=lambda r: (-len(own[r]), r))
        chunks = list(budget_batches(order, lambda r: (1, len(own[r])), token_budget, max_rows))
        if len(chunks) > 1 and not stepper.can_grow_cache():
            out: dict[int, Generated] = {}
            for chunk in chunks:
                for r, g in zip(
                    chunk,
                    generate_batch(
                        stepper,
                        [contexts[r] for r in chunk],
                        [truncated[r] for r in chunk],
                        until,
                        max_gen_toks,
                        eos_ids,
                        decode,
                        choose=None
                        if choose is None
                        else (lambda lg, rows, c=chunk: choose(lg, [c[x] for x in rows])),
                    ),
                    strict=True,
                ):
                    out[r] = g
            return [out[r] for r in range(n)]

        device = stepper.device
        width = len(own[order[0]])
        capacity = width + max_gen_toks
        first: list[int] = []
        merger = stepper.cache_merger(n, width, capacity) if stepper.can_grow_cache() else None
        masks = torch.zeros((n, capacity), dtype=torch.long)
        row = 0
        cache: object = None
        for chunk in chunks:
            logits, past, mask, chunk_width = _prefill(stepper, [own[r] for r in chunk], shared)
            first.extend(pick(logits, list(chunk)))
            if merger is not None:
                merger.add(past, chunk_width)  # type: ignore[attr-defined]
            else:
                cache = past  # a single chunk: its own (concatenating) cache
            del past
            masks[row : row + len(chunk), width - chunk_width : width] = mask
            row += len(chunk)
        if merger is not None:
            cache = merger.cache()  # type: ignore[attr-defined]
            del merger
        masks = masks.to(device)
        # left padding somewhere: the model masks it, or the shared prefix's attention does
        need_mask = shared is None and len({len(c) for c in own}) > 1
        if shared is not None:
            shared.set_pad(torch.tensor([width - len(own[r]) for r in order], device=device))
        positions = torch.tensor([[len(contexts[r])] for r in order], device=device)
        next_tokens = first

        stop = _StopCheck(until, decode)
        generated: list[list[int]] = [[] for _ in range(n)]
        slots = list(order)  # batch row -> request
        live = [True] * len(slots)
        length = width
        while True:
            for slot, r in enumerate(slots):
                if not live[slot]:
                    continue
                token = next_tokens[slot]
                generated[r].append(token)
                if token in eos_ids or len(generated[r]) >= max_gen_toks or stop(generated[r]):
                    live[slot] = False
            alive = [s for s, is_live in enumerate(live) if is_live]
            if not alive:
                break
            dead = len(slots) - len(alive)
            if dead and dead * 4 >= len(slots):
                keep = torch.tensor(alive, device=device)
                cache = stepper.select_cache(cache, keep)
                if shared is not None:
                    shared.select(keep)
                masks, positions = masks[keep], positions[keep]
                slots = [slots[s] for s in alive]
                next_tokens = [next_tokens[s] for s in alive]
                live = [True] * len(slots)
            if length >= masks.shape[1]:  # only without an in-place cache: grow the mask
                masks = torch.cat([masks, masks.new_zeros((masks.shape[0], max_gen_toks))], dim=1)
            masks[:, length] = 1
            ids = torch.tensor(next_tokens, device=device).unsqueeze(-1)
            step_mask = masks[:, : length + 1] if need_mask else None
            logits, cache = stepper.next_logits(ids, step_mask, positions, cache)
            length += 1
            positions = positions + 1
            next_tokens = pick(logits, slots)
        return [
            Generated(
                text=cut_at_stop(decode(generated[r]), until),
                tokens=generated[r],
                input_tokens=contexts[r],
                truncated=truncated[r],
                padded=width - len(own[r]),
            )
            for r in range(n)
        ]


class SeededSampler:
    """Temperature sampling with one generator per batch row, seeded from its request, so
    a row's tokens never depend on the batch it runs in or on the order of requests.

    ``choose(logits, rows)``: for each active row, one token drawn from
    softmax(logits / temperature) with that row's own ``torch.Generator``.
    """

    def __init__(self, seeds: Sequence[int], temperature: float) -> None:
        if temperature <= 0:
            raise ValueError("sampling needs temperature > 0")
        self.temperature = float(temperature)
        self.generators = [torch.Generator().manual_seed(int(s)) for s in seeds]

    def __call__(self, logits: torch.Tensor, rows: list[int]) -> list[int]:
        probs = torch.softmax(logits.float().cpu() / self.temperature, dim=-1)
        return [
            int(torch.multinomial(probs[slot], 1, generator=self.generators[row]))
            for slot, row in enumerate(rows)
        ]
