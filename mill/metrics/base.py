"""Metric base classes: a per-sample score and a corpus aggregate with its stderr."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from mill.metrics.stats import bootstrap_stderr, mean, mean_stderr
from mill.task.doc import Doc
from mill.types import OutputType, Response

SampleValue = float | tuple[float, float]


class Metric:
    """A named score: ``score`` per doc, ``aggregate`` over the corpus, ``stderr`` of it."""

    name: ClassVar[str] = ""
    output_types: ClassVar[frozenset[OutputType]] = frozenset()
    higher_is_better: ClassVar[bool] = True

    def score(self, doc: Doc, responses: Sequence[Response]) -> SampleValue:
        """Per-sample value from a doc and its responses (ordered by request index)."""
        raise NotImplementedError

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        """Corpus-level value."""
        raise NotImplementedError

    def stderr(self, values: Sequence[SampleValue], *, iters: int, seed: int) -> float | None:
        """Standard error of :meth:`aggregate`."""
        raise NotImplementedError


class MeanMetric(Metric):
    """A metric whose corpus value is the mean of per-sample values.

    stderr = sample standard deviation (Bessel-corrected) / sqrt(n), as lm-eval's
    ``mean_stderr``.
    """

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        return mean([float(v) for v in values])  # type: ignore[arg-type]

    def stderr(self, values: Sequence[SampleValue], *, iters: int, seed: int) -> float | None:
        return mean_stderr([float(v) for v in values])  # type: ignore[arg-type]


class RatioMetric(Metric):
    """A corpus metric over per-sample pairs (numerator, denominator), e.g. log-likelihood
    and word count. Its stderr is a seeded bootstrap over docs."""

    def from_sums(self, numerator: float, denominator: float) -> float:
        """The corpus value from the summed pairs."""
        raise NotImplementedError

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        pairs = [v for v in values if isinstance(v, tuple)]
        return self.from_sums(sum(p[0] for p in pairs), sum(p[1] for p in pairs))

    def stderr(self, values: Sequence[SampleValue], *, iters: int, seed: int) -> float | None:
        pairs = [v for v in values if isinstance(v, tuple)]
        return bootstrap_stderr(
            pairs,
            lambda ps: self.from_sums(sum(p[0] for p in ps), sum(p[1] for p in ps)),
            iters=iters,
            seed=seed,
        )
