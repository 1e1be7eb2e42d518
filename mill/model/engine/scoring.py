"""Log-likelihood of continuations with shared-prefix reuse and scored-position-only heads.

Semantics are lm-evaluation-harness's (``_loglikelihood_tokens``): the model input is
``(context + continuation)[-(L+1):][:-1]``, the last ``len(continuation)`` positions are
scored, the answer is the sum of the target log-probabilities and whether every target is
the argmax. The work differs; every path gives each token exactly the attention it gets
in a full forward pass of its own ``context + continuation``:

* Identical (context, continuation) pairs are scored once.
* The choices of a question share its context, which runs **once**. The first token of
  every choice is scored at the context's last position, so single-token choices (MMLU's
  " A".." D") cost one forward pass per question.
* Short contexts (``PACK_MAX_TOKENS``): each context and its choices form one block
  ``context | choice_1[:-1] | choice_2[:-1] | ...`` with a block-diagonal 4D mask, and
  blocks are packed into rows: one forward pass, no cache, almost no padding.
* Long contexts: the context runs with the causal kernel and a KV cache, then all its
  multi-token choices run in one row against that cache (a 4D mask again: no per-choice
  copy of the cache). Without custom-mask support the cache is repeated per choice.
* Contexts of different docs sharing a long prefix (few-shot examples placed first_n):
  the prefix runs once and every batch continues from its cache.
* A request that needs left truncation is scored on its window: lm-eval's input
  ``(context + continuation)[-(L+1):][:-1]`` is the context cut to its last
  ``L + 1 - len(continuation)`` tokens followed by the continuation, so choices of equal
  length share one window context and run it once like any shared context (their
  ``input_tokens`` and ``truncated`` are the full pass's).
* Requests that share their context with nobody (or a continuation longer than the
  window) take one full pass, right-padded without an attention mask as lm-eval does.
* The LM head and log-softmax run only on scored positions, in fp32, chunked
  (:mod:`mill.model.engine.head`).
* Batches are formed by a token budget over length-sorted work (:mod:`mill.model.engine.batching`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np
import torch

from mill.model.engine.batching import budget_batches
from mill.model.engine.head import score_positions
from mill.model.tokenizing import scoring_window

PACK_MAX_TOKENS = 512
"""Contexts with their continuations up to this many tokens are scored in one packed pass
(full attention mask); longer ones run the context with the causal kernel first."""


PACK_ROW_WIDTHS = range(128, 513, 64)
"""Widths a packed row may take besides 1-4 times the longest block (:func:`_row_width`)."""

ATTENTION_TOKENS = 4096
"""A row of width ``w`` costs ``w * (1 + w / ATTENTION_TOKENS)``: its positions, plus the
attention each of them pays over the whole row (its mask hides other blocks, the product
still runs); about SmolLM2's and GPT-2's ratio of attention to the other layers per token
and position of the row."""

MIN_SHARED_PREFIX = 128
"""Contexts of different requests sharing at least this many leading tokens run them once."""


class _Tril(dict):
    """Lower-triangular boolean k x k blocks, built once per k."""

    def __missing__(self, k: int) -> np.ndarray:
        self[k] = np.tril(np.ones((k, k), dtype=bool))
        return self[k]


_TRIL = _Tril()


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

    vocab_size: int

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

    vocab_tile: int | None = None
    """Vocabulary columns the head reduces at a time (None: all, see
    :mod:`mill.model.engine.head`)."""

    def logits(self, hidden: torch.Tensor, lo: int = 0, hi: int | None = None) -> torch.Tensor:
        """fp32 logits of the LM head for hidden states [n, dim] and vocabulary entries
        ``[lo, hi)`` -> [n, hi - lo]."""
        raise NotImplementedError

    def loaded(self) -> AbstractContextManager[None]:
        """Hold the head's weights ready for many ``logits`` calls (default: nothing to do)."""
        return nullcontext()

    def expand_cache(self, past: object, indices: torch.Tensor) -> object:
        """Select/repeat cache rows along the batch dimension."""
        raise NotImplementedError

    def supports_4d_mask(self) -> bool:
        """Whether the attention kernel takes a custom [batch, 1, q, kv] mask."""
        return False

    def can_share_prefix_cache(self) -> bool:
        """Whether a batch-1 cache can be broadcast to many rows (plain KV layers)."""
        return False

    def broadcast_cache(self, past: object, rows: int) -> object:
        """A new cache holding ``past`` (batch 1) for ``rows`` rows; ``past`` is kept."""
        raise NotImplementedError

    def attention_mask_4d(self, allowed: torch.Tensor) -> torch.Tensor:
        """The kernel's form of a boolean [batch, 1, q, kv] mask (True: may attend)."""
        raise NotImplementedError

    @property
    def device(self) -> torch.device:
        raise NotImplementedError


