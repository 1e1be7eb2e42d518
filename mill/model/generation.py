"""Greedy generation with a KV cache, left padding, and per-row retirement.

Each row stops on its own stop string or EOS and leaves the batch at once, instead of the
batch generating until its slowest row finishes (lm-eval's static ``generate``). Output
text is the decoded new tokens cut at the first stop string, as lm-eval does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


@dataclass
class Generated:
    """One finished generation."""

    text: str
    tokens: list[int]
    input_tokens: list[int]
    truncated: int
    padded: int


class Stepper:
    """What generation needs from a model: next-token logits with a cache."""

    def next_logits(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        past: object | None,
    ) -> tuple[torch.Tensor, object]:
        """fp32 logits of the last position [batch, V] and the updated cache."""
        raise NotImplementedError

    def select_cache(self, past: object, keep: torch.Tensor) -> object:
        raise NotImplementedError

    @property
    def device(self) -> torch.device:
        raise NotImplementedError


def cut_at_stop(text: str, until: Sequence[str]) -> str:
    """Text before the first occurrence of each stop string, applied in order (lm-eval)."""
    for stop in until:
        if stop:
            text = text.split(stop)[0]
    return text


def generate_batch(
    stepper: Stepper,
    contexts: list[list[int]],
    truncated: list[int],
    until: Sequence[str],
    max_gen_toks: int,
    eos_ids: set[int],
    decode: Callable[[list[int]], str],
    choose: Callable[[torch.Tensor, list[int]], list[int]] | None = None,
) -> list[Generated]:
    """Greedily continue a batch of tokenized contexts (already left-truncated).

    ``choose(logits, rows)`` replaces the greedy pick (see :class:`SeededSampler`).
    """
    n = len(contexts)
    width = max(len(c) for c in contexts)
    ids = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for row, ctx in enumerate(contexts):
        ids[row, width - len(ctx) :] = torch.tensor(ctx)
        mask[row, width - len(ctx) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    device = stepper.device
    ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)

    generated: list[list[int]] = [[] for _ in range(n)]
    active = list(range(n))
    finished: dict[int, str] = {}
    past: object | None = None
    step_ids, step_pos = ids, positions
    for _ in range(max_gen_toks):
        logits, past = stepper.next_logits(step_ids, mask, step_pos, past)
        next_tokens = choose(logits, active) if choose else logits.argmax(-1).tolist()
        keep = []
        for slot, row in enumerate(active):
            token = next_tokens[slot]
            generated[row].append(token)
            text = decode([t for t in generated[row] if t not in eos_ids])
            stopped = token in eos_ids or any(s and s in text for s in until)
            if stopped or len(generated[row]) >= max_gen_toks:
                finished[row] = text
            else:
                keep.append(slot)
        if not keep:
            break
        if len(keep) < len(active):
            keep_t = torch.tensor(keep, device=device)
            past = stepper.select_cache(past, keep_t)
            mask, step_pos = mask[keep_t], step_pos[keep_t]
            next_col = torch.tensor([next_tokens[s] for s in keep], device=device)
            active = [active[s] for s in keep]
        else:
            next_col = torch.tensor(next_tokens, device=device)
        step_pos = step_pos[:, -1:] + 1
        mask = torch.cat([mask, torch.ones((len(active), 1), dtype=mask.dtype, device=device)], -1)
        step_ids = next_col.unsqueeze(-1)
    for row in active:
        finished.setdefault(row, decode([t for t in generated[row] if t not in eos_ids]))
    return [
        Generated(
            text=cut_at_stop(finished[row], until),
            tokens=generated[row],
            input_tokens=contexts[row],
            truncated=truncated[row],
            padded=width - len(contexts[row]),
        )
        for row in range(n)
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
