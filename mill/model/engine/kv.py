"""The KV cache of continuous batching: preallocated slots that rows are written into and
freed from, written in place instead of re-concatenated.

``transformers``' ``DynamicLayer`` grows with ``torch.cat`` at every decoding step, which
copies the whole cache once per generated token (quadratic traffic: for 16 rows of 900
tokens of a 6x384 model that is ~270 MB per step). A :class:`SlotCache` holds
``[slots, kv_heads, capacity, head_dim]`` storage per layer, allocated once. A row's
context is copied into a free slot from its prefill (left-aligned: column ``u`` holds its
token ``u``); each decoding step writes every slot's new keys and values at that slot's
own column (:attr:`SlotCache.columns`) and hands the model a view of the first
``max(columns) + 1`` columns; the caller's mask marks which of them each slot attends to.
A finished row's slot is simply reused by the next row: retirement copies nothing.
:meth:`SlotCache.select` moves the live rows to the front, in place, once no row is left to
join, so the last steps read fewer rows without a second copy of the storage.
"""

from __future__ import annotations

import weakref
from typing import Any, cast

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer


def _storage(like: torch.Tensor, rows: int, capacity: int) -> torch.Tensor:
    """Zeros ``[rows, kv_heads, capacity, head_dim]`` shaped after a layer's ``like``."""
    return like.new_zeros((rows, like.shape[1], capacity, like.shape[3]))


def _copy_context(
    into: list[tuple[torch.Tensor, torch.Tensor]], at: int, prefill: object, row: int, tokens: int
) -> None:
    """Copy the last ``tokens`` positions of row ``row`` of a (left-padded) prefill cache
    into index ``at`` of each layer's ``(keys, values)`` storage, from column 0."""
    for (keys, values), theirs in zip(into, prefill.layers, strict=True):  # type: ignore[attr-defined]
        keys[at, :, :tokens] = theirs.keys[row, :, theirs.keys.shape[2] - tokens :]
        values[at, :, :tokens] = theirs.values[row, :, theirs.values.shape[2] - tokens :]


