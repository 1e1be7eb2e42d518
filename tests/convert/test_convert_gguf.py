"""Tests for the Hugging Face Llama -> GGUF conversion of the bundled stories260k model."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

import mill.convert
from mill.convert.gguf import convert, unpermute_rotary
from mill.convert.llama2c import _permute_rotary, read_checkpoint, read_pieces
from tests.helpers import SHARED, run_process

gguf = pytest.importorskip("gguf", reason="the gguf package (extra 'served') is not installed")

STORIES = Path(mill.convert.__file__).resolve().parents[1] / "resources" / "models" / "stories260k"
SHARED_SOURCE = SHARED / "models" / "stories260K"


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> gguf.GGUFReader:
    out = tmp_path_factory.mktemp("gguf") / "stories260k.gguf"
    convert(STORIES, out)
    assert not [p for p in out.parent.iterdir() if p.name != out.name]  # no temporary left
    return gguf.GGUFReader(out)


def _field(reader: gguf.GGUFReader, key: str) -> object:
    return reader.fields[key].contents()


def test_metadata(reader: gguf.GGUFReader) -> None:
    expected = {
        "general.architecture": "llama",
        "llama.context_length": 512,
        "llama.embedding_length": 64,
        "llama.block_count": 5,
        "llama.feed_forward_length": 172,
        "llama.attention.head_count": 8,
        "llama.attention.head_count_kv": 4,
        "llama.rope.dimension_count": 8,
        "llama.rope.freq_base": 10000.0,
        "llama.vocab_size": 512,
        "general.file_type": 0,
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.unknown_token_id": 0,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_eos_token": False,
        "tokenizer.ggml.add_space_prefix": True,
    }
    assert {k: _field(reader, k) for k in expected} == expected
    eps = _field(reader, "llama.attention.layer_norm_rms_epsilon")
    assert eps == pytest.approx(1e-5, rel=1e-6)


def test_vocabulary(reader: gguf.GGUFReader) -> None:
    hf = json.loads((STORIES / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    by_id = sorted(hf, key=hf.__getitem__)
    tokens = _field(reader, "tokenizer.ggml.tokens")
    assert tokens == [name.replace(" ", "\u2581") for name in by_id]
    assert tokens[259] == "\u2581t"  # the first merged piece
    types = _field(reader, "tokenizer.ggml.token_type")
    assert types == [2, 3, 3] + [6] * 256 + [1] * (512 - 259)


@pytest.mark.skipif(not SHARED_SOURCE.is_dir(), reason=f"{SHARED_SOURCE} is absent")
def test_scores_equal_the_llama2c_tokenizer(reader: gguf.GGUFReader) -> None:
    pieces = read_pieces(SHARED_SOURCE / "tok512.bin", 512)
    scores = _field(reader, "tokenizer.ggml.scores")
    assert scores == [score for _, score in pieces]


def test_scores_follow_the_merge_order(reader: gguf.GGUFReader) -> None:
    scores = np.array(_field(reader, "tokenizer.ggml.scores"))
    assert np.all(scores[:259] == 0)
    assert np.all(np.diff(scores[259:]) < 0)  # merged pieces first, ranked, then the rest


def test_tensors_round_trip(reader: gguf.GGUFReader) -> None:
    hf = load_file(str(STORIES / "model.safetensors"))
    got = {t.name: np.array(t.data) for t in reader.tensors}
    assert all(t.tensor_type == gguf.GGMLQuantizationType.F32 for t in reader.tensors)
    assert "output.weight" not in got  # tied head: llama.cpp reuses token_embd
    assert len(got) == 2 + 5 * 9
    names = {
        "attn_norm": ("input_layernorm", None),
        "attn_q": ("self_attn.q_proj", 8),
        "attn_k": ("self_attn.k_proj", 4),
        "attn_v": ("self_attn.v_proj", None),
        "attn_output": ("self_attn.o_proj", None),
        "ffn_norm": ("post_attention_layernorm", None),
        "ffn_gate": ("mlp.gate_proj", None),
        "ffn_up": ("mlp.up_proj", None),
        "ffn_down": ("mlp.down_proj", None),
    }
    np.testing.assert_array_equal(got["token_embd.weight"], hf["model.embed_tokens.weight"])
    np.testing.assert_array_equal(got["output_norm.weight"], hf["model.norm.weight"])
    for layer in range(5):
        for short, (hf_name, n_heads) in names.items():
            w = got[f"blk.{layer}.{short}.weight"]
            ref = hf[f"model.layers.{layer}.{hf_name}.weight"]
            assert w.shape == ref.shape
            if n_heads is not None:
                assert not np.array_equal(w, ref)  # the permutation changed something
                w = _permute_rotary(w, n_heads)  # back to Hugging Face's half-split order
            np.testing.assert_array_equal(w, ref)


@pytest.mark.skipif(not SHARED_SOURCE.is_dir(), reason=f"{SHARED_SOURCE} is absent")
def test_tensors_equal_the_llama2c_checkpoint(reader: gguf.GGUFReader) -> None:
    _, t = read_checkpoint(SHARED_SOURCE / "stories260K.bin")
    got = {t.name: np.array(t.data) for t in reader.tensors}
    for layer in range(5):
        np.testing.assert_array_equal(got[f"blk.{layer}.attn_q.weight"], t["wq"][layer])
        np.testing.assert_array_equal(got[f"blk.{layer}.attn_k.weight"], t["wk"][layer])
        np.testing.assert_array_equal(got[f"blk.{layer}.ffn_gate.weight"], t["w1"][layer])
    np.testing.assert_array_equal(got["token_embd.weight"], t["token_embedding"])


def test_unpermute_inverts_the_hf_permutation() -> None:
    w = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    for n_heads in (1, 2, 4):
        np.testing.assert_array_equal(unpermute_rotary(_permute_rotary(w, n_heads), n_heads), w)


@pytest.mark.slow
def test_cli_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "m.gguf"
    proc = run_process(sys.executable, "-m", "mill.convert.gguf", STORIES, out, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert gguf.GGUFReader(out).fields["general.architecture"].contents() == "llama"


@pytest.mark.slow
def test_cli_rejects_a_non_llama_folder(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(STORIES, src)
    config = json.loads((src / "config.json").read_text())
    (src / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    out = tmp_path / "out" / "m.gguf"
    proc = run_process(sys.executable, "-m", "mill.convert.gguf", src, out, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "model_type 'gpt2'" in lines[0], proc.stderr
    assert not out.parent.exists() or not any(out.parent.iterdir())
