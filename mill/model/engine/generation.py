"""Generation: continuous batching over preallocated KV slots, per-row retirement.

Semantics are lm-evaluation-harness's ``generate_until`` with greedy decoding: contexts are
left-truncated to ``max_length - max_gen_toks`` tokens, each row gets at most
``max_gen_toks`` new tokens at the positions of its own context, stops at EOS, and its text
is the decoded new tokens (special tokens skipped) cut at the first occurrence of each stop
string. The work differs:

* Rows decode in slots of one preallocated cache (:class:`mill.model.engine.kv.SlotCache`),
  written in place instead of re-concatenated at every step.
* A row that stops frees its slot at once (nothing is copied) and the next waiting
  contexts are prefilled into the free slots, in chunks that respect the token budget, so
  the batch stays full until the queue is empty (lm-eval runs each static batch until its
  slowest row is done).
* Identical contexts (sampled repeats of one prompt) are prefilled once and their keys
  and values kept once (:class:`mill.model.engine.kv.PromptTable`), read by every repeat's
  decoding step; each repeat's slot holds only its generated tokens (where the model
  supports shared attention, as below; else each slot gets a copy).
* A context prefix that every row shares (fixed few-shot exemplars) is computed, stored
  and read once for all rows (:mod:`mill.model.engine.prefix_attention`), where the model
  supports it; each slot holds only its row's own suffix. A call holding several
  prompts (a suite's tasks, each with its own exemplars) generates prompt by prompt
  (:func:`prefix_parts`), each prompt kept once for its part's rows.

A model whose cache cannot live in slots (sliding-window layers) decodes each prefill
chunk as a static batch (:func:`_generate_static`).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass

import torch

from mill.model.engine.batching import budget_batches
from mill.model.engine.prefix_attention import MIN_SHARED_PREFIX, SharedPrefix, common_prefix
from mill.model.tokenizing import cut_at_stop


@dataclass
class Generated:
    """One finished generation."""

    text: str
    tokens: list[int]
    input_tokens: list[int]
    truncated: int
    padded: int
    hit_max: bool = False
    """It ended at ``max_gen_toks``, not at EOS or a stop string."""


def _generated(
    job: _Job, tokens: list[int], context: list[int], truncated: int, padded: int
) -> Generated:
    """A finished row: its text cut at the first stop string, and whether the length limit
    (not EOS, not a stop string) ended it."""
    whole = job.decode(tokens)
    text = cut_at_stop(whole, job.until)
    hit_max = len(tokens) >= job.max_gen_toks and tokens[-1] not in job.eos_ids and text == whole
    return Generated(text, tokens, context, truncated, padded, hit_max)


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

    def next_argmax(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        position_ids: torch.Tensor,
        past: object | None,
    ) -> tuple[torch.Tensor, object]:
        """A greedy step: the argmax of :meth:`next_logits` [batch] (ties: the first index)
        and the updated cache. A model may compute it without the whole logits block."""
        logits, past = self.next_logits(input_ids, attention_mask, position_ids, past)
        return logits.argmax(-1), past

    def can_grow_cache(self) -> bool:
        """Whether the cache can live in preallocated slots
        (:class:`mill.model.engine.kv.SlotCache`: plain layers, no sliding windows)."""
        raise NotImplementedError

    def select_cache(self, past: object, keep: torch.Tensor) -> object:
        raise NotImplementedError

    def can_share_generation_prefix(self) -> bool:
        """Whether :meth:`shared_prefix` works for this model (default: no)."""
        return False

    def shared_prefix(self, tokens: list[int]) -> AbstractContextManager[SharedPrefix]:
        """Compute ``tokens``' keys and values once (positions ``0..P-1``); inside, every
        forward attends over them before each row's own cache (see
        :mod:`mill.model.engine.prefix_attention`). No tokens: no prefix, the attention is
        switched on for repeats' shared prompts alone."""
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
    all rows (at least :data:`~mill.model.engine.prefix_attention.MIN_SHARED_PREFIX`; else 0)."""
    if not (stepper.can_grow_cache() and stepper.can_share_generation_prefix()):
        return 0
    prefix = common_prefix(contexts)
    return prefix if prefix >= MIN_SHARED_PREFIX else 0


MIN_PREFIX_PART = 8
"""Contexts sharing a prefix with fewer others than this generate with the rest: a part is
a decode batch of its own, and a few rows would leave the batch's width unused."""


