"""Group aggregates: micro (size-weighted) and macro, each with its stderr."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from mill.metrics import Accuracy, ExpectedCalibrationError
from mill.metrics.groups import aggregate_members, row
from mill.metrics.stats import (
    bootstrap_stderr,
    combined_stderr,
    stratified_bootstrap_stderr,
)


@dataclass
class Member:
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    values: dict[str, list[Any]] = field(default_factory=dict)


def _member(metric: Any, values: list[Any]) -> Member:
    return Member({metric.name: row(metric, values, 200, 0)}, {metric.name: values})


def test_mean_metric_micro_and_macro_by_hand() -> None:
    acc = Accuracy()
    a = _member(acc, [1.0, 0.0, 1.0, 1.0])  # mean .75, se .5/2 = .25
    b = _member(acc, [0.0, 0.0])  # mean 0, se 0
    out = aggregate_members([a, b], [acc], iters=200, seed=0)["acc"]
    # micro: 3/6; se sqrt((4/6)^2 .25^2 + (2/6)^2 0) = 1/6
    assert out["micro"]["value"] == pytest.approx(0.5)
    assert out["micro"]["stderr"] == pytest.approx(1 / 6)
    assert out["micro"]["n"] == 6
    # macro: (.75 + 0)/2; se sqrt(.25^2 + 0)/2
    assert out["macro"]["value"] == pytest.approx(0.375)
    assert out["macro"]["stderr"] == pytest.approx(0.125)
    assert out["macro"]["n"] == 2


def test_corpus_metric_micro_uses_a_stratified_bootstrap() -> None:
    ece = ExpectedCalibrationError(bins=4)
    a = _member(ece, [(0.75, 1.0), (0.75, 0.0), (0.5, 1.0)])
    b = _member(ece, [(0.25, 0.0), (0.9, 1.0)])
    out = aggregate_members([a, b], [ece], iters=300, seed=5)["ece"]
    pooled = a.values["ece"] + b.values["ece"]
    assert out["micro"]["value"] == pytest.approx(ece.aggregate(pooled))
    expected = stratified_bootstrap_stderr(
        [a.values["ece"], b.values["ece"]], ece.aggregate, iters=300, seed=5
    )
    assert out["micro"]["stderr"] == expected and expected > 0
    se_a, se_b = a.metrics["ece"]["stderr"], b.metrics["ece"]["stderr"]
    assert out["macro"]["stderr"] == pytest.approx(math.sqrt(se_a**2 + se_b**2) / 2)


def test_missing_stderr_propagates_as_none() -> None:
    acc = Accuracy()
    out = aggregate_members([_member(acc, [1.0]), _member(acc, [0.0, 1.0])], [acc], 10, 0)
    assert out["acc"]["micro"]["stderr"] is None and out["acc"]["macro"]["stderr"] is None
    assert combined_stderr([0.5, 0.5], [0.2, 0.4]) == pytest.approx(math.sqrt(0.01 + 0.04))


def test_bootstrap_is_seeded_and_stratified_keeps_sizes() -> None:
    values = [float(i % 2) for i in range(20)]
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    assert bootstrap_stderr(values, mean, iters=50, seed=1) == bootstrap_stderr(
        values, mean, iters=50, seed=1
    )
    assert bootstrap_stderr(values, mean, iters=50, seed=1) != bootstrap_stderr(
        values, mean, iters=50, seed=2
    )
    # a stratum of constant values resampled within itself never mixes with the other
    sizes = stratified_bootstrap_stderr([[1.0] * 5, [0.0] * 5], mean, iters=50, seed=0)
    assert sizes == pytest.approx(0.0)
