"""The one confidence binning (``ece`` metric and reliability diagrams) on edge values."""

from __future__ import annotations

import numpy as np
import pytest

from mill.metrics.calibration import (
    ExpectedCalibrationError,
    calibration_bins,
    confidence_and_hit,
    expected_calibration_error,
)


def test_confidences_on_edges_go_to_the_bin_they_close() -> None:
    # 0 opens the first bin; every other edge value belongs to the bin it is the top of
    for k in range(11):
        (only,) = calibration_bins([k / 10], [1.0], 10)
        assert only.hi == pytest.approx(max(k, 1) / 10, abs=0)
        assert only.count == 1
    # just above an edge: the next bin
    (above,) = calibration_bins([np.nextafter(0.5, 1.0)], [1.0], 10)
    assert (above.lo, above.hi) == (0.5, 0.6)
    # just below: the bin the edge closes
    (below,) = calibration_bins([np.nextafter(0.5, 0.0)], [1.0], 10)
    assert (below.lo, below.hi) == (0.4, 0.5)


def test_ece_on_edge_values_by_hand() -> None:
    # bins of width 1/4: [0, .25] holds 0 (wrong) and .25 (right): acc .5, conf .125;
    # (.25, .5] holds .5 (right); (.5, .75] holds .75 (wrong); (.75, 1] holds 1 (right)
    conf = [0.0, 0.25, 0.5, 0.75, 1.0]
    right = [0.0, 1.0, 1.0, 0.0, 1.0]
    bins = calibration_bins(conf, right, 4)
    assert [(b.lo, b.hi, b.count) for b in bins] == [
        (0.0, 0.25, 2),
        (0.25, 0.5, 1),
        (0.5, 0.75, 1),
        (0.75, 1.0, 1),
    ]
    assert [b.accuracy for b in bins] == [0.5, 1.0, 0.0, 1.0]
    expected = (2 * 0.375 + 0.5 + 0.75 + 0.0) / 5
    assert expected_calibration_error(conf, right, 4) == pytest.approx(expected)
    values = list(zip(conf, right, strict=True))
    assert ExpectedCalibrationError(bins=4).aggregate(values) == pytest.approx(expected)


def test_two_docs_of_the_issue() -> None:
    """Confidence 0.5 right and 0.55 wrong: 0.5 closes (0.4, 0.5], 0.55 is in (0.5, 0.6]:
    ECE = (0.5 + 0.55) / 2 = 0.525 (a left-inclusive binning put both in one bin: 0.025)."""
    values = [(0.5, 1.0), (0.55, 0.0)]
    assert ExpectedCalibrationError().aggregate(values) == pytest.approx(0.525)


def test_confidence_and_hit() -> None:
    assert confidence_and_hit([0.0, 0.0], 0) == (0.5, True)  # a tie picks the first choice
    assert confidence_and_hit([0.0, 0.0], 1) == (0.5, False)
    assert confidence_and_hit([np.log(0.2), np.log(0.8)], [0, 1]) == (pytest.approx(0.8), True)
    assert confidence_and_hit([0.0, -2000.0], 0) == (1.0, True)
    assert np.isnan(expected_calibration_error([], [], 10))
    with pytest.raises(ValueError):
        calibration_bins([0.5], [1.0], 0)