def _right_padded(rows: list[list[int]], width: int) -> torch.Tensor:
    """[len(rows), width] token ids, right-padded with 0 (lm-eval's padding id)."""
    ids = np.zeros((len(rows), width), dtype=np.int64)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = row
    return torch.from_numpy(ids)


def _sums(
    logprobs: torch.Tensor, greedy: torch.Tensor | None, lengths: list[int]
) -> list[tuple[float, bool]]:
    """Per item: the sum of its consecutive entries and whether all are the argmax.

    With ``greedy`` (log-likelihood requests) the sum is accumulated in float64: lm-eval
    sums in fp32, whose rounding near 150 is already 1.5e-5, so a float64 sum keeps totals
    independent of batching and differs from lm-eval only by lm-eval's own rounding.
    Without (rolling windows, each one fp32 sum then summed per document in float64 by the
    caller) it is lm-eval's arithmetic: an fp32 sum per window."""
    if greedy is None:
        out, offset = [], 0
        for n in lengths:
            out.append((float(logprobs[offset : offset + n].sum()), False))
            offset += n
        return out
    n, width = len(lengths), max(lengths)
    sizes = torch.tensor(lengths, device=logprobs.device)
    valid = torch.arange(width, device=logprobs.device)[None, :] < sizes[:, None]
    table = torch.zeros((n, width), dtype=torch.float64, device=logprobs.device)
    table[valid] = logprobs.double()
    totals = table.sum(-1).tolist()
    flags = torch.ones((n, width), dtype=torch.bool, device=logprobs.device)
    flags[valid] = greedy
    return list(zip(totals, flags.all(-1).tolist(), strict=True))


def _full_pass(
    fwd: Forward, batch: list[_Item], max_length: int, greedy: bool, results: dict[int, Scored]
) -> None:
    inputs, spans = [], []
    for item in batch:
        inp, truncated = scoring_window(item.context, item.continuation, max_length)
        inputs.append(inp)
        spans.append((len(inp) - len(item.continuation), len(inp), truncated))
    width = max(len(x) for x in inputs)
    ids = _right_padded(inputs, width)
    hidden, _ = fwd.hidden(ids.to(fwd.device), None, None, None, use_cache=False)
    hidden = hidden.reshape(-1, hidden.shape[-1])
    flat = torch.from_numpy(
        np.concatenate([row * width + np.arange(s, e) for row, (s, e, _) in enumerate(spans)])
    )
    targets = torch.tensor([t for item in batch for t in item.continuation])
    lp, flags = score_positions(
        fwd,
        hidden[flat.to(hidden.device)],
        torch.arange(len(flat)),
        targets,
        greedy,
    )
    sums = _sums(lp, flags, [len(item.continuation) for item in batch])
    for row, item in enumerate(batch):
        start, end, truncated = spans[row]
        total, flag = sums[row]
        results[item.index] = Scored(total, flag, inputs[row][:start], truncated, width - end)


