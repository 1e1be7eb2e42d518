"""Scores that reward abstaining over guessing (LOGPROBS tasks with an "I don't know"
choice, the IDK variants). The IDK choice is the one the task marked on the doc
(``Doc.idk_index``), never assumed to be the last.

``s_i = ll_i / chars(choice_i)`` when ``len_normalised`` (eval-framework's default), else
``ll_i``; ``p = softmax(s)``; ``k* = argmax_i s_i``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mill.metrics.accuracy import LOGPROBS, char_normalised, logprobs
from mill.metrics.base import MeanMetric
from mill.metrics.probability import softmax
from mill.types import Doc, Response


class _AbstentionMetric(MeanMetric):
    output_types = LOGPROBS

    def __init__(
        self, correct: float = 1.0, wrong: float = 1.0, len_normalised: bool = True
    ) -> None:
        if correct < 0 or wrong < 0:
            raise ValueError(f"{self.name}: the rewards must be >= 0")
        self.correct = float(correct)
        self.wrong = float(wrong)
        self.len_normalised = bool(len_normalised)

    def _scores(self, doc: Doc, responses: Sequence[Response]) -> np.ndarray:
        return char_normalised(doc, responses) if self.len_normalised else logprobs(responses)

    def check_doc(self, doc: Doc) -> str | None:
        if doc.idk_index is None:
            return (
                f'metric {self.name!r} needs an explicit "I don\'t know" choice but task '
                f"{doc.task!r} has none; use an IDK variant (e.g. arc_easy_idk, mmlu_idk)"
            )
        if doc.idk_index == doc.gold:
            return f"task {doc.task!r} doc {doc.id}: the IDK choice is the gold answer"
        return None


class TernaryScore(_AbstentionMetric):
    """ternary = +correct if k* == gold, 0 if k* is the IDK choice, -wrong otherwise
    (Kalai et al. 2025; eval-framework's ``TernaryScore`` with an explicit IDK index)."""

    name = "ternary"

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        best = int(np.argmax(self._scores(doc, responses)))
        if best == doc.gold:
            return self.correct
        return 0.0 if best == doc.idk_index else -self.wrong


class DistributionalCorrectness(_AbstentionMetric):
    """dcs = (correct * P_c - wrong * P_w) * (1 - P_idk), with P_c = p_gold, P_idk =
    p_idk and P_w the mass of the other choices (Burns 2025). Needs correct >= wrong >= 0.

    The IDK factor is applied: eval-framework looks the IDK probability up under a key
    that never matches, so its DCS is effectively correct * P_c - wrong * P_w.
    """

    name = "dcs"

    def __init__(
        self, correct: float = 1.0, wrong: float = 1.0, len_normalised: bool = True
    ) -> None:
        super().__init__(correct, wrong, len_normalised)
        if self.correct < self.wrong:
            raise ValueError("dcs needs correct >= wrong >= 0")

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        probs = softmax(self._scores(doc, responses))
        gold, idk = int(doc.gold), int(doc.idk_index)  # type: ignore[arg-type]
        p_correct, p_idk = probs[gold], probs[idk]
        p_wrong = float(sum(p for i, p in enumerate(probs) if i not in (gold, idk)))
        return float((self.correct * p_correct - self.wrong * p_wrong) * (1.0 - p_idk))
