"""Multiple-choice accuracy metrics (LOGPROBS)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mill.metrics.base import MeanMetric
from mill.task.doc import Doc
from mill.types import OutputType, Response


def _logprobs(responses: Sequence[Response]) -> list[float]:
    return [float(r.logprob) for r in responses if r.logprob is not None]


class Accuracy(MeanMetric):
    """acc = 1[argmax_i ll_i == gold], ll_i = log P(choice_i | context); ties go to the
    first choice (numpy argmax), as in lm-eval."""

    name = "acc"
    output_types = frozenset({OutputType.LOGPROBS})

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return float(int(np.argmax(_logprobs(responses))) == doc.gold)


class AccuracyNorm(MeanMetric):
    """acc_norm = 1[argmax_i ll_i / len(choice_i) == gold], len in Unicode characters of the
    choice without the target delimiter (lm-eval's definition)."""

    name = "acc_norm"
    output_types = frozenset({OutputType.LOGPROBS})

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        lls = _logprobs(responses)
        normed = [ll / len(choice) for ll, choice in zip(lls, doc.choices, strict=True)]
        return float(int(np.argmax(normed)) == doc.gold)
