"""What an evaluation costs inside training: Mill's training callback vs a standalone
``mill`` run vs lm-eval's ``HFLM(pretrained=model)`` in the same process, on the same
checkpoint, task, docs and prompts (the ``arc_easy_0shot`` workload of
:mod:`benchmarks.workloads` on local files; lm-eval reads the same rows through its own
ARC-Easy YAML).

* **callback**: :class:`mill.integrations.core.TrainingEvaluator` (what the three
  integrations run) on the model already in memory: settings composed when it is created
  (timed), then one evaluation (timed, folder and report included); a second evaluation
  of the same model is timed as well (warm).
* **standalone mill**: ``mill model=hf model.pretrained=<checkpoint> ...`` as a child
  process, whole-process wall time (start-up, imports, model load, evaluation, folder).
* **lm-eval in process**: ``import lm_eval`` (timed, unless it was already imported), then
  ``HFLM(pretrained=model, tokenizer=tokenizer)`` and ``simple_evaluate`` on the model in
  memory (timed).

Each side uses ``--threads`` threads. Prints a table, the ratios and the acc/acc_norm of
each side (they must agree); ``--json`` writes it all.

    python -m benchmarks.training_speed                    # gpt2_bench, 300 docs
    python -m benchmarks.training_speed --model stories260k --limit 20 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import mill
from benchmarks.driver_common import SHARED_DATA, child_env, mill_cmd, timed_run, write_task_yamls
from benchmarks.side_by_side import model_dir
from benchmarks.workloads import WORKLOADS, derive_data

METRICS = ("acc", "acc_norm")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="gpt2_bench", help="stories260k, gpt2_bench, ...")
    parser.add_argument("--limit", type=int, default=300, help="ARC-Easy docs")
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lmeval-batch-size", type=int, default=8)
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args(argv)


def callback_side(model: Any, tokenizer: Any, overrides: list[str], limit: int, out: Path):
    from mill.integrations.core import TrainingEvaluator

    start = time.perf_counter()
    evaluator = TrainingEvaluator("arc_easy", limit=limit, overrides=overrides)
    created = time.perf_counter() - start
    start = time.perf_counter()
    logged = evaluator.evaluate(model, tokenizer, 1, out)
    first = time.perf_counter() - start
    start = time.perf_counter()
    evaluator.evaluate(model, tokenizer, 2, out)
    second = time.perf_counter() - start
    scores = {m: logged[f"mill/arc_easy/{m}"] for m in METRICS}
    return {"created_s": created, "first_s": first, "second_s": second, "scores": scores}


def standalone_side(checkpoint: Path, overrides: list[str], threads: int, out: Path):
    argv = mill_cmd(
        [
            "model=hf",
            f"model.pretrained={checkpoint}",
            *overrides,
            "report.progress=never",
            f"hydra.run.dir={out}",
        ]
    )
    wall, status, _ = timed_run(argv, out.with_suffix(".log"), child_env(threads, CI="1"))
    if status != 0:
        raise SystemExit(f"mill failed; see {out.with_suffix('.log')}")
    metrics = mill.load(out).results.tasks["arc_easy"].metrics
    return {"wall_s": wall, "scores": {m: metrics[m].value for m in METRICS}}


def lmeval_side(model: Any, tokenizer: Any, workload: Any, files: Any, batch: int, work: Path):
    start = time.perf_counter()
    already = "lm_eval" in sys.modules
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    imported = 0.0 if already else time.perf_counter() - start
    specs = workload.lmeval_tasks(files)
    include = write_task_yamls(
        specs, work / "lmeval-tasks", Path(lm_eval.__file__).parent / "tasks"
    )
    start = time.perf_counter()
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch)
    out = lm_eval.simple_evaluate(
        model=lm,
        tasks=[specs[0]["name"]],
        task_manager=TaskManager(include_path=str(include)),
        limit=workload.limit,
        log_samples=False,
    )
    seconds = time.perf_counter() - start
    row = out["results"][specs[0]["name"]]
    scores = {m: row[f"{m},none"] for m in METRICS}
    return {"import_s": imported, "evaluate_s": seconds, "scores": scores}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    workload = WORKLOADS["arc_easy_0shot"].with_limit(args.limit)
    overrides = workload.mill_overrides(args.data_dir)
    checkpoint = model_dir(args.model)
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint)
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model.train()  # as in a training loop
    with tempfile.TemporaryDirectory(prefix="mill-training-speed-") as tmp:
        work = Path(tmp)
        files = derive_data(workload, args.data_dir, work)
        mill_overrides = [o for o in overrides if not o.startswith("task=")]
        callback = callback_side(model, tokenizer, mill_overrides, args.limit, work / "callback")
        standalone = standalone_side(checkpoint, overrides, args.threads, work / "standalone")
        lmeval = lmeval_side(model, tokenizer, workload, files, args.lmeval_batch_size, work)
    cost = callback["first_s"]
    report = {
        "model": args.model,
        "limit": args.limit,
        "threads": args.threads,
        "callback": callback,
        "standalone": standalone,
        "lmeval": lmeval,
        "speedup_vs_standalone": standalone["wall_s"] / cost,
        "speedup_vs_lmeval": (lmeval["evaluate_s"] + lmeval["import_s"]) / cost,
        "speedup_vs_lmeval_without_import": lmeval["evaluate_s"] / cost,
    }
    print(f"model {args.model}, ARC-Easy 0-shot, {args.limit} docs, {args.threads} threads")
    print(f"{'side':<34} {'seconds':>8}   acc / acc_norm")
    rows = [
        ("callback: settings (once)", callback["created_s"], None),
        ("callback: evaluation", callback["first_s"], callback["scores"]),
        ("callback: evaluation again", callback["second_s"], None),
        ("standalone mill (whole process)", standalone["wall_s"], standalone["scores"]),
        ("lm-eval: import lm_eval", lmeval["import_s"], None),
        ("lm-eval: HFLM(pretrained=model)", lmeval["evaluate_s"], lmeval["scores"]),
    ]
    for name, seconds, scores in rows:
        shown = "" if scores is None else " / ".join(f"{scores[m]:.6f}" for m in METRICS)
        print(f"{name:<34} {seconds:>8.2f}   {shown}")
    print(
        f"callback faster than standalone mill {report['speedup_vs_standalone']:.1f}x, than "
        f"lm-eval {report['speedup_vs_lmeval']:.1f}x "
        f"({report['speedup_vs_lmeval_without_import']:.1f}x without its import)"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
