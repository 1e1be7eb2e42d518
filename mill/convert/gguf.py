"""Convert a Hugging Face Llama folder with a sentencepiece-style BPE tokenizer into GGUF.

Written for the bundled stories260k model, so that llama.cpp servers can serve the same weights
the HF backend loads (the served-model tests compare the two)::

    mill-convert-gguf mill/resources/models/stories260k stories260k.gguf

Needs the ``gguf`` package (``pip install 'mill-eval[served]'``). All tensors are written as
F32 (``general.file_type`` 0).

Tensors: Hugging Face Llama rotates halves of each head (``rotate_half``) while llama.cpp
rotates interleaved pairs, so the rows of q and k are permuted back per head (8 query heads,
the key/value heads for k). A tied output head is left out; llama.cpp then reuses
``token_embd``.

Tokenizer: the ``tokenizer.json`` BPE vocabulary (byte fallback, a normalizer that prepends one
space) becomes a llama.cpp sentencepiece vocabulary (``tokenizer.ggml.model`` "llama"): every
space written as U+2581, the unknown token typed UNKNOWN, the other special tokens CONTROL,
``<0xXX>`` tokens BYTE, the rest NORMAL. llama.cpp merges the adjacent pair whose concatenation
has the highest score, so a piece's score is minus its position when pieces are ordered by the
rank of the first BPE merge that produces them (pieces no merge produces follow, by id);
special and byte tokens score 0. For stories260k these are the scores of llama2.c's
``tok512.bin``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mill.errors import MillError, ModelError

__all__ = ["GgufVocab", "convert", "main", "read_vocab", "unpermute_rotary"]

_SPM_SPACE = "\u2581"
_BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")

# GGUF token types (llama.cpp's llama_token_type): the values of gguf.TokenType.
_NORMAL, _UNKNOWN, _CONTROL, _BYTE = 1, 2, 3, 6


@dataclass(frozen=True)
class GgufVocab:
    """A sentencepiece vocabulary as llama.cpp reads it from GGUF metadata."""

    tokens: list[str]
    """Token strings by id, spaces written as U+2581."""
    scores: list[float]
    """Merge priority per token (higher merges first)."""
    token_types: list[int]
    """gguf.TokenType value per token."""
    unk_id: int
    bos_id: int
    eos_id: int
    add_bos: bool
    add_eos: bool
    add_space_prefix: bool


def unpermute_rotary(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Reorder the rows of a q/k projection from half-split to interleaved rotary pairs.

    The inverse of the permutation Hugging Face's Llama conversion applies.
    """
    rows, cols = w.shape
    out: np.ndarray = w.reshape(n_heads, 2, rows // n_heads // 2, cols).swapaxes(1, 2)
    interleaved: np.ndarray = out.reshape(rows, cols).copy()
    return interleaved


def _read_json(path: Path) -> dict[str, Any]:
    try:
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    except FileNotFoundError:
        raise ModelError(f"{path} is missing; pass a Hugging Face model folder") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"{path} is not readable JSON ({e}); re-export the model") from None


def _load_tensors(src: Path) -> dict[str, np.ndarray]:
    """All tensors of ``model.safetensors`` (or the shards listed in its index), as numpy."""
    from safetensors.numpy import load_file

    single = src / "model.safetensors"
    index = src / "model.safetensors.index.json"
    if single.is_file():
        files = [single]
    elif index.is_file():
        files = [src / f for f in sorted(set(_read_json(index)["weight_map"].values()))]
    else:
        raise ModelError(f"{src} has no model.safetensors; pass a folder saved by transformers")
    tensors: dict[str, np.ndarray] = {}
    for f in files:
        try:
            tensors.update(load_file(str(f)))
        except Exception as e:  # safetensors raises its own error types
            raise ModelError(f"{f} is not a readable safetensors file ({e})") from None
    return tensors


def _merged_ranks(model: dict[str, Any]) -> dict[str, int]:
    """For each piece a BPE merge produces, the rank of the first merge producing it."""
    ranks: dict[str, int] = {}
    for rank, merge in enumerate(model.get("merges") or []):
        a, b = merge.split(" ", 1) if isinstance(merge, str) else merge
        ranks.setdefault(a + b, rank)
    return ranks


def _template_has(post: dict[str, Any] | None, token: str) -> bool:
    """Whether a TemplateProcessing post-processor adds ``token`` to single sequences."""
    if not post:
        return False
    items = post.get("single") or []
    if post.get("type") == "Sequence":
        return any(_template_has(p, token) for p in post.get("processors", []))
    return any(item.get("SpecialToken", {}).get("id") == token for item in items)


