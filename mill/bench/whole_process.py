"""Whole-process time of Mill and lm-evaluation-harness 0.4.13, as a user runs them.

Each round starts the ``mill`` command line and ``lm_eval``'s own command line (in its dev
virtualenv) as fresh processes on the same model folder, data and prompts (the workloads of
:mod:`mill.bench.workloads`), and times each from start to exit; the sides alternate so
machine drift hits both. Mill's phases come from its run's manifest (``phases``, read with
``mill.load``); peak RSS is each child's ``ru_maxrss``. Next to Mill, each round also times
``floor_driver``: a process that only imports torch and ``transformers`` and loads the same
tokenizer and model, the least any harness built on ``transformers``' model classes spends
outside scoring. Prints a markdown table with the median of the rounds, the ratio, Mill's
own time (wall minus scoring minus the floor) and the ratio a harness with Mill's scoring
and nothing but the floor besides would reach; and (``--demo``) the wall time of the offline
demo ``mill``.

    python -m mill.bench.whole_process --workloads arc_easy_0shot --rounds 3 --demo 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import mill
from mill.bench.driver_common import (
    REPO,
    SHARED_DATA,
    abs_path,
    child_env,
    lmeval_batch,
    lmeval_python,
    mill_cmd,
    module_cmd,
    timed_run,
    write_task_yamls,
)
from mill.bench.side_by_side import hf_model_overrides, model_dir
from mill.bench.workloads import WORKLOADS, derive_data

PHASES = ("start", "data", "model", "requests", "scoring", "metrics", "report")
LMEVAL_BATCH = {"arc_easy_0shot": 8, "arc_easy_25shot": 4, "mmlu_5shot": 4, "gsm8k_8shot": 8}
"""As in ``benchmark``: the fastest lm-eval batch size of a sweep on this machine."""


def mill_phases(run_dir: Path) -> dict[str, float]:
    """Wall seconds of each phase of the finished run in ``run_dir`` (its manifest's
    ``phases``)."""
    return dict(mill.load(run_dir).manifest.phases or {})


def floor_cmd(model: Path, device: str, dtype: str) -> list[str]:
    """``floor_driver`` on ``model`` as Mill loads it (run it with ``cwd=REPO``)."""
    return module_cmd(
        sys.executable, "floor_driver", str(model), "--device", device, "--dtype", dtype
    )


def lmeval_tasks_root() -> Path:
    """lm-eval's own task folder, from the interpreter the lm-eval side runs in (lm_eval
    0.4.13 there and in this one, which the bridge and engine sides use)."""
    root = subprocess.run(
        [
            str(lmeval_python()),
            "-c",
            "import lm_eval, os; print(os.path.dirname(lm_eval.__file__))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.strip()
    return Path(root) / "tasks"


def lmeval_task_dir(workdir: Path, tasks: list[dict[str, Any]]) -> Path:
    """Task YAMLs that include lm-eval's own and override data and shots (as
    ``lmeval_driver`` writes them), for lm_eval's ``--include_path``."""
    return write_task_yamls(tasks, workdir / "lmeval_tasks", lmeval_tasks_root())


