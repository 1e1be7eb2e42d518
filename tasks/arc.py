"""ARC (AI2 Reasoning Challenge), Easy and Challenge sets; lm-eval 0.4.13 ``arc_easy`` prompt.

Hub: ``allenai/ai2_arc``. Local files: the AI2 jsonl release (``question.stem``,
``question.choices``), adapted here to the hub schema.
"""

from __future__ import annotations

from typing import Any

from mill.task import Task
from mill.task.rows import gold_position
from mill.types import OutputType


def ai2_to_hub(row: dict[str, Any]) -> dict[str, Any]:
    """An AI2 jsonl row (``question.stem``, ``question.choices``) in the Hub schema of
    ``allenai/ai2_arc`` (``question``, ``choices.text``/``choices.label``, ``answerKey``)."""
    choices = row["question"]["choices"]
    return {
        "id": row["id"],
        "question": row["question"]["stem"],
        "choices": {
            "text": [c["text"] for c in choices],
            "label": [c["label"] for c in choices],
        },
        "answerKey": row["answerKey"],
    }


class ArcEasy(Task):
    """ARC-Easy: ``Question: {question}\\nAnswer:`` scored against each choice."""

    NAME = "arc_easy"
    DATASET_PATH = "allenai/ai2_arc"
    DATASET_NAME = "ARC-Easy"
    DATASET_REVISION = "210d026faf9955653af8916fad021475a3f00453"
    LOCAL_FILES = {
        "test": "arc_easy/ARC-Easy-Test.jsonl",
        "validation": "arc_easy/ARC-Easy-Dev.jsonl",
    }
    SAMPLE_SPLIT = "test"
    FEWSHOT_SPLIT = "train"
    OUTPUT_TYPE = OutputType.LOGPROBS
    METRICS = ["acc", "acc_norm"]

    def adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        return ai2_to_hub(row)

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return f"Question: {item['question']}\nAnswer:"

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return list(item["choices"]["text"])

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return item["choices"]["text"][self._gold(item)]

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        return self._gold(item)

    @staticmethod
    def _gold(item: dict[str, Any]) -> int:
        return gold_position(item["choices"]["label"], item["answerKey"], "choice labels")


class ArcChallenge(ArcEasy):
    """ARC-Challenge: same prompt as ARC-Easy."""

    NAME = "arc_challenge"
    DATASET_NAME = "ARC-Challenge"
    LOCAL_FILES = {
        "test": "arc_challenge/ARC-Challenge-Test.jsonl",
        "validation": "arc_challenge/ARC-Challenge-Dev.jsonl",
    }
