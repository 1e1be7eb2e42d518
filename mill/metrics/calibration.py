"""Expected calibration error of multiple-choice predictions (LOGPROBS)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mill.metrics.accuracy import LOGPROBS, logprobs
from mill.metrics.base import CorpusMetric, SampleValue
from mill.metrics.probability import softmax
from mill.types import Doc, Response


class ExpectedCalibrationError(CorpusMetric):
    """ece = sum_b (n_b / N) * |acc_b - conf_b| over ``bins`` equal-width confidence bins.

    Per doc: confidence c = max_i p_i with p = softmax(ll) over the choices, and
    correct = 1[argmax_i ll_i == gold]. Bin b holds the docs with c in ((b-1)/B, b/B]
    (the first bin also holds c = 0); acc_b and conf_b are the bin's mean correctness and
    mean confidence. Lower is better; stderr by seeded bootstrap over docs.
    """

    name = "ece"
    output_types = LOGPROBS
    higher_is_better = False

    def __init__(self, bins: int = 10) -> None:
        if int(bins) < 1:
            raise ValueError("ece needs bins >= 1")
        self.bins = int(bins)

    def score(self, doc: Doc, responses: Sequence[Response]) -> tuple[float, float]:
        lls = logprobs(responses)
        probs = softmax(lls)
        return (float(np.max(probs)), float(int(np.argmax(lls)) == doc.gold))

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        if not values:
            return math.nan
        conf = np.array([v[0] for v in values], dtype=float)
        correct = np.array([v[1] for v in values], dtype=float)
        # right-inclusive bins; the tolerance keeps e.g. 0.3 * 10 = 3.0000000000000004 in bin 3
        index = np.clip(np.ceil(conf * self.bins - 1e-9).astype(int) - 1, 0, self.bins - 1)
        total = 0.0
        for b in range(self.bins):
            members = index == b
            if members.any():
                gap = abs(correct[members].mean() - conf[members].mean())
                total += members.sum() / len(values) * gap
        return float(total)
