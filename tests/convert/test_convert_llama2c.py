"""Tests for the llama2.c -> Hugging Face conversion and the shipped stories260k model."""

from __future__ import annotations

import random
import struct
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

import mill.convert
from mill.convert.llama2c import convert
from tests.helpers import SHARED

SOURCE = SHARED / "models" / "stories260K"
MODEL_BIN = SOURCE / "stories260K.bin"
TOKENIZER_BIN = SOURCE / "tok512.bin"
SHIPPED = Path(mill.convert.__file__).resolve().parents[1] / "resources" / "models" / "stories260k"

needs_source = pytest.mark.skipif(not SOURCE.is_dir(), reason=f"{SOURCE} is absent")

# llama2.c doc/stories260K.md: `./run stories260K.bin -z tok512.bin -t 0.0` (256 steps).
DOCUMENTED = (
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
    " One day, she saw a big, red ball. She wanted to play with it, but it was too high.\n"
    "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do."
    ' She said, "I want to play with your ball, but I can\'t find it."\n'
    "Lily was sad and didn't know what to do. She said, \"I'm sorry, Lily. I didn't know what"
    ' to do."\n'
    "Lily didn't want to help her mom, so she said, \"I'm sorry, mom. I didn't know what to do.\""
    " Her mom said, \"Don't worry, Lily. We can help you."
)

SAMPLES = [
    "Once upon a time, there was a little girl named Lily.",
    'Tim and his mom went to the park. They saw a big dog! The dog said: "Woof, woof?"',
    'She said, "I\'m sorry." Then (quietly) she left; it was 3:45 pm - 10% later & $20 [sic].',
    "1234567890 3.14159 2024-01-02 #42 @home ~tilde `code` a+b*c/d\\e|f<g>h",
    "Line one.\nLine two.\n\nLine four.\tTabbed\r\nWindows line.",
    "multiple   spaces    here  and trailing   ",
    "   leading spaces",
    " one leading space",
    "\n",
    " ",
    "x",
    "Café naïve résumé jalapeño — “quoted” ‘single’ … €5 ™ non\u00a0breaking",
    "日本語のテキスト and 中文 mixed with English.",
    "Emoji: 😀🎉👍🏽 family 👨‍👩‍👧 flags 🇫🇷 end.",
    "Ünïcödé ÅÆØ ß ſ ﬁ Ω ≈ ∑ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u200b zero width",
    "lilylilylily Lilyily ilyily  Timmy Timmytimmy",
    "The the THE tHe thethe the-the the_the",
]


# --- Independent re-implementation of llama2.c's encode() (run.c), reading tok512.bin. ---


@cache
def _llama2c_vocab() -> tuple[list[bytes], list[float], dict[bytes, int]]:
    """Pieces, scores and the piece -> id lookup of tok512.bin."""
    data = TOKENIZER_BIN.read_bytes()
    pos, pieces, scores = 4, [], []
    while pos < len(data):
        score, length = struct.unpack_from("<fi", data, pos)
        pos += 8
        pieces.append(data[pos : pos + length])
        scores.append(score)
        pos += length
    return pieces, scores, {p: i for i, p in enumerate(pieces)}


def llama2c_encode(text: str, bos: bool) -> list[int]:
    """Token ids exactly as llama2.c's encode(tokenizer, text, bos, eos=0) gives them."""
    pieces, scores, lookup = _llama2c_vocab()
    raw = text.encode("utf-8")
    tokens = [1] if bos else []
    if raw:
        tokens.append(lookup[b" "])  # dummy prefix
    buf = b""
    for k, byte in enumerate(raw):
        if byte & 0xC0 != 0x80:
            buf = b""
        buf += bytes([byte])
        nxt = raw[k + 1] if k + 1 < len(raw) else 0
        if nxt & 0xC0 == 0x80 and len(buf) < 4:
            continue
        if buf in lookup:
            tokens.append(lookup[buf])
        else:
            tokens.extend(b + 3 for b in buf)  # byte fallback
        buf = b""
    while True:
        best_score, best_id, best_idx = -1e10, -1, -1
        for k in range(len(tokens) - 1):
            merged = lookup.get(pieces[tokens[k]] + pieces[tokens[k + 1]], -1)
            if merged != -1 and scores[merged] > best_score:
                best_score, best_id, best_idx = scores[merged], merged, k
        if best_idx == -1:
            return tokens
        tokens[best_idx : best_idx + 2] = [best_id]


