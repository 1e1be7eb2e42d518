"""Prove that Mill computes what lm-evaluation-harness 0.4.13 computes.

For every workload (ARC-Easy 0- and 25-shot, MMLU 5-shot on four subjects, GSM8K 8-shot
with and without a stop string, WikiText-2) and every model (a seeded random GPT-2 shape
with the real GPT-2 tokenizer, and the shipped stories260K), run Mill and lm-eval (in the
interpreter ``driver_common.lmeval_python`` names: ``$MILL_LMEVAL_PYTHON``, the dev
virtualenv of ``setup_lmeval_venv.sh``, or this one with lm_eval installed) on the same
model folder and the same local data, then compare request by request (doc id + choice
index): |delta log-likelihood| <= 1e-4, identical is_greedy, identical
generations, identical per-doc and aggregate metrics. Prints a markdown table; exits 1 on
any mismatch.

    python -m benchmarks.parity                    # everything (tens of minutes on 2 cores)
    python -m benchmarks.parity --workloads arc_easy_0shot --models stories260k --limit 20

The real model (SmolLM2-135M-Instruct, its GGUF converted once: docs/real-model.md) runs
its own suite, each workload with the chat template off and on, per request within
max(1e-4, 3e-5 |logp|)::

    python -m benchmarks.parity --models smollm2 --limit 100
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from benchmarks.driver_common import SHARED_DATA, abs_path, lmeval_batch, lmeval_python
from benchmarks.side_by_side import compare, model_dir, new_workdir, run_pair
from benchmarks.workloads import ALL_WORKLOADS, REAL_MODEL_WORKLOADS, WORKLOADS

DEFAULT_MODELS = ["gpt2_random", "stories260k"]
REAL_MODELS = {"smollm2"}
"""Models whose default workloads are :data:`REAL_MODEL_WORKLOADS` and whose per-request bar
is relative where that is larger (:data:`REAL_MODEL_REL_TOL`)."""
REAL_MODEL_REL_TOL = 3e-5


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        nargs="+",
        default=None,
        help=f"of {list(WORKLOADS)} or (real models) {list(REAL_MODEL_WORKLOADS)}",
    )
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    parser.add_argument("--limit", type=int, default=None, help="docs per workload (override)")
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    parser.add_argument("--lmeval-batch-size", type=lmeval_batch, default="16")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ... (both sides)")
    parser.add_argument(
        "--dtype",
        default="float32",
        help="float32 (the 1e-4 bar), bfloat16 or float16 (lower precision: see --logp-tol)",
    )
    parser.add_argument(
        "--logp-tol", type=float, default=None, help="max |delta logp| (default 1e-4)"
    )
    parser.add_argument("--mill-override", action="append", default=[], help="extra Mill override")
    parser.add_argument("--json", type=Path, default=None, help="write the comparison here")
    parser.add_argument("--keep", type=Path, default=None, help="keep driver outputs here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    if not lmeval_python().exists():
        print(
            f"parity: no lm-eval interpreter at {lmeval_python()}; run "
            "scripts/setup_lmeval_venv.sh or set MILL_LMEVAL_PYTHON",
            file=sys.stderr,
        )
        return 2
    if not args.data_dir.is_dir():
        print(f"parity: data folder {args.data_dir} not found (--data-dir)", file=sys.stderr)
        return 2
    known = ALL_WORKLOADS
    unknown = [n for n in args.workloads or [] if n not in known]
    if unknown:
        print(f"parity: unknown workloads {unknown}; choose from {list(known)}", file=sys.stderr)
        return 2
    batch = args.lmeval_batch_size
    rows, report = [], []
    for model_name in args.models:
        model = model_dir(model_name)
        real = model_name in REAL_MODELS
        suite = REAL_MODEL_WORKLOADS if real else WORKLOADS
        names = args.workloads or [n for n, w in suite.items() if w.available()]
        for name in names:
            workload = known[name]
            if not workload.available():
                print(f"parity: skipping {name}: {workload.requires} is not importable")
                continue
            if args.limit is not None:
                workload = workload.with_limit(args.limit)
            workdir = new_workdir(args.keep / model_name / name if args.keep else None)
            runs = run_pair(
                workload,
                model,
                workdir,
                args.data_dir,
                threads=args.threads,
                lmeval_batch_size=batch,
                mill_overrides=args.mill_override,
                device=args.device,
                dtype=args.dtype,
            )
            result = compare(
                workload,
                runs["mill"].out,
                runs["lmeval"].out,
                args.logp_tol,
                REAL_MODEL_REL_TOL if real else 0.0,
            )
            metrics = "; ".join(
                f"{m['metric']} {m['mill']:.6g}/{m['lmeval']:.6g}{'' if m['equal'] else ' (!)'}"
                for m in result.metric_rows
                if m["mill"] is not None and m["lmeval"] is not None
            )
            rows.append(
                f"| {name} | {model_name} | {result.docs} | {result.requests} | "
                f"{result.max_abs_delta:.2e} | {result.greedy_mismatches} | "
                f"{result.text_mismatches} | {metrics} | {'yes' if result.ok else 'NO'} |"
            )
            print(rows[-1], flush=True)
            for problem in result.problems[:20]:
                print(f"    {problem}", flush=True)
            report.append({"model": model_name, **asdict(result), "ok": result.ok})
    print()
    print(
        "| workload | model | docs | requests | max abs delta logp | is_greedy mismatches "
        "| generation mismatches | metrics (mill/lm-eval) | parity |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0 if all(r["ok"] for r in report) else 1


if __name__ == "__main__":
    raise SystemExit(main())
