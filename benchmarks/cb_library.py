"""transformers' continuous batching (``model.generate_batch``) against Mill's HF engine.

Same model, same token ids, same greedy decoding, one process per engine (so each peak RSS
is its own): GSM8K prompts (``Question: ... Answer:``, 8 fixed exemplars from the train
split for ``gpt2_bench``, 0-shot for ``stories260k`` whose window is 512 tokens), ``--docs``
test questions, ``--max-gen`` new tokens. Prints, per engine: wall seconds of generation,
generated tokens per second, peak RSS, and whether transformers' greedy tokens equal
Mill's (Mill stops at the stop strings ``Question:``/EOS; transformers, which has no stop
strings in continuous batching, runs on, so Mill's tokens must be a prefix of its own).

    python -m benchmarks.cb_library                          # both models, 50 docs, 256 tokens
    python -m benchmarks.cb_library --models stories260k --docs 20
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.driver_common import SHARED_DATA
from benchmarks.side_by_side import model_dir

DATA = SHARED_DATA
UNTIL = ("Question:",)


def prompts(data: Path, docs: int, shots: int) -> list[str]:
    """GSM8K prompts: ``shots`` fixed train exemplars, then each test question."""

    def rows(split: str, n: int) -> list[dict[str, str]]:
        with open(data / "gsm8k" / f"{split}.jsonl") as f:
            return [json.loads(line) for _, line in zip(range(n), f, strict=False)]

    prefix = "".join(
        f"Question: {r['question']}\nAnswer: {r['answer']}\n\n" for r in rows("train", shots)
    )
    return [f"{prefix}Question: {r['question']}\nAnswer:" for r in rows("test", docs)]


def _child(engine: str, model: str, docs: int, shots: int, max_gen: int, out: Path) -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("MILL_BENCH_THREADS", "2")))
    from mill.model.hf import HFCausalLM

    lm = HFCausalLM(pretrained=str(model_dir(model)), device="cpu", max_gen_toks=max_gen)
    texts = prompts(DATA, docs, shots)
    from mill.types import GenerationArgs, OutputType, Request

    gen = GenerationArgs(until=UNTIL, max_gen_toks=max_gen)
    requests = [
        Request(OutputType.GENERATIVE, "gsm8k", i, 0, t, generation=gen)
        for i, t in enumerate(texts)
    ]
    # the token ids Mill feeds (its tokenization, lm-eval's left truncation): both engines
    ids = [job.tokens for job in sorted(lm.plan_generation(requests), key=lambda j: j.index)]
    result: dict[str, Any] = {"engine": engine, "model": model, "docs": docs}
    start = time.perf_counter()
    if engine == "mill":
        tokens = [list(r.output_tokens) for r in lm.generate_until(requests)]
    else:
        from transformers import GenerationConfig

        config = GenerationConfig(
            max_new_tokens=max_gen,
            do_sample=False,
            eos_token_id=sorted(lm._eos_ids()),
            pad_token_id=lm.tokenizer.pad_token_id or 0,
        )
        try:
            outs = lm.model.generate_batch(ids, generation_config=config, progress_bar=False)
            order = sorted(outs.values(), key=lambda o: int(str(o.request_id).rsplit("_", 1)[-1]))
            tokens = [list(o.generated_tokens) for o in order]
        except Exception as err:  # noqa: BLE001 - recorded: what breaks is the measurement
            tokens = []
            result["error"] = f"{type(err).__name__}: {str(err)[:300]}"
    result["wall_s"] = time.perf_counter() - start
    result["tokens"] = tokens
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["prompt_tokens"] = sum(len(i) for i in ids)
    out.write_text(json.dumps(result))


def compare(mill: list[list[int]], peer: list[list[int]]) -> dict[str, int]:
    """Rows where Mill's tokens are not a prefix of the peer's (the peer has no stop strings)."""
    if len(mill) != len(peer):
        return {"rows": len(mill), "mismatches": len(mill)}
    bad = sum(1 for m, p in zip(mill, peer, strict=True) if p[: len(m)] != m)
    return {"rows": len(mill), "mismatches": bad}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["gpt2_bench", "stories260k"])
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--max-gen", type=int, default=256)
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        engine, model, shots, docs, out = args.child
        _child(engine, model, int(docs), int(shots), args.max_gen, Path(out))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            shots = 8 if model == "gpt2_bench" else 0
            runs = {}
            for engine in ("mill", "transformers"):
                out = Path(tmp) / f"{model}.{engine}.json"
                cmd = [
                    sys.executable,
                    "-m",
                    "benchmarks.cb_library",
                    "--max-gen",
                    str(args.max_gen),
                ]
                cmd += ["--child", engine, model, str(shots), str(args.docs), str(out)]
                subprocess.run(cmd, check=True, timeout=3600)
                runs[engine] = json.loads(out.read_text())
            same = compare(runs["mill"]["tokens"], runs["transformers"]["tokens"])
            for engine, run in runs.items():
                new = sum(len(t) for t in run["tokens"])
                rows.append(
                    f"| {model} | {engine} | {run['wall_s']:.1f} | {new} | "
                    f"{new / run['wall_s']:.0f} | {run['peak_rss_mib']:.0f} | "
                    f"{'-' if engine == 'mill' else same['mismatches']}/{same['rows']} | "
                    f"{run.get('error', '')} |"
                )
    print(
        "| model | engine | generation s | new tokens | tokens/s | peak RSS MiB |"
        " rows differing from Mill | error |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