def prefix_parts(stepper: Stepper, contexts: Sequence[Sequence[int]]) -> list[list[int]]:
    """The indices of ``contexts`` in parts generated one after another, each with the
    prefix its contexts share kept once: one part when all share a prefix or none can be
    kept; else every run of at least :data:`MIN_PREFIX_PART` contexts sharing their first
    :data:`~mill.model.engine.prefix_attention.MIN_SHARED_PREFIX` tokens (a task's few-shot prompt
    among several tasks' contexts) is a part, and the other contexts one part more."""
    everything = [list(range(len(contexts)))]
    if (
        len(contexts) < 2 * MIN_PREFIX_PART
        or not (stepper.can_grow_cache() and stepper.can_share_generation_prefix())
        or common_prefix(contexts) >= MIN_SHARED_PREFIX  # one prefix for all: one part
    ):
        return everything
    order = sorted(range(len(contexts)), key=lambda i: list(contexts[i]))
    parts: list[list[int]] = []
    rest: list[int] = []
    run = [order[0]]
    for i in [*order[1:], -1]:  # -1: the end, closing the last run
        if i >= 0 and common_prefix([contexts[run[0]], contexts[i]]) >= MIN_SHARED_PREFIX:
            run.append(i)
            continue
        if len(run) >= MIN_PREFIX_PART:
            parts.append(sorted(run))
        else:
            rest.extend(run)
        run = [i]
    if not parts:
        return everything
    parts.sort(key=lambda part: part[0])  # in the order of the contexts' first members
    return [*parts, sorted(rest)] if rest else parts


@dataclass
class _Job:
    """What both engines generate: the contexts, their stops and the token picker."""

    contexts: list[list[int]]
    truncated: list[int]
    until: Sequence[str]
    max_gen_toks: int
    eos_ids: set[int]
    decode: Callable[[list[int]], str]
    choose: Callable[[torch.Tensor, list[int]], list[int]] | None
    """A sampler (:class:`SeededSampler`); None: greedy."""
    on_done: Callable[[int, Generated], None] | None

    def pick(self, logits: torch.Tensor, rows: list[int]) -> list[int]:
        """The tokens of ``logits``' rows (generating ``rows``): sampled, or the argmax."""
        if self.choose is not None:
            return self.choose(logits, rows)
        return logits.argmax(-1).tolist()

    def step(
        self,
        stepper: Stepper,
        ids: torch.Tensor,
        mask: torch.Tensor | None,
        positions: torch.Tensor,
        past: object,
        live: list[int] | None,
        rows: list[int],
    ) -> tuple[list[int], object]:
        """One decoding step of every cache row: the tokens picked for rows ``live`` (None:
        all) that generate ``rows``, and the cache. Greedy steps ask the model for the
        argmax alone (:meth:`Stepper.next_argmax`)."""
        if self.choose is None:
            chosen, past = stepper.next_argmax(ids, mask, positions, past)
            return (chosen if live is None else chosen[live]).tolist(), past
        logits, past = stepper.next_logits(ids, mask, positions, past)
        return self.pick(logits if live is None else logits[live], rows), past


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
    slots: int | None = None,
    on_done: Callable[[int, Generated], None] | None = None,
) -> list[Generated]:
    """Greedily continue tokenized contexts (already left-truncated).

    At most ``slots`` rows decode at once (default: all); as rows finish, waiting contexts
    take their slots (continuous batching, :class:`_SlotLoop`). Prefill runs in
    chunks of at most ``token_budget`` padded tokens (and ``max_rows`` rows). A model whose
    cache cannot be held in slots (sliding-window layers) decodes chunk by chunk instead.
    ``choose(logits, rows)`` replaces the greedy pick (see :class:`SeededSampler`); ``rows``
    are the indices into ``contexts`` of the logits' rows. ``on_done(row, generated)`` is
    called as each row finishes.
    """

    job = _Job(contexts, truncated, until, max_gen_toks, eos_ids, decode, choose, on_done)
    if not stepper.can_grow_cache():
        rows = max_rows if slots is None else min(slots, max_rows or slots)
        return _generate_static(stepper, job, token_budget, rows)
    prefix = shared_prefix_length(stepper, contexts)
    # repeats of one context (sampled) share its prompt's keys and values
    repeats = stepper.can_share_generation_prefix() and len(set(map(tuple, contexts))) < len(
        contexts
    )
    with ExitStack() as scope:
        # a prefix every context starts with: computed once, attended by every row
        shared = (
            scope.enter_context(stepper.shared_prefix(contexts[0][:prefix]))
            if prefix or repeats
            else None
        )
        return _SlotLoop(stepper, job, token_budget, max_rows, slots, shared, repeats).run()


