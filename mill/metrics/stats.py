"""Small statistics: mean, its closed-form stderr, and seeded bootstrap stderrs."""

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
    """Standard deviation (ddof=1) of ``statistic`` over ``iters`` resamples (with
    replacement) of ``values``, drawn from ``numpy.random.default_rng(seed)``; None when
    n < 2 or iters < 2."""
    return stratified_bootstrap_stderr([list(values)], statistic, iters=iters, seed=seed)


def stratified_bootstrap_stderr(
    strata: Sequence[Sequence[T]],
    statistic: Callable[[list[T]], float],
    *,
    iters: int,
    seed: int,
) -> float | None:
    """Bootstrap stderr of ``statistic`` over the pooled values of several strata (e.g. the
    tasks of a group), resampling each stratum within itself so its size stays fixed;
    None when fewer than 2 values in all or iters < 2."""
    sizes = [len(s) for s in strata]
    if sum(sizes) < 2 or iters < 2:
        return None
    rng = np.random.default_rng(seed)
    items = [list(s) for s in strata]
    stats = []
    for _ in range(iters):
        sample: list[T] = []
        for stratum, n in zip(items, sizes, strict=True):
            if n:
                sample.extend(stratum[i] for i in rng.integers(0, n, size=n))
        stats.append(statistic(sample))
    finite = [s for s in stats if math.isfinite(s)]
    if len(finite) < 2:
        return None
    return float(np.std(finite, ddof=1))


def combined_stderr(weights: Sequence[float], stderrs: Sequence[float | None]) -> float | None:
    """stderr of sum w_i X_i for independent X_i: sqrt(sum w_i^2 se_i^2); None if any
    se_i is None."""
    if any(s is None for s in stderrs):
        return None
    return float(
        math.sqrt(sum(w * w * float(s) ** 2 for w, s in zip(weights, stderrs, strict=True)))
    )
