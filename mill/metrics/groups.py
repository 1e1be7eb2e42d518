"""Aggregates over groups of results (the tasks of a task group, the subjects of a task).

micro: the metric over all samples pooled -- for a mean metric the size-weighted mean
sum (n_i/N) m_i with stderr sqrt(sum (n_i/N)^2 se_i^2) (members are independent strata);
for other metrics the metric on the pooled samples with a stratified seeded bootstrap
stderr (each member resampled within itself).
macro: the unweighted mean of the member values, stderr sqrt(sum se_i^2) / k.
Every row has a 95% interval inside the metric's bounds (:meth:`Metric.interval`; a macro
row's is value +- 1.96 stderr clipped to them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mill.metrics.base import Metric
from mill.metrics.stats import (
    combined_stderr,
    interval,
    mean,
    stratified_bootstrap_stderr,
)


class Member(Protocol):
    """A group member: aggregated rows and the per-sample values behind them."""

    metrics: dict[str, dict[str, Any]]
    values: dict[str, list[Any]]


def with_interval(
    body: dict[str, Any], metric: Metric, values: Sequence[Any], iters: int, seed: int
) -> dict[str, Any]:
    """``body`` (value, stderr, ...) with its 95% interval ``ci`` and ``ci_method``."""
    found = metric.interval(values, body["value"], body["stderr"], iters=iters, seed=seed)
    if found is not None:
        body["ci"], body["ci_method"] = list(found[0]), found[1]
    return body


def row(metric: Metric, values: Sequence[Any], iters: int, seed: int) -> dict[str, Any]:
    """One aggregated row: value, stderr, its 95% interval, n, direction (and a judged
    metric's details: n_invalid, per-turn scores, its protocol's own interval)."""
    value = metric.aggregate(values) if values else None
    body = {"value": value, "stderr": metric.stderr(values, iters=iters, seed=seed)}
    body = with_interval(body, metric, values, iters, seed)
    out = {**body, "n": len(values), "higher_is_better": metric.higher_is_better}
    details = getattr(metric, "details", None)
    if details is not None and values:
        out["details"] = details(values, iters=iters, seed=seed)
    return out


def aggregate_members(
    members: Sequence[Member], metrics: Sequence[Metric], iters: int, seed: int
) -> dict[str, dict[str, Any]]:
    """micro and macro aggregates of every metric that all members report."""
    out: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        if not all(metric.name in m.metrics and m.metrics[metric.name]["n"] for m in members):
            continue
        ns = [m.metrics[metric.name]["n"] for m in members]
        ses = [m.metrics[metric.name]["stderr"] for m in members]
        vals = [m.metrics[metric.name]["value"] for m in members]
        strata = [m.values.get(metric.name, []) for m in members]
        pooled = [v for stratum in strata for v in stratum]
        total = sum(ns)
        if metric.is_mean:
            micro_se = combined_stderr([n / total for n in ns], ses)
        else:
            micro_se = stratified_bootstrap_stderr(strata, metric.aggregate, iters=iters, seed=seed)
        micro = {"value": metric.aggregate(pooled), "stderr": micro_se}
        macro_value = mean(vals)
        macro: dict[str, Any] = {
            "value": macro_value,
            "stderr": combined_stderr([1 / len(members)] * len(members), ses),
        }
        bounds = metric.value_bounds(pooled)
        found = interval(
            [], macro_value, macro["stderr"], is_mean=False, bounds=bounds, iters=0, seed=0
        )
        if found is not None:
            macro["ci"], macro["ci_method"] = list(found[0]), found[1]
        out[metric.name] = {
            "micro": {**with_interval(micro, metric, pooled, iters, seed), "n": total},
            "macro": {**macro, "n": len(members)},
            "higher_is_better": metric.higher_is_better,
        }
    return out
