"""Convert a llama2.c checkpoint and tokenizer into a Hugging Face Llama directory.

The result loads fully offline with ``AutoModelForCausalLM.from_pretrained(out_dir)`` and
``AutoTokenizer.from_pretrained(out_dir)``::

    mill-convert-llama2c \\
        --model stories260K.bin --tokenizer tok512.bin --out mill/resources/models/stories260k

Checkpoint (legacy llama2.c "version 0"): a header of 7 int32 values ``dim, hidden_dim,
n_layers, n_heads, n_kv_heads, vocab_size, seq_len`` (a positive ``vocab_size`` means the
output head is tied to the token embedding), then float32 tensors: token_embedding, rms_att,
wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, and the unused rotary tables.

llama2.c rotates interleaved pairs ``(0, 1), (2, 3), ...`` of each head while Hugging Face Llama
rotates halves (``rotate_half``), so the rows of wq and wk are permuted per head, as in
Hugging Face's own Llama conversion script.

Tokenizer: int32 ``max_token_length``, then per token a float32 score, an int32 byte length and
the bytes. llama2.c's encoder prepends one space, maps each UTF-8 character to its piece (or to
the byte tokens ``<0x00>``..``<0xFF>``), then repeatedly merges the adjacent pair whose
concatenation is a piece with the highest score. That is a BPE whose merge rank is the score
order of the merged piece, which :func:`build_tokenizer` expresses with the ``tokenizers``
library. Two corner cases could differ, and :func:`build_tokenizer` raises if the vocabulary
contains either: two merged pieces with equal scores, and a piece with two splits that share a
middle part (``a+b == b+c``). Special-token strings in the input text (``<s>``) are read as
the special tokens, as with every Hugging Face Llama tokenizer.
"""

from __future__ import annotations

import argparse
import json
import struct
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors

__all__ = ["Llama2cConfig", "build_tokenizer", "convert", "main", "read_checkpoint", "read_pieces"]

_HEADER = struct.Struct("<7i")
_SPECIAL_NAMES = {0: "<unk>", 1: "<s>", 2: "</s>"}
_N_BYTE_TOKENS = 256
_FIRST_BYTE_ID = 3


@dataclass(frozen=True)
class Llama2cConfig:
    """The 7-integer header of a llama2.c checkpoint."""

    dim: int
    """Model (hidden) width."""
    hidden_dim: int
    """Width of the SwiGLU feed-forward layer."""
    n_layers: int
    """Number of transformer blocks."""
    n_heads: int
    """Number of query heads."""
    n_kv_heads: int
    """Number of key/value heads (grouped-query attention)."""
    vocab_size: int
    """Vocabulary size; negative in the file when the output head is not tied."""
    seq_len: int
    """Maximum sequence length."""

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.dim // self.n_heads

    @property
    def shared_classifier(self) -> bool:
        """Whether the output head is the token embedding (llama2.c: positive vocab_size)."""
        return self.vocab_size > 0


