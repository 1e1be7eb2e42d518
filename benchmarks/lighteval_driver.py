"""Run lighteval 0.13's transformers backend on one of Mill's math tasks and dump its generations
as JSON (the lighteval side of ``whole_process``; the twin of ``lmeval_driver``).

Runs in lighteval's own interpreter (``scripts/setup_lighteval_venv.sh``), which need not have
Mill installed: it imports nothing from Mill, only this checkout's ``benchmarks`` (started as
``python -m benchmarks.lighteval_driver SPEC.json OUT.json`` in the checkout's root)::

    {"model": "/path/to/folder", "task": "math500", "data": "/folder/with/math500",
     "max_gen_toks": 512, "batch_size": 8, "threads": 2, "dtype": "float32",
     "samples": 1, "temperature": 0.0, "top_p": 1.0}

It calls ``lighteval.main_accelerate.accelerate``, the function behind ``lighteval accelerate``
(its command line), with the task ``mill_<task>`` of :mod:`benchmarks.lighteval_math_tasks`
(lighteval's own config on the given data folder, every row of its ``<task>/test.jsonl``) and
the model folder as ``model_name``. One thing differs from the command line: lighteval's task
registry imports every task module it ships before it reads ``--custom-tasks``, and two of them
reach the network at import (``tiny_benchmarks`` downloads a file, ``mt_bench`` lists models on
the Hub, which fails offline and, with ``huggingface_hub`` 2.x, on its arguments). The registry
is given the custom file alone (:func:`custom_only`); that leaves out the imports of those ~100
modules, so lighteval's measured start is, if anything, shorter than its command line's.

lighteval caches every generation under ``<cache_dir>/<model_name>/``; with an absolute
``model_name`` that path is the model folder itself (``Path`` joining), which would write into
Mill's sealed cache folder and serve a later round from the cache. The driver works in a
folder of its own beside OUT: the model is a link ``model`` there to the folder, named by that
relative name, and the cache is that folder's ``cache`` (new for each run: every run
generates).

Sampled (``temperature`` > 0), lighteval passes temperature and top-p to ``generate`` but never
``do_sample``, which only the model's own ``generation_config.json`` can turn on; without it
``transformers`` refuses ``num_return_sequences`` > 1 for greedy search. The link is then a
folder of links to each of the model's files with its ``generation_config.json`` written again
with ``do_sample: true`` (the weights and tokenizer are the model's own files).

OUT: per row of the data file (its 0-based position, which is Mill's doc id) the texts lighteval
generated, the aggregated metrics, timings and this process's peak RSS.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

T_START = time.perf_counter()


def custom_only(custom_tasks: Any = None, load_multilingual: bool = False) -> dict[str, Any]:  # noqa: ANN401, FBT001, FBT002
    """``Registry.load_all_task_configs`` restricted to the custom tasks file."""
    from lighteval.tasks.registry import Registry

    return Registry._extract_configs(Registry.create_custom_tasks_module(custom_tasks))


def link_model(model: Path, link: Path, temperature: float) -> None:
    """``link`` to the model folder; sampled, a folder of links whose generation config
    samples (see the module docstring)."""
    if temperature <= 0:
        link.symlink_to(model, target_is_directory=True)
        return
    link.mkdir()
    for item in model.iterdir():
        if item.name != "generation_config.json":
            (link / item.name).symlink_to(item)
    config_file = model / "generation_config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    (link / "generation_config.json").write_text(json.dumps({**config, "do_sample": True}))


def model_args(spec: dict[str, Any], cache: Path) -> str:
    """lighteval's ``model_args`` for the spec: the model (the link ``model`` in the working
    folder), its cache folder, dtype, batch size and, sampled, the generation parameters."""
    args = f"model_name=model,cache_dir={cache},dtype={spec.get('dtype', 'float32')}"
    args += f",batch_size={int(spec.get('batch_size', 8))}"
    if float(spec.get("temperature", 0.0)) > 0:
        args += (
            f",generation_parameters={{temperature:{spec['temperature']},"
            f"top_p:{spec.get('top_p', 1.0)}}}"
        )
    return args


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    out_path = Path(sys.argv[2]).resolve()  # the driver changes its working folder
    # read by benchmarks.lighteval_math_tasks when lighteval imports it
    os.environ["MILL_SHARED_DATA"] = str(spec["data"])
    os.environ["MILL_LIGHTEVAL_GENERATION_SIZE"] = str(int(spec["max_gen_toks"]))
    os.environ["MILL_LIGHTEVAL_SAMPLES"] = str(int(spec.get("samples", 1)))
    import torch
    from lighteval.main_accelerate import accelerate
    from lighteval.tasks.registry import Registry

    from benchmarks.lighteval_math import make_docs, read_rows

    torch.set_num_threads(int(spec.get("threads", 2)))
    Registry.load_all_task_configs = staticmethod(custom_only)  # type: ignore[method-assign]
    t_imported = time.perf_counter()
    tasks_file = Path(__file__).resolve().with_name("lighteval_math_tasks.py")
    folder = out_path.parent / f"{out_path.stem}.lighteval"
    folder.mkdir(parents=True)  # a run's own: its cache starts empty
    link_model(Path(spec["model"]).resolve(), folder / "model", float(spec.get("temperature", 0)))
    os.chdir(folder)
    results, details = accelerate(
        model_args=model_args(spec, folder / "cache"),
        tasks=f"mill_{spec['task']}|0",
        custom_tasks=str(tasks_file),
        output_dir=str(folder / "results"),
        save_details=False,
    )
    t_done = time.perf_counter()
    rows = read_rows(spec["task"], Path(spec["data"]))
    position = {doc.query: i for i, doc in enumerate(make_docs(spec["task"], rows).values())}
    generated: dict[int, list[str]] = {}
    for detail in next(iter(details.values())):
        generated[position[detail.doc.query]] = list(detail.model_response.text)
    import resource

    out = {
        "side": "lighteval",
        "generated": {str(k): generated[k] for k in sorted(generated)},
        "metrics": json.loads(json.dumps(results.get("results", {}), default=str)),
        "seconds": {"imports": t_imported - T_START, "run": t_done - t_imported},
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    out_path.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
