"""The reference a SmolLM2 GGUF conversion is checked against: ``transformers``' own
``gguf_file=`` load of the same file (tests/model/test_gguf.py).

``python -m tests.model.smollm2_reference GGUF OUT.json [DATA]`` loads the GGUF with
``transformers`` (minutes on 2 cores: it dequantizes the tensors and converts the
tokenizer in Python) and writes what the test compares: the SHA-256 of every tensor's fp32
bytes, the SHA-256 of the token ids of every text file of the shared data (``DATA``, by
default :data:`tests.helpers.SHARED_DATA`; the test skips without it), and the chat
template's output on :data:`CONVERSATIONS`; then the token ids again with the
pre-tokenizer the GGUF names (:func:`split_digits`). It prints where the load's time went.
The same functions digest Mill's converted folder in the test, so both sides are
measured the same way.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

TEXT_SUFFIXES = {".csv", ".json", ".jsonl", ".lst", ".md", ".tsv", ".txt", ".yaml"}
CHUNK_CHARS = 2000

CONVERSATIONS: list[dict[str, Any]] = [
    {"messages": [{"role": "user", "content": "What is 2+2?"}], "add_generation_prompt": True},
    {
        "messages": [
            {"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris"},
            {"role": "user", "content": "And of Italy? ¿Qué? 日本語 🙂"},
        ],
        "add_generation_prompt": True,
    },
    {
        "messages": [
            {"role": "user", "content": "Q: 3 + 4 =\nA:"},
            {"role": "assistant", "content": " 7"},
        ],
        "add_generation_prompt": False,
    },
]
"""Conversations rendered by the chat template (system prompt given and not given, a
generation prompt and none, non-ASCII text)."""


def shared_texts(data: Path) -> dict[str, list[str]]:
    """Every UTF-8 text file under ``data`` (by relative path) as chunks of whole lines
    (newlines kept) of at most about :data:`CHUNK_CHARS` characters."""
    out: dict[str, list[str]] = {}
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        if path.suffix not in TEXT_SUFFIXES and path.name != "LICENSE":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        chunks: list[str] = []
        current = ""
        for line in text.splitlines(keepends=True):
            if current and len(current) + len(line) > CHUNK_CHARS:
                chunks.append(current)
                current = ""
            current += line
        if current:
            chunks.append(current)
        out[str(path.relative_to(data))] = chunks
    return out


def token_digests(tokenizer: Any, texts: dict[str, list[str]]) -> dict[str, Any]:
    """Per file: the number of tokens and the SHA-256 of the ids (``tokenizer(chunks)``
    with the tokenizer's own special-token settings), as JSON."""
    out: dict[str, Any] = {}
    for name, chunks in texts.items():
        ids = tokenizer(chunks)["input_ids"] if chunks else []
        blob = json.dumps(ids, separators=(",", ":")).encode()
        out[name] = {"tokens": sum(map(len, ids)), "sha256": hashlib.sha256(blob).hexdigest()}
    return out


def tensor_digests(state_dict: dict[str, Any]) -> dict[str, Any]:
    """Per tensor: its shape, dtype and the SHA-256 of its bytes (contiguous, on the CPU)."""
    out: dict[str, Any] = {}
    for name, tensor in sorted(state_dict.items()):
        array = tensor.detach().cpu().contiguous().numpy()
        out[name] = {
            "shape": list(array.shape),
            "dtype": str(array.dtype),
            "sha256": hashlib.sha256(array.tobytes()).hexdigest(),
        }
    return out


def template_outputs(tokenizer: Any) -> list[str]:
    """The chat template's text for each of :data:`CONVERSATIONS`."""
    return [
        tokenizer.apply_chat_template(
            c["messages"], tokenize=False, add_generation_prompt=c["add_generation_prompt"]
        )
        for c in CONVERSATIONS
    ]


def special_tokens(tokenizer: Any) -> dict[str, Any]:
    """The tokenizer's special tokens and ids, and whether it adds BOS/EOS."""
    ids = tokenizer("a")["input_ids"]
    return {
        "bos": [tokenizer.bos_token, tokenizer.bos_token_id],
        "eos": [tokenizer.eos_token, tokenizer.eos_token_id],
        "unk": [tokenizer.unk_token, tokenizer.unk_token_id],
        "pad": [tokenizer.pad_token, tokenizer.pad_token_id],
        "ids_of_a": ids,
        "vocab_size": len(tokenizer),
    }


def reference(state_dict: dict[str, Any], tokenizer: Any, data: Path) -> dict[str, Any]:
    """Everything the test compares, for one model's tensors and tokenizer."""
    return {
        "tensors": tensor_digests(state_dict),
        "tokens": token_digests(tokenizer, shared_texts(data)),
        "chat_template": template_outputs(tokenizer),
        "special_tokens": special_tokens(tokenizer),
    }


def split_digits(tokenizer: Any) -> None:
    """Give ``tokenizer`` the pre-tokenizer the GGUF names (``smollm``: every digit on its
    own, then the GPT-2 pattern, as llama.cpp and the Hub's ``tokenizer.json`` do), which
    ``transformers``' GGUF load leaves out; its vocabulary, merges and special tokens stay."""
    from tokenizers import pre_tokenizers

    tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )


def main(argv: list[str]) -> None:
    from tests.helpers import SHARED_DATA

    gguf_path, out = Path(argv[0]), Path(argv[1])
    data = Path(argv[2]) if len(argv) > 2 else SHARED_DATA
    if not data.is_dir():
        sys.exit(f"smollm2_reference: no data at {data}: pass DATA or set $MILL_SHARED_DATA")
    import transformers

    t0 = time.perf_counter()
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name
    )
    t1 = time.perf_counter()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype="float32"
    )
    t2 = time.perf_counter()
    print(f"tokenizer {t1 - t0:.1f} s, model {t2 - t1:.1f} s", file=sys.stderr)
    result = reference(model.state_dict(), tokenizer, data)
    split_digits(tokenizer)
    result["tokens_digits_split"] = token_digests(tokenizer, shared_texts(data))
    result["transformers"] = transformers.__version__
    result["gguf_sha256"] = hashlib.sha256(gguf_path.read_bytes()).hexdigest()
    result["generation_config"] = model.generation_config.to_diff_dict()
    result["config"] = model.config.to_diff_dict()
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out} ({time.perf_counter() - t2:.1f} s digests)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
