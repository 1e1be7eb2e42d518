"""Log-likelihood of continuations with shared-prefix reuse and scored-position-only heads.

Semantics are lm-evaluation-harness's (``_loglikelihood_tokens``): the model input is
``(context + continuation)[-(L+1):][:-1]`` and the last ``len(continuation)`` positions
are scored. Work differs:

* Requests sharing a context (the choices of one question) run the context **once**; its
  KV cache is repeated for the choices, which then run only their own tokens. A choice of
  one token needs no second pass at all: the context's last position scores it.
* The LM head and log-softmax run only on scored positions, in fp32.
* Requests that need left truncation, or that share their context with nobody, take a
  single full pass (right-padded, which cannot affect earlier positions of a causal LM).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from mill.model.batching import budget_batches


@dataclass
class Scored:
    """Result of one (context, continuation) item."""

    logprob: float
    is_greedy: bool
    input_tokens: list[int]
    truncated: int
    padded: int


@dataclass
class _Item:
    index: int
    context: list[int]
    continuation: list[int]


class Forward:
    """What the scorer needs from a model: hidden states (with a KV cache) and the head."""

    def hidden(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        past: object | None,
        use_cache: bool,
    ) -> tuple[torch.Tensor, object | None]:
        """Final hidden states [batch, seq, dim] and the updated cache."""
        raise NotImplementedError

    def head_logprobs(self, hidden: torch.Tensor) -> torch.Tensor:
        """fp32 log-softmax of the LM head over selected hidden states [n, dim] -> [n, V]."""
        raise NotImplementedError

    def expand_cache(self, past: object, indices: torch.Tensor) -> object:
        """Select/repeat cache rows along the batch dimension."""
        raise NotImplementedError

    @property
    def device(self) -> torch.device:
        raise NotImplementedError


def _score_rows(logprobs: torch.Tensor, targets: torch.Tensor) -> tuple[float, bool]:
    token_lp = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    greedy = bool((logprobs.argmax(-1) == targets).all())
    return float(token_lp.sum()), greedy


def _full_pass(
    fwd: Forward, batch: list[_Item], max_length: int, results: dict[int, Scored]
) -> None:
    inputs, spans = [], []
    for item in batch:
        whole = item.context + item.continuation
        inp = whole[-(max_length + 1) :][:-1]
        inputs.append(inp)
        spans.append(
            (len(inp) - len(item.continuation), len(inp), max(0, len(whole) - max_length - 1))
        )
    width = max(len(x) for x in inputs)
    ids = torch.zeros((len(inputs), width), dtype=torch.long)
    for row, inp in enumerate(inputs):
        ids[row, : len(inp)] = torch.tensor(inp)
    hidden, _ = fwd.hidden(ids.to(fwd.device), None, None, None, use_cache=False)
    rows = torch.cat([torch.full((end - start,), r) for r, (start, end, _) in enumerate(spans)])
    cols = torch.cat([torch.arange(start, end) for start, end, _ in spans])
    logprobs = fwd.head_logprobs(hidden[rows.to(hidden.device), cols.to(hidden.device)])
    offset = 0
    for row, item in enumerate(batch):
        n = len(item.continuation)
        target = torch.tensor(item.continuation, device=logprobs.device)
        lp, greedy = _score_rows(logprobs[offset : offset + n], target)
        offset += n
        start, end, truncated = spans[row]
        results[item.index] = Scored(lp, greedy, inputs[row][:start], truncated, width - end)


def _shared_pass(fwd: Forward, groups: list[list[_Item]], results: dict[int, Scored]) -> None:
    contexts = [g[0].context for g in groups]
    width = max(len(c) for c in contexts)
    ids = torch.zeros((len(groups), width), dtype=torch.long)
    mask = torch.zeros((len(groups), width), dtype=torch.long)
    for row, ctx in enumerate(contexts):
        ids[row, : len(ctx)] = torch.tensor(ctx)
        mask[row, : len(ctx)] = 1
    device = fwd.device
    multi = [
        (g, item) for g, group in enumerate(groups) for item in group if len(item.continuation) > 1
    ]
    hidden, past = fwd.hidden(ids.to(device), mask.to(device), None, None, use_cache=bool(multi))
    last = torch.tensor([len(c) - 1 for c in contexts], device=hidden.device)
    first_lp = fwd.head_logprobs(hidden[torch.arange(len(groups), device=hidden.device), last])

    rest: dict[int, torch.Tensor] = {}
    if multi:
        k_width = max(len(item.continuation) - 1 for _, item in multi)
        cont_ids = torch.zeros((len(multi), k_width), dtype=torch.long)
        cont_mask = torch.zeros((len(multi), width + k_width), dtype=torch.long)
        positions = torch.zeros((len(multi), k_width), dtype=torch.long)
        for row, (g, item) in enumerate(multi):
            k = len(item.continuation) - 1
            cont_ids[row, :k] = torch.tensor(item.continuation[:-1])
            cont_mask[row, :width] = mask[g]
            cont_mask[row, width : width + k] = 1
            positions[row] = len(contexts[g]) + torch.arange(k_width)
        index = torch.tensor([g for g, _ in multi], device=device)
        past = fwd.expand_cache(past, index)
        cont_hidden, _ = fwd.hidden(
            cont_ids.to(device), cont_mask.to(device), positions.to(device), past, use_cache=False
        )
        rows = torch.cat(
            [torch.full((len(it.continuation) - 1,), r) for r, (_, it) in enumerate(multi)]
        )
        cols = torch.cat([torch.arange(len(it.continuation) - 1) for _, it in multi])
        lp = fwd.head_logprobs(cont_hidden[rows.to(device), cols.to(device)])
        offset = 0
        for _, item in multi:
            n = len(item.continuation) - 1
            rest[item.index] = lp[offset : offset + n]
            offset += n

    for g, group in enumerate(groups):
        for item in group:
            parts = [first_lp[g : g + 1]]
            if item.index in rest:
                parts.append(rest[item.index])
            logprobs = torch.cat(parts)
            target = torch.tensor(item.continuation, device=logprobs.device)
            lp_sum, greedy = _score_rows(logprobs, target)
            padded = (
                (width - len(contexts[g]))
                if len(item.continuation) == 1
                else (
                    width
                    - len(contexts[g])
                    + max(0, max(len(i.continuation) for i in group) - len(item.continuation))
                )
            )
            results[item.index] = Scored(lp_sum, greedy, list(item.context), 0, padded)


def score_continuations(
    fwd: Forward,
    pairs: list[tuple[list[int], list[int]]],
    max_length: int,
    token_budget: int | None,
    max_rows: int | None,
    share_prefix: bool = True,
    on_done: Callable[[int, Scored], None] | None = None,
) -> list[Scored]:
    """Score every (context tokens, continuation tokens) pair; results in input order."""
    items = [_Item(i, list(c), list(k)) for i, (c, k) in enumerate(pairs)]
    results: dict[int, Scored] = {}

    by_context: dict[tuple[int, ...], list[_Item]] = {}
    single: list[_Item] = []
    for item in items:
        if len(item.context) + len(item.continuation) > max_length + 1 or not share_prefix:
            single.append(item)
        else:
            by_context.setdefault(tuple(item.context), []).append(item)
    groups = []
    for group in by_context.values():
        if len(group) == 1 and len(group[0].continuation) > 1:
            single.extend(group)
        else:
            groups.append(group)

    def report(batch_indices: Iterator[int]) -> None:
        if on_done is not None:
            for i in batch_indices:
                on_done(i, results[i])

    with torch.inference_mode():
        single.sort(key=lambda it: (-(len(it.context) + len(it.continuation)), it.index))
        for batch in budget_batches(
            single,
            lambda it: (1, min(len(it.context) + len(it.continuation), max_length + 1) - 1),
            token_budget,
            max_rows,
        ):
            _full_pass(fwd, batch, max_length, results)
            report(it.index for it in batch)

        groups.sort(key=lambda g: (-len(g[0].context), g[0].index))

        def group_cost(group: list[_Item]) -> tuple[int, int]:
            longest = max(len(it.continuation) for it in group)
            return len(group), len(group[0].context) + longest

        for batch in budget_batches(groups, group_cost, token_budget, max_rows):
            _shared_pass(fwd, batch, results)
            report(it.index for group in batch for it in group)
    return [results[i] for i in range(len(items))]
