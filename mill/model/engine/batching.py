"""Batches formed by a token budget over length-sorted work items.

A batch holds items while ``rows * widest`` (the padded tensor size) stays within the
budget, so short items pack densely, long ones run a few at a time, and nobody tunes a
batch size. An explicit ``max_rows`` caps the row count instead, or as well. Items are
sorted longest first, and a batch is also closed when the next item is much shorter than
the batch's widest (``min_fill``), which bounds the padding to about ``1 - min_fill`` of
the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

MIN_FILL = 0.75
"""Default: an item shorter than 3/4 of the batch's widest item starts a new batch."""


def budget_batches(
    items: Sequence[T],
    cost: Callable[[T], tuple[int, int]],
    token_budget: int | None,
    max_rows: int | None = None,
    min_fill: float = MIN_FILL,
) -> Iterator[list[T]]:
    """Yield consecutive batches of ``items`` (already sorted longest first).

    ``cost(item)`` gives (rows the item adds, padded width it needs). A batch is closed
    when adding the next item would exceed ``token_budget`` padded tokens or ``max_rows``
    rows, or (under a token budget) when the item's width is below ``min_fill`` times the
    batch's width; an item too large on its own still gets a batch of its own.
    """
    batch: list[T] = []
    rows = width = 0
    for item in items:
        item_rows, item_width = cost(item)
        new_rows, new_width = rows + item_rows, max(width, item_width)
        over_budget = token_budget is not None and (
            new_rows * new_width > token_budget or item_width < min_fill * width
        )
        over_rows = max_rows is not None and new_rows > max_rows
        if batch and (over_budget or over_rows):
            yield batch
            batch, rows, width = [], 0, 0
            new_rows, new_width = item_rows, item_width
        batch.append(item)
        rows, width = new_rows, new_width
    if batch:
        yield batch
