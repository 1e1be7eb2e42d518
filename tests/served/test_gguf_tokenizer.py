"""llama.cpp's tokenizer, read from the converted GGUF, splits text exactly as the Hugging Face
tokenizer of stories260k does (the served backends check echoed tokens against the local
tokenizer, so a difference here would stop every run on that text)."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from transformers import AutoTokenizer

from tests.support.servers import SERVED_NAME, STORIES, ServerProcess, http_json

pytestmark = pytest.mark.slow

DATA = resources.files("mill.resources").joinpath("data")


def _texts() -> list[str]:
    texts = []
    for line in DATA.joinpath("arc_easy/ARC-Easy-Test.jsonl").read_text().splitlines()[:40]:
        row = json.loads(line)
        question = row["question"]["stem"]
        texts += [f"Question: {question}\nAnswer: {c['text']}" for c in row["question"]["choices"]]
    for line in DATA.joinpath("gsm8k/test.jsonl").read_text().splitlines()[:20]:
        row = json.loads(line)
        texts.append(f"Question: {row['question']}\nAnswer: {row['answer']}")
    wiki = DATA.joinpath("wikitext2/test.txt").read_text()
    texts += [wiki[i : i + 1500] for i in range(0, 15000, 1500)]
    texts += ["  two leading spaces", "tabs\tand\r\nCRLF", "émigré café ñ 你好 🙂", "\n\n", " "]
    return texts


def test_server_tokenizes_like_transformers(llama_server: ServerProcess) -> None:
    tok = AutoTokenizer.from_pretrained(STORIES)
    mismatches = []
    texts = _texts()
    for text in texts:
        status, body = http_json(
            llama_server.root_url + "/extras/tokenize", {"model": SERVED_NAME, "input": text}
        )
        assert status == 200, body
        expected = tok(text)["input_ids"]
        if body["tokens"] != expected:
            mismatches.append((text[:60], body["tokens"][:12], expected[:12]))
    assert len(texts) == 195
    assert not mismatches, mismatches[:3]
