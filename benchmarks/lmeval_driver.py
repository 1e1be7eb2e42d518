"""Run lm-evaluation-harness 0.4.13 on one workload and dump what it computed as JSON.

Runs in lm-eval's own interpreter (the dev virtualenv of ``scripts/setup_lmeval_venv.sh``,
``$MILL_LMEVAL_PYTHON``), which need not have Mill installed: it imports nothing from Mill
but :mod:`benchmarks.driver_common` (standard library only). The tools start it as
``python -m benchmarks.lmeval_driver SPEC.json OUT.json`` in the checkout's root, so Python
itself finds the checkout's ``mill`` package in the working directory (``-m`` puts it first
on ``sys.path``; see :mod:`benchmarks.driver_common`).

SPEC (written by ``parity`` / ``benchmark``)::

    {"model": "/path/to/model", "batch_size": 16, "threads": 2, "device": "cpu",
     "dtype": "float32",
     "tasks": [{"name": "mill__arc_easy_0shot", "include": "arc/arc_easy.yaml",
                "overrides": {...task YAML keys...}}],
     "limit": 300}

Each task is a YAML written into a temporary include folder that ``include``s lm-eval's
own task YAML (``include`` is relative to ``lm_eval/tasks``) and overrides only the data
source (local JSONL files) and the few-shot settings, so prompts, metrics and filters are
lm-eval's. OUT holds, per task, every logged sample (doc id, per-request responses,
filtered responses, per-sample metrics) and the aggregated metrics, plus timings, the
tokens fed through the transformer body and this process's peak RSS.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

T_START = time.perf_counter()

import lm_eval  # noqa: E402
import torch  # noqa: E402
from lm_eval.models.huggingface import HFLM  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from benchmarks.driver_common import (  # noqa: E402
    TokenCounter,
    import_model_code,
    peak_rss_kib,
    write_task_yamls,
)


def _jsonable(value):  # noqa: ANN001, ANN202
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    out_path = Path(sys.argv[2])
    torch.set_num_threads(int(spec.get("threads", 2)))
    import_model_code(spec["model"])
    import datasets  # noqa: F401

    t_imported = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mill-lmeval-tasks-") as tmp:
        write_task_yamls(spec["tasks"], Path(tmp), Path(lm_eval.__file__).parent / "tasks")
        manager = TaskManager(include_path=tmp, include_defaults=False)
        t_ready = time.perf_counter()
        lm = HFLM(
            pretrained=spec["model"],
            dtype=spec.get("dtype", "float32"),
            device=spec.get("device", "cpu"),
            batch_size=spec.get("batch_size", 1),
            max_batch_size=int(spec.get("max_batch_size", 64)),
        )
        counter = TokenCounter(lm.model.base_model)
        t_model = time.perf_counter()
        results = lm_eval.simple_evaluate(
            model=lm,
            tasks=[t["name"] for t in spec["tasks"]],
            limit=spec.get("limit"),
            log_samples=True,
            task_manager=manager,
            bootstrap_iters=int(spec.get("bootstrap_iters", 100000)),
            apply_chat_template=bool(spec.get("apply_chat_template", False)),
            fewshot_as_multiturn=bool(spec.get("fewshot_as_multiturn", False)),
        )
        t_done = time.perf_counter()
    tasks_out = {}
    for task in spec["tasks"]:
        name = task["name"]
        samples = []
        for s in results["samples"][name]:
            metrics = {m: s[m] for m in s["metrics"]}
            samples.append(
                {
                    "doc_id": s["doc_id"],
                    "filter": s["filter"],
                    "arguments": s["arguments"],
                    "resps": s["resps"],
                    "filtered_resps": s["filtered_resps"],
                    "metrics": metrics,
                }
            )
        tasks_out[name] = {
            "samples": _jsonable(samples),
            "metrics": _jsonable(results["results"][name]),
        }
    out = {
        "side": "lm-eval",
        "version": lm_eval.__version__ if hasattr(lm_eval, "__version__") else None,
        "batch_size": spec.get("batch_size", 1),
        "device": spec.get("device", "cpu"),
        "dtype": spec.get("dtype", "float32"),
        "tasks": tasks_out,
        "seconds": {
            "imports": t_imported - T_START,
            "task_index": t_ready - t_imported,
            "model_load": t_model - t_ready,
            "evaluate": t_done - t_model,
            "work": t_done - t_ready,
        },
        "tokens_fed": counter.tokens,
        "forward_calls": counter.calls,
        "peak_rss_kib": peak_rss_kib(),
    }
    out_path.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
