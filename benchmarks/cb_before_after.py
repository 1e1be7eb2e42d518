"""Mill's generation engine before and after a change, whole process: ``mill`` command lines
from two interpreters (each with its own checkout of Mill), the same overrides, rounds
alternating, medians of wall time. Checks that both wrote the same samples.

    python -m benchmarks.cb_before_after --before /work/wt-before/.venv/bin/python \\
        --rounds 3 --gpt2-docs 20 --stories-docs 50

Workloads: ``gpt2_bench`` (random 6x384 GPT-2, every answer runs to ``max_gen_toks``) on
GSM8K 8-shot (``first_n`` exemplars), and ``stories260k`` (answers of different lengths)
on GSM8K 0-shot; both ``max_gen_toks`` 256, fp32 on the CPU. ``bbh``: lm-eval's
``bbh_fewshot`` through the bridge with docs/real-model.md's recipe, the first
``--bbh-questions`` of each of the 27 tasks, each task with its own 3-shot prompt, on
``--bbh-model`` (``smollm2``; ``stories260k`` for a smoke run).

    python -m benchmarks.cb_before_after --before <python> --workloads bbh --bbh-questions 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mill
from benchmarks.driver_common import SHARED_DATA, documented_recipe

DATA = SHARED_DATA
WORKLOADS = ("gpt2_bench", "stories260k", "bbh")


def workload(key: str, args: argparse.Namespace, folder: Path) -> tuple[str, list[str]]:
    """The label and ``mill`` overrides of the workload ``key`` (``--workloads``), built only
    when asked for (the GPT-2 folder, the BBH recipe written into ``folder``)."""
    from benchmarks.side_by_side import model_dir

    if key == "bbh":
        if not (DATA / "bbh").is_dir():
            raise SystemExit(f"workload bbh: no BBH data at {DATA / 'bbh'}")
        recipe = documented_recipe("bbh_fewshot_*", folder, DATA)
        return f"{args.bbh_model} BBH 3-shot, {args.bbh_questions} per task", [
            "task=lm_eval",
            "task.tasks=[bbh_fewshot]",
            f"task.dataset_overrides={recipe}",
            f"task.limit={args.bbh_questions}",
            f"model={args.bbh_model}",
            "report.progress=never",
        ]
    common = ["task=gsm8k", "data=local", f"data.dir={DATA}", "++task.fewshot_split=train"]
    common += ["++task.generation.max_gen_toks=256", "report.progress=never", "model.device=cpu"]
    if key == "stories260k":
        return f"stories260k GSM8K 0-shot, {args.stories_docs} docs", [
            *common,
            "model=stories260k",
            "++task.num_fewshot=0",
            f"++task.limit={args.stories_docs}",
        ]
    gpt2 = model_dir("gpt2_bench")
    return f"gpt2_bench GSM8K 8-shot, {args.gpt2_docs} docs", [
        *common,
        "model=hf",
        f"model.pretrained={gpt2}",
        f"model.name={gpt2.name}",
        "++task.num_fewshot=8",
        "++task.fewshot_sampler=first_n",
        f"++task.limit={args.gpt2_docs}",
    ]


def run(python: str, overrides: list[str], out: Path) -> float:
    """Wall seconds of one ``mill`` process."""
    env = dict(os.environ, OMP_NUM_THREADS="2", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    start = time.perf_counter()
    cmd = [python, "-m", "mill", *overrides, f"hydra.run.dir={out}"]
    proc = subprocess.run(
        cmd, cwd=out.parent, env=env, capture_output=True, text=True, timeout=7200
    )
    if proc.returncode != 0:
        raise SystemExit(f"{python}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def samples(folder: Path) -> list[object]:
    """Every sample's response text, task by task (read with ``mill.load``), in file order."""
    run = mill.load(folder)
    return [
        s.response.text for task in sorted(run.results.samples_sha256) for s in run.samples(task)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="python of the checkout before")
    parser.add_argument("--after", default=sys.executable, help="python of the checkout after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gpt2-docs", type=int, default=20)
    parser.add_argument("--stories-docs", type=int, default=50)
    parser.add_argument("--bbh-questions", type=int, default=8)
    parser.add_argument("--bbh-model", default="smollm2")
    parser.add_argument(
        "--workloads", nargs="+", default=["gpt2_bench", "stories260k"], choices=WORKLOADS
    )
    args = parser.parse_args(argv)
    print("load at start:", os.getloadavg())
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.workloads:
            name, overrides = workload(key, args, Path(tmp))
            times: dict[str, list[float]] = {"before": [], "after": []}
            outs: dict[str, Path] = {}
            for i in range(args.rounds):
                sides = ("before", "after") if i % 2 == 0 else ("after", "before")
                for side in sides:
                    out = Path(tmp) / f"{len(lines)}-{side}-{i}" / "run"
                    out.parent.mkdir(parents=True)
                    python = args.before if side == "before" else args.after
                    wall = run(python, overrides, out)
                    times[side].append(wall)
                    outs[side] = out
                    print(f"{name} {side} round {i}: {wall:.1f} s", flush=True)
            same = samples(outs["before"]) == samples(outs["after"])
            b, a = statistics.median(times["before"]), statistics.median(times["after"])
            lines.append(
                f"| {name} | {b:.1f} | {a:.1f} | {b / a:.2f}x | {'yes' if same else 'NO'} |"
            )
    print("load at end:", os.getloadavg())
    print("| workload | before s (median) | after s (median) | speed-up | same samples |")
    print("|---|---|---|---|---|")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
