"""Calibration of multiple-choice (LOGPROBS) answers, from the samples of a run.

For each doc, the model's confidence is the largest probability of a softmax over the
choices' log-likelihoods (``response.logprobs``); the answer is that choice, correct when it
is the gold choice (or one of them). Docs are binned by confidence into equal-width bins on
[0, 1] and

    ECE = sum over bins b of (n_b / N) * |accuracy_b - mean confidence_b|

(expected calibration error, Guo et al. 2017). The answer here is the unnormalised argmax,
i.e. the one ``acc`` scores.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Bin:
    lo: float
    hi: float
    count: int
    accuracy: float
    confidence: float


@dataclass
class Reliability:
    """A reliability diagram's data and its summary numbers."""

    task: str
    n: int
    ece: float
    accuracy: float
    mean_confidence: float
    chance: float
    bins: list[Bin]


def _is_correct(prediction: int, gold: Any) -> bool:
    if isinstance(gold, list):
        return prediction in gold
    return prediction == gold


def confidences(samples: Iterable[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per doc: max softmax probability, whether its argmax is gold, and 1/#choices.

    Docs with fewer than two scored choices are skipped."""
    from scipy.special import softmax

    conf, correct, chance = [], [], []
    for sample in samples:
        logprobs = (sample.get("response") or {}).get("logprobs") or []
        if len(logprobs) < 2:
            continue
        probs = softmax(np.asarray(logprobs, dtype=np.float64))
        prediction = int(np.argmax(probs))
        conf.append(float(probs[prediction]))
        correct.append(_is_correct(prediction, sample.get("gold")))
        chance.append(1.0 / len(logprobs))
    return np.asarray(conf), np.asarray(correct, dtype=bool), np.asarray(chance)


def reliability(
    task: str, samples: Iterable[dict[str, Any]], num_bins: int = 10
) -> Reliability | None:
    """Binned confidence vs accuracy and ECE; None when no doc has two or more choices."""
    conf, correct, chance = confidences(samples)
    if conf.size == 0:
        return None
    edges = np.linspace(0.0, 1.0, num_bins + 1)
    # bin i holds edges[i] <= c < edges[i+1]; a confidence of exactly 1.0 goes in the last bin
    which = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, num_bins - 1)
    bins: list[Bin] = []
    ece = 0.0
    for i in range(num_bins):
        mask = which == i
        count = int(mask.sum())
        if count == 0:
            continue
        acc, mean_conf = float(correct[mask].mean()), float(conf[mask].mean())
        ece += count / conf.size * abs(acc - mean_conf)
        bins.append(Bin(float(edges[i]), float(edges[i + 1]), count, acc, mean_conf))
    return Reliability(
        task=task,
        n=int(conf.size),
        ece=float(ece),
        accuracy=float(correct.mean()),
        mean_confidence=float(conf.mean()),
        chance=float(chance.mean()),
        bins=bins,
    )
