"""What batch-invariant scoring costs, whole process: the same `mill` run with
``model.batch_invariant=true`` (the default: each context's requests in passes of their own)
and ``false`` (contexts batched together), rounds alternating, on ARC-Easy 0-shot, MMLU
5-shot and GSM8K (generation: the setting does not touch it, so it shows the noise).

    python -m benchmarks.batch_invariant_cost --model smollm2 --rounds 3

Offline, two threads, the data of ``../shared/data``, a fresh response cache per run
(``runner.cache=run``). Prints per workload and side the median wall seconds and peak RSS,
the ratio invariant / batched, and whether both sides' samples agree (the log-likelihoods
to 1e-4, as the parity bar; the verdicts exactly).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.driver_common import SHARED_DATA, child_env, timed_run

WORKLOADS: dict[str, list[str]] = {
    "arc_easy_0shot": ["task=arc_easy"],
    "mmlu_5shot": ["task=mmlu", "task.subjects=[anatomy,virology]"],
    "gsm8k_gen": ["task=gsm8k", "task.generation.max_gen_toks=64"],
}
"""A workload's settings; ``--limit`` caps the docs (per subject for MMLU)."""


def one_run(model: str, workload: str, invariant: bool, limit: int, out: Path) -> dict[str, float]:
    """One whole ``mill`` process: wall seconds, peak RSS (MiB)."""
    argv = [
        sys.executable, "-m", "mill", "data=local", f"data.dir={SHARED_DATA}", f"model={model}",
        *WORKLOADS[workload], f"task.limit={limit}", f"model.batch_invariant={invariant}",
        "runner.cache=run", "report.progress=never", f"hydra.run.dir={out}",
    ]  # fmt: skip
    wall, code, rss_kib = timed_run(argv, out.parent / f"{out.name}.log", child_env(2))
    if code != 0:
        raise SystemExit(f"mill exited {code}; see {out.parent / f'{out.name}.log'}")
    return {"wall": wall, "rss_mib": rss_kib / 1024}


def agree(a: Path, b: Path) -> str:
    """Whether two runs' samples give the same verdicts, and how far apart their
    log-likelihoods are (the parity bar is 1e-4)."""
    from mill.results import read_samples

    worst = 0.0
    for path in sorted((a / "samples").glob("*.jsonl")):
        for sa, sb in zip(read_samples(path), read_samples(b / "samples" / path.name), strict=True):
            if sa.metrics != sb.metrics:
                return "verdicts differ"
            for x, y in zip(sa.response.logprobs or [], sb.response.logprobs or [], strict=True):
                worst = max(worst, abs(x - y))
    return f"equal verdicts, logp apart by at most {worst:.1e}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print("load at start:", os.getloadavg(), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workloads:
            limit = args.limit if workload != "gsm8k_gen" else max(1, args.limit // 25)
            got: dict[bool, list[dict[str, float]]] = {True: [], False: []}
            last: dict[bool, Path] = {}
            for i in range(args.rounds):
                for side in (True, False) if i % 2 == 0 else (False, True):
                    out = Path(tmp) / f"{workload}-{side}-{i}" / "run"
                    out.parent.mkdir()
                    got[side].append(one_run(args.model, workload, side, limit, out))
                    last[side] = out
                    print(f"{workload} invariant={side} round {i}: {got[side][-1]}", flush=True)
            med = {s: {k: statistics.median(r[k] for r in got[s]) for k in ("wall", "rss_mib")}
                   for s in got}  # fmt: skip
            rows.append(
                f"| {workload} (limit {limit}) | {med[False]['wall']:.1f} | "
                f"{med[True]['wall']:.1f} | {med[True]['wall'] / med[False]['wall']:.2f}x | "
                f"{med[False]['rss_mib']:.0f} / {med[True]['rss_mib']:.0f} | "
                f"{agree(last[False], last[True])} |"
            )
    print("load at end:", os.getloadavg())
    print(f"model={args.model}, {args.rounds} rounds alternating, medians")
    print("| workload | batched s | invariant s | invariant / batched | peak RSS MiB "
          "(batched / invariant) | samples |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
