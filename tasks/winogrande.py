"""WinoGrande (Sakaguchi et al. 2020), XL, validation; lm-eval 0.4.13 ``winogrande``.

Partial scoring: each option fills the blank and ends its own context; every context is
scored on the same continuation, the rest of the sentence after the blank. Few-shot
examples show the sentence with the correct option.

Hub: ``allenai/winogrande`` (``winogrande_xl``). Local file: WinoGrande 1.1 ``dev.jsonl``
(same schema; it is the hub's validation split).
"""

from __future__ import annotations

from typing import Any

from mill.task import Task
from mill.types import OutputType


class WinoGrande(Task):
    """``{sentence up to _ with option}`` + `` {rest of sentence}`` for each option."""

    NAME = "winogrande"
    DATASET_PATH = "allenai/winogrande"
    DATASET_NAME = "winogrande_xl"
    # pinned in Aleph-Alpha-Research/eval-framework's hf-dataset-revisions.json
    DATASET_REVISION = "01e74176c63542e6b0bcb004dcdea22d94fb67b5"
    LOCAL_FILES = {"validation": "winogrande/dev.jsonl"}
    SAMPLE_SPLIT = "validation"
    FEWSHOT_SPLIT = "train"
    OUTPUT_TYPE = OutputType.LOGPROBS
    MULTIPLE_INPUT = True
    METRICS = ["acc"]

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        blank = item["sentence"].index("_")
        return [
            item["sentence"][:blank] + item["option1"],
            item["sentence"][:blank] + item["option2"],
        ]

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        return {"1": 0, "2": 1}[str(item["answer"])]

    def doc_to_text(self, item: dict[str, Any]) -> str:
        choices = self.doc_to_choice(item)
        return choices[self.gold_index(item, choices)]

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return item["sentence"][item["sentence"].index("_") + 1 :].strip()
