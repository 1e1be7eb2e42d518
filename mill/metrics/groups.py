"""Aggregates over groups of results (the tasks of a task group, the subjects of a task).

micro: the metric over all samples pooled -- for a mean metric the size-weighted mean
sum (n_i/N) m_i with stderr sqrt(sum (n_i/N)^2 se_i^2) (members are independent strata);
for other metrics the metric on the pooled samples with a stratified seeded bootstrap
stderr (each member resampled within itself).
macro: the unweighted mean of the member values, stderr sqrt(sum se_i^2) / k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mill.metrics.base import Metric
from mill.metrics.stats import combined_stderr, mean, stratified_bootstrap_stderr


class Member(Protocol):
    """A group member: aggregated rows and the per-sample values behind them."""

    metrics: dict[str, dict[str, Any]]
    values: dict[str, list[Any]]


def row(metric: Metric, values: Sequence[Any], iters: int, seed: int) -> dict[str, Any]:
    """One aggregated row: value, stderr, n, direction (and a judged metric's details:
    n_invalid, per-turn scores, CI bounds)."""
    out = {
        "value": metric.aggregate(values) if values else None,
        "stderr": metric.stderr(values, iters=iters, seed=seed),
        "n": len(values),
        "higher_is_better": metric.higher_is_better,
    }
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
        out[metric.name] = {
            "micro": {"value": metric.aggregate(pooled), "stderr": micro_se, "n": total},
            "macro": {
                "value": mean(vals),
                "stderr": combined_stderr([1 / len(members)] * len(members), ses),
                "n": len(members),
            },
            "higher_is_better": metric.higher_is_better,
        }
    return out
