"""Metrics: one small class per metric, its formula in the docstring. A metric named in the
config is built by :func:`build_metric` (imported on first use: it reads the config group)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mill.exports import lazy_exports
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
from mill.metrics.repeats import AvgAtN, MajAtK, PassAtK

if TYPE_CHECKING:
    from mill.metrics.config import build_metric

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
    "AvgAtN",
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
    "build_metric",
]

__getattr__ = lazy_exports(__name__, {"mill.metrics.config": ("build_metric",)})
