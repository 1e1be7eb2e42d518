"""GSM8K grade-school math, generative; lm-eval 0.4.13 ``gsm8k`` prompt (5-shot by default).

``Question: {question}\\nAnswer:`` then greedy generation until ``Question:``; the answer is
extracted from ``#### <number>`` (strict) or the last number (flexible).
"""

from __future__ import annotations

from typing import Any

from mill.task import Task
from mill.types import GenerationArgs, OutputType


class GSM8K(Task):
    """GSM8K main split, exact match after answer extraction."""

    NAME = "gsm8k"
    DATASET_PATH = "openai/gsm8k"
    DATASET_NAME = "main"
    DATASET_REVISION = "740312add88f781978c0658806c59bc2815b9866"
    LOCAL_FILES = {"test": "gsm8k/test.jsonl", "train": "gsm8k/train.jsonl"}
    SAMPLE_SPLIT = "test"
    FEWSHOT_SPLIT = "train"
    OUTPUT_TYPE = OutputType.GENERATIVE
    METRICS = ["exact_match_strict", "exact_match_flexible"]
    GENERATION = GenerationArgs(until=("Question:", "</s>", "<|im_end|>"), max_gen_toks=256)

    def _get_instruction_text(self, item: dict[str, Any]) -> str:
        return f"Question: {item['question']}\nAnswer:"

    def _get_ground_truth(self, item: dict[str, Any]) -> str:
        return item["answer"]
