"""Whole-process speed of lm-eval tasks three ways, on the same lm-eval task YAMLs:

* ``lmeval``: lm-evaluation-harness 0.4.13's own command line with its ``hf`` model
  (``lm_eval --model hf``, in its dev virtualenv, as ``whole_process`` runs it);
* ``bridge``: the same lm-eval tasks through Mill (``mill task=lm_eval task.tasks=[...]``);
* ``engine``: lm-eval's command line with Mill's engine as its model
  (``python -m mill.lm_eval --model mill``).

The tasks are lm-eval's own ``arc_easy`` (25-shot) and MMLU subjects (5-shot) YAMLs by
default (``--workloads gsm8k_8shot``: its GSM8K, 8-shot, strict and flexible filters),
``include``d by YAMLs that point them at local JSONL files derived from ``../shared/data``
(the workloads of :mod:`benchmarks.workloads`, few-shot examples placed ``first_n``), so all
three run lm-eval's prompts and metrics on identical documents. Each round starts every side as a
fresh process and times it from start to exit; the order rotates between rounds so drift of
the machine hits every side. Prints each run's seconds, a markdown table of the medians and
ratios, and checks that every metric value of every task is identical on the three sides
(exit 1 if not).

    python -m benchmarks.lmeval_bridge_speed --rounds 3
    python -m benchmarks.lmeval_bridge_speed --workloads gsm8k_8shot --rounds 3
    python -m benchmarks.lmeval_bridge_speed --workloads arc_easy_25shot --limit 2 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import mill
from benchmarks.driver_common import (
    SHARED_DATA,
    abs_path,
    child_env,
    lmeval_python,
    mill_cmd,
    timed_run,
)
from benchmarks.side_by_side import hf_model_overrides, model_dir
from benchmarks.whole_process import LMEVAL_BATCH, lm_eval_cli, lmeval_task_dir, mill_phases
from benchmarks.workloads import WORKLOADS, derive_data

SIDES = ("lmeval", "bridge", "engine")
LABELS = {
    "lmeval": "lm_eval --model hf",
    "bridge": "mill task=lm_eval",
    "engine": "python -m mill.lm_eval --model mill",
}


def side_commands(
    tasks: list[str],
    include: Path,
    model: Path,
    limit: int | None,
    batch_size: int,
    device: str,
    dtype: str,
    bridge_defaults: bool = True,
) -> dict[str, Any]:
    """Per side, a function of the run's output folder returning its command line;
    ``bridge_defaults=False``: the bridge indexes only ``include`` (lm-eval's CLI always
    indexes its ~14,000 default YAMLs too)."""
    hf = [str(lmeval_python()), "-m", "lm_eval", "--model", "hf"]
    hf = lm_eval_cli(
        hf, f"pretrained={model},dtype={dtype}", tasks, include, batch_size, device, limit
    )
    engine = [sys.executable, "-m", "mill.lm_eval", "--model", "mill"]
    # batch_size auto: Mill batches by token budget (lm-eval's CLI default of 1 would cap
    # every forward pass at one context)
    engine = lm_eval_cli(
        engine, f"pretrained={model},dtype={dtype}", tasks, include, "auto", device, limit
    )
    bridge = [
        "task=lm_eval",
        f"task.tasks=[{','.join(tasks)}]",
        f"task.include_path={include}",
        *([] if limit is None else [f"task.limit={limit}"]),
        *hf_model_overrides(model, device, dtype),
        "runner.cache=false",
        *([] if bridge_defaults else ["task.include_defaults=false"]),
    ]
    return {
        "lmeval": lambda out: [*hf, "--output_path", str(out)],
        "engine": lambda out: [*engine, "--output_path", str(out)],
        "bridge": lambda out: mill_cmd([*bridge, f"hydra.run.dir={out}"]),
    }


def metric_values(side: str, out: Path, tasks: list[str]) -> dict[str, dict[str, float]]:
    """``{task: {"metric,filter": value}}`` from a finished run's own results file."""
    if side == "bridge":
        body = mill.load(out).results.tasks
        return {
            t: {k: m.value for k, m in body[t].metrics.items() if m.value is not None}
            for t in tasks
        }
    (file,) = out.rglob("results_*.json")
    body = json.loads(file.read_text())["results"]
    return {
        t: {
            k: v
            for k, v in body[t].items()
            if "," in k and "_stderr," not in k and isinstance(v, (int, float))
        }
        for t in tasks
    }


