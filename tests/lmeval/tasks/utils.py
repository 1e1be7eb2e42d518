"""``!function`` hooks of the test-tree lm-eval tasks (run by lm-eval's own YAML loader).

The local files' conversions to the Hub schemas that lm-eval's tasks read are Mill's own
(the adapters its native tasks use on the same files, checked against the Hub data by the
native parity tests): they prepare the input that both harnesses then read, so sharing them
does not weaken the comparison. Prompts, detokenizer and metrics are lm-eval's.
"""

from __future__ import annotations

from typing import Any

from lm_eval.tasks.wikitext.preprocess_wikitext import (  # noqa: F401 - used by the YAML
    process_results,
    wikitext_detokenizer,
)
from mill.tasks.arc import ai2_to_hub
from mill.tasks.wikitext import split_pages


def ai2_to_hf(dataset: Any) -> Any:
    """AI2's ARC jsonl (question.stem, question.choices) in the schema of the Hub's
    ``allenai/ai2_arc`` that lm-eval's arc tasks read (question, choices.text/label)."""
    return dataset.map(ai2_to_hub, remove_columns=dataset.column_names)


def wikitext_pages(dataset: Any) -> Any:
    """WikiText-2 as lines (``wiki.test.tokens``) -> documents with a ``page`` field, one per
    article (Mill's split: a new article at each level-1 `` = Title = `` line)."""
    import datasets

    text = "".join(line + "\n" for line in dataset["text"])
    return datasets.Dataset.from_dict({"page": split_pages(text)})
