"""The floor under a harness that runs a model with ``transformers``' own classes.

A process that imports torch and ``transformers``, loads a model folder's tokenizer and
model with the arguments Mill's HF backend passes (``dtype``, and on one accelerator
``mill.model.hf.load_placement``'s ``device_map``), puts the model in eval mode, prints
one line about it and exits as ``mill`` does, without the interpreter's teardown
(streams flushed, then ``os._exit``). Nothing else: no config, data, requests, scoring or
report. A harness built on those classes cannot finish loading before this process has, so
its wall time is the least any such harness spends outside scoring; ``whole_process``
prints it next to Mill's.

    python -m benchmarks.floor_driver MODEL_DIR --device cpu --dtype float32
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto (as Mill)")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args(argv)
    import torch
    import transformers

    from mill.model.hf import load_placement, resolve_device

    transformers.utils.logging.disable_progress_bar()
    device = resolve_device(args.device)  # auto: Mill's default (the demo's)
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        args.model_dir, dtype=getattr(torch, args.dtype), **load_placement(device, {})
    )
    model.eval()
    if device.type == "cpu":
        model.to(device)
    params = sum(p.numel() for p in model.parameters())
    where = next(model.parameters()).device
    print(
        f"loaded {type(model).__name__} ({params} parameters, {model.dtype}, {where}) "
        f"and {type(tokenizer).__name__} ({len(tokenizer)} tokens)",
        flush=True,
    )
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
