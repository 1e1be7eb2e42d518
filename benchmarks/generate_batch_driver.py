"""transformers' own continuous batching (``model.generate_batch``) as a whole process: the
generation peer of ``whole_process``.

``python -m benchmarks.generate_batch_driver MODEL_DIR PROMPTS.json OUT.json --device cpu
--dtype float32 --threads 2``: imports torch and transformers, loads the tokenizer and the
model as Mill's HF backend does (``mill.model.hf.load_placement``), reads the token prompts
Mill built (PROMPTS: ``{"prompts": [[ids], ...], "repeats": n, "max_gen_toks": m,
"temperature": t, "seed": s}``, written by ``whole_process`` from Mill's samples, so both
sides generate from the same tokens), generates every prompt ``repeats`` times with
``generate_batch`` (greedy when ``temperature`` is 0, else sampled at that temperature,
top-p 1), stopping at the model's end-of-sequence token or ``max_gen_toks`` (it has no stop
strings; on CPU its paged cache holds exactly what the requests need, where by default it
would take most of the machine's free memory), and writes OUT: ``{"generated": [[ids] per
prompt and repeat, in order], "seconds": ..., "peak_rss_kib": ...}``. Exits without the
interpreter's teardown, as Mill does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

T_START = time.perf_counter()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("prompts", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import torch
    import transformers
    from transformers import GenerationConfig

    from benchmarks.driver_common import peak_rss_kib
    from mill.model.hf import load_placement, resolve_device

    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    transformers.AutoTokenizer.from_pretrained(args.model_dir)  # as any harness does
    model = transformers.AutoModelForCausalLM.from_pretrained(
        args.model_dir, dtype=getattr(torch, args.dtype), **load_placement(device, {})
    )
    model.eval()
    if device.type == "cpu":
        model.to(device)
    t_loaded = time.perf_counter()
    spec = json.loads(args.prompts.read_text())
    repeats = int(spec.get("repeats", 1))
    inputs = [list(p) for p in spec["prompts"] for _ in range(repeats)]
    temperature = float(spec.get("temperature", 0.0))
    sampled = temperature > 0
    torch.manual_seed(int(spec.get("seed", 1234)))
    config = GenerationConfig(
        max_new_tokens=int(spec["max_gen_toks"]),
        do_sample=sampled,
        temperature=temperature if sampled else None,
        top_p=1.0 if sampled else None,
        top_k=0 if sampled else None,
        eos_token_id=model.config.eos_token_id,
        pad_token_id=model.config.eos_token_id,
    )
    cb_config = None
    if device.type == "cpu":  # else it sizes its paged cache from free memory (14 GiB here)
        from transformers.generation.configuration_utils import ContinuousBatchingConfig

        page = 256
        blocks = sum(-(-(len(p) + config.max_new_tokens) // page) for p in inputs)
        cb_config = ContinuousBatchingConfig(page_size=page, num_blocks=blocks + 1)
    outputs = model.generate_batch(
        inputs=inputs, generation_config=config, continuous_batching_config=cb_config
    )
    t_done = time.perf_counter()
    by_index = sorted(outputs.items(), key=lambda kv: int(kv[0].rsplit("_", 1)[-1]))
    generated = [list(map(int, out.generated_tokens)) for _, out in by_index]
    if len(generated) != len(inputs):
        raise SystemExit(f"generate_batch answered {len(generated)} of {len(inputs)} requests")
    out = {
        "side": "generate_batch",
        "transformers": transformers.__version__,
        "generated": generated,
        "seconds": {"load": t_loaded - T_START, "generate": t_done - t_loaded},
        "peak_rss_kib": peak_rss_kib(),
    }
    args.out.write_text(json.dumps(out))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
