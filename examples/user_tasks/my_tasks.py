"""A task as a Python class with the task hooks (same prompt as capitals.yaml)."""

from typing import Any

from mill.task import Task
from mill.types import OutputType


class Capitals(Task):
    NAME = "capitals_py"
    DATASET_PATH = "capitals"  # no hub dataset: the rows come from task.dataset.data_files
    SAMPLE_SPLIT = "test"
    OUTPUT_TYPE = OutputType.LOGPROBS
    METRICS = ["acc", "acc_norm"]

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return f"Question: {item['question']}\nAnswer:"

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return item["choices"]

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return item["choices"][item["answer"]]