def _prepends_space(normalizer: dict[str, Any] | None) -> bool:
    if not normalizer:
        return False
    if normalizer.get("type") == "Sequence":
        return any(_prepends_space(n) for n in normalizer.get("normalizers", []))
    return normalizer.get("type") == "Prepend" and normalizer.get("prepend") in (" ", _SPM_SPACE)


def read_vocab(src: Path) -> GgufVocab:
    """Read a byte-fallback BPE ``tokenizer.json`` as a llama.cpp sentencepiece vocabulary.

    Raises:
        ModelError: The tokenizer is not a byte-fallback BPE with the special tokens named in
            ``tokenizer_config.json``.
    """
    tok = _read_json(src / "tokenizer.json")
    tok_cfg = _read_json(src / "tokenizer_config.json")
    model = tok.get("model") or {}
    if model.get("type") != "BPE" or not model.get("byte_fallback"):
        raise ModelError(
            f"{src / 'tokenizer.json'}: only byte-fallback BPE (sentencepiece-style) tokenizers "
            "convert to a llama.cpp 'llama' vocabulary"
        )
    vocab: dict[str, int] = dict(model["vocab"])
    for added in tok.get("added_tokens") or []:
        vocab[added["content"]] = added["id"]
    n = max(vocab.values()) + 1
    names: list[str | None] = [None] * n
    for name, i in vocab.items():
        names[i] = name
    if any(name is None for name in names):
        raise ModelError(f"{src / 'tokenizer.json'}: token ids are not contiguous from 0")
    unk_id, bos_id, eos_id = (
        _special_id(src, tok_cfg, vocab, key) for key in ("unk_token", "bos_token", "eos_token")
    )
    special = {a["id"] for a in tok.get("added_tokens") or [] if a.get("special")}
    types = _token_types(names, unk_id, special | {unk_id, bos_id, eos_id})
    return GgufVocab(
        tokens=[str(name).replace(" ", _SPM_SPACE) for name in names],
        scores=_scores(model, names, types),
        token_types=types,
        unk_id=unk_id,
        bos_id=bos_id,
        eos_id=eos_id,
        add_bos=_template_has(tok.get("post_processor"), names[bos_id] or "")
        or bool(tok_cfg.get("add_bos_token", False)),
        add_eos=_template_has(tok.get("post_processor"), names[eos_id] or "")
        or bool(tok_cfg.get("add_eos_token", False)),
        add_space_prefix=_prepends_space(tok.get("normalizer")),
    )


def _special_id(src: Path, tok_cfg: dict[str, Any], vocab: dict[str, int], key: str) -> int:
    """The id of the special token ``tokenizer_config.json`` names under ``key``."""
    value = tok_cfg.get(key)
    name = value.get("content") if isinstance(value, dict) else value
    if name not in vocab:
        raise ModelError(
            f"{src / 'tokenizer_config.json'}: {key} {name!r} is not in the vocabulary"
        )
    return vocab[name]


def _token_types(names: list[str | None], unk_id: int, special: set[int]) -> list[int]:
    """Each token's llama.cpp type: unknown, control (special), byte (``<0xAB>``), normal."""
    types: list[int] = []
    for i, token in enumerate(names):
        if i == unk_id:
            types.append(_UNKNOWN)
        elif i in special:
            types.append(_CONTROL)
        elif _BYTE_TOKEN.fullmatch(token or ""):
            types.append(_BYTE)
        else:
            types.append(_NORMAL)
    return types


def _scores(model: dict[str, Any], names: list[str | None], types: list[int]) -> list[float]:
    """Sentencepiece scores: normal tokens ranked by the first merge producing them (merged
    pieces first, then the rest by id), the score minus the rank; 0 for the others."""
    ranks = _merged_ranks(model)
    normal = [i for i in range(len(names)) if types[i] == _NORMAL]
    order = sorted(
        normal, key=lambda i: (0, ranks[names[i] or ""], i) if names[i] in ranks else (1, 0, i)
    )
    scores = [0.0] * len(names)
    for position, i in enumerate(order):
        scores[i] = -float(position)
    return scores


_LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_tensors(src: Path, config: dict[str, Any]) -> dict[str, np.ndarray]:
    """The GGUF tensors (F32, llama.cpp names, q/k un-permuted) of a Hugging Face Llama."""
    hf = _load_tensors(src)
    n_layers = int(config["num_hidden_layers"])
    n_heads = int(config["num_attention_heads"])
    n_kv = int(config.get("num_key_value_heads") or n_heads)
    out: dict[str, np.ndarray] = {}

    def take(name: str) -> np.ndarray:
        if name not in hf:
            raise ModelError(f"{src}: tensor {name} is missing; is this a Llama checkpoint?")
        return np.ascontiguousarray(hf.pop(name), dtype=np.float32)

    out["token_embd.weight"] = take("model.embed_tokens.weight")
    out["output_norm.weight"] = take("model.norm.weight")
    if not config.get("tie_word_embeddings", False):
        out["output.weight"] = take("lm_head.weight")
    hf.pop("lm_head.weight", None)  # a saved copy of the tied head
    for layer in range(n_layers):
        for hf_name, gguf_name in _LAYER_TENSORS.items():
            w = take(f"model.layers.{layer}.{hf_name}")
            if hf_name == "self_attn.q_proj.weight":
                w = unpermute_rotary(w, n_heads)
            elif hf_name == "self_attn.k_proj.weight":
                w = unpermute_rotary(w, n_kv)
            out[f"blk.{layer}.{gguf_name}"] = w
    leftover = sorted(k for k in hf if not k.endswith("rotary_emb.inv_freq"))
    if leftover:
        raise ModelError(f"{src}: tensors with no GGUF name: {', '.join(leftover[:5])}")
    return out


def convert(src: Path, out: Path) -> None:
    """Write ``out`` (GGUF, all F32) from the Hugging Face Llama folder ``src``.

    The file is written next to ``out`` under a temporary name and renamed when complete.

    Raises:
        ModelError: ``src`` is not a Llama folder with a byte-fallback BPE tokenizer.
        MillError: The ``gguf`` package is not installed.
    """
    try:
        import gguf
    except ImportError:
        raise MillError(
            "the gguf package is not installed; run: pip install 'mill-eval[served]'"
        ) from None
    src, out = Path(src), Path(out)
    config = _read_json(src / "config.json")
    if config.get("model_type") != "llama":
        raise ModelError(
            f"{src / 'config.json'}: model_type {config.get('model_type')!r}; only 'llama' converts"
        )
    if config.get("rope_scaling"):
        raise ModelError(f"{src / 'config.json'}: rope_scaling is not supported by this converter")
    vocab = read_vocab(src)
    tensors = gguf_tensors(src, config)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    writer = gguf.GGUFWriter(tmp, "llama")
    try:
        writer.add_name(src.resolve().name)
        _add_hyperparameters(writer, config, len(vocab.tokens))
        writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
        _add_vocab(writer, vocab)
        for name, w in tensors.items():
            writer.add_tensor(name, w)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    finally:
        writer.close()
        tmp.unlink(missing_ok=True)


def _add_hyperparameters(writer: Any, config: dict[str, Any], vocab_size: int) -> None:
    """The Llama shape of a Hugging Face ``config.json``, in llama.cpp's keys (in the order
    the file has always had them)."""
    n_heads = int(config["num_attention_heads"])
    hidden = int(config["hidden_size"])
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(hidden)
    writer.add_block_count(int(config["num_hidden_layers"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(n_heads)
    writer.add_head_count_kv(int(config.get("num_key_value_heads") or n_heads))
    writer.add_rope_dimension_count(int(config.get("head_dim") or hidden // n_heads))
    writer.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))
    writer.add_rope_freq_base(float(config.get("rope_theta", 10000.0)))
    writer.add_vocab_size(vocab_size)


def _add_vocab(writer: Any, vocab: GgufVocab) -> None:
    """The vocabulary as a llama.cpp sentencepiece ('llama') tokenizer."""
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(vocab.tokens)
    writer.add_token_scores(vocab.scores)
    writer.add_token_types(vocab.token_types)
    writer.add_unk_token_id(vocab.unk_id)
    writer.add_bos_token_id(vocab.bos_id)
    writer.add_eos_token_id(vocab.eos_id)
    writer.add_add_bos_token(vocab.add_bos)
    writer.add_add_eos_token(vocab.add_eos)
    writer.add_add_space_prefix(vocab.add_space_prefix)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point: ``mill-convert-gguf SRC OUT``."""
    parser = argparse.ArgumentParser(
        prog="mill-convert-gguf",
        description="Convert a Hugging Face Llama folder into an F32 GGUF file for llama.cpp.",
    )
    parser.add_argument("src", type=Path, help="Hugging Face model folder")
    parser.add_argument("out", type=Path, help="GGUF file to write")
    args = parser.parse_args(argv)
    try:
        convert(args.src, args.out)
    except MillError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
