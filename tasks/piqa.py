"""PIQA (Bisk et al. 2020), validation; lm-eval 0.4.13 ``piqa``.

Hub: ``baber/piqa`` (``goal``, ``sol1``, ``sol2``, ``label``). Local files: the authors'
``valid.jsonl`` plus the line-aligned ``valid-labels.lst``, joined here into ``label``.
"""

from __future__ import annotations

from typing import Any

from mill.task import Task
from mill.types import OutputType


class PIQA(Task):
    """``Question: {goal}\\nAnswer:`` scored against `` {sol1}`` and `` {sol2}``."""

    NAME = "piqa"
    DATASET_PATH = "baber/piqa"
    # the full sha a public lm-eval 0.4.13 evaluation protocol pins for this dataset
    DATASET_REVISION = "142f6d7367fd9877f0fb3b5734ea6a545f54cdd1"
    LOCAL_FILES = {"validation": "piqa/valid.jsonl"}
    LOCAL_SIDE_FILES = {"validation": {"label": "piqa/valid-labels.lst"}}
    SAMPLE_SPLIT = "validation"
    FEWSHOT_SPLIT = "train"
    OUTPUT_TYPE = OutputType.LOGPROBS
    METRICS = ["acc", "acc_norm"]

    def adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        return {**row, "label": int(row["label"])}

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return f"Question: {item['goal']}\nAnswer:"

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return [item["sol1"], item["sol2"]]

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return self.doc_to_choice(item)[int(item["label"])]

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        return int(item["label"])
