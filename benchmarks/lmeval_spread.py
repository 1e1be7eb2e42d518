"""lm-evaluation-harness 0.4.13's own spread: the same requests at several batch sizes.

Runs only lm-eval's side of a workload (``side_by_side.run_pair``) once per batch size on
the same model folder and data, and prints, against the first batch size, the largest
|delta log-likelihood| per request, the largest relative delta, and how many metrics
and ``is_greedy`` flags differ. The parity bar (docs/parity.md) is set against this:
what lm-eval itself moves by when only its batching changes.

    python -m benchmarks.lmeval_spread --model smollm2 --workload arc_easy_0shot \
        --limit 300 --batch-sizes 1 4 16
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks.driver_common import SHARED_DATA, abs_path, lmeval_batch
from benchmarks.side_by_side import model_dir, new_workdir, run_pair
from benchmarks.workloads import ALL_WORKLOADS


def request_logprobs(out: dict[str, Any]) -> dict[tuple[str, int, int], tuple[float, bool]]:
    """(task, doc id, request index) -> (log-likelihood, is_greedy) of an lm-eval driver's
    output (the first filter's samples)."""
    found: dict[tuple[str, int, int], tuple[float, bool]] = {}
    for task, data in out["tasks"].items():
        for sample in data["samples"]:
            for i, resp in enumerate(sample["resps"]):
                value = resp[0]
                if isinstance(value, list):
                    found.setdefault((task, int(sample["doc_id"]), i), (value[0], bool(value[1])))
    return found


def spread(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """How far ``other``'s per-request log-likelihoods and metrics are from ``base``'s."""
    a, b = request_logprobs(base), request_logprobs(other)
    deltas = [(abs(a[k][0] - b[k][0]), abs(a[k][0])) for k in a.keys() & b.keys()]
    metrics_differ = sum(
        1
        for task, data in base["tasks"].items()
        for key, value in data["metrics"].items()
        if isinstance(value, float) and "stderr" not in key
        if other["tasks"][task]["metrics"].get(key) != value
    )
    return {
        "requests": len(deltas),
        "max_abs_delta": max((d for d, _ in deltas), default=0.0),
        "max_rel_delta": max((d / max(m, 1e-30) for d, m in deltas), default=0.0),
        "greedy_differ": sum(a[k][1] != b[k][1] for k in a.keys() & b.keys()),
        "metrics_differ": metrics_differ,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--workload", default="arc_easy_0shot", help=f"of {list(ALL_WORKLOADS)}")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--batch-sizes", nargs="+", type=lmeval_batch, default=[1, 4, 16])
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args(argv)
    workload = ALL_WORKLOADS[args.workload]
    if args.limit is not None:
        workload = workload.with_limit(args.limit)
    model = model_dir(args.model)
    outs = []
    for size in args.batch_sizes:
        workdir = new_workdir(args.keep / f"bs{size}" if args.keep else None)
        runs = run_pair(
            workload,
            model,
            workdir,
            args.data_dir,
            threads=args.threads,
            lmeval_batch_size=size,
            sides=("lmeval",),
        )
        outs.append(runs["lmeval"].out)
    print(
        f"| {workload.name} | batch size vs {args.batch_sizes[0]} | requests | max abs delta "
        "| max rel delta | is_greedy differ | metrics differ |"
    )
    print("|---|---|---|---|---|---|---|")
    for size, out in zip(args.batch_sizes[1:], outs[1:], strict=True):
        row = spread(outs[0], out)
        print(
            f"| {args.model} | {size} | {row['requests']} | {row['max_abs_delta']:.2e} "
            f"| {row['max_rel_delta']:.2e} | {row['greedy_differ']} | {row['metrics_differ']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
