"""One experiment, from a composed config to a finished folder."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from mill.errors import ConfigError, MillError
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import base_manifest, device_info
from mill.report.console import interactive, make_console
from mill.report.progress import PhaseProgress
from mill.report.rebuild import report_after_run
from mill.report.table import results_table

log = logging.getLogger("mill")


def _seed_everything(seed: int) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(seed)


def _save_hydra(folder: Path, cfg: DictConfig, hydra_cfg: DictConfig | None) -> None:
    out = folder / ".hydra"
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    if hydra_cfg is not None:
        (out / "hydra.yaml").write_text(OmegaConf.to_yaml(hydra_cfg))
        overrides = OmegaConf.to_container(hydra_cfg.hydra.overrides.task)
        (out / "overrides.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(overrides)))


def run_job(
    cfg: DictConfig, output_dir: Path, hydra_cfg: DictConfig | None = None
) -> dict[str, Any]:
    """Evaluate the configured task(s) on the configured model into ``output_dir``.

    Returns the results dict (also written to ``results.json``). Raises MillError on bad
    input, after marking the manifest failed and leaving no ``results.json``.
    """
    from mill.evaluator import aggregate_group, evaluate
    from mill.instantiate import instantiate
    from mill.runner.build import build_metrics, build_source, build_tasks

    folder = ExperimentFolder(output_dir)
    folder.claim()
    _save_hydra(folder.path, cfg, hydra_cfg)
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as err:
        raise ConfigError(f"config is incomplete: {err}".splitlines()[0]) from err
    folder.write_text("resolved.yaml", OmegaConf.to_yaml(OmegaConf.create(resolved)))
    runner = cfg.runner
    seed, iters = int(runner.seed), int(runner.bootstrap_iters)
    manifest = base_manifest(sys.argv, {"seed": seed, "bootstrap_seed": seed})
    folder.write_manifest(manifest)
    mode = str(cfg.report.progress)
    err_console = make_console(stderr=True, mode=mode)
    progress = PhaseProgress(err_console, interactive(mode), float(cfg.report.every_s))
    allow = [str(a) for a in cfg.get("allow_targets", [])]
    start = time.monotonic()
    success = False
    try:
        _seed_everything(seed)
        source = build_source(cfg.data)
        tasks, group = build_tasks(cfg.task, allow)
        metrics = build_metrics(cfg.get("metrics"), tasks, allow)
        from mill.evaluator import check_metrics

        for task in tasks:
            check_metrics(task, metrics[task.name])
        err_console.print(f"[mill] loading model {cfg.model.get('name', '')}")
        model = instantiate(cfg.model, allow)
        manifest["model"] = model.identity()
        manifest["device"] = device_info()
        folder.write_manifest(manifest)
        per_task = evaluate(
            tasks,
            metrics,
            model,
            source,
            folder.write_sample,
            progress,
            bootstrap_iters=iters,
            seed=seed,
        )
        results: dict[str, Any] = {
            "tasks": {
                t.name: {
                    "metrics": per_task[t.name].metrics,
                    **(
                        {"subjects": {s: r.metrics for s, r in per_task[t.name].subjects.items()}}
                        if per_task[t.name].subjects
                        else {}
                    ),
                    "settings": t.describe(),
                    "data": t.origins,
                }
                for t in tasks
            },
            "groups": {},
            "model": model.identity(),
            "data_source": {
                "source": source.source,
                "dir": str(source.root) if source.root else None,
            },
            "seconds": round(time.monotonic() - start, 3),
        }
        for t in tasks:  # subject groups of multi-subject tasks (MMLU categories, overall)
            results["groups"].update(per_task[t.name].groups)
        if group is not None:
            shared = [
                m
                for m in metrics[tasks[0].name]
                if all(m.name in [x.name for x in metrics[t.name]] for t in tasks)
            ]
            results["groups"][group.name] = {
                "tasks": [t.name for t in tasks],
                "metrics": aggregate_group([per_task[t.name] for t in tasks], shared, iters, seed),
            }
        folder.close_samples(success=True)
        manifest["datasets"] = {t.name: t.origins for t in tasks}
        manifest["tasks"] = {t.name: t.describe() for t in tasks}
        title = f"{cfg.task.get('name', '')} | {cfg.model.get('name', '')} | data={source.source}"
        out_console = make_console(stderr=False, mode=mode, record=True)
        out_console.print(results_table(results, title))
        folder.write_text("report.txt", out_console.export_text())
        folder.write_results(results)
        report_after_run(folder.path)  # plots/ and report.html, from the files just written
        success = True
        return results
    except MillError as err:
        manifest["error"] = f"{type(err).__name__}: {err}"
        raise
    finally:
        if not success:
            folder.close_samples(success=False)
        manifest["status"] = "succeeded" if success else "failed"
        manifest["seconds"] = round(time.monotonic() - start, 3)
        folder.write_manifest(manifest)
