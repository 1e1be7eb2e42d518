"""Corpus perplexities of PERPLEXITY tasks, normalised by words or bytes (lm-eval's
``weighted_perplexity`` and ``bits_per_byte``). Per sample: (log-likelihood, count)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from mill.metrics.base import RatioMetric
from mill.task.doc import Doc
from mill.types import OutputType, Response


def _loglikelihood(responses: Sequence[Response]) -> float:
    return float(sum(r.logprob or 0.0 for r in responses))


class WordPerplexity(RatioMetric):
    """word_perplexity = exp(-sum ll / sum words), words = len(re.split(r"\\s+", text))."""

    name = "word_perplexity"
    output_types = frozenset({OutputType.PERPLEXITY})
    higher_is_better = False

    def score(self, doc: Doc, responses: Sequence[Response]) -> tuple[float, float]:
        return (_loglikelihood(responses), float(len(re.split(r"\s+", str(doc.gold)))))

    def from_sums(self, numerator: float, denominator: float) -> float:
        return math.exp(-numerator / denominator)


class BytePerplexity(RatioMetric):
    """byte_perplexity = exp(-sum ll / sum bytes), bytes of the UTF-8 text."""

    name = "byte_perplexity"
    output_types = frozenset({OutputType.PERPLEXITY})
    higher_is_better = False

    def score(self, doc: Doc, responses: Sequence[Response]) -> tuple[float, float]:
        return (_loglikelihood(responses), float(len(str(doc.gold).encode("utf-8"))))

    def from_sums(self, numerator: float, denominator: float) -> float:
        return math.exp(-numerator / denominator)


class BitsPerByte(BytePerplexity):
    """bits_per_byte = -sum ll / (sum bytes * ln 2)."""

    name = "bits_per_byte"

    def from_sums(self, numerator: float, denominator: float) -> float:
        return -numerator / (denominator * math.log(2))