def _tree_continuations(
    fwd: Forward,
    past: object,
    contexts: list[list[int]],
    width: int,
    multi: list[tuple[int, _Item]],
) -> tuple[torch.Tensor, list[int], int]:
    """All multi-token continuations of a group in ONE row after its context's cache.

    Row g holds ``cont_1[:-1] | cont_2[:-1] | ...``; a 4D mask lets each segment see its
    context and its own earlier tokens only, and its positions continue from the
    context's length, so every token gets exactly the attention it would get in a full
    forward of ``context + continuation``. Nothing is copied per choice. Returns the
    hidden states of the scored segment positions (in ``multi`` order), the row width per
    group and the padded width.
    """
    n_groups = len(contexts)
    offsets: list[int] = []
    used = [0] * n_groups
    for g, item in multi:
        offsets.append(used[g])
        used[g] += len(item.continuation) - 1
    seg = max(used)
    # built with numpy: tiny torch ops cost a thread-pool round trip each
    ids = np.zeros((n_groups, seg), dtype=np.int64)
    positions = np.zeros((n_groups, seg), dtype=np.int64)
    allowed = np.zeros((n_groups, seg, width + seg), dtype=bool)
    allowed[:, :, 0] = True  # padding queries see one real key (no all-masked rows)
    for (g, item), off in zip(multi, offsets, strict=True):
        k = len(item.continuation) - 1
        ids[g, off : off + k] = item.continuation[:-1]
        positions[g, off : off + k] = len(contexts[g]) + np.arange(k)
        allowed[g, off : off + k, : len(contexts[g])] = True
        allowed[g, off : off + k, width + off : width + off + k] = _TRIL[k]
    ids_t, positions_t = torch.from_numpy(ids), torch.from_numpy(positions)
    allowed_t = torch.from_numpy(allowed)
    device = fwd.device
    mask = fwd.attention_mask_4d(allowed_t[:, None].to(device))
    hidden, _ = fwd.hidden(ids_t.to(device), mask, positions_t.to(device), past, use_cache=False)
    hidden = hidden.reshape(-1, hidden.shape[-1])
    flat = torch.from_numpy(
        np.concatenate(
            [
                g * seg + off + np.arange(len(it.continuation) - 1)
                for (g, it), off in zip(multi, offsets, strict=True)
            ]
        )
    )
    return hidden[flat.to(hidden.device)], used, seg


def _expanded_continuations(
    fwd: Forward,
    past: object,
    contexts: list[list[int]],
    width: int,
    multi: list[tuple[int, _Item]],
) -> tuple[torch.Tensor, list[int], int]:
    """Fallback for attention kernels without custom 4D masks: the context cache is
    repeated once per multi-token continuation, which runs in its own row."""
    k_width = max(len(item.continuation) - 1 for _, item in multi)
    cont_ids = torch.zeros((len(multi), k_width), dtype=torch.long)
    cont_mask = torch.zeros((len(multi), width + k_width), dtype=torch.long)
    positions = torch.zeros((len(multi), k_width), dtype=torch.long)
    for row, (g, item) in enumerate(multi):
        k = len(item.continuation) - 1
        cont_ids[row, :k] = torch.tensor(item.continuation[:-1])
        cont_mask[row, : len(contexts[g])] = 1
        cont_mask[row, width : width + k] = 1
        positions[row] = len(contexts[g]) + torch.arange(k_width)
    device = fwd.device
    past = fwd.expand_cache(past, torch.tensor([g for g, _ in multi], device=device))
    hidden, _ = fwd.hidden(
        cont_ids.to(device), cont_mask.to(device), positions.to(device), past, use_cache=False
    )
    hidden = hidden.reshape(-1, hidden.shape[-1])
    flat = torch.cat(
        [r * k_width + torch.arange(len(it.continuation) - 1) for r, (_, it) in enumerate(multi)]
    )
    used = [0] * len(contexts)
    for g, _item in multi:
        used[g] = max(used[g], k_width)
    return hidden[flat.to(hidden.device)], used, k_width


def _first_fit(lengths: list[int], width: int) -> tuple[dict[int, tuple[int, int]], list[int]]:
    """Blocks into rows of ``width``, first fit, longest first: each block's (row, offset)
    and each row's filled width."""
    fill: list[int] = []
    place: dict[int, tuple[int, int]] = {}
    for g in sorted(range(len(lengths)), key=lambda g: -lengths[g]):
        row = next((r for r, used in enumerate(fill) if used + lengths[g] <= width), len(fill))
        if row == len(fill):
            fill.append(0)
        place[g] = (row, fill[row])
        fill[row] += lengths[g]
    return place, fill


def _row_width(lengths: list[int]) -> int:
    """The width of a batch's packed rows: of 1-4 times its longest block and the widths of
    :data:`PACK_ROW_WIDTHS` that hold it, the one whose rows cost least (positions plus
    attention, :data:`ATTENTION_TOKENS`), the narrower on a tie. A batch's blocks are of
    similar length (sorted), so one fixed width would leave whole rows half empty: blocks
    of 130-250 tokens take one 256-wide row each."""
    longest = max(lengths)
    widths = {longest * k for k in (1, 2, 3, 4)} | {w for w in PACK_ROW_WIDTHS if w >= longest}
    best = (float("inf"), longest)
    for width in sorted(w for w in widths if w <= max(PACK_ROW_WIDTHS[-1], longest)):
        rows = len(_first_fit(lengths, width)[1])
        best = min(best, (rows * width * (1 + width / ATTENTION_TOKENS), width))
    return best[1]


