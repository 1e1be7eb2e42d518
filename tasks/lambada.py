"""LAMBADA, OpenAI version, test; lm-eval 0.4.13 ``lambada_openai``.

The context is the passage without its last word; the continuation `` {last word}`` is
scored: ``acc`` = the greedy continuation is exactly that word, ``perplexity`` =
exp(-mean log-likelihood of the word).

Hub: ``EleutherAI/lambada_openai`` (``text``). Local file: the DERIVED llm-foundry copy
(``context``, ``continuation``), joined here into ``text`` = context + " " + continuation.
"""

from __future__ import annotations

from typing import Any

from mill.task import Task
from mill.types import OutputType


class LambadaOpenAI(Task):
    """``{text without last word}`` + `` {last word}``."""

    NAME = "lambada_openai"
    DATASET_PATH = "EleutherAI/lambada_openai"
    DATASET_NAME = "default"
    # No full commit sha could be verified (public pipelines cite only the short "879e19a");
    # pin one with task.dataset.revision=<sha>.
    DATASET_REVISION = None
    LOCAL_FILES = {"test": "lambada/lambada_openai.jsonl"}
    SAMPLE_SPLIT = "test"
    OUTPUT_TYPE = OutputType.LOGPROBS
    METRICS = ["perplexity", "acc"]

    @property
    def continuation_delimiter(self) -> str:
        # a loglikelihood task: lm-eval keeps the space even with a chat template
        return self.TARGET_DELIMITER

    def adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        return {"text": row["context"] + " " + row["continuation"]}

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return " ".join(item["text"].split(" ")[:-1])

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return [item["text"].split(" ")[-1]]

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return item["text"].split(" ")[-1]
