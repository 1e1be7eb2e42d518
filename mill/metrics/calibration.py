"""Expected calibration error of multiple-choice predictions (LOGPROBS).

The one binning of confidences Mill has: :func:`calibration_bins` serves both the ``ece``
metric and the report's reliability diagrams (:mod:`mill.report.calibration`), so the
number on the page is the metric's number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mill.metrics.accuracy import LOGPROBS, logprobs
from mill.metrics.base import CorpusMetric, SampleValue
from mill.metrics.probability import softmax
from mill.schema import typed_one
from mill.types import Doc, Response


@dataclass(frozen=True)
class CalibrationBin:
    """One non-empty confidence bin: (lo, hi], mean correctness and mean confidence."""

    lo: float
    hi: float
    count: int
    accuracy: float
    confidence: float


def confidence_and_hit(lls: Sequence[float] | np.ndarray, gold: Any) -> tuple[float, bool]:
    """Confidence c = max_i softmax(ll)_i and whether the argmax choice is gold (or one of
    the golds, when gold is a list). A tie picks the first choice, as ``acc`` does."""
    scores = np.asarray(lls, dtype=np.float64)
    prediction = int(np.argmax(scores))
    confidence = float(np.max(softmax(scores)))
    if isinstance(gold, (list, tuple)):
        return confidence, prediction in [int(g) for g in gold]
    return confidence, bool(prediction == gold)


def calibration_bins(
    confidence: Sequence[float] | np.ndarray, correct: Sequence[float] | np.ndarray, bins: int
) -> list[CalibrationBin]:
    """The non-empty bins of ``bins`` equal-width bins on [0, 1].

    Bin b holds the confidences c with edge_b < c <= edge_(b+1) (right-inclusive, Guo et al.
    2017), where edge_b = b / bins (correctly rounded); c = 0 goes in the first bin. The test is
    against the same float edges the bins report, so a confidence exactly on an edge always
    lands in the bin whose upper edge it is.
    """
    if int(bins) < 1:
        raise ValueError("calibration needs bins >= 1")
    conf = np.asarray(confidence, dtype=np.float64)
    hit = np.asarray(correct, dtype=np.float64)
    edges = np.arange(int(bins) + 1) / int(bins)
    which = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, int(bins) - 1)
    out = []
    for b in range(int(bins)):
        members = which == b
        count = int(members.sum())
        if count:
            out.append(
                CalibrationBin(
                    float(edges[b]),
                    float(edges[b + 1]),
                    count,
                    float(hit[members].mean()),
                    float(conf[members].mean()),
                )
            )
    return out


def expected_calibration_error(
    confidence: Sequence[float] | np.ndarray, correct: Sequence[float] | np.ndarray, bins: int
) -> float:
    """sum_b (n_b / N) * |acc_b - conf_b| over :func:`calibration_bins`; nan for no docs."""
    n = len(confidence)
    if n == 0:
        return math.nan
    return float(
        sum(
            b.count / n * abs(b.accuracy - b.confidence)
            for b in calibration_bins(confidence, correct, bins)
        )
    )


class ExpectedCalibrationError(CorpusMetric):
    """ece = sum_b (n_b / N) * |acc_b - conf_b| over ``bins`` equal-width confidence bins.

    Per doc: confidence c = max_i p_i with p = softmax(ll) over the choices, and
    correct = 1[argmax_i ll_i == gold]. Bin b holds the docs with c in ((b-1)/B, b/B]
    (the first bin also holds c = 0; :func:`calibration_bins`); acc_b and conf_b are the
    bin's mean correctness and mean confidence. Lower is better; stderr by seeded
    bootstrap over docs.
    """

    name = "ece"
    output_types = LOGPROBS
    higher_is_better = False
    bounds = (0.0, 1.0)

    def __init__(self, bins: int = 10) -> None:
        self.bins = typed_one("metrics.ece.bins", bins)

    def score(self, doc: Doc, responses: Sequence[Response]) -> tuple[float, float]:
        confidence, hit = confidence_and_hit(logprobs(responses), doc.gold)
        return (confidence, float(hit))

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        if not values:
            return math.nan
        conf = [float(v[0]) for v in values]
        correct = [float(v[1]) for v in values]
        return expected_calibration_error(conf, correct, self.bins)