@dataclass
class _Packed:
    """The packed rows of :func:`_packed_pass`: token ids, positions, the allowed
    attention (None: plain causal), and each scored position with its target token."""

    spans: list[list[tuple[_Item, int]]]  # per group: (item, its segment's offset)
    place: dict[int, tuple[int, int]]  # per group: (row, offset of its block)
    fill: list[int]  # per row: tokens used
    width: int
    ids: np.ndarray
    positions: np.ndarray
    allowed: np.ndarray | None
    entries: list[int]  # flat positions whose next token is scored
    targets: list[int]


def _pack(groups: list[list[_Item]]) -> _Packed:
    """Each context's block ``context | cont_1[:-1] | cont_2[:-1] | ...``, first fit into
    rows, with the block-diagonal mask that lets each token see what it would see alone."""
    spans = []  # per group: [(item, offset of its segment within the block)]
    lengths = []
    for group in groups:
        n = len(group[0].context)
        offset, span = n, []
        for item in group:
            span.append((item, offset))
            offset += len(item.continuation) - 1
        spans.append(span)
        lengths.append(offset)
    width = _row_width(lengths)
    place, fill = _first_fit(lengths, width)
    n_rows = len(fill)
    ids = np.zeros((n_rows, width), dtype=np.int64)
    positions = np.zeros((n_rows, width), dtype=np.int64)
    need_mask = n_rows < len(groups) or any(
        length > len(g[0].context) for length, g in zip(lengths, groups, strict=True)
    )
    allowed = np.zeros((n_rows, width, width), dtype=bool) if need_mask else None
    if allowed is not None:
        allowed[:, :, 0] = True  # padding queries see one real key (no all-masked rows)
    entries: list[int] = []
    targets: list[int] = []
    for g, group in enumerate(groups):
        row, base = place[g]
        ctx = group[0].context
        n = len(ctx)
        ids[row, base : base + n] = ctx
        positions[row, base : base + n] = np.arange(n)
        if allowed is not None:
            allowed[row, base : base + lengths[g], 0] = base == 0
            allowed[row, base : base + n, base : base + n] = _TRIL[n]
        flat = row * width + base
        for item, off in spans[g]:
            k = len(item.continuation) - 1
            entries.append(flat + n - 1)
            targets.append(item.continuation[0])
            if k:
                lo = base + off
                ids[row, lo : lo + k] = item.continuation[:-1]
                positions[row, lo : lo + k] = n + np.arange(k)
                assert allowed is not None
                allowed[row, lo : lo + k, base : base + n] = True
                allowed[row, lo : lo + k, lo : lo + k] = _TRIL[k]
                entries.extend(range(flat + off, flat + off + k))
                targets.extend(item.continuation[1:])
    return _Packed(spans, place, fill, width, ids, positions, allowed, entries, targets)


def _packed_pass(
    fwd: Forward, groups: list[list[_Item]], greedy: bool, results: dict[int, Scored]
) -> None:
    """Short contexts, packed: each context becomes a block
    ``context | cont_1[:-1] | cont_2[:-1] | ...`` and blocks are packed into rows (first
    fit, longest first), all in one forward pass with no cache. A block-diagonal 4D mask
    gives each context causal attention and each continuation segment its context plus
    its own earlier tokens; positions restart at every block and continue from the
    context's length in every segment. So each token sees exactly what it would see in a
    full forward of its own ``context + continuation``, and almost no padding is run."""
    p = _pack(groups)
    spans, place, fill, width = p.spans, p.place, p.fill, p.width
    ids, positions, allowed, entries, targets = p.ids, p.positions, p.allowed, p.entries, p.targets
    device = fwd.device
    mask = None
    position_ids = None
    if allowed is not None:
        mask = fwd.attention_mask_4d(torch.from_numpy(allowed)[:, None].to(device))
        position_ids = torch.from_numpy(positions).to(device)
    hidden, _ = fwd.hidden(
        torch.from_numpy(ids).to(device), mask, position_ids, None, use_cache=False
    )
    hidden = hidden.reshape(-1, hidden.shape[-1])
    # unique scored positions (all choices share the context's last position)
    unique_rows, inverse = np.unique(np.asarray(entries, dtype=np.int64), return_inverse=True)
    lp, flags = score_positions(
        fwd,
        hidden[torch.from_numpy(unique_rows).to(hidden.device)],
        torch.from_numpy(inverse.reshape(-1).astype(np.int64)),
        torch.tensor(targets),
        greedy,
    )
    ordered = [item for g in range(len(groups)) for item, _ in spans[g]]
    sums = _sums(lp, flags, [len(item.continuation) for item in ordered])
    g_of = [g for g in range(len(groups)) for _ in spans[g]]
    charged: set[int] = set()
    for item, g, (total, flag) in zip(ordered, g_of, sums, strict=True):
        row, base = place[g]
        # a row's padding, charged once: to the first request of the row's first block
        padded = width - fill[row] if base == 0 and g not in charged else 0
        charged.add(g)
        results[item.index] = Scored(total, flag, list(item.context), 0, padded)


