"""Judgments per second against a local llama.cpp ``llama-server`` at 1, 4 and 16 judge
calls in flight (``judge.num_concurrent``), whole ``mill judge`` processes.

One source run (MT-Bench on the fake model: 80 questions, 160 answers; ``--limit`` fewer)
is judged again and again by stories260k served by ``llama-server`` through
``judge=openai_completions`` with token-id prompts, a fresh folder and no response cache
each time (``runner.cache=false judge.cache=false``: every call reaches the server). Each
row starts its own server (GGUF, F32, one thread; one slot per call in flight, so they
decode together, each slot its own 512-token KV cache: ``--no-kv-unified``, else every
token's attention would span all slots' cells), so no row finds the prompts of another in
the server's prompt cache.
The judging phase's wall time
and the number of judgments come from the run's manifest (``phases``, ``judge``, read with
``mill.load``); judgments/s = judgments / that time. The machine's load
(``os.getloadavg``, as ``uptime`` prints it) is printed beside each row.

    python -m benchmarks.bench_judge [--in-flight 1 4 16] [--max-gen-toks 32] [--limit N]
                                     [--keep DIR] [--json OUT]

The server binary is found as the served tests find it (``$MILL_LLAMA_SERVER`` or
``.llama-server/bin/llama-server``; ``bash scripts/build_llama_server.sh`` builds it;
:mod:`tests.support.servers`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import mill
from benchmarks.driver_common import mill_cmd
from tests.support.servers import SERVED_NAME, STORIES, convert_stories_gguf, native_llama_server


def run_mill(*args: str) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "CI": "1"}
    proc = subprocess.run(
        mill_cmd(list(args)),
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"mill {' '.join(args)} failed:\n{proc.stderr[-3000:]}")


def judging(folder: Path) -> tuple[float, int]:
    """The judging phase's wall time and the number of judgments, from the run's
    manifest."""
    manifest = mill.load(folder).manifest
    seconds = (manifest.phases or {}).get("judging")
    if seconds is None or manifest.judge is None:
        raise SystemExit(f"{folder}/manifest.json has no judging phase")
    return float(seconds), int(manifest.judge["judgments"]["judgments"])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--max-gen-toks", type=int, default=32)
    parser.add_argument("--limit", type=int, default=None, help="MT-Bench questions (all 80)")
    parser.add_argument("--keep", type=Path, default=None, help="work folder (default: temp)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-judge-"))
    work.mkdir(parents=True, exist_ok=True)
    source = work / "source"
    if not (source / "results.json").exists():
        limit = [] if args.limit is None else [f"task.limit={args.limit}"]
        run_mill(
            "task=mt_bench", *limit, "model=fake", "judge=fake", "judge.max_invalid=1.0",
            "report.progress=never", f"hydra.run.dir={source}",
        )  # fmt: skip
    gguf = convert_stories_gguf(work / "stories260k.gguf")
    rows: list[dict[str, Any]] = []
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    print("| in flight | judgments | judging s | judgments/s | load (1 min) |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.in_flight:
        out = work / f"judge-{n}"
        # n_ctx is per slot: every slot holds a whole judge prompt (510 tokens)
        server = native_llama_server(
            gguf, work / f"server-{n}.log", slots=n, n_ctx=512, extra_args=["--no-kv-unified"]
        )
        with server:
            run_mill(
                "judge", f"run={source}", "judge=openai_completions",
                f"judge.base_url={server.base_url}", f"judge.model={SERVED_NAME}",
                f"judge.tokenizer={STORIES}", "judge.max_length=510", "judge.prompt_ids=true",
                f"judge.num_concurrent={n}", f"judge.generation.max_gen_toks={args.max_gen_toks}",
                "judge.max_invalid=1.0", "runner.cache=false", "judge.cache=false",
                "report.progress=never",
                f"hydra.run.dir={out}",
            )  # fmt: skip
        seconds, count = judging(out)
        load = os.getloadavg()[0]
        rows.append(
            {"in_flight": n, "judgments": count, "judging_s": seconds,
             "per_s": count / seconds, "load_1min": load}
        )  # fmt: skip
        print(
            f"| {n} | {count} | {seconds:.2f} | {count / seconds:.2f} | {load:.2f} |",
            flush=True,
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "cpus": os.cpu_count()}, indent=1))


if __name__ == "__main__":
    main()
