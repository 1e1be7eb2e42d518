"""Calibration of multiple-choice (LOGPROBS) answers, from the samples of a run.

For each doc, the model's confidence is the largest probability of a softmax over the
choices' log-likelihoods (``response.logprobs``); the answer is that choice, correct when it
is the gold choice (or one of them). Docs are binned by confidence into equal-width,
right-inclusive bins on [0, 1] by the ``ece`` metric's own code
(:mod:`mill.metrics.calibration`), and

    ECE = sum over bins b of (n_b / N) * |accuracy_b - mean confidence_b|

(expected calibration error, Guo et al. 2017). The answer here is the unnormalised argmax,
i.e. the one ``acc`` scores.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from mill.metrics.calibration import (
    CalibrationBin,
    calibration_bins,
    confidence_and_hit,
    expected_calibration_error,
)
from mill.record import SampleRecord


@dataclass
class Reliability:
    """A reliability diagram's data and its summary numbers."""

    task: str
    n: int
    ece: float
    accuracy: float
    mean_confidence: float
    chance: float
    bins: list[CalibrationBin]


def confidences(samples: Iterable[SampleRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per doc: max softmax probability, whether its argmax is gold, and 1/#choices
    (:func:`mill.metrics.calibration.confidence_and_hit`, as the ``ece`` metric scores a doc).

    Docs with fewer than two scored choices are skipped."""
    conf, correct, chance = [], [], []
    for sample in samples:
        logprobs = sample.response.logprobs
        if len(logprobs) < 2:
            continue
        confidence, hit = confidence_and_hit(logprobs, sample.gold)
        conf.append(confidence)
        correct.append(hit)
        chance.append(1.0 / len(logprobs))
    return np.asarray(conf), np.asarray(correct, dtype=bool), np.asarray(chance)


def reliability(
    task: str, samples: Iterable[SampleRecord], num_bins: int = 10
) -> Reliability | None:
    """Binned confidence vs accuracy and ECE, binned by the ``ece`` metric's own
    :func:`mill.metrics.calibration.calibration_bins`; None when no doc has two or more
    choices."""
    conf, correct, chance = confidences(samples)
    if conf.size == 0:
        return None
    bins = calibration_bins(conf, correct, num_bins)
    return Reliability(
        task=task,
        n=int(conf.size),
        ece=expected_calibration_error(conf, correct, num_bins),
        accuracy=float(correct.mean()),
        mean_confidence=float(conf.mean()),
        chance=float(chance.mean()),
        bins=bins,
    )
