"""Probability-based multiple-choice metrics (LOGPROBS), computed with log-sum-exp.

``ll_i`` is the log-likelihood of choice ``i``; ``s_i = ll_i / chars(choice_i)`` its
per-character mean (eval-framework's ``len_normalised``). ``softmax`` subtracts the
maximum first, so no choice's probability under- or overflows however long the
continuations are (eval-framework's ``np.exp(ll)`` gives 0/0 = NaN below about -745).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mill.metrics.accuracy import LOGPROBS, char_normalised, logprobs
from mill.metrics.base import MeanMetric
from mill.types import Doc, Response


def softmax(scores: np.ndarray) -> np.ndarray:
    """exp(x_i - logsumexp(x)): probabilities that sum to 1, finite for any finite x."""
    shifted = scores - np.max(scores)
    return np.exp(shifted - np.log(np.sum(np.exp(shifted))))


class ConfidenceWeightedAccuracy(MeanMetric):
    """confidence_weighted_acc = p_k* * 1[k* == gold], p = softmax(s), k* = argmax_i s_i
    (eval-framework's ``ConfidenceWeightedAccuracy``): a correct answer counts by the
    confidence the model put in it."""

    name = "confidence_weighted_acc"
    output_types = LOGPROBS
    bounds = (0.0, 1.0)

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        scores = char_normalised(doc, responses)
        best = int(np.argmax(scores))
        return float(softmax(scores)[best]) if best == doc.gold else 0.0


class ProbabilityMass(MeanMetric):
    """probability_mass = exp(ll_gold - logsumexp_j ll_j): the share of the choices'
    probability on the gold choice."""

    name = "probability_mass"
    output_types = LOGPROBS
    bounds = (0.0, 1.0)

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return float(softmax(logprobs(responses))[int(doc.gold)])  # type: ignore[arg-type]


class ProbabilityMassNorm(MeanMetric):
    """probability_mass_norm = exp(s_gold - logsumexp_j s_j), s = per-character ll."""

    name = "probability_mass_norm"
    output_types = LOGPROBS
    bounds = (0.0, 1.0)

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return float(softmax(char_normalised(doc, responses))[int(doc.gold)])  # type: ignore[arg-type]


class BrierScore(MeanMetric):
    """brier = sum_i (p_i - 1[i == gold])^2, p = softmax(ll) over the choices; mean over
    docs (lm-eval's ``brier_score``). Lower is better."""

    name = "brier"
    output_types = LOGPROBS
    higher_is_better = False
    bounds = (0.0, 2.0)

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        probs = softmax(logprobs(responses))
        target = np.zeros_like(probs)
        target[int(doc.gold)] = 1.0  # type: ignore[arg-type]
        return float(np.sum((probs - target) ** 2))