NARROW_SHARE = 16
"""Once no row waits, the slot storage narrows to its live rows when this share of it is
free: a free slot's throw-away row costs a live row's step, a narrowing copies the rows
that move (their filled columns). MATH-500's first 100 problems, greedy, 512 new tokens,
100 slots: a quarter left 3,679 dead row-steps of 27,691 (4 narrowings), a sixteenth 537
of 24,549 (18)."""


class _SlotLoop:
    """Continuous batching over a :class:`~mill.model.engine.kv.SlotCache` of ``slots`` rows.

    Contexts wait in a queue, longest first, repeats of one context next to each other.
    Whenever slots are free, the next contexts are prefilled (one chunk within the token
    budget and the free slots) and copied into them; identical contexts (sampled repeats)
    are prefilled once. With ``repeats`` (and ``shared`` attention) a context's keys and
    values go once into a :class:`~mill.model.engine.kv.PromptTable` entry that its repeats'
    steps read, their slots holding only generated tokens; else each repeat's slot gets a
    copy. Each step decodes every slot; a row that finishes frees its slot for the next
    context. Once the queue is empty, the storage narrows to the live rows when
    1/:data:`NARROW_SHARE` of it is free.

    Its state: the queue of waiting rows, the slots and what each holds, the prefilled
    contexts whose repeats wait, and the rows' tokens so far (:meth:`run` returns them).
    """

    def __init__(
        self,
        stepper: Stepper,
        job: _Job,
        token_budget: int | None,
        max_rows: int | None,
        slots: int | None,
        shared: SharedPrefix | None,
        repeats: bool,
    ) -> None:
        from mill.model.engine.kv import PromptTable, SlotCache

        self.stepper, self.job, self.shared = stepper, job, shared
        self.token_budget, self.max_rows = token_budget, max_rows
        n = len(job.contexts)
        skip = 0 if shared is None else shared.length
        own = [c[skip:] for c in job.contexts]  # what each row's own cache holds
        self.own = own
        keys = [tuple(o) for o in own]  # each row's context, as a dict key
        self.keys = keys
        first_of: dict[tuple[int, ...], int] = {}
        for r in range(n):
            first_of.setdefault(keys[r], r)
        self.queue = deque(sorted(range(n), key=lambda r: (-len(own[r]), first_of[keys[r]], r)))
        self.waiting = Counter(keys)  # rows of each context without a slot
        self.remaining = Counter(keys)  # rows of each context not finished
        self.size = max(1, min(n, slots or n))
        self.grouped = repeats and shared is not None
        # a slot holds its row's context and new tokens; with a prompt table, new tokens alone
        self.capacity = (0 if self.grouped else max(map(len, own))) + job.max_gen_toks + 1
        self.table: PromptTable | None = None
        self.entry_of: dict[tuple[int, ...], int] = {}  # context -> its table entry
        self.cache: SlotCache | None = None
        self.stop = _StopCheck(job.until, job.decode)
        self.generated: list[list[int]] = [[] for _ in range(n)]
        # per slot: its request (-1: free), position, next input token, table entry
        self.request = [-1] * self.size
        self.positions = [0] * self.size
        self.next_tokens = [0] * self.size
        self.slot_entry = [-1] * self.size
        # prefilled contexts whose rows (or repeats) wait for a slot: (cache, row, logits, width)
        self.kept: dict[tuple[int, ...], tuple[object, int, torch.Tensor, int]] = {}
        self.padded = [0] * n  # left padding of each row's prefill
        self.out: dict[int, Generated] = {}

    def run(self) -> list[Generated]:
        """Every row generated, in the contexts' order."""
        while True:
            self.fill()
            live = [s for s in range(self.size) if self.request[s] >= 0]
            if not live:
                return [self.out[r] for r in range(len(self.job.contexts))]
            if not self.queue and (self.size - len(live)) * NARROW_SHARE >= self.size:
                live = self.narrow(live)
            self.step(live)

    def done(self, r: int) -> bool:
        """Has row ``r`` finished with its last token? (then its output is made, and its
        context's table entry freed after its last repeat)"""
        job, tokens = self.job, self.generated[r]
        if not (tokens[-1] in job.eos_ids or len(tokens) >= job.max_gen_toks or self.stop(tokens)):
            return False
        key = self.keys[r]
        self.remaining[key] -= 1
        if self.table is not None and not self.remaining[key]:
            self.table.free(self.entry_of.pop(key))
        self.out[r] = _generated(
            tokens=tokens,
            job=job,
            context=job.contexts[r],
            truncated=job.truncated[r],
            padded=self.padded[r],
        )
        if job.on_done is not None:
            job.on_done(r, self.out[r])
        return True

    def take(self, free: int) -> list[int]:
        """The next contexts for ``free`` slots, within the prefill budget (a repeat of a
        context already prefilled, or of the one before it, costs no prefill row)."""
        queue, own, budget = self.queue, self.own, self.token_budget
        chunk = [queue.popleft()]
        width, fresh = len(own[chunk[0]]), 1
        while queue and len(chunk) < min(free, self.max_rows or free):
            nxt = own[queue[0]]
            again = self.keys[queue[0]] in self.kept or nxt == own[chunk[-1]]
            if not again and budget is not None and (fresh + 1) * max(width, len(nxt)) > budget:
                break
            chunk.append(queue.popleft())
            width, fresh = max(width, len(nxt)), fresh + (not again)
        return chunk

    def prefill(self, chunk: list[int]) -> list[int]:
        """Prefill the distinct contexts of ``chunk`` not already kept, once each, into
        :attr:`kept` (and the prompt table); the rows prefilled."""
        from mill.model.engine.kv import PromptTable, SlotCache

        fresh: list[int] = []  # one row per distinct context
        for r in chunk:
            key = self.keys[r]
            if key not in self.kept and all(self.keys[f] != key for f in fresh):
                fresh.append(r)
        if not fresh:
            return fresh
        logits, past, _, width = _prefill(self.stepper, [self.own[r] for r in fresh], self.shared)
        if self.cache is None:
            self.cache = SlotCache(self.stepper.config, past, self.size, self.capacity)
        if self.grouped and self.table is None:
            # contexts in flight: those holding slots, and one waiting (the table doubles
            # if repeats of uneven counts need more)
            fewest = min(self.remaining.values())
            entries = min(len(self.remaining), -(-self.size // fewest) + 1)
            self.table = PromptTable(past, entries, max(map(len, self.own)))
        for row, r in enumerate(fresh):
            key = self.keys[r]
            self.kept[key] = (past, row, logits[row], width)
            if self.table is not None:
                self.entry_of[key] = self.table.place(past, row, len(self.own[r]))
        return fresh

    def fill(self) -> None:
        """Give free slots to waiting rows (prefilled as needed) while both remain: each
        row's first token is picked from its prefill's logits."""
        while self.queue:
            free = [s for s in range(self.size) if self.request[s] < 0]
            if not free:
                return
            chunk = self.take(len(free))
            fresh = self.prefill(chunk)
            kept, cache = self.kept, self.cache
            assert cache is not None
            firsts = self.job.pick(torch.stack([kept[self.keys[r]][2] for r in chunk]), chunk)
            for r, token in zip(chunk, firsts, strict=True):
                key = self.keys[r]
                past, row, _logits, width = kept[key]
                self.padded[r] = width - len(self.own[r])
                slot = free.pop(0)
                if self.table is None:
                    cache.place(slot, past, row, len(self.own[r]))
                else:  # the prompt is the table entry's: the slot starts empty
                    cache.start(slot)
                    self.slot_entry[slot] = self.entry_of[key]
                self.waiting[key] -= 1
                if not self.waiting[key]:
                    del kept[key]  # its last repeat has its slot
                self.generated[r].append(token)
                if self.done(r):
                    cache.free(slot)
                    self.slot_entry[slot] = -1
                    continue
                self.request[slot], self.positions[slot] = r, len(self.job.contexts[r])
                self.next_tokens[slot] = token
            # repeats still waiting keep only their own row of the chunk's cache (none
            # with a table: their prompt is there)
            for r in fresh:
                key = self.keys[r]
                if key in kept:
                    past, row, logits, width = kept[key]
                    kept[key] = (None if self.table else _one_row(past, row), 0, logits, width)

    def narrow(self, live: list[int]) -> list[int]:
        """Shrink the storage to the ``live`` slots (renumbered from 0): the new live slots."""
        assert self.cache is not None
        self.cache.select(live)
        self.request = [self.request[s] for s in live]
        self.positions = [self.positions[s] for s in live]
        self.next_tokens = [self.next_tokens[s] for s in live]
        self.slot_entry = [self.slot_entry[s] for s in live]
        self.size = len(live)
        return list(range(self.size))

    def step(self, live: list[int]) -> None:
        """One decoding step of every slot; the ``live`` slots' rows take their tokens, and
        the rows that finish free their slots."""
        cache, device = self.cache, self.stepper.device
        assert cache is not None
        ids = torch.tensor(self.next_tokens, device=device).unsqueeze(-1)
        if self.shared is not None:
            self.shared.set_valid(cache.mask())
            if self.table is not None:
                self.shared.set_prompts(self.table, self.slot_entry)
            step_mask = None
        else:
            step_mask = cache.mask().long()
        rows = [self.request[s] for s in live]
        tokens, _ = self.job.step(
            self.stepper,
            ids,
            step_mask,
            torch.tensor(self.positions, device=device).unsqueeze(-1),
            cache.cache,
            live if len(live) < self.size else None,
            rows,
        )
        is_live = torch.zeros(self.size, dtype=torch.bool, device=device)
        is_live[live] = True
        cache.advance(is_live)
        for s, r, token in zip(live, rows, tokens, strict=True):
            self.generated[r].append(token)
            self.positions[s] += 1
            self.next_tokens[s] = token
            if self.done(r):
                self.request[s], self.next_tokens[s], self.positions[s] = -1, 0, 0
                self.slot_entry[s] = -1
                cache.free(s)


def _one_row(past: object, row: int) -> object:
    """Row ``row`` of a prefill cache, on its own (kept for a context's later repeats)."""
    import copy

    out = copy.copy(past)
    out.layers = []  # type: ignore[attr-defined]
    for layer in past.layers:  # type: ignore[attr-defined]
        new = copy.copy(layer)
        new.keys = layer.keys[row : row + 1].clone()
        new.values = layer.values[row : row + 1].clone()
        out.layers.append(new)  # type: ignore[attr-defined]
    return out


def _generate_static(
    stepper: Stepper, job: _Job, token_budget: int | None, max_rows: int | None
) -> list[Generated]:
    """Static batches for caches that cannot live in slots: each prefill chunk decodes on
    its own, finished rows dropped once a quarter of the chunk has finished."""
    n = len(job.contexts)
    order = sorted(range(n), key=lambda r: (-len(job.contexts[r]), r))
    out: dict[int, Generated] = {}
    stop = _StopCheck(job.until, job.decode)
    device = stepper.device
    for chunk in budget_batches(order, lambda r: (1, len(job.contexts[r])), token_budget, max_rows):
        logits, cache, mask, width = _prefill(stepper, [job.contexts[r] for r in chunk])
        masks = torch.cat([mask, mask.new_zeros((len(chunk), job.max_gen_toks))], dim=1).to(device)
        need_mask = len({len(job.contexts[r]) for r in chunk}) > 1
        positions = torch.tensor([[len(job.contexts[r])] for r in chunk], device=device)
        generated: dict[int, list[int]] = {r: [] for r in chunk}
        slots = list(chunk)
        next_tokens = job.pick(logits, slots)
        live = [True] * len(slots)
        length = width
        while True:
            for slot, r in enumerate(slots):
                if live[slot]:
                    generated[r].append(next_tokens[slot])
                    tokens = generated[r]
                    if tokens[-1] in job.eos_ids or len(tokens) >= job.max_gen_toks or stop(tokens):
                        live[slot] = False
            alive = [s for s, is_live in enumerate(live) if is_live]
            if not alive:
                break
            dead = len(slots) - len(alive)
            if dead and dead * 4 >= len(slots):
                keep = torch.tensor(alive, device=device)
                cache = stepper.select_cache(cache, keep)
                masks, positions = masks[keep], positions[keep]
                slots = [slots[s] for s in alive]
                next_tokens = [next_tokens[s] for s in alive]
                live = [True] * len(slots)
            masks[:, length] = 1
            ids = torch.tensor(next_tokens, device=device).unsqueeze(-1)
            step_mask = masks[:, : length + 1] if need_mask else None
            next_tokens, cache = job.step(stepper, ids, step_mask, positions, cache, None, slots)
            length += 1
            positions = positions + 1
        for r in chunk:
            out[r] = _generated(
                job, generated[r], job.contexts[r], job.truncated[r], width - len(job.contexts[r])
            )
            if job.on_done is not None:
                job.on_done(r, out[r])
    return [out[r] for r in range(n)]


SAMPLER_ROWS = 8
"""Rows a :class:`SeededSampler` draws for at once (their float64 block stays in cache:
7-9 ms a step for 63 rows of GPT-2's vocabulary in blocks of 8-16, 25 ms in one block)."""


class SeededSampler:
    """Temperature sampling with one generator per batch row, seeded from its request, so
    a row's tokens never depend on the batch it runs in or on the order of requests.

    ``choose(logits, rows)``: for each active row, one token drawn from
    softmax(logits / temperature) by inverse transform: one uniform number ``u`` from that
    row's own ``torch.Generator``, and the first token whose cumulative weight
    ``exp(z / T - max)`` (summed along the row alone, in float64) exceeds ``u`` times the
    row's total. The weights of the whole batch are computed at once, in buffers kept from
    step to step (a fresh ``[rows, vocab]`` float64 block per step costs its page faults
    again); each row draws one number per step. ``torch.multinomial`` without replacement
    draws one exponential variate per vocabulary entry and row instead: for GPT-2's
    50,257 tokens that took as long as the model's forward passes (docs/benchmark-history.md).
    """

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float = 1.0) -> None:
        if temperature <= 0:
            raise ValueError("sampling needs temperature > 0")
        if not 0 < top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.generators = [torch.Generator().manual_seed(int(s)) for s in seeds]
        self._weights = torch.empty(0)
        self._cumulative = torch.empty(0, dtype=torch.float64)

    def __call__(self, logits: torch.Tensor, rows: list[int]) -> list[int]:
        # a block of rows at a time: the float64 buffers of a whole decode batch (12 bytes
        # per row and vocabulary entry) would add tens of MiB to the peak for no speed
        logits = logits.float().cpu()
        out: list[int] = []
        for start in range(0, len(rows), SAMPLER_ROWS):
            block = rows[start : start + SAMPLER_ROWS]
            out += self._draw(logits[start : start + SAMPLER_ROWS], block)
        return out

    def _draw(self, logits: torch.Tensor, rows: list[int]) -> list[int]:
        shape = (len(rows), logits.shape[-1])
        if self._weights.shape[0] < shape[0] or self._weights.shape[1:] != shape[1:]:
            self._weights = torch.empty(shape)
            self._cumulative = torch.empty(shape, dtype=torch.float64)
        weights, cumulative = self._weights[: shape[0]], self._cumulative[: shape[0]]
        torch.div(logits, self.temperature, out=weights)
        weights.sub_(weights.amax(-1, keepdim=True)).exp_()
        torch.cumsum(weights, -1, dtype=torch.float64, out=cumulative)
        uniform = torch.cat(
            [torch.rand(1, generator=self.generators[row], dtype=torch.float64) for row in rows]
        )
        if self.top_p < 1.0:
            return self._draw_nucleus(weights, self.top_p * cumulative[:, -1], uniform)
        # the first token whose cumulative weight exceeds u * total: never one of weight 0
        # (its cumulative sum equals its predecessor's)
        target = (uniform * cumulative[:, -1]).unsqueeze(-1)
        picked = torch.searchsorted(cumulative, target, right=True).squeeze(-1)
        return picked.clamp(max=shape[1] - 1).tolist()

    def _draw_nucleus(
        self, weights: torch.Tensor, threshold: torch.Tensor, uniform: torch.Tensor
    ) -> list[int]:
        """Nucleus sampling (``top_p`` < 1): the tokens sorted by weight, most likely first
        (ties by token id), kept while the weight before them (summed in that order, in
        float64) is below ``top_p`` of the row's total (summed in token order, in
        float64), then the same inverse transform over the kept ones (up to ties at the
        boundary, the set ``transformers``' ``TopPLogitsWarper`` keeps).

        Only the :data:`NUCLEUS_CANDIDATES` most likely tokens are sorted: a nucleus is
        almost always far smaller, and a sort of the whole vocabulary (49,152 tokens for
        SmolLM2) cost more than the model's decoding step per row. A row whose nucleus
        reaches the candidates' least weight (where ties left out of them might belong)
        is sorted whole instead; both give the same token, as both sum the same weights
        in the same order (tests/model/engine/test_generation.py)."""
        vocab = weights.shape[-1]
        k = min(NUCLEUS_CANDIDATES, vocab)
        values, index = _sorted_candidates(weights, k)
        picked, kept = _nucleus_count(values, index, threshold, uniform)
        if k < vocab:
            # a nucleus that stops before the candidates' least weight holds no token
            # outside them, nor one sorted before a kept one; the others are sorted whole
            first_least = (values == values[:, -1:]).int().argmax(-1)
            whole = (kept > first_least).nonzero().flatten()
            if len(whole):
                values, index = _sorted_candidates(weights[whole], vocab)
                picked[whole] = _nucleus_count(values, index, threshold[whole], uniform[whole])[0]
        return picked.tolist()


NUCLEUS_CANDIDATES = 1024
"""Tokens a nucleus draw sorts before it tries the whole vocabulary
(:meth:`SeededSampler._draw_nucleus`)."""


def _sorted_candidates(weights: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` largest weights of each row and their token ids, largest first, equal
    weights by token id (the order of a stable descending sort of the whole row, for
    every weight above the ``k``-th; all of it when ``k`` is the vocabulary)."""
    if k >= weights.shape[-1]:
        sorted_weights = torch.sort(weights, dim=-1, descending=True, stable=True)
        return sorted_weights.values, sorted_weights.indices
    values, index = torch.topk(weights, k, dim=-1)
    index, by_id = index.sort(dim=-1)
    values = values.gather(-1, by_id)
    values, by_weight = values.sort(dim=-1, descending=True, stable=True)
    return values, index.gather(-1, by_weight)


def _nucleus_count(
    values: torch.Tensor, index: torch.Tensor, threshold: torch.Tensor, uniform: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Over sorted candidates: each row's drawn token and how many candidates its nucleus
    keeps (those whose exclusive running sum is below ``threshold``; at least one)."""
    running = torch.cumsum(values.double(), -1)
    before = torch.cat([running.new_zeros((running.shape[0], 1)), running[:, :-1]], dim=-1)
    keep = before < threshold[:, None]
    kept = keep.sum(-1).clamp(min=1)
    mass = running.gather(-1, (kept - 1)[:, None])
    target = uniform[:, None] * mass
    bounded = running.masked_fill(~keep, float("inf"))
    at = torch.searchsorted(bounded, target, right=True).squeeze(-1)
    at = torch.minimum(at, kept - 1)  # u * mass rounded up to mass: the last kept token
    return index.gather(-1, at[:, None]).squeeze(-1), kept