def rotation(round_index: int, sides: list[str]) -> list[str]:
    """The order of the sides in a round: rotated by one each round."""
    shift = round_index % len(sides)
    return sides[shift:] + sides[:shift]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        nargs="+",
        default=["arc_easy_25shot", "mmlu_5shot"],
        choices=sorted(WORKLOADS),
        help="benchmarks.workloads names (arc_easy_25shot, mmlu_5shot, gsm8k_8shot, ...)",
    )
    parser.add_argument("--model", default="gpt2_bench", help="as benchmark (1024 window)")
    parser.add_argument(
        "--limit", type=int, default=None, help="docs per task (default: the workload's)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sides", nargs="+", default=list(SIDES), choices=SIDES)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="keep every run's folder here")
    parser.add_argument(
        "--bridge-include-only",
        action="store_true",
        help="the bridge with task.include_defaults=false: it indexes only the workload's "
        "YAMLs, not lm-eval's ~14,000 (which lm-eval's CLI cannot skip)",
    )
    args = parser.parse_args(argv)
    if not args.data_dir.is_dir():
        print(f"lmeval_bridge_speed: no data at {args.data_dir}; give --data-dir", file=sys.stderr)
        return 2
    env = child_env(args.threads)
    env.pop("CI", None)
    model = model_dir(args.model)
    work = args.keep or Path(tempfile.mkdtemp(prefix="mill-lmeval-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    report: list[dict[str, Any]] = []
    rows: list[str] = []
    identical = True
    for name in args.workloads:
        workload = WORKLOADS[name]
        if args.limit is not None:
            workload = workload.with_limit(args.limit)
        (work / name).mkdir(parents=True, exist_ok=True)
        specs = workload.lmeval_tasks(derive_data(workload, args.data_dir, work / name))
        include = lmeval_task_dir(work / name, specs)
        tasks = [t["name"] for t in specs]
        commands = side_commands(
            tasks,
            include,
            model,
            workload.limit,
            LMEVAL_BATCH.get(name, 8),
            args.device,
            args.dtype,
            bridge_defaults=not args.bridge_include_only,
        )
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in args.sides}
        values: dict[str, dict[str, dict[str, float]]] = {}
        for r in range(args.rounds):
            for side in rotation(r, list(args.sides)):
                tag = f"{name}.{side}.{r}"
                out = work / tag
                wall, code, rss = timed_run(commands[side](out), work / f"{tag}.log", env, work)
                if code != 0:
                    tail = (work / f"{tag}.log").read_text()[-3000:]
                    print(f"{tag} failed (exit {code}); log {work / (tag + '.log')}:\n{tail}")
                    return 1
                got = metric_values(side, out, tasks)
                if values.setdefault(side, got) != got:
                    print(f"{tag}: metric values differ from this side's first round")
                    identical = False
                phases = mill_phases(out) if side == "bridge" else {}
                runs[side].append({"wall_s": wall, "peak_rss_kib": rss, "phases": phases})
                print(f"  {tag}: {wall:.1f} s, peak RSS {rss / 2**20:.2f} GiB", flush=True)
        first = args.sides[0]
        same = all(values[s] == values[first] for s in args.sides)
        identical = identical and same
        med = {s: statistics.median(x["wall_s"] for x in v) for s, v in runs.items()}
        rss = {s: max(x["peak_rss_kib"] for x in v) / 2**20 for s, v in runs.items()}
        docs = f"{len(tasks)} task(s), limit {workload.limit}"
        cells = [f"{med[s]:.1f}" if s in med else "-" for s in SIDES]
        ratios = [
            f"{med['lmeval'] / med[s]:.1f}x" if "lmeval" in med and s in med else "-"
            for s in ("bridge", "engine")
        ]
        mems = [f"{rss[s]:.2f}" if s in rss else "-" for s in SIDES]
        rows.append(
            f"| {name} | {docs} | {' | '.join(cells)} | {' | '.join(ratios)} | "
            f"{' | '.join(mems)} | {'yes' if same else 'NO'} |"
        )
        for task in tasks:
            shown = ", ".join(f"{k} {v!r}" for k, v in sorted(values[first][task].items()))
            print(f"  {task}: {shown}" + ("" if same else "  (differs between sides)"))
        if not same:
            for side in args.sides:
                print(f"    {side}: {values[side]}")
        report.append({"workload": name, "limit": workload.limit, "runs": runs, "values": values})
    print()
    print(f"model {args.model}, {args.dtype} on {args.device}, {args.threads} threads")
    print(f"median of {args.rounds} round(s), whole process (start to exit) seconds")
    if args.bridge_include_only:
        print("bridge: task.include_defaults=false (lm-eval's default task index skipped)")
    print(
        "| workload | tasks | " + " | ".join(f"{LABELS[s]} s" for s in SIDES) + " | "
        "speed-up bridge | speed-up engine | "
        + " | ".join(f"{s} peak RSS GiB" for s in SIDES)
        + " | metric values identical |"
    )
    print("|---|---|" + "---|" * (2 * len(SIDES) + 3))
    print("\n".join(rows))
    print(f"\nmetric values identical on every side: {'yes' if identical else 'NO'}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