def _token_batches(
    groups: list[list[_Item]],
    size: Callable[[list[_Item]], int],
    token_budget: int | None,
    max_rows: int | None,
) -> list[list[list[_Item]]]:
    """Consecutive batches holding at most ``token_budget`` real tokens (packing removes
    the padding) and at most ``max_rows`` contexts."""
    batches: list[list[list[_Item]]] = []
    batch: list[list[_Item]] = []
    tokens = 0
    for group in groups:
        n = size(group)
        over = (token_budget is not None and tokens + n > token_budget) or (
            max_rows is not None and len(batch) + 1 > max_rows
        )
        if batch and over:
            batches.append(batch)
            batch, tokens = [], 0
        batch.append(group)
        tokens += n
    if batch:
        batches.append(batch)
    return batches


def _item_order(items: list[tuple[int, _Item]], multi: list[tuple[int, _Item]]) -> list[int]:
    """The scored entries regrouped per item: entry k holds item k's first token; the
    other tokens of the multi-token items (``multi``) follow all the first tokens."""
    order: list[int] = []
    cursor = len(items)
    rest_start: dict[int, int] = {}
    for _, item in multi:
        rest_start[item.index] = cursor
        cursor += len(item.continuation) - 1
    for k, (_, item) in enumerate(items):
        order.append(k)
        if item.index in rest_start:
            start = rest_start[item.index]
            order.extend(range(start, start + len(item.continuation) - 1))
    return order


