"""Perplexities. PERPLEXITY tasks: corpus perplexities normalised by words or bytes
(lm-eval's ``weighted_perplexity`` and ``bits_per_byte``; per sample: (log-likelihood,
count)). LOGPROBS tasks: the perplexity of the gold continuations (lm-eval's
``perplexity``)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from mill.metrics.base import CorpusMetric, RatioMetric, SampleValue
from mill.types import Doc, OutputType, Response


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


class Perplexity(CorpusMetric):
    """perplexity = exp(-mean_d ll_d), ll_d = log-likelihood of doc d's gold continuation
    (LOGPROBS, e.g. LAMBADA's last word; lm-eval's ``perplexity``). Lower is better;
    stderr by seeded bootstrap over docs."""

    name = "perplexity"
    output_types = frozenset({OutputType.LOGPROBS})
    higher_is_better = False

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return float(responses[int(doc.gold)].logprob)  # type: ignore[arg-type]

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        return math.exp(-sum(float(v) for v in values) / len(values)) if values else math.nan
