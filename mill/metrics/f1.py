"""Token-overlap F1 of a generation against its reference(s) (GENERATIVE)."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from mill.metrics.base import MeanMetric
from mill.types import Doc, OutputType, Response

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def squad_tokens(text: str) -> list[str]:
    """SQuAD normalisation: lower-case, drop punctuation and articles, split on spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return _ARTICLES.sub(" ", text).split()


def token_f1(prediction: str, reference: str) -> float:
    """2PR/(P+R) over the multiset of shared tokens; 1 if both are empty, 0 if one is."""
    pred, ref = squad_tokens(prediction), squad_tokens(reference)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


class F1(MeanMetric):
    """f1 = max over references of the SQuAD token F1 between the first generation and
    the reference (tokens after lower-casing and removing punctuation and articles)."""

    name = "f1"
    output_types = frozenset({OutputType.GENERATIVE})
    bounds = (0.0, 1.0)

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        golds = doc.gold if isinstance(doc.gold, tuple) else (str(doc.gold),)
        prediction = responses[0].answer
        return max(token_f1(prediction, g) for g in golds)