def _shared_pass(
    fwd: Forward,
    groups: list[list[_Item]],
    greedy: bool,
    results: dict[int, Scored],
    prefix: tuple[int, object] | None = None,
) -> None:
    """Contexts once (right-padded, no mask), then every multi-token continuation against
    its context's cache; first continuation tokens are scored at the context's end.
    ``prefix``: (length, cache of batch 1) of a prefix common to all these contexts,
    computed once for many batches; only the rest of each context runs here."""
    contexts = [g[0].context for g in groups]
    p_len = 0 if prefix is None else prefix[0]
    width = max(len(c) for c in contexts)
    ids = _right_padded([c[p_len:] for c in contexts], width - p_len)
    device = fwd.device
    items = [(g, item) for g, group in enumerate(groups) for item in group]
    multi = [(g, item) for g, item in items if len(item.continuation) > 1]
    past, positions = None, None
    if prefix is not None:
        past = fwd.broadcast_cache(prefix[1], len(groups))
        positions = (p_len + torch.arange(width - p_len)).expand(len(groups), -1).to(device)
    hidden, past = fwd.hidden(
        ids.to(device), None, positions, past, use_cache=bool(multi) or past is not None
    )
    rest_width = width - p_len
    last = torch.tensor([g * rest_width + len(contexts[g]) - p_len - 1 for g in range(len(groups))])
    ctx_hidden = hidden.reshape(-1, hidden.shape[-1])[last.to(hidden.device)]
    del hidden
    # entries: first tokens (from the context's last position), then the other tokens
    rows = [g for g, _ in items]
    targets = [item.continuation[0] for _, item in items]
    sources = [ctx_hidden]
    used, seg = [0] * len(groups), 0
    if multi:
        continue_fn = _tree_continuations if fwd.supports_4d_mask() else _expanded_continuations
        cont_hidden, used, seg = continue_fn(fwd, past, contexts, width, multi)
        base = len(groups)
        for _, item in multi:
            k = len(item.continuation) - 1
            rows.extend(range(base, base + k))
            targets.extend(item.continuation[1:])
            base += k
        sources.append(cont_hidden)
    lp, flags = score_positions(
        fwd,
        torch.cat(sources) if len(sources) > 1 else sources[0],
        torch.tensor(rows),
        torch.tensor(targets),
        greedy,
    )
    index = torch.tensor(_item_order(items, multi), device=lp.device)
    sums = _sums(
        lp[index],
        None if flags is None else flags[index],
        [len(item.continuation) for _, item in items],
    )
    for (g, item), (total, flag) in zip(items, sums, strict=True):
        padded = width - len(contexts[g]) + (seg - used[g] if len(item.continuation) > 1 else 0)
        results[item.index] = Scored(total, flag, list(item.context), 0, padded)


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _prefix_runs(
    groups: list[list[_Item]],
) -> tuple[list[tuple[int, list[list[_Item]]]], list[list[_Item]]]:
    """Split context groups into runs sharing a common prefix of at least
    ``MIN_SHARED_PREFIX`` tokens (contexts sorted, neighbours compared) and the rest.

    Each run comes with its prefix length, capped so that every context keeps at least
    one token of its own (its last position scores the first continuation token)."""
    ordered = sorted(groups, key=lambda g: g[0].context)
    runs: list[tuple[int, list[list[_Item]]]] = []
    rest: list[list[_Item]] = []
    i = 0
    while i < len(ordered):
        j, shared = i + 1, len(ordered[i][0].context) - 1
        while j < len(ordered):
            common = _common_prefix(ordered[j - 1][0].context, ordered[j][0].context)
            if min(shared, common, len(ordered[j][0].context) - 1) < MIN_SHARED_PREFIX:
                break
            shared = min(shared, common, len(ordered[j][0].context) - 1)
            j += 1
        if j - i > 1:
            runs.append((shared, ordered[i:j]))
        else:
            rest.append(ordered[i])
        i = j
    return runs, rest


@dataclass
class _Plan:
    """How ``score_continuations`` runs its pairs: each distinct pair once (``copies``: the
    input positions each stands for), as a full pass of its own (``single``) or in a group
    sharing its context (``groups``); ``cut``: a grouped item whose context was truncated to
    the full pass's window (the original item, tokens cut)."""

    copies: dict[int, list[int]]
    single: list[_Item]
    groups: list[list[_Item]]
    cut: dict[int, tuple[_Item, int]]


def _plan(pairs: list[tuple[list[int], list[int]]], max_length: int, share_prefix: bool) -> _Plan:
    unique: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    copies: dict[int, list[int]] = {}
    items: list[_Item] = []
    for i, (ctx, cont) in enumerate(pairs):
        key = (tuple(ctx), tuple(cont))
        if key in unique:
            copies[unique[key]].append(i)
            continue
        unique[key] = i
        copies[i] = [i]
        items.append(_Item(i, list(ctx), list(cont)))
    by_context: dict[tuple[int, ...], list[_Item]] = {}
    single: list[_Item] = []
    cut: dict[int, tuple[_Item, int]] = {}
    for item in items:
        over = len(item.context) + len(item.continuation) - (max_length + 1)
        if not share_prefix or len(item.continuation) > max_length:
            single.append(item)
        elif over > 0:  # the same window as the full pass: the context's last tokens
            window = _Item(item.index, item.context[over:], item.continuation)
            cut[item.index] = (item, over)
            by_context.setdefault(tuple(window.context), []).append(window)
        else:
            by_context.setdefault(tuple(item.context), []).append(item)
    groups = []
    for group in by_context.values():
        if len(group) == 1 and len(group[0].continuation) > 1:
            original = cut.pop(group[0].index, (group[0], 0))[0]
            single.append(original)  # the full pass truncates it itself
        else:
            groups.append(group)
    return _Plan(copies, single, groups, cut)


def _reporter(
    plan: _Plan, results: dict[int, Scored], on_done: Callable[[int, Scored], None] | None
) -> Callable[[list[_Item]], None]:
    """What reports a batch's items: a truncated item as the full pass of the whole request
    reports it, then every input position the item stands for."""

    def report(done: list[_Item]) -> None:
        for item in done:
            if item.index in plan.cut:  # what the full pass of the whole request reports
                got, over = results[item.index], plan.cut[item.index][1]
                results[item.index] = Scored(
                    got.logprob, got.is_greedy, item.context[:-1], over, got.padded
                )
            for i in plan.copies[item.index]:
                results[i] = results[item.index]
                if on_done is not None:
                    on_done(i, results[i])

    return report


