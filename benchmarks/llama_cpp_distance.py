"""How far llama.cpp's arithmetic on SmolLM2's Q4_1 GGUF is from Mill's fp32 engine on the
dequantized folder, request by request, on Mill's finished log-likelihood runs.

``python -m benchmarks.llama_cpp_distance RUN_DIR [RUN_DIR ...] [--limit N] [--json F]``:
for each Mill run folder of ``model=smollm2`` (a multiple-choice task: ARC, HellaSwag,
MMLU, ..., run with ``runner.sample_tokens=true``), takes the token ids Mill scored (each
sample's context and each choice's continuation), has ``llama_cpp_loglik_driver`` score
the same ids with llama-cpp-python (``$MILL_LLAMA_PYTHON``, as the served tests find it)
on the GGUF the folder was converted from (``$MILL_SMOLLM2_WHEEL`` or the installed
package, as ``whole_process`` finds it), and prints per task: the requests, |Δ log p|
(max, median, relative), the docs whose prediction differs, acc and acc_norm from each
side's log-likelihoods (the fp32 side recomputed and checked equal to the run's own per-doc
metrics), and llama.cpp's scoring seconds beside Mill's.

The two sides run the same weights (the folder is the GGUF's Q4_1 blocks, dequantized):
what differs is the arithmetic, llama.cpp's quantized dot products (activations rounded to
8 bits per block) against fp32 matrix products. The servers cannot give these numbers on
this model (see ``whole_process``'s ``llama_server`` side); the library can.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import mill
from benchmarks.whole_process import mill_phases, request_distance, source_gguf

DRIVER = Path(__file__).with_name("llama_cpp_loglik_driver.py")


def run_requests(run: Any, limit: int | None) -> tuple[str, list[Any], list[list[list[int]]]]:
    """A finished one-task run's samples (at most ``limit``) and, per sample, its requests
    ``[context ids, continuation ids]`` in choice order."""
    (task,) = run.results.tasks
    samples = list(run.samples(task))[:limit]
    requests = []
    for s in samples:
        if not s.response.input_tokens:
            raise SystemExit(f"{run.path}: no token ids; run Mill with runner.sample_tokens=true")
        context = list(s.response.input_tokens)
        requests.append([[context, list(out)] for out in s.response.output_tokens])
    return task, samples, requests


def doc_metrics(
    sample: Any, logprobs: list[float], greedy: list[bool], names: set[str]
) -> dict[str, float]:
    """The metrics in ``names`` (acc, acc_norm) of one doc of ``sample``'s from the given
    log-likelihoods, by Mill's own metric classes."""
    from mill.metrics.accuracy import Accuracy, AccuracyNorm
    from mill.types import Doc, Response

    doc = Doc(sample.task, sample.doc_id, sample.subject, "", tuple(sample.choices), sample.gold)
    responses = [
        Response(f"{i}", logprob=lp, is_greedy=g)
        for i, (lp, g) in enumerate(zip(logprobs, greedy, strict=True))
    ]
    metrics = {m.name: m for m in (Accuracy(), AccuracyNorm())}
    return {name: float(metrics[name].score(doc, responses)) for name in names}


def compare(
    samples: list[Any], theirs: list[float], greedy: list[bool], names: set[str]
) -> dict[str, Any]:
    """Mill's samples against llama.cpp's log-likelihoods and greedy flags for the same
    requests, in order: :func:`request_distance`, the requests whose ``is_greedy``
    differs, and the metrics in ``names`` from each side's log-likelihoods (Mill's
    recomputed and checked equal to the run's own per-doc values)."""
    pairs: list[tuple[list[float], list[float]]] = []
    scores: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in sorted(names)}
    greedy_differ = at = 0
    for s in samples:
        mine = list(s.response.logprobs)
        other = theirs[at : at + len(mine)]
        flags = greedy[at : at + len(mine)]
        at += len(mine)
        pairs.append((mine, other))
        greedy_differ += sum(
            f != g for f, g in zip(flags, s.response.argmax_logits_eq_gold, strict=True)
        )
        ours_m = doc_metrics(s, mine, list(s.response.argmax_logits_eq_gold), names)
        theirs_m = doc_metrics(s, other, flags, names)
        for name, (a, b) in scores.items():
            if s.metrics[name] != ours_m[name]:
                raise SystemExit(f"doc {s.doc_id}: {name} {ours_m[name]} recomputed, {s.metrics}")
            a.append(ours_m[name])
            b.append(theirs_m[name])
    metrics = {n: (statistics.fmean(a), statistics.fmean(b)) for n, (a, b) in scores.items()}
    return request_distance(pairs) | {"is_greedy_differ": greedy_differ, "metrics": metrics}


def main(argv: list[str] | None = None) -> int:
    from benchmarks.side_by_side import model_dir
    from tests.support.servers import llama_python

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="docs per run")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mill-llama-cpp-") as tmp:
        work = Path(tmp)
        gguf = source_gguf(model_dir("smollm2"), work)
        for run_dir in args.runs:
            run = mill.load(run_dir)
            task, samples, requests = run_requests(run, args.limit)
            flat = [r for doc in requests for r in doc]
            spec, out = work / "requests.json", work / "out.json"
            spec.write_text(json.dumps({"requests": flat}))
            cmd = [llama_python(), str(DRIVER), str(gguf), str(spec), str(out)]
            cmd += ["--threads", str(args.threads)]
            start = time.perf_counter()
            subprocess.run(cmd, check=True)
            wall = time.perf_counter() - start
            got = json.loads(out.read_text())
            names = set(run.results.tasks[task].metrics) & {"acc", "acc_norm"}
            row = compare(samples, got["logprobs"], got["is_greedy"], names)
            row |= {
                "task": task,
                "run": str(run_dir),
                "llama_cpp_scoring_s": got["seconds"],
                "llama_cpp_wall_s": wall,
                "llama_cpp_peak_rss_kib": got["peak_rss_kib"],
                "mill_scoring_s": mill_phases(run_dir).get("scoring")
                if args.limit is None
                else None,
            }
            rows.append(row)
            print(line(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def line(row: dict[str, Any]) -> str:
    """One run's comparison in one line."""
    metrics = ", ".join(f"{k} {a:.4f} -> {b:.4f}" for k, (a, b) in row["metrics"].items())
    mill_s = row["mill_scoring_s"]
    speed = f"; Mill's scoring {mill_s:.1f} s" if mill_s is not None else ""
    return (
        f"{row['task']}: {row['docs']} docs, {row['requests']} requests; |d logp| max "
        f"{row['max_abs']:.3g}, median {row['median_abs']:.3g}; relative max "
        f"{row['max_rel']:.3g}, median {row['median_rel']:.3g}; the same prediction on "
        f"{row['same_prediction']} of {row['docs']}; is_greedy differs on "
        f"{row['is_greedy_differ']}; fp32 -> Q4_1: {metrics}; llama.cpp scoring "
        f"{row['llama_cpp_scoring_s']:.1f} s (process {row['llama_cpp_wall_s']:.1f} s, "
        f"peak RSS {row['llama_cpp_peak_rss_kib'] / 2**20:.2f} GiB){speed}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
