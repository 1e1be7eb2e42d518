"""Run one workload on Mill and on lm-evaluation-harness, each in its own process, and
compare what they computed request by request (shared by ``parity`` and ``benchmark``);
the test models by name (:func:`model_dir`) and the one comparison of numbers the tools
use (:func:`same_numbers`)."""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from benchmarks.driver_common import REPO, child_env, lmeval_python, module_cmd, timed_run
from benchmarks.workloads import Workload, derive_data

LOGP_TOL = 1e-4
"""Max |delta log-likelihood| per request (fp32)."""
ROLLING_REL_TOL = 1e-6
"""Rolling (whole-document) totals: max(LOGP_TOL, this x |total|) (see docs/parity.md)."""
METRIC_REL_TOL = 1e-6
"""Per-doc and aggregate metrics of ``parity``: relative (absolute 1e-12 near zero)."""

LLAMA_1B_SHAPE = dict(
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=22,
    num_attention_heads=32,
    num_key_value_heads=4,
    max_position_embeddings=2048,
    vocab_size=50257,
    bos_token_id=50256,
    eos_token_id=50256,
)
"""TinyLlama-1.1B's shape with the GPT-2 tokenizer's vocabulary (1.17B parameters)."""


def same_numbers(a: Any, b: Any, rel_tol: float, abs_tol: float) -> bool:
    """Whether two values are the same, nested: lists and tuples item by item, strings,
    bools and None exactly, numbers within ``math.isclose(a, b, rel_tol, abs_tol)`` (NaN
    equals NaN). Every tool compares numbers with this."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(
            same_numbers(x, y, rel_tol, abs_tol) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    return a == b


def build_llama_1b(out: Path) -> Path:
    """The random 1.1B Llama folder (:data:`LLAMA_1B_SHAPE`, fp32 safetensors + GPT-2
    tokenizer), built once."""
    if (out / "config.json").exists():
        return out
    import shutil

    import torch
    from transformers import GPT2TokenizerFast, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**LLAMA_1B_SHAPE))
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(tmp)
    tokenizer = Path(str(resources.files("mill.resources").joinpath("tokenizers/gpt2")))
    for name in ("vocab.json", "merges.txt"):
        shutil.copyfile(tokenizer / name, tmp / name)
    GPT2TokenizerFast.from_pretrained(tmp).save_pretrained(tmp)
    tmp.rename(out)
    return out


def model_dir(name: str) -> Path:
    """Folder of a named test model (built on first use for the random ones), or ``name``
    itself where it is a model folder (a path with a ``config.json``)."""
    if (Path(name) / "config.json").is_file():
        return Path(name).resolve()
    if name == "smollm2":  # the GGUF converted once into Mill's cache (mill.model.gguf)
        from mill.model.gguf import prepare

        return prepare(os.environ.get("MILL_SMOLLM2_WHEEL") or None)
    if name == "stories260k":
        return Path(str(resources.files("mill.resources").joinpath("models/stories260k")))
    from mill.model.random import cache_root, random_gpt2_dir

    if name == "llama_1b":  # TinyLlama-1.1B's shape, random weights (memory_check)
        return build_llama_1b(cache_root() / "models" / "random-llama-1.1b-shape-s0")
    shapes = {
        "gpt2_random": (2, 64, 4),  # the test suite's tiny model
        "gpt2_bench": (6, 384, 6),  # the benchmark shape
        # the same with a 2048-token window: 8-shot GSM8K prompts fit whole (not truncated)
        "gpt2_bench_2k": (6, 384, 6, 2048),
        # a 768-token window: with 256 new tokens, every 8-shot GSM8K-CoT prompt (629-733
        # tokens) is left-truncated to 512 (in 1,024 positions they fit)
        "gpt2_bench_768": (6, 384, 6, 768),
    }
    if name not in shapes:
        known = ["stories260k", "smollm2", *shapes, "llama_1b"]
        raise SystemExit(f"unknown model {name!r}; choose one of {known} or a model folder")
    layers, width, heads, *window = shapes[name]
    return random_gpt2_dir(layers, width, heads, seed=0, n_positions=window[0] if window else 1024)


def hf_model_overrides(model: Path, device: str, dtype: str) -> list[str]:
    """Mill's overrides for the model folder ``model`` on its HF backend."""
    return [
        "model=hf",
        f"model.pretrained={model}",
        f"model.name={model.name}",
        f"model.device={device}",
        f"model.dtype={dtype}",
    ]


