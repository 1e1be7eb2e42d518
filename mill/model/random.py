"""A seeded random GPT-2-shaped model with the real GPT-2 tokenizer, built once and cached."""

from __future__ import annotations

import logging
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.files import cache_root, sealed_folder
from mill.model.hf import HFCausalLM
from mill.progress import loading_step


def build_random_gpt2(
    tokenizer_dir: Path,
    out_dir: Path,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    n_positions: int = 1024,
    seed: int = 0,
) -> Path:
    """Write config, safetensors weights and the tokenizer files into ``out_dir``."""
    import torch
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel

    # the fast tokenizer on transformers 4.x and 5.x: a lazy export that mypy cannot see
    tokenizer_class = transformers.GPT2TokenizerFast  # type: ignore[attr-defined]

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=50257,
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        bos_token_id=50256,
        eos_token_id=50256,
    )
    model = GPT2LMHeadModel(config)
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # its "Writing model shards" bar
    _quiet_deepspeed()
    try:
        model.save_pretrained(out_dir)
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        source = Path(tokenizer_dir) / name
        if source.exists():
            shutil.copyfile(source, out_dir / name)
    tokenizer_class.from_pretrained(out_dir).save_pretrained(out_dir)
    return out_dir


def _no_accelerator_line(record: logging.LogRecord) -> bool:
    """False for DeepSpeed's "Setting accelerator to CPU" warning (a logging filter)."""
    return not str(record.msg).startswith("Setting accelerator to CPU")


def _quiet_deepspeed() -> None:
    """Drop the line DeepSpeed prints when it is imported on a machine without a GPU.

    ``save_pretrained`` unwraps the model through accelerate, which imports DeepSpeed
    wherever it is installed (the ``dev`` extra installs it); DeepSpeed's import detects its
    accelerator and, finding none, warns "Setting accelerator to CPU ..." on stdout, through
    its own handler. Mill never runs DeepSpeed here, so the line says nothing about the run:
    a filter on DeepSpeed's logger, set before the import, drops it (DeepSpeed's own setup of
    the logger keeps filters) and lets every other DeepSpeed record through."""
    logging.getLogger("DeepSpeed").addFilter(_no_accelerator_line)


def random_gpt2_dir(
    n_layer: int = 2, n_embd: int = 64, n_head: int = 4, seed: int = 0, n_positions: int = 1024
) -> Path:
    """Folder of the random model, built on first use."""
    window = "" if n_positions == 1024 else f"-p{n_positions}"
    out = cache_root() / "models" / f"random-gpt2-l{n_layer}-d{n_embd}-h{n_head}{window}-s{seed}"
    tokenizer = Path(str(resources.files("mill.resources").joinpath("tokenizers/gpt2")))

    def build(tmp: Path) -> None:
        loading_step("building the random weights once")  # on the model's load line
        build_random_gpt2(tokenizer, tmp, n_layer, n_embd, n_head, n_positions, seed=seed)

    made_from = {"n_layer": n_layer, "n_embd": n_embd, "n_head": n_head, "seed": seed}
    made_from["n_positions"] = n_positions
    fix = f"delete the folder {out} (the random model is built again on the next run)"
    return sealed_folder(out, made_from, fix, build)[0]


def random_gpt2(
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    seed: int = 0,
    pretrained: str | None = None,
    **kwargs: Any,
) -> HFCausalLM:
    """An :class:`HFCausalLM` over the cached random GPT-2 (other args go to HFCausalLM).
    Its config extends ``model/hf``; ``pretrained`` must stay null (the weights are built)."""
    if pretrained is not None:
        raise ConfigError(
            f"model.pretrained={pretrained!r}: gpt2_random builds its own weights from "
            "n_layer/n_embd/n_head/seed; drop model.pretrained or use model=hf"
        )
    kwargs.setdefault("name", f"gpt2_random_l{n_layer}_d{n_embd}")
    return HFCausalLM(str(random_gpt2_dir(n_layer, n_embd, n_head, seed)), **kwargs)
