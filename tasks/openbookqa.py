"""OpenBookQA (Mihaylov et al. 2018), main, test; lm-eval 0.4.13 ``openbookqa``.

Hub: ``allenai/openbookqa`` (``main``). Local file: the official ``Main/test.tsv``
(``ID``, ``Question Stem``, ``Choices`` as ``(A) .. (B) .. (C) .. (D) ..``, ``Answer Key``),
adapted here to the hub schema.
"""

from __future__ import annotations

import re
from typing import Any

from mill.task import Task
from mill.task.rows import gold_position
from mill.types import OutputType

_LABEL = re.compile(r"\(([A-Z])\) ")
_TSV_COLUMNS = ("ID", "Question Stem", "Choices", "Complete Question", "Answer Key")


def split_choices(text: str) -> tuple[list[str], list[str]]:
    """``(A) x (B) y`` -> (["A", "B"], ["x", "y"]); the space before each label is the
    separator, not part of the choice."""
    parts = _LABEL.split(text)
    if parts[0].strip():
        raise ValueError(f"choices do not start with a label: {text[:60]!r}")
    labels, texts = parts[1::2], parts[2::2]
    texts = [t.removesuffix(" ") for t in texts[:-1]] + texts[-1:]
    return labels, texts


class OpenBookQA(Task):
    """``{question_stem}`` scored against `` {choice}``."""

    NAME = "openbookqa"
    DATASET_PATH = "allenai/openbookqa"
    DATASET_NAME = "main"
    # the revision a public dataset-conversion script pins for allenai/openbookqa (main)
    DATASET_REVISION = "388097ea7776314e93a529163e0fea805b8a6454"
    LOCAL_FILES = {"test": "openbookqa/test.tsv"}
    LOCAL_BUILDER = "csv"
    LOCAL_TEXT_COLUMNS = _TSV_COLUMNS  # as text: no number/NaN guessing
    LOCAL_BUILDER_KWARGS = {"sep": "\t"}
    SAMPLE_SPLIT = "test"
    FEWSHOT_SPLIT = "train"
    OUTPUT_TYPE = OutputType.LOGPROBS
    METRICS = ["acc", "acc_norm"]

    def adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        labels, texts = split_choices(row["Choices"])
        return {
            "id": row["ID"],
            "question_stem": row["Question Stem"],
            "choices": {"text": texts, "label": labels},
            "answerKey": row["Answer Key"],
        }

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return item["question_stem"]

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return list(item["choices"]["text"])

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        return gold_position(item["choices"]["label"], item["answerKey"].lstrip(), "choice labels")

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return item["choices"]["text"][self.gold_index(item, [])]