@dataclass
class SideRun:
    """One harness's run of one workload."""

    out: dict[str, Any]
    wall_s: float
    peak_rss_kib: int


def run_side(python: Path, driver: str, spec: dict[str, Any], workdir: Path, tag: str) -> SideRun:
    """Run a driver (``mill_driver`` or ``lmeval_driver``) in its own interpreter; wall
    time and the child's own peak RSS."""
    spec_path, out_path = workdir / f"{tag}.spec.json", workdir / f"{tag}.out.json"
    log_path = workdir / f"{tag}.log"
    spec_path.write_text(json.dumps(spec))
    wall, code, rss = timed_run(
        module_cmd(python, driver, str(spec_path), str(out_path)),
        log_path,
        child_env(int(spec.get("threads", 2))),
        REPO,
    )
    if code != 0:
        tail = log_path.read_text()[-3000:]
        raise RuntimeError(f"{driver} failed (exit {code}); log {log_path}:\n{tail}")
    return SideRun(json.loads(out_path.read_text()), wall, rss)


def run_pair(
    workload: Workload,
    model: Path,
    workdir: Path,
    data_dir: Path,
    *,
    threads: int = 2,
    lmeval_batch_size: int | str = 16,
    mill_overrides: list[str] | None = None,
    sides: tuple[str, ...] = ("mill", "lmeval"),
    device: str = "cpu",
    dtype: str = "float32",
) -> dict[str, SideRun]:
    """Run ``workload`` on the model folder ``model`` with both harnesses, on ``device``
    (``cpu``, ``cuda``, ``cuda:1``) in ``dtype`` (``float32``, ``bfloat16``, ``float16``)."""
    runs: dict[str, SideRun] = {}
    if "mill" in sides:
        overrides = [
            *workload.mill_overrides(data_dir),
            *hf_model_overrides(model, device, dtype),
            *(mill_overrides or []),
        ]
        runs["mill"] = run_side(
            Path(sys.executable),
            "mill_driver",
            {"overrides": overrides, "threads": threads, "model": str(model)},
            workdir,
            f"{workload.name}.mill",
        )
    if "lmeval" in sides:
        files = derive_data(workload, data_dir, workdir)
        spec = {
            "model": str(model),
            "batch_size": lmeval_batch_size,
            "threads": threads,
            "device": device,
            "dtype": dtype,
            "limit": workload.limit,
            "tasks": workload.lmeval_tasks(files),
            **workload.lmeval_chat(),
        }
        runs["lmeval"] = run_side(
            lmeval_python(), "lmeval_driver", spec, workdir, f"{workload.name}.lmeval"
        )
    return runs


@dataclass
class Comparison:
    """Per-request and per-metric agreement of the two harnesses on one workload."""

    workload: str
    requests: int = 0
    docs: int = 0
    max_abs_delta: float = 0.0
    max_rel_delta: float = 0.0
    greedy_mismatches: int = 0
    text_mismatches: int = 0
    logp_violations: int = 0
    metric_rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.problems
            or self.greedy_mismatches
            or self.text_mismatches
            or self.logp_violations
            or any(not row["equal"] for row in self.metric_rows)
        )


def _same_metric(a: float | None, b: float | None) -> bool:
    return same_numbers(a, b, METRIC_REL_TOL, 1e-12)