def _group_tokens(group: list[_Item]) -> int:
    """A group's block: its context and every continuation but the last token."""
    return len(group[0].context) + sum(len(it.continuation) - 1 for it in group)


def _score_groups(
    fwd: Forward,
    groups: list[list[_Item]],
    batching: tuple[int | None, int | None],
    greedy: bool,
    results: dict[int, Scored],
    report: Callable[[list[_Item]], None],
) -> None:
    """Groups sharing a context: prefix runs, packed passes, then context + tree passes."""
    token_budget, max_rows = batching
    tree = fwd.supports_4d_mask()
    total = _group_tokens
    # contexts sharing a long prefix (few-shot examples placed first_n, a subject's
    # description): the prefix runs once, each batch continues from its cache
    runs, rest = _prefix_runs(groups) if tree and fwd.can_share_prefix_cache() else ([], groups)
    for p_len, run in runs:
        prefix = torch.tensor([run[0][0].context[:p_len]], device=fwd.device)
        with_prefix = fwd.hidden(prefix, None, None, None, use_cache=True)[1]
        run.sort(key=lambda g: (-len(g[0].context), g[0].index))
        for batch in budget_batches(run, lambda g: (1, total(g) + 1), token_budget, max_rows):
            _shared_pass(fwd, batch, greedy, results, prefix=(p_len, with_prefix))
            report([it for group in batch for it in group])
        del with_prefix

    # short contexts: one packed pass per batch; long ones: context pass + tree
    # continuation pass (the context keeps the fast causal kernel)
    packed = [g for g in rest if tree and total(g) <= PACK_MAX_TOKENS]
    shared = [g for g in rest if not (tree and total(g) <= PACK_MAX_TOKENS)]
    packed.sort(key=lambda g: (-total(g), g[0].index))
    for batch in _token_batches(packed, total, token_budget, max_rows):
        _packed_pass(fwd, batch, greedy, results)
        report([it for group in batch for it in group])

    shared.sort(key=lambda g: (-len(g[0].context), g[0].index))

    def group_cost(group: list[_Item]) -> tuple[int, int]:
        if tree:  # one row per context
            return 1, total(group) + 1
        longest = max(len(it.continuation) for it in group)
        return len(group), len(group[0].context) + longest  # one row per choice

    for batch in budget_batches(shared, group_cost, token_budget, max_rows):
        _shared_pass(fwd, batch, greedy, results)
        report([it for group in batch for it in group])


def score_continuations(
    fwd: Forward,
    pairs: list[tuple[list[int], list[int]]],
    max_length: int,
    token_budget: int | None,
    max_rows: int | None,
    share_prefix: bool = True,
    on_done: Callable[[int, Scored], None] | None = None,
    greedy: bool = True,
    invariant: bool = False,
) -> list[Scored]:
    """Score every (context tokens, continuation tokens) pair; results in input order.

    ``greedy=False`` skips the argmax (``is_greedy`` is then False), for perplexity.
    ``invariant``: no two contexts share a forward pass (one group per batch, no token
    budget), so every tensor a request's numbers come from is a function of its own group:
    the same bits at any batch size, token budget or subset of the requests (a resumed run,
    one data-parallel worker). Contexts sharing a long prefix still run it once
    (:func:`_prefix_runs`), each continuing from that cache on its own.
    """
    if invariant:
        token_budget, max_rows = None, 1
    plan = _plan(pairs, max_length, share_prefix)
    results: dict[int, Scored] = {}
    report = _reporter(plan, results, on_done)
    with torch.inference_mode():
        single = sorted(
            plan.single, key=lambda it: (-(len(it.context) + len(it.continuation)), it.index)
        )
        for single_batch in budget_batches(
            single,
            lambda it: (1, min(len(it.context) + len(it.continuation), max_length + 1) - 1),
            token_budget,
            max_rows,
        ):
            _full_pass(fwd, single_batch, max_length, greedy, results)
            report(single_batch)
        _score_groups(fwd, plan.groups, (token_budget, max_rows), greedy, results, report)
    return [results[i] for i in range(len(pairs))]