def read_checkpoint(path: Path) -> tuple[Llama2cConfig, dict[str, np.ndarray]]:
    """Read a llama2.c version-0 checkpoint.

    Args:
        path: The ``.bin`` checkpoint.

    Returns:
        The header and the float32 tensors keyed by their llama2.c names (``wq`` is
        ``[n_layers, dim, dim]`` and so on), in llama2.c's own row order.

    Raises:
        ValueError: The file size does not match the header.
    """
    data = path.read_bytes()
    cfg = Llama2cConfig(*_HEADER.unpack_from(data))
    if cfg.dim % cfg.n_heads or cfg.n_heads % cfg.n_kv_heads or cfg.head_dim % 2:
        raise ValueError(f"{path}: implausible header {cfg}")
    vocab, dim, hidden, n_layers = abs(cfg.vocab_size), cfg.dim, cfg.hidden_dim, cfg.n_layers
    kv_dim = cfg.n_kv_heads * cfg.head_dim
    shapes: dict[str, tuple[int, ...]] = {
        "token_embedding": (vocab, dim),
        "rms_att": (n_layers, dim),
        "wq": (n_layers, dim, dim),
        "wk": (n_layers, kv_dim, dim),
        "wv": (n_layers, kv_dim, dim),
        "wo": (n_layers, dim, dim),
        "rms_ffn": (n_layers, dim),
        "w1": (n_layers, hidden, dim),
        "w2": (n_layers, dim, hidden),
        "w3": (n_layers, hidden, dim),
        "rms_final": (dim,),
        "freq_cis_real": (cfg.seq_len, cfg.head_dim // 2),
        "freq_cis_imag": (cfg.seq_len, cfg.head_dim // 2),
    }
    if not cfg.shared_classifier:
        shapes["wcls"] = (vocab, dim)
    expected = _HEADER.size + 4 * sum(int(np.prod(s)) for s in shapes.values())
    if len(data) != expected:
        raise ValueError(f"{path}: {len(data)} bytes, the header implies {expected}")
    floats = np.frombuffer(data, dtype="<f4", offset=_HEADER.size)
    tensors: dict[str, np.ndarray] = {}
    start = 0
    for name, shape in shapes.items():
        size = int(np.prod(shape))
        tensors[name] = floats[start : start + size].reshape(shape).astype(np.float32)
        start += size
    return cfg, tensors


def read_pieces(path: Path, vocab_size: int) -> list[tuple[bytes, float]]:
    """Read a llama2.c tokenizer file.

    Args:
        path: The tokenizer ``.bin`` (for example ``tok512.bin``).
        vocab_size: Number of tokens, from the checkpoint header.

    Returns:
        ``(piece bytes, score)`` for each token id.

    Raises:
        ValueError: The file has leftover or missing bytes.
    """
    data = path.read_bytes()
    offset = 4  # max_token_length, not needed
    pieces: list[tuple[bytes, float]] = []
    for _ in range(vocab_size):
        score, length = struct.unpack_from("<fi", data, offset)
        offset += 8
        pieces.append((data[offset : offset + length], score))
        offset += length
    if offset != len(data):
        raise ValueError(f"{path}: {len(data) - offset} bytes left after {vocab_size} tokens")
    return pieces


def _permute_rotary(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Reorder the rows of a q/k projection from interleaved to half-split rotary pairs."""
    rows, cols = w.shape
    head_dim = rows // n_heads
    out: np.ndarray = w.reshape(n_heads, head_dim // 2, 2, cols).transpose(0, 2, 1, 3)
    return out.reshape(rows, cols)


def _hf_state_dict(cfg: Llama2cConfig, t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Map llama2.c tensors onto ``LlamaForCausalLM`` parameter names."""
    out = {"model.embed_tokens.weight": t["token_embedding"], "model.norm.weight": t["rms_final"]}
    if not cfg.shared_classifier:
        out["lm_head.weight"] = t["wcls"]
    for i in range(cfg.n_layers):
        p = f"model.layers.{i}."
        out[p + "input_layernorm.weight"] = t["rms_att"][i]
        out[p + "self_attn.q_proj.weight"] = _permute_rotary(t["wq"][i], cfg.n_heads)
        out[p + "self_attn.k_proj.weight"] = _permute_rotary(t["wk"][i], cfg.n_kv_heads)
        out[p + "self_attn.v_proj.weight"] = t["wv"][i]
        out[p + "self_attn.o_proj.weight"] = t["wo"][i]
        out[p + "post_attention_layernorm.weight"] = t["rms_ffn"][i]
        out[p + "mlp.gate_proj.weight"] = t["w1"][i]
        out[p + "mlp.down_proj.weight"] = t["w2"][i]
        out[p + "mlp.up_proj.weight"] = t["w3"][i]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def _hf_config(cfg: Llama2cConfig) -> dict[str, object]:
    """The ``config.json`` contents for ``LlamaForCausalLM``."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": cfg.dim,
        "intermediate_size": cfg.hidden_dim,
        "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.n_heads,
        "num_key_value_heads": cfg.n_kv_heads,
        "head_dim": cfg.head_dim,
        "vocab_size": abs(cfg.vocab_size),
        "max_position_embeddings": cfg.seq_len,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "pretraining_tp": 1,
        "use_cache": True,
        "tie_word_embeddings": cfg.shared_classifier,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "pad_token_id": None,
        "dtype": "float32",  # transformers >= 5
        "torch_dtype": "float32",  # transformers 4.x
    }


def _token_names(pieces: list[tuple[bytes, float]]) -> list[str]:
    """Hugging Face vocabulary strings: standard special names, UTF-8 text for the rest."""
    names = [_SPECIAL_NAMES.get(i, piece.decode("utf-8")) for i, (piece, _) in enumerate(pieces)]
    for b in range(_N_BYTE_TOKENS):
        if names[_FIRST_BYTE_ID + b] != f"<0x{b:02X}>":
            raise ValueError(f"token {_FIRST_BYTE_ID + b} is {names[_FIRST_BYTE_ID + b]!r}")
    if len(set(names)) != len(names):
        raise ValueError("duplicate token strings")
    return names


def _merges(pieces: list[tuple[bytes, float]]) -> list[tuple[str, str]]:
    """BPE merges equivalent to llama2.c's highest-score-first pair merging.

    Every split of a merged piece into two vocabulary strings is a merge; merges are ranked by
    the merged piece's score, highest first.

    Raises:
        ValueError: The vocabulary has a corner case where the two algorithms could differ.
    """
    ids = {piece: i for i, (piece, _) in enumerate(pieces)}
    first_piece = _FIRST_BYTE_ID + _N_BYTE_TOKENS
    ranked: list[tuple[float, int, str, str]] = []
    merged_scores: dict[int, float] = {}
    for i in range(first_piece, len(pieces)):
        piece, score = pieces[i]
        text = piece.decode("utf-8")
        splits = [(text[:k], text[k:]) for k in range(1, len(text))]
        splits = [(a, b) for a, b in splits if a.encode() in ids and b.encode() in ids]
        if not splits:
            continue
        if any(ids[a.encode()] < first_piece or ids[b.encode()] < first_piece for a, b in splits):
            raise ValueError(f"piece {text!r} would merge a special or byte token")
        # Tokens a, b, c with both (a, b) and (b, c) merging into this piece: llama2.c merges
        # the leftmost pair, a BPE merge list the pair listed first.
        split_set = set(splits)
        for a, b in splits:
            c = text[len(b) :]
            if (b, c) in split_set and (a, b) != (b, c):
                raise ValueError(f"piece {text!r} has overlapping splits {a!r}+{b!r}+{c!r}")
        merged_scores[i] = score
        ranked.extend((-score, i, a, b) for a, b in splits)
    if len(set(merged_scores.values())) != len(merged_scores):
        raise ValueError("two merged pieces share a score; the merge order would be ambiguous")
    ranked.sort(key=lambda m: (m[0], m[1]))
    return [(a, b) for _, _, a, b in ranked]


def build_tokenizer(pieces: list[tuple[bytes, float]]) -> Tokenizer:
    """Build a ``tokenizers`` tokenizer that reproduces llama2.c's encoder.

    Args:
        pieces: ``(piece bytes, score)`` per token id, from :func:`read_pieces`.

    Returns:
        A BPE tokenizer with byte fallback, a normalizer that prepends one space to non-empty
        text, a post-processor that adds BOS, and a decoder that undoes the leading space.

    Raises:
        ValueError: The vocabulary is not laid out as llama2.c's (specials, then 256 byte
            tokens), or has a corner case the BPE merge list cannot express.
    """
    names = _token_names(pieces)
    vocab = {name: i for i, name in enumerate(names)}
    bpe = models.BPE(
        vocab=vocab,
        merges=_merges(pieces),
        unk_token=_SPECIAL_NAMES[0],
        byte_fallback=True,
        fuse_unk=False,
        ignore_merges=False,
    )
    tok = Tokenizer(bpe)
    tok.add_special_tokens(
        [AddedToken(name, special=True, normalized=False) for name in _SPECIAL_NAMES.values()]
    )
    tok.normalizer = normalizers.Prepend(" ")
    tok.decoder = decoders.Sequence(
        [decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(content=" ", left=1, right=0)]
    )
    bos = _SPECIAL_NAMES[1]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0",
        pair=f"{bos}:0 $A:0 {bos}:1 $B:1",
        special_tokens=[(bos, 1)],
    )
    return tok


def _tokenizer_config(seq_len: int) -> dict[str, object]:
    """The ``tokenizer_config.json`` contents.

    The class is the generic fast tokenizer: ``LlamaTokenizer`` would replace the normalizer and
    pre-tokenizer with its own. BOS is added by the ``tokenizer.json`` post-processor; transformers
    5 ignores ``add_bos_token`` when a ``tokenizer.json`` exists (it reports ``False``), and the
    flag is kept for older versions.
    """
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": _SPECIAL_NAMES[1],
        "eos_token": _SPECIAL_NAMES[2],
        "unk_token": _SPECIAL_NAMES[0],
        "add_bos_token": True,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": seq_len,
        "model_input_names": ["input_ids", "attention_mask"],
    }


def _write_json(path: Path, obj: object) -> None:
    """Write ``obj`` as indented, key-sorted JSON with a trailing newline."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")


def convert(model_bin: Path, tokenizer_bin: Path, out_dir: Path) -> None:
    """Write a Hugging Face ``LlamaForCausalLM`` directory from llama2.c files.

    Writes ``config.json``, ``generation_config.json``, ``model.safetensors``,
    ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``.

    Args:
        model_bin: llama2.c checkpoint (version 0, for example ``stories260K.bin``).
        tokenizer_bin: llama2.c tokenizer (for example ``tok512.bin``).
        out_dir: Output directory, created if missing; existing files are overwritten.
    """
    from safetensors.numpy import save_file

    cfg, tensors = read_checkpoint(Path(model_bin))
    pieces = read_pieces(Path(tokenizer_bin), abs(cfg.vocab_size))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    source = {"source": "llama2.c", **{k: str(v) for k, v in asdict(cfg).items()}}
    save_file(
        _hf_state_dict(cfg, tensors),
        str(out / "model.safetensors"),
        metadata={"format": "pt", **source},
    )
    _write_json(out / "config.json", _hf_config(cfg))
    _write_json(out / "generation_config.json", {"bos_token_id": 1, "eos_token_id": 2})
    build_tokenizer(pieces).save(str(out / "tokenizer.json"), pretty=False)
    _write_json(out / "tokenizer_config.json", _tokenizer_config(cfg.seq_len))
    _write_json(
        out / "special_tokens_map.json",
        {
            "bos_token": _SPECIAL_NAMES[1],
            "eos_token": _SPECIAL_NAMES[2],
            "unk_token": _SPECIAL_NAMES[0],
        },
    )


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point: ``mill-convert-llama2c``."""
    parser = argparse.ArgumentParser(
        prog="mill-convert-llama2c",
        description="Convert llama2.c files into a Hugging Face Llama directory.",
    )
    parser.add_argument("--model", type=Path, required=True, help="llama2.c checkpoint (.bin)")
    parser.add_argument("--tokenizer", type=Path, required=True, help="llama2.c tokenizer (.bin)")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    args = parser.parse_args(argv)
    convert(args.model, args.tokenizer, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
