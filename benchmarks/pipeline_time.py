"""Mill's own time and its run folder's size, before and after a change: MMLU 5-shot on the
fake model (a model that computes nothing, so every second is the pipeline's), whole
process, rounds alternating.

    python -m benchmarks.pipeline_time --before main --limit 20 --rounds 3
    python -m benchmarks.pipeline_time --before main --rounds 1     # all 14,042 questions

Each side is a checkout (``benchmarks.before_after.checkout``: ``--before`` a revision,
``--after`` this working tree by default) run with this interpreter, ``PYTHONPATH`` set to
it, offline, two threads, the run's own response cache (``runner.cache=run``), the data of
``../shared/data``. Prints per side the median wall seconds, the median of the run's
``scoring`` phase (its manifest), the peak RSS, and the sizes of ``samples/`` and of the
whole run folder, then the ratios before / after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.before_after import checkout, remove_checkout
from benchmarks.driver_common import SHARED_DATA, child_env, timed_run


def size(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def one_run(root: Path, out: Path, limit: int | None) -> dict[str, float]:
    """One whole ``mill`` process of the checkout ``root`` into ``out``: its numbers."""
    args = ["task=mmlu", "model=fake", "data=local", f"data.dir={SHARED_DATA}"]
    args += [f"task.limit={limit}"] if limit is not None else []
    argv = [sys.executable, "-m", "mill", *args, "report.progress=never", f"hydra.run.dir={out}"]
    env = child_env(2, PYTHONPATH=str(root), CI="1")
    wall, code, rss_kib = timed_run(argv, out.parent / f"{out.name}.log", env, out.parent)
    if code != 0:
        raise SystemExit(f"{root}: mill exited {code}; see {out.parent / f'{out.name}.log'}")
    phases = json.loads((out / "manifest.json").read_text())["phases"]
    return {
        "wall": wall,
        "scoring": phases["scoring"],
        "rss_mib": rss_kib / 1024,
        "samples_mb": size(out / "samples") / 1e6,
        "folder_mb": size(out) / 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="revision before the change")
    parser.add_argument("--after", default=None, help="revision after (the working tree)")
    parser.add_argument("--limit", type=int, default=None, help="questions per subject")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print("load at start:", os.getloadavg(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        roots = {
            "before": checkout(args.before, work / "before"),
            "after": checkout(args.after, work / "after"),
        }
        got: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        try:
            for i in range(args.rounds):
                for side in ("before", "after") if i % 2 == 0 else ("after", "before"):
                    runs = work / f"{side}-{i}"
                    runs.mkdir()
                    got[side].append(one_run(roots[side], runs / "run", args.limit))
                    print(f"{side} round {i}: {got[side][-1]}", flush=True)
        finally:
            for root in roots.values():
                remove_checkout(root)
    print("load at end:", os.getloadavg())
    keys = ("wall", "scoring", "rss_mib", "samples_mb", "folder_mb")
    med = {s: {k: statistics.median(r[k] for r in got[s]) for k in keys} for s in got}
    print("| | wall s | scoring s | peak RSS MiB | samples MB | run folder MB |")
    print("|---|---|---|---|---|---|")
    for side in ("before", "after"):
        print(f"| {side} | " + " | ".join(f"{med[side][k]:.2f}" for k in keys) + " |")
    ratios = " | ".join(
        f"{med['before'][k] / med['after'][k]:.1f}x" if med["after"][k] else "n/a" for k in keys
    )
    print(f"| before / after | {ratios} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
