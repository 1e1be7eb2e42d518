"""Metrics: one small class per metric, its formula in the docstring."""

from mill.metrics.abstention import DistributionalCorrectness, TernaryScore
from mill.metrics.accuracy import (
    Accuracy,
    AccuracyBytes,
    AccuracyMutualInfo,
    AccuracyNorm,
    AccuracyNormToken,
)
from mill.metrics.base import CorpusMetric, DocResponses, MeanMetric, Metric, RatioMetric
from mill.metrics.calibration import ExpectedCalibrationError
from mill.metrics.exact_match import ExactMatch
from mill.metrics.f1 import F1
from mill.metrics.perplexity import BitsPerByte, BytePerplexity, Perplexity, WordPerplexity
from mill.metrics.probability import (
    BrierScore,
    ConfidenceWeightedAccuracy,
    ProbabilityMass,
    ProbabilityMassNorm,
)
from mill.metrics.repeats import MajAtK, PassAtK

__all__ = [
    "Accuracy",
    "AccuracyBytes",
    "AccuracyMutualInfo",
    "AccuracyNorm",
    "AccuracyNormToken",
    "BitsPerByte",
    "BrierScore",
    "BytePerplexity",
    "ConfidenceWeightedAccuracy",
    "CorpusMetric",
    "DistributionalCorrectness",
    "DocResponses",
    "ExactMatch",
    "ExpectedCalibrationError",
    "F1",
    "MajAtK",
    "MeanMetric",
    "Metric",
    "PassAtK",
    "Perplexity",
    "ProbabilityMass",
    "ProbabilityMassNorm",
    "RatioMetric",
    "TernaryScore",
    "WordPerplexity",
]
