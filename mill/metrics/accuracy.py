"""Multiple-choice accuracy metrics (LOGPROBS): argmax of a per-choice score == gold.

``ll_i`` is the summed log-probability of choice ``i``'s continuation given the context.
Ties go to the first choice (numpy argmax), as in lm-eval. Lengths are those of the choice
text without the target delimiter, as lm-eval's ``process_results``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mill.metrics.base import DocResponses, MeanMetric
from mill.types import Doc, OutputType, Response

LOGPROBS = frozenset({OutputType.LOGPROBS})


def logprobs(responses: Sequence[Response]) -> np.ndarray:
    """Per-choice log-likelihoods, in choice order."""
    return np.array([float(r.logprob) for r in responses if r.logprob is not None])


def char_normalised(doc: Doc, responses: Sequence[Response]) -> np.ndarray:
    """ll_i / len(choice_i) in Unicode characters (an empty choice is left unnormalised)."""
    lengths = np.array([max(len(c), 1) for c in doc.choices], dtype=float)
    return logprobs(responses) / lengths


class ChoiceAccuracy(MeanMetric):
    """1[argmax_i s_i == gold] for the choice scores ``s`` of :meth:`choice_scores`; its
    :meth:`pick` is that argmax (ties: the first choice)."""

    def choice_scores(self, doc: Doc, responses: Sequence[Response]) -> np.ndarray:
        raise NotImplementedError

    def pick(self, doc: Doc, responses: Sequence[Response]) -> int | None:
        if len(doc.choices) < 2:  # a single candidate: no choice is made
            return None
        return int(np.argmax(self.choice_scores(doc, responses)))

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return float(int(np.argmax(self.choice_scores(doc, responses))) == doc.gold)


class Accuracy(ChoiceAccuracy):
    """acc = 1[argmax_i ll_i == gold].

    A doc with a single candidate (a loglikelihood task such as LAMBADA, where the argmax
    is trivial) scores is_greedy instead: 1 when the greedy token at every continuation
    position is the continuation's token, as lm-eval's ``loglikelihood`` acc."""

    name = "acc"
    output_types = LOGPROBS

    def choice_scores(self, doc: Doc, responses: Sequence[Response]) -> np.ndarray:
        return logprobs(responses)

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        if len(doc.choices) == 1:
            return float(bool(responses[0].is_greedy))
        return super().score(doc, responses)


class AccuracyNorm(ChoiceAccuracy):
    """acc_norm = 1[argmax_i ll_i / chars(choice_i) == gold], chars = Unicode characters
    of the choice without the target delimiter (lm-eval's definition)."""

    name = "acc_norm"
    output_types = LOGPROBS

    def choice_scores(self, doc: Doc, responses: Sequence[Response]) -> np.ndarray:
        return char_normalised(doc, responses)


class AccuracyNormToken(ChoiceAccuracy):
    """acc_norm_token = 1[argmax_i ll_i / tokens_i == gold], tokens_i = number of scored
    continuation tokens of choice i (lighteval's ``LogProbTokenNorm``)."""

    name = "acc_norm_token"
    output_types = LOGPROBS

    def choice_scores(self, doc: Doc, responses: Sequence[Response]) -> np.ndarray:
        tokens = np.array([max(len(r.output_tokens), 1) for r in responses], dtype=float)
        return logprobs(responses) / tokens


class AccuracyBytes(ChoiceAccuracy):
    """acc_bytes = 1[argmax_i ll_i / bytes(choice_i) == gold], bytes = UTF-8 length of the
    choice without the target delimiter (lm-eval's ``acc_bytes``)."""

    name = "acc_bytes"
    output_types = LOGPROBS

    def choice_scores(self, doc: Doc, responses: Sequence[Response]) -> np.ndarray:
        lengths = np.array([max(len(c.encode("utf-8")), 1) for c in doc.choices], dtype=float)
        return logprobs(responses) / lengths


class AccuracyMutualInfo(ChoiceAccuracy):
    """acc_mutual_info = 1[argmax_i (ll_i - ll_i^u) == gold], ll_i^u = log P(choice_i)
    scored after the prefix token alone (an empty context): pointwise mutual information,
    lm-eval's ``acc_mutual_info``. Selecting it makes the evaluator issue the
    unconditioned requests (one more per choice)."""

    name = "acc_mutual_info"
    output_types = LOGPROBS
    needs_unconditioned = True

    def choice_scores(self, doc: Doc, responses: Sequence[Response]) -> np.ndarray:
        unconditioned = getattr(responses, "unconditioned", None)
        if not unconditioned or len(unconditioned) != len(responses):
            raise ValueError(
                "acc_mutual_info needs the unconditioned responses: pass "
                f"{DocResponses.__name__}(responses, unconditioned)"
            )
        return logprobs(responses) - logprobs(unconditioned)
