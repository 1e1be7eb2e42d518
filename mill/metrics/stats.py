"""Small statistics: mean, its closed-form stderr, and a seeded bootstrap stderr."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean (nan for no values)."""
    return float(np.mean(values)) if len(values) else math.nan


def mean_stderr(values: Sequence[float]) -> float | None:
    """std(values, ddof=1) / sqrt(n); None when n < 2."""
    if len(values) < 2:
        return None
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))


def bootstrap_stderr(
    values: Sequence[T],
    statistic: Callable[[list[T]], float],
    *,
    iters: int,
    seed: int,
) -> float | None:
    """Standard deviation of ``statistic`` over ``iters`` resamples (with replacement) of
    ``values``, drawn from ``numpy.random.default_rng(seed)``; None when n < 2 or iters < 2."""
    n = len(values)
    if n < 2 or iters < 2:
        return None
    rng = np.random.default_rng(seed)
    items = list(values)
    stats = [statistic([items[i] for i in rng.integers(0, n, size=n)]) for _ in range(iters)]
    return float(np.std(stats, ddof=1))
