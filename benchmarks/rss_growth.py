"""Where Mill's memory grows while it scores ARC-Easy 0-shot (docs/benchmark.md, Memory).

Loads ``gpt2_bench`` (or ``--model``) through Mill's HF backend, builds the ARC-Easy
0-shot requests of ``--docs`` docs from local data, scores the first 8 requests, then all,
then all again, and prints after each step the peak RSS, the RSS and its two parts from
``/proc/self/status``: anonymous memory (heap, tensors) and file-backed pages (shared
libraries' code and data, mapped files). Last it calls glibc's ``malloc_trim(0)``: what
that gives back was freed by the passes but kept by ``malloc``.

    python -m benchmarks.rss_growth                   # gpt2_bench, 300 docs, shared data
    MALLOC_MMAP_THRESHOLD_=131072 python -m benchmarks.rss_growth   # fixed mmap threshold

Linux only (``/proc``, glibc).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import time

from benchmarks.driver_common import SHARED_DATA, abs_path
from mill.runner.phases import proc_status_mib


def status() -> dict[str, int]:
    found = proc_status_mib("VmHWM", "VmRSS", "RssAnon", "RssFile")
    if found is None:
        raise SystemExit("rss_growth needs Linux /proc/self/status")
    return {key: int(mib) for key, mib in found.items()}  # whole MiB, rounded down


def show(step: str, seconds: float | None = None) -> None:
    s = status()
    took = f"  ({seconds:.1f} s CPU)" if seconds is not None else ""
    print(
        f"{step:24s} peak {s['VmHWM']:5d} MiB  RSS {s['VmRSS']:5d}  anon {s['RssAnon']:5d}"
        f"  file {s['RssFile']:5d}{took}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="gpt2_bench")
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    show("start")
    import torch
    from mill.tasks.arc import ArcEasy

    from benchmarks.side_by_side import model_dir
    from mill.data.load import DataSource
    from mill.model.hf import HFCausalLM

    torch.set_num_threads(2)
    show("imports")
    lm = HFCausalLM(str(model_dir(args.model)))
    show("model loaded")
    task = ArcEasy(limit=args.docs)
    docs = list(task.docs(DataSource("local", str(args.data_dir))))
    requests = [r for doc in docs for r in task.requests(doc)]
    show(f"{len(requests)} requests built")
    for step, batch in (
        ("first 8 requests", requests[:8]),
        ("all requests", requests),
        ("all requests again", requests),
    ):
        spent = time.process_time()
        lm.loglikelihood(batch)
        show(step, time.process_time() - spent)
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    show("after malloc_trim(0)")


if __name__ == "__main__":
    main()
