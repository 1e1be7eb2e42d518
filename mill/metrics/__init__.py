"""Metrics: one small class per metric, its formula in the docstring."""

from mill.metrics.accuracy import Accuracy, AccuracyNorm
from mill.metrics.base import MeanMetric, Metric, RatioMetric
from mill.metrics.exact_match import ExactMatch
from mill.metrics.perplexity import BitsPerByte, BytePerplexity, WordPerplexity

__all__ = [
    "Accuracy",
    "AccuracyNorm",
    "BitsPerByte",
    "BytePerplexity",
    "ExactMatch",
    "MeanMetric",
    "Metric",
    "RatioMetric",
    "WordPerplexity",
]
