"""HellaSwag (Zellers et al. 2019), validation; lm-eval 0.4.13 ``hellaswag``.

The query is ``preprocess(activity_label + ": " + ctx_a + " " + ctx_b.capitalize())`` and
the choices are the preprocessed endings (lm-eval's ``utils.process_docs``).

Hub: ``Rowan/hellaswag``. Local file: the DERIVED ``hellaswag_val_full.txt.bz2`` (llama.cpp's
6-lines-per-item text: ``activity_label: ctx``, the gold label, four endings), read with the
``text`` builder and regrouped here. That file was already cleaned much like
``preprocess`` but lost the ``ctx_a``/``ctx_b`` boundary, so lm-eval's capitalisation of
``ctx_b`` is restored approximately: the fragment after the context's last sentence end,
when it starts lower-case (ActivityNet items such as "...on a roof. he" -> "... He").
"""

from __future__ import annotations

import re
from typing import Any

from mill.task import Task
from mill.types import OutputType

_LAST_FRAGMENT = re.compile(r"^(.*[.!?] )([a-z][^.!?]*)$", re.DOTALL)


def preprocess(text: str) -> str:
    """lm-eval's ``hellaswag.utils.preprocess``: strip, `` [title]`` -> ``. ``, drop
    ``[...]`` markers, collapse one level of double spaces."""
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    return text.replace("  ", " ")


def capitalise_last_fragment(query: str) -> str:
    """Approximate lm-eval's ``ctx_b.capitalize()`` on a flattened context."""
    match = _LAST_FRAGMENT.match(query)
    return match.group(1) + match.group(2).capitalize() if match else query


class HellaSwag(Task):
    """Sentence completion: ``{query}`` scored against `` {ending}`` for four endings."""

    NAME = "hellaswag"
    DATASET_PATH = "Rowan/hellaswag"
    # pinned in Aleph-Alpha-Research/eval-framework's hf-dataset-revisions.json
    DATASET_REVISION = "218ec52e09a7e7462a5400043bb9a69a41d06b76"
    LOCAL_FILES = {"validation": "hellaswag/hellaswag_val_full.txt.bz2"}
    LOCAL_BUILDER = "text"
    SAMPLE_SPLIT = "validation"
    FEWSHOT_SPLIT = "train"
    OUTPUT_TYPE = OutputType.LOGPROBS
    METRICS = ["acc", "acc_norm"]

    def process_docs(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if rows and set(rows[0]) == {"text"}:  # the local 6-lines-per-item text file
            lines = [r["text"] for r in rows]
            if len(lines) % 6:
                raise ValueError(f"hellaswag text file has {len(lines)} lines, not 6 per item")
            return [
                {
                    "query": preprocess(capitalise_last_fragment(lines[i])),
                    "choices": [preprocess(e) for e in lines[i + 2 : i + 6]],
                    "gold": int(lines[i + 1]),
                }
                for i in range(0, len(lines), 6)
            ]
        return [
            {
                **row,
                "query": preprocess(
                    row["activity_label"] + ": " + row["ctx_a"] + " " + row["ctx_b"].capitalize()
                ),
                "choices": [preprocess(e) for e in row["endings"]],
                "gold": int(row["label"]),
            }
            for row in rows
        ]

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return item["query"]

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return list(item["choices"])

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return item["choices"][item["gold"]]

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        return int(item["gold"])