class SlotLayer(DynamicLayer):
    """A ``DynamicLayer`` over preallocated slot storage, writing at per-slot columns."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, owner: SlotCache) -> None:
        super().__init__()
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        # a weak reference: the owner holds its layers, and a cycle would keep every
        # generation call's storage alive until the garbage collector's next full pass
        self._k, self._v, self._owner = keys, values, weakref.proxy(owner)
        self.view(owner.length)

    def view(self, length: int) -> None:
        self.keys = self._k[:, :, :length]
        self.values = self._v[:, :, :length]

    def update(self, key_states, value_states, *args, **kwargs):
        owner = self._owner
        if key_states.shape[-2] != 1:
            raise RuntimeError("a SlotLayer takes one token per slot and step")
        self._k[owner.rows, :, owner.columns] = key_states[:, :, 0]
        self._v[owner.rows, :, owner.columns] = value_states[:, :, 0]
        self.view(owner.length + 1)
        return self.keys, self.values

    def select(self, keep: list[int], length: int) -> None:
        """Move slots ``keep`` (ascending) to the front, in place, and narrow to them: their
        first ``length`` columns (the columns past every slot's are never read)."""
        for to, src in enumerate(keep):
            if to != src:  # src > to: never a slot still to move
                self._k[to, :, :length].copy_(self._k[src, :, :length])
                self._v[to, :, :length].copy_(self._v[src, :, :length])
        self._k, self._v = self._k[: len(keep)], self._v[: len(keep)]


class SlotCache:
    """Per-layer slot storage for ``slots`` rows of up to ``capacity`` tokens each.

    ``columns[s]``: where slot ``s``'s next token goes (its row's cached length);
    ``length``: ``max(columns)``, the view the model sees before a step. The caller sets
    ``columns`` (:meth:`place`, :meth:`advance`).
    """

    def __init__(self, config: Any, prefill: object, slots: int, capacity: int) -> None:
        layers = prefill.layers  # type: ignore[attr-defined]
        k0 = layers[0].keys
        self.slots, self.capacity = slots, capacity
        self.columns = torch.zeros(slots, dtype=torch.long, device=k0.device)
        self.rows = torch.arange(slots, device=k0.device)
        self.length = 0
        self.cache = DynamicCache(config=config)
        self.cache.layers = [
            SlotLayer(
                _storage(layer.keys, slots, capacity), _storage(layer.values, slots, capacity), self
            )
            for layer in layers
        ]

    def place(self, slot: int, prefill: object, row: int, tokens: int) -> None:
        """Copy the last ``tokens`` positions of row ``row`` of a (left-padded) prefill
        cache into ``slot``, from column 0."""
        storage = [(layer._k, layer._v) for layer in self._slot_layers()]
        _copy_context(storage, slot, prefill, row, tokens)
        self.columns[slot] = tokens
        self._views()

    def advance(self, live: torch.Tensor) -> None:
        """After a step: the ``live`` slots (bool) hold one more token; the others write
        at column 0 (free slots compute a throw-away row)."""
        self.columns = torch.where(live, self.columns + 1, torch.zeros_like(self.columns))
        self._views()

    def free(self, slot: int) -> None:
        self.columns[slot] = 0

    def start(self, slot: int) -> None:
        """An empty ``slot`` for a row whose context is kept elsewhere (a
        :class:`PromptTable` entry): its first step writes at column 0."""
        self.columns[slot] = 0
        self._views()

    def mask(self) -> torch.Tensor:
        """``[slots, length + 1]`` bool: which columns each slot attends to in the next
        step (its cached tokens and the one it writes)."""
        return (
            torch.arange(self.length + 1, device=self.columns.device)[None] <= self.columns[:, None]
        )

    def select(self, keep: list[int]) -> None:
        """Keep only the slots ``keep`` (ascending), moved to the front in place: the
        decoding steps after it read fewer rows, and no second storage is allocated (a
        fresh narrower copy would raise the peak by its size at the last wave)."""
        if any(b <= a for a, b in zip(keep, keep[1:], strict=False)):
            raise ValueError(f"slots to keep must ascend: {keep}")
        for layer in self._slot_layers():
            layer.select(keep, self.length)
        self.columns = self.columns[torch.tensor(keep, device=self.columns.device)]
        self.slots = len(keep)
        self.rows = torch.arange(self.slots, device=self.columns.device)
        self._views()

    def _views(self) -> None:
        self.length = int(self.columns.max()) if self.slots else 0
        if self.length >= self.capacity:
            raise RuntimeError(f"slot cache full: {self.length} of {self.capacity} columns")
        for layer in self._slot_layers():
            layer.view(self.length)

    def _slot_layers(self) -> list[SlotLayer]:
        """The cache's layers: the SlotLayers ``__init__`` put there."""
        return cast(list[SlotLayer], self.cache.layers)


def supports_growing(cache: object) -> bool:
    """True if every layer of ``cache`` is a plain ``DynamicLayer`` (no sliding windows)."""
    layers: Any = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


class PromptTable:
    """The prompts that sampled repeats share: one entry per distinct context in flight,
    ``[entries, kv_heads, capacity, head_dim]`` per layer, written once from its prefill and
    read by every repeat's decoding steps (:mod:`mill.model.engine.prefix_attention`); each
    repeat's own slot holds only its generated tokens.

    Entries are taken lowest-free-first, so the live ones stay at the front and a step
    reads ``[:hi]`` (:meth:`bound`); a full table doubles (one copy, rare: a context
    is in flight only while one of its repeats holds a slot or is about to).
    """

    def __init__(self, prefill: object, entries: int, capacity: int) -> None:
        layers = prefill.layers  # type: ignore[attr-defined]
        self.keys = [_storage(layer.keys, entries, capacity) for layer in layers]
        self.values = [_storage(layer.values, entries, capacity) for layer in layers]
        self.lengths = [0] * entries
        self.used = [False] * entries

    def place(self, prefill: object, row: int, tokens: int) -> int:
        """Copy the last ``tokens`` positions of row ``row`` of a (left-padded) prefill
        cache into a free entry; returns the entry."""
        if all(self.used):
            self._grow()
        entry = self.used.index(False)
        _copy_context(list(zip(self.keys, self.values, strict=True)), entry, prefill, row, tokens)
        self.used[entry], self.lengths[entry] = True, tokens
        return entry

    def free(self, entry: int) -> None:
        self.used[entry], self.lengths[entry] = False, 0

    def bound(self) -> int:
        """One past the last used entry."""
        return max((e + 1 for e, used in enumerate(self.used) if used), default=0)

    def _grow(self) -> None:
        more = len(self.used)
        self.keys = [torch.cat([k, torch.zeros_like(k)]) for k in self.keys]
        self.values = [torch.cat([v, torch.zeros_like(v)]) for v in self.values]
        self.lengths += [0] * more
        self.used += [False] * more
