"""The 95% intervals every report shows (:func:`mill.metrics.stats.interval`): an interval of
a bounded quantity never leaves its bounds (issue 26, item 12)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mill.metrics import Accuracy, ExpectedCalibrationError
from mill.metrics.f1 import F1
from mill.metrics.groups import aggregate_members, row
from mill.metrics.repeats import PassAtK
from mill.metrics.stats import (
    clipped_interval,
    interval,
    percentile_bootstrap_mean,
    wilson_interval,
)
from tests.metrics.test_groups import _member


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # the cases: n=4, acc 0.25 (was [-0.2400, 0.7400]) and 0.75 (was [0.26, 1.24]);
        # Wilson 95% for 1/4 is (0.0456, 0.6994), for 3/4 its mirror
        ([1.0, 0.0, 0.0, 0.0], (0.0456, 0.6994)),
        ([1.0, 1.0, 1.0, 0.0], (0.3006, 0.9544)),
        ([0.0, 0.0, 0.0, 0.0], (0.0, 0.4899)),
        ([1.0, 1.0, 1.0, 1.0], (0.5101, 1.0)),
    ],
)
def test_accuracy_rows_get_the_wilson_interval_inside_0_1(values, expected) -> None:
    body = row(Accuracy(), values, 200, 0)
    assert body["ci_method"] == "wilson"
    lo, hi = body["ci"]
    assert (round(lo, 4), round(hi, 4)) == expected
    assert 0.0 <= lo <= body["value"] <= hi <= 1.0
    # the normal interval it replaces left [0, 1] for the first two
    normal = clipped_interval(body["value"], body["stderr"], None)
    assert normal is not None
    if values.count(1.0) in (1, 3):
        assert normal[0] < 0 or normal[1] > 1


def test_wilson_by_its_formula() -> None:
    p, n, z = 0.25, 4, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(1, 4) == pytest.approx((centre - half, centre + half))
    assert wilson_interval(0, 0) is None


def test_pass_at_k_gets_a_percentile_bootstrap_inside_0_1() -> None:
    # per-doc pass@1 estimates from 4 samples: bounded means that are not 0/1
    values = [0.0, 0.0, 0.0, 0.5]
    body = row(PassAtK(k=1), values, 1000, 1234)
    assert body["ci_method"] == "percentile bootstrap"
    lo, hi = body["ci"]
    assert 0.0 <= lo <= body["value"] <= hi <= 1.0
    # exactly the seeded resampling of the documented recipe
    rng = np.random.default_rng(1234)
    means = np.asarray(values)[rng.integers(0, 4, size=(1000, 4))].mean(-1)
    assert (lo, hi) == tuple(np.quantile(means, [0.025, 0.975]))
    assert percentile_bootstrap_mean(values, iters=1000, seed=1234) == (lo, hi)
    # the normal interval of the same numbers leaves [0, 1]
    normal = clipped_interval(body["value"], body["stderr"], None)
    assert normal is not None and normal[0] < 0
    assert row(F1(), [0.1, 0.9, 0.5, 1.0], 500, 0)["ci_method"] == "percentile bootstrap"


def test_bounded_corpus_metrics_are_clipped_unbounded_ones_are_not() -> None:
    assert clipped_interval(0.05, 0.1, (0.0, 1.0)) == (0.0, pytest.approx(0.246))
    found = interval([], 0.05, 0.1, is_mean=False, bounds=(0.0, 1.0), iters=0, seed=0)
    assert found is not None and found[1] == "normal, clipped" and found[0][0] == 0.0
    found = interval([], 5.0, 4.0, is_mean=False, bounds=None, iters=0, seed=0)
    assert found == ((5.0 - 7.84, 5.0 + 7.84), "normal")
    assert ExpectedCalibrationError.bounds == (0.0, 1.0)
    assert interval([], None, 0.1, is_mean=False, bounds=None, iters=0, seed=0) is None


def test_group_rows_stay_inside_0_1() -> None:
    acc = Accuracy()
    a = _member(acc, [1.0, 1.0, 1.0, 1.0])
    b = _member(acc, [1.0, 1.0, 1.0, 1.0])
    c = _member(acc, [1.0, 1.0, 1.0, 0.0])
    out = aggregate_members([a, b, c], [acc], iters=200, seed=0)["acc"]
    assert out["micro"]["ci_method"] == "wilson"
    assert out["macro"]["ci_method"] == "normal, clipped"
    for kind in ("micro", "macro"):
        lo, hi = out[kind]["ci"]
        assert 0.0 <= lo <= out[kind]["value"] <= hi <= 1.0
    # macro of two perfect members and one at 3/4: the unclipped interval passes 1
    macro = out["macro"]
    assert macro["value"] + 1.96 * macro["stderr"] > 1.0 and macro["ci"][1] == 1.0


def test_perplexity_intervals_are_on_the_log_scale_and_never_negative() -> None:
    """Issue 35, item 4: 5 documents whose word perplexity is about 1e104 (log-likelihoods
    of -240 to -40 nats a word) got the normal interval [-1e104, 1e104]; on the log scale
    it is positive and holds the value. Checked against the same bootstrap by hand."""
    from mill.metrics.perplexity import BitsPerByte, BytePerplexity, Perplexity, WordPerplexity

    pairs = [(-240.0 * 10, 10.0), (-240.0 * 12, 12.0), (-40.0 * 8, 8.0), (-300.0 * 9, 9.0)]
    pairs.append((-230.0 * 11, 11.0))
    metric = WordPerplexity()
    value = metric.aggregate(pairs)
    assert 1e90 < value < 1e110
    stderr = metric.stderr(pairs, iters=500, seed=1)
    assert stderr is not None and value - 1.96 * stderr < 0  # the normal form goes below 0
    (lo, hi), method = row(metric, pairs, 500, 1)["ci"], row(metric, pairs, 500, 1)["ci_method"]
    assert method == "normal, log scale" and 0 < lo < value < hi < math.inf
    rng = np.random.default_rng(1)
    logs = []
    for _ in range(500):
        pick = [pairs[i] for i in rng.integers(0, 5, size=5)]
        logs.append(-sum(p[0] for p in pick) / sum(p[1] for p in pick))
    se = float(np.std(logs, ddof=1))
    assert lo == pytest.approx(value * math.exp(-1.96 * se))
    assert hi == pytest.approx(value * math.exp(1.96 * se))
    # every perplexity of the family, on a few documents: positive intervals holding it
    lls = [-1.0, -9.0, -0.5, -30.0]
    for metric, values in (
        (Perplexity(), lls),
        (BytePerplexity(), [(ll, 3.0) for ll in lls]),
        (BitsPerByte(), [(ll, 3.0) for ll in lls]),
    ):
        found = row(metric, values, 200, 0)
        assert 0 <= found["ci"][0] <= found["value"] <= found["ci"][1], (metric.name, found)
