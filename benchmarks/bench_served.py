"""Mill's API backend vs lm-evaluation-harness 0.4.13's ``local-completions``, side by side,
on the same llama.cpp server: identical scores, whole-process time.

One llama-cpp-python server (stories260k converted to GGUF, F32 KV cache, started here on
127.0.0.1) serves both harnesses in turn. Each harness runs as its own command-line process,
exactly as a user runs it, on the same local ARC-Easy data, the same docs and the same
number of requests in flight:

* Mill: ``mill task=arc_easy model=openai_completions model.base_url=... data=local ...``
  with a fresh response cache (nothing is reused between runs);
* lm-eval: ``lm_eval --model local-completions --model_args ...,tokenized_requests=False``
  in its own virtualenv (it needs ``tenacity``), on lm-eval's own ``arc_easy`` task YAML
  with only the data source switched to the same local files (see :mod:`benchmarks.workloads`).

The time of each side is the wall time of its whole process (imports, task building, all
requests, metrics and output files). Scores are compared per request (log-likelihood within
1e-4, is_greedy), per doc (acc, acc_norm) and in aggregate, with ``side_by_side.compare``.

    python -m benchmarks.bench_served                   # 300 docs, 1 request in flight
    python -m benchmarks.bench_served --limit 50 --concurrency 4 --keep /tmp/bench-served

The lm-eval interpreter is ``driver_common.lmeval_python()`` (``$MILL_LMEVAL_PYTHON``, the dev
virtualenv, or this interpreter with lm_eval);
the server's is found by :mod:`tests.support.servers` (``$MILL_LLAMA_PYTHON``, ...).
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mill
from benchmarks.driver_common import (
    REPO,
    SHARED_DATA,
    abs_path,
    child_env,
    lmeval_python,
    mill_cmd,
    timed_run,
    write_task_yamls,
)
from benchmarks.side_by_side import compare, new_workdir
from benchmarks.whole_process import lmeval_tasks_root
from benchmarks.workloads import WORKLOADS, derive_data
from tests.support.servers import (
    SERVED_NAME,
    STORIES,
    convert_stories_gguf,
    http_json,
    llama_server,
)


@dataclass
class Timed:
    wall_s: float
    peak_rss_kib: int


def run_timed(argv: list[str], log: Path, env: dict[str, str], cwd: Path) -> Timed:
    """Run a command to completion; its wall time and its own peak RSS.

    Raises:
        RuntimeError: The command failed (log tail included).
    """
    wall, code, rss = timed_run(argv, log, env, cwd)
    if code != 0:
        raise RuntimeError(f"{argv[0]} ... failed (exit {code}); {log}:\n{log.read_text()[-3000:]}")
    return Timed(wall, rss)


def served_env(threads: int, cache: Path | None = None) -> dict[str, str]:
    """:func:`driver_common.child_env` with ``CI=1`` (plain console output) and Mill's
    response cache at ``cache``."""
    return child_env(threads, CI="1", **({"MILL_CACHE": str(cache)} if cache else {}))


@dataclass
class Side:
    """What both harnesses' runs get: the same docs, server, concurrency and context."""

    workload: Any
    port: int
    concurrency: int
    data_dir: Path
    workdir: Path
    threads: int
    max_length: int


def run_mill(side: Side) -> tuple[Timed, dict[str, Any]]:
    """Mill's CLI against the server; (timing, output in ``side_by_side.compare``'s shape)."""
    run_dir = side.workdir / "mill-run"
    argv = mill_cmd(
        [
            *side.workload.mill_overrides(side.data_dir),
            "model=openai_completions",
            f"model.base_url=http://127.0.0.1:{side.port}/v1",
            f"model.model={SERVED_NAME}",
            f"model.tokenizer={STORIES}",
            f"model.num_concurrent={side.concurrency}",
            f"model.max_length={side.max_length}",
            f"hydra.run.dir={run_dir}",
        ]
    )
    timed = run_timed(
        argv, side.workdir / "mill.log", served_env(side.threads, side.workdir / "mill-cache"), REPO
    )
    run = mill.load(run_dir)
    (task,) = run.results.tasks
    samples = [
        {
            "subject": s.subject,
            "doc_id": s.doc_id,
            "logprobs": s.response.logprobs,
            "is_greedy": s.response.argmax_logits_eq_gold,
            "text": s.response.text,
            "metrics": s.metrics,
        }
        for s in run.samples(task)
    ]
    metrics = {k: v.value for k, v in run.results.tasks[task].metrics.items()}
    return timed, {"tasks": {task: {"metrics": metrics}}, "samples": samples}


