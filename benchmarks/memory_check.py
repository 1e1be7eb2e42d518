"""Peak memory of Mill on a 1B-parameter model shape on CPU (issue 3: token-budget batching
must keep a 1B model within a 24 GiB machine; an explicit batch size must still work).

Builds (once) a seeded random Llama with TinyLlama-1.1B's shape (22 layers x 2048, 32
heads, 4 KV heads, MLP 5632, 2048 positions) and the real GPT-2 tokenizer (vocabulary
50257, so 1.17B parameters), then runs ARC-Easy 25-shot on a few docs with Mill in a
child process and prints its peak RSS (``ru_maxrss``), time and tokens fed, for each
batching setting given.

    python -m benchmarks.memory_check --docs 16 --settings auto auto@16384 4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.driver_common import SHARED_DATA, abs_path
from benchmarks.side_by_side import model_dir, run_side
from benchmarks.workloads import WORKLOADS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=16)
    parser.add_argument("--sampler", default="random", help="random: no prefix shared by docs")
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["auto", "auto@16384", "4"],
        help="batch sizes; auto@N = auto with token_budget N",
    )
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = model_dir("llama_1b")
    workload = WORKLOADS["arc_easy_25shot"].with_limit(args.docs)
    base = workload.mill_overrides(args.data_dir)
    base = [o for o in base if "fewshot_sampler" not in o]
    base.append(f"++task.fewshot_sampler={args.sampler}")
    print(f"model {model} (1.17B parameters, fp32), ARC-Easy 25-shot, {args.docs} docs")
    print("| batch_size | peak RSS GiB | evaluate s | tokens fed | forward passes |")
    print("|---|---|---|---|---|")
    results = []
    for setting in args.settings:
        overrides = base + ["model=hf", f"model.pretrained={model}", "model.name=llama1b"]
        batch_size, _, budget = setting.partition("@")
        overrides += ["model.device=cpu", f"model.batch_size={batch_size}"]
        if budget:
            overrides.append(f"model.token_budget={budget}")
        with tempfile.TemporaryDirectory() as tmp:
            run = run_side(
                Path(sys.executable),
                "mill_driver",
                {"overrides": overrides, "threads": args.threads, "model": str(model)},
                Path(tmp),
                f"llama1b.{setting}",
            )
        row = {
            "batch_size": setting,
            "peak_rss_gib": run.peak_rss_kib / 2**20,
            "evaluate_s": run.out["seconds"]["evaluate"],
            "tokens_fed": run.out["tokens_fed"],
            "forward_calls": run.out["forward_calls"],
        }
        results.append(row)
        print(
            f"| {setting} | {row['peak_rss_gib']:.2f} | {row['evaluate_s']:.0f} | "
            f"{row['tokens_fed']:,} | {row['forward_calls']} |",
            flush=True,
        )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