def compare(
    workload: Workload,
    mill: dict[str, Any],
    lmeval: dict[str, Any],
    logp_tol: float | None = None,
    logp_rel_tol: float = 0.0,
) -> Comparison:
    """Compare per request (doc id + request index), per doc metric and aggregate metric;
    ``logp_tol``: max |delta logp| per request (default :data:`LOGP_TOL`, the fp32 bar),
    or ``logp_rel_tol`` times its magnitude where that is larger (a 30-layer model
    accumulates more fp32 rounding than the toy models: SmolLM2's bar is 3e-5)."""
    result = Comparison(workload.name)
    (mill_task,) = mill["tasks"]
    mill_docs = {(s["subject"], s["doc_id"]): s for s in mill["samples"]}
    for subject in workload.subjects:
        lm_task = lmeval["tasks"][workload.lmeval_task_name(subject)]
        lm_docs: dict[int, list[dict[str, Any]]] = {}
        for sample in lm_task["samples"]:
            lm_docs.setdefault(int(sample["doc_id"]), []).append(sample)
        mill_ids = {d for s, d in mill_docs if s == subject}
        if mill_ids != set(lm_docs):
            result.problems.append(
                f"{subject}: doc ids differ (mill {len(mill_ids)}, lm-eval {len(lm_docs)})"
            )
        for doc_id in sorted(mill_ids & set(lm_docs)):
            ours, theirs = mill_docs[(subject, doc_id)], lm_docs[doc_id]
            result.docs += 1
            resps = [r[0] for r in theirs[0]["resps"]]  # one repeat per request
            where = f"{subject}/{doc_id}"
            if workload.output_type == "generative" and workload.temperature > 0:
                # sampled: each side draws from its own generator, so the texts differ by
                # design; the number of samples per doc must agree
                drawn = [t for r in theirs[0]["resps"] for t in r]
                result.requests += len(drawn)
                if len(ours["text"]) != len(drawn):
                    result.problems.append(f"{where}: {len(ours['text'])} samples vs {len(drawn)}")
            elif workload.output_type == "generative":
                result.requests += len(resps)
                for i, (a, b) in enumerate(zip(ours["text"], resps, strict=True)):
                    if a != b:
                        result.text_mismatches += 1
                        result.problems.append(f"{where}/{i}: text {a!r} != {b!r}")
            else:
                values = [r[0] if isinstance(r, list) else r for r in resps]
                if len(values) != len(ours["logprobs"]):
                    result.problems.append(f"{where}: {len(values)} vs {len(ours['logprobs'])}")
                    continue
                result.requests += len(values)
                for i, (a, b) in enumerate(zip(ours["logprobs"], values, strict=True)):
                    delta = abs(a - b)
                    result.max_abs_delta = max(result.max_abs_delta, delta)
                    result.max_rel_delta = max(result.max_rel_delta, delta / max(abs(b), 1e-30))
                    tol = LOGP_TOL if logp_tol is None else logp_tol
                    tol = max(tol, logp_rel_tol * abs(b))
                    if workload.output_type == "perplexity":
                        tol = max(LOGP_TOL, ROLLING_REL_TOL * abs(b))
                    if delta > tol:
                        result.logp_violations += 1
                        result.problems.append(f"{where}/{i}: logp {a} vs {b} (|d|={delta:.3g})")
                if workload.output_type == "logprobs":
                    greedy = [bool(r[1]) for r in resps]
                    for i, (a, b) in enumerate(zip(ours["is_greedy"], greedy, strict=True)):
                        if a != b:
                            result.greedy_mismatches += 1
                            result.problems.append(f"{where}/{i}: is_greedy {a} vs {b}")
            # per-doc metrics (mean-type only: ratio metrics log (ll, count) pairs)
            for sample in theirs:
                for lm_metric, value in sample["metrics"].items():
                    key = f"{lm_metric},{sample['filter']}"
                    name = workload.metrics.get(key)
                    if name is None or isinstance(value, list):
                        continue
                    if not _same_metric(float(ours["metrics"][name]), float(value)):
                        result.problems.append(
                            f"{where}: {name} {ours['metrics'][name]} vs {value}"
                        )
    # aggregate metrics: per subject for lm-eval, Mill aggregates over its subjects
    for lm_key, name in workload.metrics.items():
        theirs = [
            lmeval["tasks"][workload.lmeval_task_name(s)]["metrics"].get(lm_key)
            for s in workload.subjects
        ]
        if len(workload.subjects) > 1:
            counts = [
                len(lmeval["tasks"][workload.lmeval_task_name(s)]["samples"])
                // max(
                    1,
                    len(
                        {
                            x["filter"]
                            for x in lmeval["tasks"][workload.lmeval_task_name(s)]["samples"]
                        }
                    ),
                )
                for s in workload.subjects
            ]
            theirs_value = sum(v * n for v, n in zip(theirs, counts, strict=True)) / sum(counts)
        else:
            theirs_value = theirs[0]
        ours_value = mill["tasks"][mill_task]["metrics"].get(name)
        result.metric_rows.append(
            {
                "metric": name,
                "mill": ours_value,
                "lmeval": theirs_value,
                "equal": _same_metric(ours_value, theirs_value),
            }
        )
    return result


def new_workdir(keep: Path | None) -> Path:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        return keep
    return Path(tempfile.mkdtemp(prefix="mill-sxs-"))
