"""Reliability data and ECE on a hand-made set of docs."""

from __future__ import annotations

import math

import pytest

from mill.metrics.calibration import ExpectedCalibrationError
from mill.record import SampleRecord
from mill.report.calibration import reliability
from tests.helpers import sample_record


def _doc(probs: list[float], gold) -> SampleRecord:
    return sample_record(gold=gold, logprobs=[math.log(p) for p in probs])


def test_reliability_matches_a_hand_computation() -> None:
    docs = [
        _doc([0.72, 0.18, 0.1], 0),  # confidence 0.72, right
        _doc([0.07, 0.93], 0),  # 0.93, wrong
        _doc([0.55, 0.45], [0, 1]),  # 0.55, right (one of two golds)
        _doc([0.25, 0.25, 0.25, 0.25], 2),  # 0.25, a tie picks choice 0: wrong
        sample_record(gold=0, logprobs=[-1.0]),  # one choice: skipped
    ]
    rel = reliability("t", docs)
    assert rel is not None and rel.n == 4
    # one doc in each of bins 2, 5, 7, 9
    assert [b.lo for b in rel.bins] == pytest.approx([0.2, 0.5, 0.7, 0.9])
    assert [b.count for b in rel.bins] == [1, 1, 1, 1]
    assert [b.accuracy for b in rel.bins] == [0.0, 1.0, 1.0, 0.0]
    assert rel.ece == pytest.approx((0.25 + 0.45 + 0.28 + 0.93) / 4)
    assert rel.accuracy == 0.5
    assert rel.mean_confidence == pytest.approx((0.72 + 0.93 + 0.55 + 0.25) / 4)
    assert rel.chance == pytest.approx((1 / 3 + 1 / 2 + 1 / 2 + 1 / 4) / 4)


def test_full_confidence_goes_to_the_last_bin_and_empty_input_gives_none() -> None:
    rel = reliability("t", [sample_record(gold=0, logprobs=[0.0, -2000.0])])
    assert rel is not None and rel.bins[0].lo == 0.9 and rel.bins[0].confidence == 1.0
    assert rel.ece == 0.0
    assert reliability("t", [sample_record(gold=0, logprobs=[])]) is None


def test_page_and_metric_agree_on_edge_confidences() -> None:
    """The two docs that once gave ECE 0.525 from the metric and 0.025 on the page: a tie
    (confidence exactly 0.5, right) and 0.55 (wrong)."""
    docs = [_doc([0.5, 0.5], 0), _doc([0.45, 0.55], 0)]
    rel = reliability("t", docs)
    assert rel is not None
    # 0.5 closes the bin (0.4, 0.5]; 0.55 lies in (0.5, 0.6]
    assert [(b.lo, b.hi, b.count) for b in rel.bins] == [(0.4, 0.5, 1), (0.5, 0.6, 1)]
    assert rel.ece == pytest.approx((0.5 + 0.55) / 2)
    metric = ExpectedCalibrationError()
    values = [(0.5, 1.0), (0.55, 0.0)]
    assert metric.aggregate(values) == pytest.approx(rel.ece)
    # full confidence closes the last bin; a uniform doc over 4 choices closes (0.2, 0.3]
    full = reliability("t", [_doc([1.0, 1e-300], 0), _doc([0.25] * 4, 1)])
    assert full is not None
    assert [(b.lo, b.hi) for b in full.bins] == [(0.2, 0.3), (0.9, 1.0)]
