"""Perplexities. PERPLEXITY tasks: corpus perplexities normalised by words or bytes
(lm-eval's ``weighted_perplexity`` and ``bits_per_byte``; per sample: (log-likelihood,
count)). LOGPROBS tasks: the perplexity of the gold continuations (lm-eval's
``perplexity``)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from mill.metrics import stats
from mill.metrics.base import CorpusMetric, RatioMetric, SampleValue
from mill.types import Doc, OutputType, Response


def _loglikelihood(responses: Sequence[Response]) -> float:
    return float(sum(r.logprob or 0.0 for r in responses))


class LogScale(CorpusMetric):
    """A perplexity: exp of a mean-like quantity (:meth:`log_aggregate`), positive and
    unbounded; its 95% interval is computed on the log scale and transformed back
    (:func:`mill.metrics.stats.log_scale_interval`), so it is never negative."""

    log_scale = True
    """False for a member of the family that is itself a log (bits_per_byte)."""

    def log_aggregate(self, values: Sequence[SampleValue]) -> float:
        """log of :meth:`aggregate`, computed without the exponential."""
        raise NotImplementedError

    def interval(
        self,
        values: Sequence[SampleValue],
        value: float | None,
        stderr: float | None,
        *,
        iters: int,
        seed: int,
    ) -> tuple[tuple[float, float], str] | None:
        if not self.log_scale:
            return super().interval(values, value, stderr, iters=iters, seed=seed)
        return stats.log_scale_interval(values, value, self.log_aggregate, iters=iters, seed=seed)


def _ratio(values: Sequence[SampleValue]) -> float:
    """-sum numerators / sum denominators of the (log-likelihood, count) pairs."""
    pairs = [v for v in values if isinstance(v, (tuple, list))]
    return -sum(p[0] for p in pairs) / sum(p[1] for p in pairs)


class _RatioPerplexity(LogScale, RatioMetric):
    """exp(-sum ll / sum counts) over (log-likelihood, count) pairs."""

    def from_sums(self, numerator: float, denominator: float) -> float:
        return math.exp(-numerator / denominator)

    def log_aggregate(self, values: Sequence[SampleValue]) -> float:
        return _ratio(values)


class WordPerplexity(_RatioPerplexity):
    """word_perplexity = exp(-sum ll / sum words), words = len(re.split(r"\\s+", text))."""

    name = "word_perplexity"
    output_types = frozenset({OutputType.PERPLEXITY})
    higher_is_better = False

    def score(self, doc: Doc, responses: Sequence[Response]) -> tuple[float, float]:
        return (_loglikelihood(responses), float(len(re.split(r"\s+", str(doc.gold)))))


class BytePerplexity(_RatioPerplexity):
    """byte_perplexity = exp(-sum ll / sum bytes), bytes of the UTF-8 text."""

    name = "byte_perplexity"
    output_types = frozenset({OutputType.PERPLEXITY})
    higher_is_better = False

    def score(self, doc: Doc, responses: Sequence[Response]) -> tuple[float, float]:
        return (_loglikelihood(responses), float(len(str(doc.gold).encode("utf-8"))))


class BitsPerByte(BytePerplexity):
    """bits_per_byte = -sum ll / (sum bytes * ln 2) = log2(byte_perplexity); never negative
    (log-likelihoods are at most 0): its interval is cut at 0."""

    name = "bits_per_byte"
    bounds = (0.0, math.inf)
    log_scale = False  # already a log: value +- 1.96 stderr, cut at 0

    def from_sums(self, numerator: float, denominator: float) -> float:
        return -numerator / (denominator * math.log(2))


class Perplexity(LogScale):
    """perplexity = exp(-mean_d ll_d), ll_d = log-likelihood of doc d's gold continuation
    (LOGPROBS, e.g. LAMBADA's last word; lm-eval's ``perplexity``). Lower is better;
    stderr by seeded bootstrap over docs."""

    name = "perplexity"
    output_types = frozenset({OutputType.LOGPROBS})
    higher_is_better = False

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return float(responses[int(doc.gold)].logprob)  # type: ignore[arg-type]

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        return math.exp(self.log_aggregate(values)) if values else math.nan

    def log_aggregate(self, values: Sequence[SampleValue]) -> float:
        return -sum(float(v) for v in values) / len(values)
