"""``!function`` hooks of the test-tree lm-eval tasks (run by lm-eval's own YAML loader)."""

from __future__ import annotations

from typing import Any

from lm_eval.tasks.wikitext.preprocess_wikitext import (  # noqa: F401 - used by the YAML
    process_results,
    wikitext_detokenizer,
)


def ai2_to_hf(dataset: Any) -> Any:
    """AI2's ARC jsonl (question.stem, question.choices) in the schema of the Hub's
    ``allenai/ai2_arc`` that lm-eval's arc tasks read (question, choices.text/label)."""

    def convert(row: dict[str, Any]) -> dict[str, Any]:
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

    return dataset.map(convert, remove_columns=dataset.column_names)


def wikitext_pages(dataset: Any) -> Any:
    """WikiText-2 as lines (``wiki.test.tokens``) -> documents with a ``page`` field, one per
    article: a new article starts at a `` = Title = `` line."""
    import datasets

    pages: list[str] = []
    for line in dataset["text"]:
        stripped = line.strip()
        heading = stripped.startswith("= ") and not stripped.startswith("= =")
        if heading or not pages:
            pages.append("")
        pages[-1] += line + "\n"
    return datasets.Dataset.from_dict({"page": [p for p in pages if p.strip()]})
