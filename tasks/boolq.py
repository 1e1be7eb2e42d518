"""BoolQ (Clark et al. 2019), validation; lm-eval 0.4.13 ``boolq`` (SuperGLUE packaging).

Hub: ``aps/super_glue`` (``boolq``; ``label`` 0/1). Local file: SuperGLUE ``BoolQ/val.jsonl``
(same fields; ``label`` is the string "true"/"false", adapted here to 1/0).
"""

from __future__ import annotations

from typing import Any

from mill.task import Task
from mill.types import OutputType

ANSWERS = ["no", "yes"]


class BoolQ(Task):
    """``{passage}\\nQuestion: {question}?\\nAnswer:`` scored against `` no`` / `` yes``."""

    NAME = "boolq"
    DATASET_PATH = "aps/super_glue"
    DATASET_NAME = "boolq"
    # pinned in Aleph-Alpha-Research/eval-framework's hf-dataset-revisions.json
    DATASET_REVISION = "3de24cf8022e94f4ee4b9d55a6f539891524d646"
    LOCAL_FILES = {"validation": "boolq/val.jsonl"}
    SAMPLE_SPLIT = "validation"
    FEWSHOT_SPLIT = "train"
    OUTPUT_TYPE = OutputType.LOGPROBS
    METRICS = ["acc"]

    def adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        label = row["label"]
        if isinstance(label, str):
            label = {"false": 0, "true": 1}[label.strip().lower()]
        return {**row, "label": int(label)}

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return f"{item['passage']}\nQuestion: {item['question']}?\nAnswer:"

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return list(ANSWERS)

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return ANSWERS[int(item["label"])]

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        return int(item["label"])