def lm_eval_cli(
    prefix: list[str],
    model_args: str,
    tasks: list[str],
    include: Path,
    batch_size: int | str,
    device: str,
    limit: int | None,
) -> list[str]:
    """An lm-eval command line (``prefix``: the interpreter, ``-m lm_eval`` or ``-m
    mill.lm_eval``, and ``--model``) on ``tasks`` from the YAML folder ``include``."""
    cmd = [*prefix, "--model_args", model_args, "--tasks", ",".join(tasks)]
    cmd += ["--include_path", str(include), "--batch_size", str(batch_size), "--device", device]
    return cmd + ([] if limit is None else ["--limit", str(limit)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", default=["arc_easy_0shot"])
    parser.add_argument("--model", default="gpt2_bench")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--demo", type=int, default=0, help="also time `mill` (the demo) N times")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    parser.add_argument("--only", choices=["mill", "lmeval"], default=None)
    parser.add_argument(
        "--no-floor", action="store_true", help="do not time floor_driver next to Mill"
    )
    parser.add_argument(
        "--lmeval-batch-size", type=lmeval_batch, default=None, help="default: LMEVAL_BATCH"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    given = args.lmeval_batch_size
    env = child_env(args.threads)
    env.pop("CI", None)
    model = model_dir(args.model)
    wanted = {"mill", "floor", "lmeval"} if args.only is None else {args.only}
    if args.only == "mill":
        wanted.add("floor")
    if args.no_floor:
        wanted.discard("floor")
    order = [side for side in ("mill", "floor", "lmeval") if side in wanted]
    work = Path(tempfile.mkdtemp(prefix="mill-whole-"))
    report: list[dict[str, Any]] = []
    rows = []
    for name in args.workloads:
        workload = WORKLOADS[name]
        if args.limit is not None:
            workload = workload.with_limit(args.limit)
        overrides = [
            *workload.mill_overrides(args.data_dir),
            *hf_model_overrides(model, args.device, args.dtype),
            "runner.cache=false",
        ]
        lm_cmd: list[str] = []
        if args.only != "mill":
            (work / name).mkdir(parents=True, exist_ok=True)
            files = derive_data(workload, args.data_dir, work / name)
            tasks = workload.lmeval_tasks(files)
            include = lmeval_task_dir(work / name, tasks)
            lm_cmd = lm_eval_cli(
                [str(lmeval_python()), "-m", "lm_eval", "--model", "hf"],
                f"pretrained={model},dtype={args.dtype}",
                [t["name"] for t in tasks],
                include,
                given if given is not None else LMEVAL_BATCH.get(name, 8),
                args.device,
                workload.limit,
            )
        sides: dict[str, list[dict[str, Any]]] = {"mill": [], "floor": [], "lmeval": []}
        for r in range(args.rounds):
            for side in order if r % 2 == 0 else order[::-1]:
                tag = f"{name}.{side}.{r}"
                if side == "mill":
                    run_dir = work / tag
                    cmd = mill_cmd([*overrides, f"hydra.run.dir={run_dir}"])
                    wall, code, rss = timed_run(cmd, work / f"{tag}.log", env, work)
                    phases = mill_phases(run_dir) if code == 0 else {}
                elif side == "floor":
                    cmd = floor_cmd(model, args.device, args.dtype)
                    wall, code, rss = timed_run(cmd, work / f"{tag}.log", env, REPO)
                    phases = {}
                else:
                    out = work / tag
                    wall, code, rss = timed_run(
                        [*lm_cmd, "--output_path", str(out)], work / f"{tag}.log", env, work
                    )
                    phases = {}
                if code != 0:
                    log = work / f"{tag}.log"
                    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
                    print(f"{tag} failed (exit {code}); see {log}; its last lines:\n{tail}")
                    return 1
                sides[side].append({"wall_s": wall, "peak_rss_kib": rss, "phases": phases})
                print(f"  {tag}: {wall:.1f} s, peak RSS {rss / 2**20:.2f} GiB", flush=True)
        med = {s: statistics.median(x["wall_s"] for x in v) for s, v in sides.items() if v}
        entry: dict[str, Any] = {"workload": name, "limit": workload.limit, **sides}
        entry["median_wall_s"] = med
        report.append(entry)
        if sides["mill"]:
            phase_med = {
                p: statistics.median(x["phases"].get(p, 0.0) for x in sides["mill"]) for p in PHASES
            }
            outside = sum(v for p, v in phase_med.items() if p != "scoring")
            cells = " | ".join(f"{phase_med[p]:.2f}" for p in PHASES)
            ratio = f"{med['lmeval'] / med['mill']:.1f}x" if "lmeval" in med else "-"
            floor = own = bound = "-"
            if "floor" in med:
                scoring = phase_med["scoring"]
                entry["floor_s"] = med["floor"]
                entry["mill_own_s"] = med["mill"] - scoring - med["floor"]
                floor, own = f"{entry['floor_s']:.2f}", f"{entry['mill_own_s']:.2f}"
                if "lmeval" in med:
                    entry["ratio_at_floor"] = med["lmeval"] / (med["floor"] + scoring)
                    bound = f"{entry['ratio_at_floor']:.1f}x"
            lm = f"{med['lmeval']:.1f}" if "lmeval" in med else "-"
            rss = max(x["peak_rss_kib"] for x in sides["mill"]) / 2**20
            lm_rss = (
                f"{max(x['peak_rss_kib'] for x in sides['lmeval']) / 2**20:.2f}"
                if sides["lmeval"]
                else "-"
            )
            rows.append(
                f"| {name} ({workload.limit or 'all'} docs) | {cells} | {outside:.2f} | "
                f"{floor} | {own} | "
                f"{med['mill']:.1f} | {lm} | {ratio} | {bound} | {rss:.2f} | {lm_rss} |"
            )
    demo: list[dict[str, Any]] = []
    demo_floor: list[float] = []
    for r in range(args.demo):
        run_dir = work / f"demo.{r}"
        wall, code, rss = timed_run(
            mill_cmd([f"hydra.run.dir={run_dir}"]), work / f"demo.{r}.log", env, work
        )
        demo.append({"wall_s": wall, "code": code, "phases": mill_phases(run_dir)})
        print(f"  demo {r}: {wall:.1f} s (exit {code})", flush=True)
        if "floor" in order:  # the demo's model as conf/model/hf.yaml loads it
            cmd = floor_cmd(model_dir("stories260k"), "auto", "float32")
            floor_wall, code, _ = timed_run(cmd, work / f"demo.floor.{r}.log", env, REPO)
            if code != 0:
                print(f"demo floor failed (exit {code}); see {work / f'demo.floor.{r}.log'}")
                return 1
            demo_floor.append(floor_wall)
            print(f"  demo floor {r}: {floor_wall:.1f} s", flush=True)
    print()
    print(f"model {args.model}, {args.dtype} on {args.device}, {args.threads} threads")
    print(
        "| workload | " + " | ".join(PHASES) + " | Mill outside scoring s | floor s "
        "| Mill own s | Mill wall s | lm-eval wall s | ratio | ratio at the floor "
        "| Mill peak RSS GiB | lm-eval peak RSS GiB |"
    )
    print("|---|" + "---|" * (len(PHASES) + 9))
    print("\n".join(rows))
    print(
        "floor: floor_driver's wall time (import torch and transformers, load the tokenizer "
        "and model, exit); Mill own: Mill's wall minus its scoring minus the floor; ratio at "
        "the floor: lm-eval's wall over (floor + Mill's scoring)"
    )
    if demo:
        walls = [d["wall_s"] for d in demo]
        print(f"demo `mill`: median {statistics.median(walls):.2f} s wall of {len(walls)}")
        if demo_floor:
            scoring = statistics.median(d["phases"].get("scoring", 0.0) for d in demo)
            print(
                f"demo floor: median {statistics.median(demo_floor):.2f} s; the demo's scoring "
                f"{scoring:.2f} s; Mill own "
                f"{statistics.median(walls) - scoring - statistics.median(demo_floor):.2f} s"
            )
    if args.json:
        out = {"workloads": report, "demo": demo, "demo_floor": demo_floor}
        args.json.write_text(json.dumps(out, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
