"""Metrics over repeated sampled generations (``task.repeats`` > 1 with sampling).

Each generation is judged as :class:`~mill.metrics.exact_match.ExactMatch` judges one
(answer extraction, then normalisation); the metric's keyword arguments configure it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from math import comb
from typing import TYPE_CHECKING, Any

from mill.metrics.base import MeanMetric
from mill.metrics.exact_match import ExactMatch
from mill.types import Doc, OutputType, Response

if TYPE_CHECKING:
    from mill.task.base import Task


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of Chen et al. 2021: 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


class _RepeatsMetric(MeanMetric):
    output_types = frozenset({OutputType.GENERATIVE})
    bounds = (0.0, 1.0)

    def __init__(self, k: int = 1, **exact_match: Any) -> None:
        if int(k) < 1:
            raise ValueError(f"{type(self).__name__}: k must be >= 1")
        self.k = int(k)
        self.match = ExactMatch(**exact_match)

    def check_task(self, task: Task) -> str | None:
        if task.repeats < self.k:
            return (
                f"metric {self.name!r} with k={self.k} needs task.repeats >= {self.k} "
                f"(task {task.name!r} has {task.repeats}); add task.repeats={self.k} "
                "task.generation.do_sample=true"
            )
        return None


class PassAtK(_RepeatsMetric):
    """pass@k = 1 - C(n-c, k) / C(n, k) per doc, n generations of which c are correct
    (unbiased estimator, Chen et al. 2021), averaged over docs."""

    name = "pass_at_k"

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        correct = sum(int(self.match.score(doc, [r])) for r in responses)
        return pass_at_k(len(responses), correct, self.k)


class MajAtK(_RepeatsMetric):
    """maj@k = 1[majority answer of the first k generations is correct]: answers are
    extracted and normalised as exact_match does, the most frequent one wins (ties: the
    one seen first, as lm-eval's ``majority_vote``), then it is compared to the reference."""

    name = "maj_at_k"

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        answers = [self.match.prediction(r) for r in responses[: self.k]]
        majority = Counter(answers).most_common(1)[0][0]
        return self.match.matches(doc, majority)