def run_lmeval(side: Side) -> tuple[Timed, dict[str, Any]]:
    """lm-eval's CLI with ``local-completions``; (timing, output in compare()'s shape)."""
    python = lmeval_python()
    files = derive_data(side.workload, side.data_dir, side.workdir)
    specs = side.workload.lmeval_tasks(files)
    include = write_task_yamls(specs, side.workdir / "lmeval-tasks", lmeval_tasks_root())
    model_args = ",".join(
        [
            f"model={SERVED_NAME}",
            f"base_url=http://127.0.0.1:{side.port}/v1/completions",
            f"tokenizer={STORIES}",
            "tokenizer_backend=huggingface",
            "tokenized_requests=False",
            f"num_concurrent={side.concurrency}",
            f"max_length={side.max_length}",
        ]
    )
    out_dir = side.workdir / "lmeval-out"
    argv = [
        str(python),
        "-m",
        "lm_eval",
        "--model",
        "local-completions",
        "--model_args",
        model_args,
        "--tasks",
        ",".join(s["name"] for s in specs),
        "--include_path",
        str(include),
        "--log_samples",
        "--output_path",
        str(out_dir),
    ]
    if side.workload.limit is not None:
        argv += ["--limit", str(side.workload.limit)]
    timed = run_timed(argv, side.workdir / "lmeval.log", served_env(side.threads), REPO)
    (results_path,) = glob.glob(str(out_dir / "**" / "results_*.json"), recursive=True)
    results = json.loads(Path(results_path).read_text())
    tasks: dict[str, Any] = {}
    for spec in specs:
        name = spec["name"]
        (samples_path,) = glob.glob(str(out_dir / "**" / f"samples_{name}_*.jsonl"), recursive=True)
        samples = []
        for line in Path(samples_path).read_text().splitlines():
            s = json.loads(line)
            samples.append(
                {
                    "doc_id": s["doc_id"],
                    "filter": s["filter"],
                    "resps": [[_loglikelihood(r) for r in req] for req in s["resps"]],
                    "metrics": {m: s[m] for m in s["metrics"]},
                }
            )
        tasks[name] = {"samples": samples, "metrics": results["results"][name]}
    return timed, {"tasks": tasks}


def _loglikelihood(resp: Any) -> Any:
    """lm-eval's samples file writes (loglikelihood, is_greedy) as strings; back to values."""
    if isinstance(resp, list) and len(resp) == 2 and isinstance(resp[0], str):
        return [float(resp[0]), resp[1] == "True"]
    return resp


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="arc_easy_0shot", choices=["arc_easy_0shot"])
    parser.add_argument("--limit", type=int, default=300, help="docs")
    parser.add_argument("--concurrency", type=int, default=1, help="requests in flight, both")
    parser.add_argument("--threads", type=int, default=1, help="server and client threads")
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    parser.add_argument("--order", choices=["mill-first", "lmeval-first"], default="mill-first")
    parser.add_argument("--keep", type=Path, default=None, help="keep the work folder here")
    parser.add_argument("--json", type=Path, default=None, help="write the row as JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not lmeval_python().exists():
        print(f"bench_served: no lm-eval interpreter at {lmeval_python()}", file=sys.stderr)
        return 2
    workload = WORKLOADS[args.workload].with_limit(args.limit)
    workdir = new_workdir(args.keep)
    gguf_path = convert_stories_gguf(workdir / "stories260k.gguf")
    server = llama_server(
        gguf_path,
        workdir / "llama-server.log",
        threads=args.threads,
    )
    # The server holds 512 tokens: a scored prompt plus the generated token must fit, and
    # Mill's scored prompt is the HF input plus the last continuation token (docs/served.md).
    max_length = 510
    with server:
        # One request before either side, so neither pays for a cold server.
        http_json(
            server.base_url + "/completions",
            {"model": SERVED_NAME, "prompt": "Once upon", "max_tokens": 1, "temperature": 0.0},
        )
        order = ["mill", "lmeval"] if args.order == "mill-first" else ["lmeval", "mill"]
        runs: dict[str, tuple[Timed, dict[str, Any]]] = {}
        side = Side(
            workload,
            server.port,
            args.concurrency,
            args.data_dir,
            workdir,
            args.threads,
            max_length,
        )
        for name in order:
            runs[name] = run_mill(side) if name == "mill" else run_lmeval(side)
    cmp = compare(workload, runs["mill"][1], runs["lmeval"][1])
    mill_t, lm_t = runs["mill"][0], runs["lmeval"][0]
    row = {
        "workload": workload.name,
        "docs": cmp.docs,
        "requests": cmp.requests,
        "concurrency": args.concurrency,
        "mill_s": round(mill_t.wall_s, 2),
        "lmeval_s": round(lm_t.wall_s, 2),
        "lmeval_over_mill": round(lm_t.wall_s / mill_t.wall_s, 2),
        "mill_peak_rss_gib": round(mill_t.peak_rss_kib / 2**20, 2),
        "lmeval_peak_rss_gib": round(lm_t.peak_rss_kib / 2**20, 2),
        "max_abs_delta_logp": cmp.max_abs_delta,
        "greedy_mismatches": cmp.greedy_mismatches,
        "metrics": cmp.metric_rows,
        "identical": cmp.ok,
        "problems": cmp.problems[:10],
        "workdir": str(workdir),
    }
    print(
        "| workload | docs | requests | in flight | Mill s | lm-eval s | lm-eval / Mill | "
        "max abs d logp | metrics equal |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    metrics = ", ".join(f"{m['metric']} {m['mill']:.4f}/{m['lmeval']:.4f}" for m in cmp.metric_rows)
    print(
        f"| {row['workload']} | {row['docs']} | {row['requests']} | {args.concurrency} | "
        f"{row['mill_s']:.1f} | {row['lmeval_s']:.1f} | {row['lmeval_over_mill']:.2f}x | "
        f"{cmp.max_abs_delta:.2g} | {'yes' if cmp.ok else 'NO'} ({metrics}) |"
    )
    for problem in cmp.problems[:10]:
        print("  problem:", problem)
    if args.json is not None:
        args.json.write_text(json.dumps(row, indent=2))
    return 0 if cmp.ok else 1


if __name__ == "__main__":
    sys.exit(main())
