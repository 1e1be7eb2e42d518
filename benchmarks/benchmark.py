"""Mill vs lm-evaluation-harness 0.4.13, side by side, on the same model folder, data and
prompts; each harness runs in its own process (lm-eval in its dev virtualenv).

Per workload it prints: Mill time, lm-eval time and their ratio, the peak RSS of each
process (``ru_maxrss`` of the child), the tokens each fed through the transformer body
(padding included) next to the workload's unique tokens, and the max |delta logp| between
the two (parity is checked as in ``parity``).

Time is the work after imports: task and data loading, model loading, scoring, metrics
(lm-eval's task-registry scan is left out; Mill's config composition is counted). Wall
time of each process is printed as well.

    python -m benchmarks.benchmark                             # the issue's table
    python -m benchmarks.benchmark --workloads arc_easy_0shot --lmeval-batch-size 8
    python -m benchmarks.benchmark --repeat 3  # median of 3 alternating rounds per side
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from benchmarks.driver_common import SHARED_DATA, abs_path, lmeval_batch, lmeval_python
from benchmarks.side_by_side import compare, model_dir, new_workdir, run_pair
from benchmarks.workloads import WORKLOADS

TARGETS = {
    "arc_easy_0shot": 4.0,
    "arc_easy_25shot": 10.0,
    "mmlu_5shot": 1.5,
    "gsm8k_8shot": 2.0,
    "wikitext2": 1.5,
}
"""Speed-up targets from the issue (lm-eval time / Mill time)."""
RSS_TARGET = 1 / 3
LMEVAL_BATCH = {
    "arc_easy_0shot": 8,
    "arc_easy_25shot": 4,
    "mmlu_5shot": 4,
    "gsm8k_8shot": 8,
    "wikitext2": 4,
}
"""lm-eval's batch size per workload: the fastest of a sweep on this machine (docs/benchmark.md;
larger sizes were no faster and used more memory). ``--lmeval-batch-size`` overrides."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", default=None, help=f"of {list(WORKLOADS)}")
    parser.add_argument(
        "--model", default="gpt2_bench", help="gpt2_bench (6x384), llama_1b (TinyLlama shape)"
    )
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ... (both sides)")
    parser.add_argument("--dtype", default="float32", help="float32, bfloat16, float16")
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    parser.add_argument(
        "--lmeval-batch-size", type=lmeval_batch, default=None, help="default: LMEVAL_BATCH"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="docs per workload (override)")
    parser.add_argument("--mill-override", action="append", default=[], help="extra Mill override")
    parser.add_argument("--only", choices=["mill", "lmeval"], default=None)
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds per workload; times are the median"
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="keep driver outputs here")
    return parser.parse_args(argv)


def _gib(kib: int) -> str:
    return f"{kib / 2**20:.2f}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sides = ("mill", "lmeval") if args.only is None else (args.only,)
    if "lmeval" in sides and not lmeval_python().exists():
        print(f"benchmark: no lm-eval interpreter at {lmeval_python()}", file=sys.stderr)
        return 2
    names = args.workloads or [n for n in TARGETS if WORKLOADS[n].available()]
    model = model_dir(args.model)
    header = (
        "| workload | lm-eval batch size | Mill s | lm-eval s | speed-up (target) | Mill wall s "
        "| lm-eval wall s "
        "| Mill peak RSS GiB | lm-eval peak RSS GiB | RSS ratio | tokens fed Mill / lm-eval "
        "| unique tokens per doc / across docs | max abs delta logp | parity |"
    )
    rows, report = [], []
    for name in names:
        workload = WORKLOADS[name]
        if not workload.available():
            print(f"benchmark: skipping {name}: {workload.requires} is not importable")
            continue
        if args.limit is not None:
            workload = workload.with_limit(args.limit)
        given = args.lmeval_batch_size
        batch = given if given is not None else LMEVAL_BATCH.get(name, 8)
        rounds = []
        for r in range(args.repeat):  # alternate the sides: machine drift hits both
            tag = f"{name}/{r}" if args.repeat > 1 else name
            workdir = new_workdir(args.keep / tag if args.keep else None)
            rounds.append(
                run_pair(
                    workload,
                    model,
                    workdir,
                    args.data_dir,
                    threads=args.threads,
                    lmeval_batch_size=batch,
                    mill_overrides=args.mill_override,
                    sides=sides,
                    device=args.device,
                    dtype=args.dtype,
                )
            )
        runs = rounds[0]  # outputs, tokens and wall time of the first round
        work = {side: [rnd[side].out["seconds"]["work"] for rnd in rounds] for side in runs}
        peak = {side: max(rnd[side].peak_rss_kib for rnd in rounds) for side in runs}
        entry = {
            "workload": name,
            "model": args.model,
            "device": args.device,
            "dtype": args.dtype,
            "lmeval_batch_size": batch,
        }
        for side, run in runs.items():
            entry[side] = {
                "seconds": run.out["seconds"],
                "work_s_each_round": work[side],
                "wall_s": run.wall_s,
                "peak_rss_kib": peak[side],  # the largest of all rounds
                "tokens_fed": run.out["tokens_fed"],
                "forward_calls": run.out["forward_calls"],
            }
            if "identity" in run.out:  # Mill's record of what it ran: dtype, device
                entry[side]["model_dtype"] = run.out["identity"].get("dtype")
                entry[side]["model_device"] = run.out.get("device")
        if args.repeat > 1:
            each = "; ".join(f"{s} " + "/".join(f"{t:.1f}" for t in ts) for s, ts in work.items())
            print(f"    {name}: work seconds per round: {each}", flush=True)
        mill = runs.get("mill")
        lm = runs.get("lmeval")
        if mill and lm:
            result = compare(workload, mill.out, lm.out)
            t_mill, t_lm = statistics.median(work["mill"]), statistics.median(work["lmeval"])
            entry.update(
                speedup=t_lm / t_mill,
                rss_ratio=peak["mill"] / peak["lmeval"],
                max_abs_delta=result.max_abs_delta,
                parity=result.ok,
                unique_tokens=mill.out["unique_tokens"],
            )
            target = TARGETS.get(name)
            rows.append(
                f"| {name} | {batch} | {t_mill:.1f} | {t_lm:.1f} | {t_lm / t_mill:.1f}x "
                f"(>= {target}x) | {mill.wall_s:.1f} | {lm.wall_s:.1f} | "
                f"{_gib(peak['mill'])} | {_gib(peak['lmeval'])} | "
                f"{peak['mill'] / peak['lmeval']:.2f} (<= 0.33) | "
                f"{mill.out['tokens_fed']:,} / {lm.out['tokens_fed']:,} | "
                f"{mill.out['unique_tokens']:,} / {mill.out['unique_tokens_across_docs']:,} | "
                f"{result.max_abs_delta:.1e} | "
                f"{'yes' if result.ok else 'NO'} |"
            )
            for problem in result.problems[:10]:
                print(f"    {problem}", flush=True)
        else:
            ((side, run),) = runs.items()
            rows.append(
                f"| {name} | {side} only: {statistics.median(work[side]):.1f} s, wall "
                f"{run.wall_s:.1f} s, peak RSS {_gib(peak[side])} GiB, tokens fed "
                f"{run.out['tokens_fed']:,} |"
            )
        print(rows[-1], flush=True)
        report.append(entry)
    print()
    print(f"model {args.model} ({model}), {args.dtype} on {args.device}, {args.threads} threads")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    print("\n".join(rows))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
