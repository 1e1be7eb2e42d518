"""Exact match of a generation against the reference, after optional answer extraction."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from mill.metrics.base import MeanMetric
from mill.types import Doc, OutputType, Response

INVALID = "[invalid]"


def extract(text: str, pattern: str, group_select: int = 0) -> str:
    """lm-eval's ``regex`` filter: the ``group_select``-th match of ``pattern`` (first
    non-empty group when it has several), stripped; ``[invalid]`` when nothing matches."""
    matches = re.findall(pattern, text)
    if not matches:
        return INVALID
    match = matches[group_select]
    if isinstance(match, tuple):
        groups = [g for g in match if g]
        if not groups:
            return INVALID
        match = groups[0]
    return match.strip()


class ExactMatch(MeanMetric):
    """exact_match = 1[normalise(extract(prediction)) == normalise(reference)] for any
    reference, where normalise deletes each ``regexes_to_ignore`` match, then optionally
    lower-cases and deletes ``string.punctuation`` (lm-eval's ``exact_match_hf_evaluate``;
    no implicit strip)."""

    name = "exact_match"
    output_types = frozenset({OutputType.GENERATIVE})

    def __init__(
        self,
        name: str | None = None,
        ignore_case: bool = False,
        ignore_punctuation: bool = False,
        regexes_to_ignore: Sequence[str] = (),
        extract_pattern: str | None = None,
        extract_group: int = 0,
    ) -> None:
        self.name = name or type(self).name
        self.ignore_case = ignore_case
        self.ignore_punctuation = ignore_punctuation
        self.regexes_to_ignore = list(regexes_to_ignore)
        self.extract_pattern = extract_pattern
        self.extract_group = extract_group

    def _normalise(self, text: str) -> str:
        for pattern in self.regexes_to_ignore:
            text = re.sub(pattern, "", text)
        if self.ignore_case:
            text = text.lower()
        if self.ignore_punctuation:
            text = text.translate(str.maketrans("", "", string.punctuation))
        return text

    def prediction(self, response: Response) -> str:
        """The generation after answer extraction (what is compared)."""
        text = response.answer
        if self.extract_pattern is None:
            return text
        return extract(text, self.extract_pattern, self.extract_group)

    def extracted_answer(self, responses: Sequence[Response]) -> str | None:
        """The first generation after ``extract_pattern`` (None without a pattern)."""
        if self.extract_pattern is None or not responses:
            return None
        return self.prediction(responses[0])

    def matches(self, doc: Doc, prediction: str) -> float:
        """1.0 if an extracted prediction equals any reference after normalisation."""
        normalised = self._normalise(prediction)
        golds = doc.gold if isinstance(doc.gold, tuple) else (str(doc.gold),)
        return float(any(normalised == self._normalise(g) for g in golds))

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return self.matches(doc, self.prediction(responses[0]))