def _random_texts(n: int, seed: int = 0) -> list[str]:
    """Random strings mixing frequent pieces, spaces, punctuation and non-ASCII characters."""
    rng = random.Random(seed)
    atoms = [" ", "  ", "\n", "e", "t", "a", "h", "l", "y", "i", "n", "d", "o", "s", "L", "T"]
    atoms += [" the", " Lily", "ily", " Tim", "my", "ing", ".", ",", '"', "'", "!", "?", "-"]
    atoms += ["é", "ñ", "日", "本", "😀", "\u00a0", "“", "”", "’", "…", "€", "\t", "0", "7", "<"]
    return ["".join(rng.choices(atoms, k=rng.randint(1, 40))) for _ in range(n)]


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(SHIPPED)


@pytest.fixture(scope="module")
def model():
    return AutoModelForCausalLM.from_pretrained(SHIPPED).eval()


# --- (a) reconversion reproduces the shipped files ---


@needs_source
def test_reconversion_matches_shipped(tmp_path: Path) -> None:
    convert(MODEL_BIN, TOKENIZER_BIN, tmp_path)
    fresh = load_file(tmp_path / "model.safetensors")
    shipped = load_file(SHIPPED / "model.safetensors")
    assert sorted(fresh) == sorted(shipped)
    for name, tensor in shipped.items():
        assert fresh[name].dtype == tensor.dtype == np.float32, name
        assert np.array_equal(fresh[name], tensor), name
    for name in [
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ]:
        assert (tmp_path / name).read_text() == (SHIPPED / name).read_text(), name


def test_shipped_files_are_small() -> None:
    total = sum(f.stat().st_size for f in SHIPPED.iterdir())
    assert total < 1_200_000
    assert (SHIPPED / "LICENSE").is_file() and (SHIPPED / "README.md").is_file()


# --- (b) the tokenizer reproduces llama2.c's encoder ---


def test_tokenizer_specials(tokenizer) -> None:
    specials = [tokenizer.unk_token, tokenizer.bos_token, tokenizer.eos_token]
    assert specials == ["<unk>", "<s>", "</s>"]
    assert tokenizer.convert_tokens_to_ids(specials) == [0, 1, 2]
    assert (tokenizer.unk_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    assert len(tokenizer) == 512
    pieces = tokenizer.convert_ids_to_tokens([3, 13, 258, 259])
    assert pieces == ["<0x00>", "<0x0A>", "<0xFF>", " t"]


def test_tokenizer_known_ids(tokenizer) -> None:
    """Golden ids (checked against llama2.c's encoder), usable without the source files."""
    assert tokenizer("Once upon a time").input_ids == [1, 403, 407, 261, 378]
    assert tokenizer("").input_ids == [1]
    assert tokenizer(" hi").input_ids == [1, 410, 270, 417]
    assert tokenizer("é\n日", add_special_tokens=False).input_ids == [410, 485, 13, 233, 154, 168]


@needs_source
@pytest.mark.parametrize("text", SAMPLES + _random_texts(300))
def test_tokenizer_matches_llama2c(tokenizer, text: str) -> None:
    assert tokenizer(text).input_ids == llama2c_encode(text, bos=True)
    assert tokenizer(text, add_special_tokens=False).input_ids == llama2c_encode(text, bos=False)


@pytest.mark.parametrize("text", SAMPLES + _random_texts(100, seed=1))
def test_tokenizer_round_trip(tokenizer, text: str) -> None:
    ids = tokenizer(text).input_ids
    assert ids[0] == 1
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    assert tokenizer.decode(ids[1:]) == text


def test_tokenizer_batch_matches_single(tokenizer) -> None:
    batch = tokenizer(SAMPLES).input_ids
    assert batch == [tokenizer(text).input_ids for text in SAMPLES]


# --- (c) the converted model reproduces the documented greedy output ---


@pytest.mark.slow  # real model, seconds of compute
def test_greedy_40_tokens(model, tokenizer) -> None:
    with torch.no_grad():
        out = model.generate(torch.tensor([[1]]), do_sample=False, max_new_tokens=40)
    ids = out[0].tolist()
    assert len(ids) == 41 and ids[0] == 1
    # llama2.c prints the raw pieces, the first being " Once"; the HF decoder strips that space.
    assert "".join(tokenizer.convert_ids_to_tokens(ids[1:])).startswith(" Once upon a time,")
    text = tokenizer.decode(ids, skip_special_tokens=True)
    assert text == (
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the"
        " park. One day, she saw a big, r"
    )
    assert DOCUMENTED.startswith(text)


@pytest.mark.slow  # real model, seconds of compute
def test_greedy_full_documented_output(model, tokenizer) -> None:
    with torch.no_grad():
        out = model.generate(torch.tensor([[1]]), do_sample=False, max_new_tokens=256)
    assert tokenizer.decode(out[0], skip_special_tokens=True) == DOCUMENTED
