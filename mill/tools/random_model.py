"""Build a seeded, randomly initialised GPT-2-shaped model with a real tokenizer.

Used by tests and benchmarks: real transformers code and a real tokenizer, tiny weights.
``python -m mill.tools.random_model --tokenizer DIR --out DIR [--layers 2 --width 64]``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path


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
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

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
    model.save_pretrained(out_dir)
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        source = Path(tokenizer_dir) / name
        if source.exists():
            shutil.copyfile(source, out_dir / name)
    GPT2TokenizerFast.from_pretrained(out_dir).save_pretrained(out_dir)
    return out_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokenizer", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    build_random_gpt2(args.tokenizer, args.out, args.layers, args.width, args.heads, seed=args.seed)
    print(args.out)


if __name__ == "__main__":
    main()
