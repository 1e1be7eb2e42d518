"""WikiText-2 document-level perplexity; lm-eval 0.4.13 ``wikitext`` (detokenized pages).

Hub: ``EleutherAI/wikitext_document_level`` (one row per article, field ``page``). Local
files: the ``wiki.*.tokens`` text release, split here into articles at each level-1
heading (`` = Title = ``), which is how the document-level dataset was built.
"""

from __future__ import annotations

import re
from typing import Any

from mill.task import Task
from mill.types import OutputType

_HEADING = re.compile(r"^ = [^=].* = $")


def split_pages(text: str) -> list[str]:
    """Split a ``wiki.*.tokens`` file into articles, each starting at its title line."""
    pages: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if _HEADING.match(line.rstrip("\n")) or not pages:
            pages.append([])
        pages[-1].append(line)
    return ["".join(p) for p in pages if "".join(p).strip()]


def wikitext_detokenizer(page: str) -> str:
    """Undo WikiText's tokenization (lm-eval's ``preprocess_wikitext.wikitext_detokenizer``)."""
    string = page
    string = string.replace("s '", "s'")
    string = re.sub(r"/' [0-9]/", r"/'[0-9]/", string)
    string = string.replace(" @-@ ", "-")
    string = string.replace(" @,@ ", ",")
    string = string.replace(" @.@ ", ".")
    for mark in (":", ";", ".", "!", "?", ","):
        string = string.replace(f" {mark} ", f"{mark} ")
    string = re.sub(r"\(\s*([^\)]*?)\s*\)", r"(\1)", string)
    string = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", string)
    string = re.sub(r"{\s*([^}]*?)\s*}", r"{\1}", string)
    string = re.sub(r"\"\s*([^\"]*?)\s*\"", r'"\1"', string)
    string = re.sub(r"'\s*([^']*?)\s*'", r"'\1'", string)
    string = string.replace("= = = =", "====")
    string = string.replace("= = =", "===")
    string = string.replace("= =", "==")
    string = string.replace(" " + chr(176) + " ", chr(176))
    string = string.replace(" \n", "\n")
    string = string.replace("\n ", "\n")
    string = string.replace(" N ", " 1 ")
    string = string.replace(" 's", "'s")
    return string


class WikiText(Task):
    """WikiText-2 test articles scored with rolling windows; word/byte perplexity, bpb."""

    NAME = "wikitext"
    DATASET_PATH = "EleutherAI/wikitext_document_level"
    DATASET_NAME = "wikitext-2-raw-v1"
    # the commit that public projects' HF caches record for this dataset
    # (.../wikitext_document_level/wikitext-2-raw-v1/0.0.0/<sha>)
    DATASET_REVISION = "647234772b9554e208af6c826f23b99e3cac88c8"
    LOCAL_FILES = {"test": "wikitext2/test.txt", "validation": "wikitext2/valid.txt"}
    LOCAL_BUILDER = "text"
    LOCAL_BUILDER_KWARGS = {"sample_by": "document", "keep_linebreaks": True}
    SAMPLE_SPLIT = "test"
    OUTPUT_TYPE = OutputType.PERPLEXITY
    METRICS = ["word_perplexity", "byte_perplexity", "bits_per_byte"]

    def process_docs(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if rows and "page" not in rows[0]:  # a local .tokens file read as one document
            return [{"page": page} for row in rows for page in split_pages(row["text"])]
        return rows

    def doc_to_perplexity_text(self, item: dict[str, Any]) -> str:
        return wikitext_detokenizer(item["page"])

    def doc_to_target(self, item: dict[str, Any]) -> str:
        # lm-eval counts words and bytes of the page *before* detokenization
        return item["page"]
