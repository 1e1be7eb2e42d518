"""Small statistics: mean, its closed-form stderr, seeded bootstrap stderrs, the 95%
intervals every report shows (:func:`interval`), and the paired tests that compare two runs
(paired bootstrap, McNemar's exact test)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")

Statistic = Callable[[np.ndarray], np.ndarray]
"""A corpus aggregate of docs given by index: 1-D indices -> scalar, 2-D -> one per row."""

CHUNK = 1000
"""Resamples drawn and evaluated at once by :func:`paired_bootstrap`."""

Z95 = 1.96
"""The normal quantile of every 95% interval Mill reports."""

Bounds = tuple[float, float]
"""The range a metric's value cannot leave, e.g. (0, 1) for an accuracy."""


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean (nan for no values)."""
    return float(np.mean(values)) if len(values) else math.nan


def mean_stderr(values: Sequence[float], center: float | None = None) -> float | None:
    """The sample standard deviation (ddof=1) over sqrt(n); None when n < 2.

    Computed as lm-eval 0.4.13's ``mean_stderr`` and lighteval 0.13's do, to the last bit:
    the squared deviations from the mean summed in the values' order (Python's ``sum``),
    then divided and rooted. ``center`` is that mean: :func:`mean` by default (numpy's
    pairwise sum, as lighteval's ``np.mean``); lm-eval's own tasks pass lm-eval's
    ``sum / len`` (the two are equal whenever the values are 0 and 1).
    """
    n = len(values)
    if n < 2:
        return None
    mu = mean(values) if center is None else center
    return math.sqrt(sum((x - mu) ** 2 for x in values) / (n - 1)) / math.sqrt(n)


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
    present = [s for s in stderrs if s is not None]
    if len(present) < len(stderrs):
        return None
    return float(
        math.sqrt(sum(w * w * float(s) ** 2 for w, s in zip(weights, present, strict=True)))
    )


def paired_bootstrap(
    stat_a: Statistic, stat_b: Statistic, n: int, iters: int, seed: int
) -> np.ndarray:
    """Differences ``stat_b(idx) - stat_a(idx)`` over ``iters`` paired resamples: ``rng =
    numpy.random.default_rng(seed)``, each resample ``idx = rng.integers(0, n, size=n)``
    picks the same docs from both runs (drawn in chunks of :data:`CHUNK` rows, one row per
    resample, so ``stat_*`` see 2-D index arrays)."""
    rng = np.random.default_rng(seed)
    out = np.empty(iters, dtype=np.float64)
    for start in range(0, iters, CHUNK):
        rows = min(CHUNK, iters - start)
        idx = np.stack([rng.integers(0, n, size=n) for _ in range(rows)])
        out[start : start + rows] = stat_b(idx) - stat_a(idx)
    return out


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """McNemar's exact test for paired 0/1 outcomes: (n10, n01, p) with n10 pairs right in
    ``a`` only, n01 right in ``b`` only, and p the two-sided binomial test of n01 successes
    in n01 + n10 trials at 1/2 (``scipy.stats.binomtest``); p = 1 when n01 + n10 = 0."""
    from scipy.stats import binomtest

    a, b = a.astype(bool), b.astype(bool)
    n10, n01 = int(np.sum(a & ~b)), int(np.sum(~a & b))
    if n10 + n01 == 0:
        return n10, n01, 1.0
    return n10, n01, float(binomtest(n01, n10 + n01, 0.5).pvalue)


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion p = successes / n (None when n = 0):
    (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), always inside [0, 1]."""
    if n <= 0:
        return None
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def clipped_interval(
    value: float | None, stderr: float | None, bounds: Bounds | None, z: float = Z95
) -> tuple[float, float] | None:
    """value +- z * stderr, cut to ``bounds`` when given (None without a value or stderr)."""
    if value is None or stderr is None or not math.isfinite(value):
        return None
    lo, hi = value - z * stderr, value + z * stderr
    if bounds is not None:
        lo, hi = max(bounds[0], lo), min(bounds[1], hi)
    return lo, hi


def percentile_bootstrap_mean(
    values: Sequence[float], *, iters: int, seed: int, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile interval of the mean: the (1 - level)/2 and (1 + level)/2 quantiles
    (numpy's linear) of the mean over ``iters`` resamples with replacement, ``rng =
    numpy.random.default_rng(seed)``, drawn in chunks of :data:`CHUNK`. Inside the range
    of ``values``, so inside any bounds they respect. None when n < 2 or iters < 2."""
    arr = np.asarray(values, dtype=np.float64)
    n = len(arr)
    if n < 2 or iters < 2:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(iters, dtype=np.float64)
    for start in range(0, iters, CHUNK):
        rows = min(CHUNK, iters - start)
        means[start : start + rows] = arr[rng.integers(0, n, size=(rows, n))].mean(-1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _numbers(values: Sequence[object]) -> list[float] | None:
    """The values as floats (None values dropped), or None when some are not numbers."""
    out = []
    for v in values:
        if v is None:
            continue
        if isinstance(v, (bool, int, float, np.floating, np.integer)):
            out.append(float(v))
        else:
            return None
    return out


def interval(
    values: Sequence[object],
    value: float | None,
    stderr: float | None,
    *,
    is_mean: bool,
    bounds: Bounds | None,
    iters: int,
    seed: int,
) -> tuple[tuple[float, float], str] | None:
    """The 95% interval of an aggregate and the name of its method, so that the interval of
    a bounded quantity never leaves its bounds:

    * ``wilson``: a mean of 0/1 values (accuracies): :func:`wilson_interval`;
    * ``percentile bootstrap``: a mean of other values with ``bounds`` (pass@k, f1):
      :func:`percentile_bootstrap_mean` (seeded);
    * ``normal, clipped``: any other aggregate with ``bounds``: value +- 1.96 stderr cut to
      them (:func:`clipped_interval`; group macro rows too);
    * ``normal``: other unbounded aggregates: value +- 1.96 stderr (perplexities have
      their own, on the log scale: :func:`log_scale_interval`).

    None when there is no value (or, for the normal forms, no stderr)."""
    if value is None or not math.isfinite(value):
        return None
    numbers = _numbers(values) if is_mean else None
    if numbers and all(v in (0.0, 1.0) for v in numbers):
        found = wilson_interval(sum(numbers), len(numbers))
        return None if found is None else (found, "wilson")
    if numbers and bounds is not None:
        found = percentile_bootstrap_mean(numbers, iters=iters, seed=seed)
        if found is not None:
            return (max(bounds[0], found[0]), min(bounds[1], found[1])), "percentile bootstrap"
    found = clipped_interval(value, stderr, bounds)
    if found is None:
        return None
    return found, "normal" if bounds is None else "normal, clipped"


def log_scale_interval(
    values: Sequence[T],
    value: float | None,
    log_statistic: Callable[[list[T]], float],
    *,
    iters: int,
    seed: int,
    z: float = Z95,
) -> tuple[tuple[float, float], str] | None:
    """The 95% interval of a positive, unbounded aggregate that is the exponential of
    ``log_statistic`` (perplexities): exp(log value +- z se), se = the bootstrap stderr of
    ``log_statistic`` (:func:`bootstrap_stderr`, the same resamples as the value's own
    stderr). On the log scale the quantity is a mean-like one, so the interval is never
    negative and stays in proportion (a perplexity of 1e104 on 5 documents is not
    ``[-1e104, 1e104]``). None without a positive finite value or a stderr."""
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    se = bootstrap_stderr(list(values), log_statistic, iters=iters, seed=seed)
    if se is None:
        return None
    centre = math.log(value)

    def back(x: float) -> float:
        try:
            return math.exp(x)
        except OverflowError:
            return math.inf

    return (back(centre - z * se), back(centre + z * se)), "normal, log scale"


def bootstrap_ci(
    values: Sequence[T],
    statistic: Callable[[list[T]], float],
    *,
    iters: int,
    seed: int,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of ``statistic``: the ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles (numpy's linear interpolation) of its values over
    ``iters`` resamples of ``values`` drawn as :func:`bootstrap_stderr` draws them;
    (None, None) when n < 2 or iters < 2."""
    n = len(values)
    if n < 2 or iters < 2:
        return None, None
    rng = np.random.default_rng(seed)
    items = list(values)
    stats = [statistic([items[i] for i in rng.integers(0, n, size=n)]) for _ in range(iters)]
    finite = np.array([s for s in stats if math.isfinite(s)])
    if len(finite) < 2:
        return None, None
    tail = (1 - level) / 2
    return float(np.quantile(finite, tail)), float(np.quantile(finite, 1 - tail))


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> tuple[float, float | None]:
    """Cohen's kappa of two raters' labels on the same items, ``(p_o - p_e) / (1 - p_e)``
    with p_o the observed agreement and p_e the agreement expected from each rater's
    label shares, and its large-sample stderr ``sqrt(p_o (1 - p_o) / (n (1 - p_e)^2))``
    (Cohen 1960); kappa is 1 (stderr None) when p_e = 1."""
    n = len(a)
    if n == 0 or n != len(b):
        raise ValueError("cohen_kappa needs two equally long, non-empty label lists")
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    labels = set(a) | set(b)
    p_e = sum((list(a).count(k) / n) * (list(b).count(k) / n) for k in labels)
    if p_e >= 1:
        return 1.0, None
    kappa = (p_o - p_e) / (1 - p_e)
    return float(kappa), float(math.sqrt(p_o * (1 - p_o) / (n * (1 - p_e) ** 2)))
