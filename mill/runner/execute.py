"""The evaluation itself, on one rank: build, score this rank's shard, merge on rank 0.

Called in the Hydra process for a single-process run (or under a user's own launcher),
and by :mod:`mill.runner.worker` in each worker the driver starts. Only rank 0 writes to
the experiment folder (samples, results, report, manifest); other ranks write only their
finished responses to the response cache.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mill.errors import ConfigError
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import device_info, record_failure
from mill.progress import NullProgress
from mill.record import SampleRecord
from mill.runner.dist import Dist, agree
from mill.runner.faults import fault
from mill.runner.settings import RunnerSettings, refuse_device_map

log = logging.getLogger("mill")


def _seed_everything(seed: int) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(seed)


def _no_sample(record: SampleRecord) -> None:
    return None


def _model_node(cfg: DictConfig, dist: Dist) -> DictConfig:
    """The model config for this rank: under data parallelism each rank takes its device."""
    node = cfg.model.copy()
    if dist.world_size == 1:
        return node
    refuse_device_map(node, dist.world_size)
    if "device" in node and str(node.get("device") or "auto") == "auto" and dist.device:
        node.device = dist.device
    return node


def _open_store(cache_dir: Path, identity: dict[str, Any]) -> Any:
    """The response cache, or a ConfigError naming a cache file that is not a database."""
    from mill.runner.cache import ResponseStore

    try:
        return ResponseStore(cache_dir, identity)
    except Exception as err:
        corrupt = _corrupt_cache(err, cache_dir)
        if corrupt is None:
            raise
        raise corrupt from err


def _corrupt_cache(err: BaseException, cache_dir: Path | None) -> ConfigError | None:
    """A one-line error naming the cache files SQLite cannot read, if ``err`` is SQLite's
    "not a database"/"malformed" (not "locked" or an I/O error)."""
    import sqlite3

    if cache_dir is None or not isinstance(err, sqlite3.DatabaseError):
        return None
    if isinstance(err, sqlite3.OperationalError):
        return None
    bad = []
    for path in sorted(cache_dir.glob("responses-*.sqlite")):
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError:
            bad.append(str(path))
    return ConfigError(
        f"the response cache {' and '.join(bad) or cache_dir} is corrupt ({err}); delete "
        "the file (it only holds cached responses) or run with runner.cache=false"
    )


def skipped_warning(skipped: dict[str, list[dict[str, Any]]]) -> str:
    """The one line (console, log and report.txt) about bad rows skipped."""
    per_task = ", ".join(f"{task}: {len(rows)}" for task, rows in sorted(skipped.items()))
    first = next(iter(skipped.values()))[0]["error"].split(" (or skip such rows")[0]
    total = sum(len(rows) for rows in skipped.values())
    return (
        f"skipped {total} bad row(s) ({per_task}; data.skip_bad_rows=true), listed under "
        f"skipped_rows in results.json; the first: {first}"
    )


def truncation_warning(truncation: dict[str, Any], total: int, max_length: Any) -> str | None:
    """The one warning per run about contexts cut to the model's context window."""
    if not truncation.get("requests"):
        return None
    per_task = ", ".join(f"{k}: {v}" for k, v in sorted(truncation["by_task"].items()))
    return (
        f"{truncation['requests']} of {total} requests ({per_task}) were longer than the "
        f"model's context window (max_length={max_length}); {truncation['tokens']} tokens "
        "were cut from the left. Their truncated_tokens_count is in samples/*.jsonl; use a "
        "model with a longer context or fewer few-shot examples to avoid it"
    )


def execute(
    resolved: dict[str, Any],
    folder_path: Path,
    dist: Dist,
) -> dict[str, Any] | None:
    """Run the experiment described by ``resolved`` on this rank.

    Rank 0 returns the results (also written to ``results.json``); other ranks return None.
    Raises MillError on bad input (the same error on every rank), after rank 0 marked the
    manifest failed.
    """
    from mill.evaluator import aggregate_group, check_metrics, evaluate
    from mill.instantiate import instantiate
    from mill.report.console import interactive, make_console
    from mill.report.progress import PhaseProgress
    from mill.report.rebuild import report_after_run
    from mill.report.table import results_table
    from mill.runner.build import build_metrics, build_source, build_tasks
    from mill.runner.cache import CachedModel
    from mill.runner.shard import ShardedDispatch

    cfg = OmegaConf.create(resolved)
    settings = RunnerSettings.parse(resolved.get("runner"))
    folder = ExperimentFolder(folder_path)
    main = dist.is_main
    manifest: dict[str, Any] = folder.read_manifest() if main else {}
    mode = str(cfg.report.progress)
    err_console = make_console(stderr=True, mode=mode)
    progress: Any = (
        PhaseProgress(err_console, interactive(mode), float(cfg.report.every_s))
        if main
        else NullProgress()  # ranks other than 0 never render
    )
    allow = [str(a) for a in cfg.get("allow_targets", [])]
    seed, iters = settings.seed, settings.bootstrap_iters
    start = time.monotonic()
    success = False
    status = "failed"
    store = None
    cache_dir: Path | None = None
    try:
        _seed_everything(seed)

        def build() -> Any:
            source = build_source(cfg.data)
            tasks, group = build_tasks(cfg.task, allow)
            metrics = build_metrics(cfg.get("metrics"), tasks, allow)
            for task in tasks:
                check_metrics(task, metrics[task.name])
            for task in tasks:  # every row checked (and docs built) before the model loads
                task.prepare(source)
            return source, tasks, group, metrics

        source, tasks, group, metrics = agree(dist, build)
        log.info(
            "tasks: %s; data: %s",
            ", ".join(f"{t.name} ({t.describe()['num_fewshot']}-shot)" for t in tasks),
            source.source,
        )
        if main:
            err_console.print(f"[mill] loading model {cfg.model.get('name', '')}")
        log.info("loading model %s", cfg.model.get("name", ""))
        model = agree(dist, lambda: instantiate(_model_node(cfg, dist), allow))
        fault("model_loaded")
        identity = model.identity()
        log.info("model loaded: %s", identity.get("class") or type(model).__name__)
        cache_dir = settings.cache_dir(folder.path)
        if cache_dir is not None:
            for turn in (True, False):  # rank 0 creates the database, then the others
                opened = agree(
                    dist, lambda t=turn: _open_store(cache_dir, identity) if main is t else None
                )
                store = opened or store
            model = CachedModel(model, store)
        if main:
            manifest["model"] = identity
            manifest["device"] = device_info()
            manifest["world_size"] = dist.world_size
            if store is not None:
                manifest["cache"] = {"dir": str(cache_dir), "entries_before": store.count()}
            folder.write_manifest(manifest)
        dispatcher = ShardedDispatch(dist)

        def dispatch(model: Any, requests: Any, on_response: Any) -> None:
            log.info("%d requests built; scoring this rank's share", len(requests))

            def delivered(request: Any, response: Any) -> None:
                on_response(request, response)
                fault("response")

            dispatcher(model, requests, delivered)

        per_task = evaluate(
            tasks,
            metrics,
            model,
            source,
            folder.write_sample if main else _no_sample,
            progress,
            bootstrap_iters=iters,
            seed=seed,
            dispatch_fn=dispatch,
        )
        log.info("scored %d requests on rank %d", dispatcher.local_requests, dist.rank)
        local = {"requests": dispatcher.local_requests}
        if isinstance(model, CachedModel):
            local.update(model.stats())
        per_rank = dist.all_gather(local)
        if not main:
            success = True
            return None
        truncation = dispatcher.truncation.summary()
        warning = truncation_warning(
            truncation, dispatcher.truncation.total, identity.get("max_length")
        )
        if warning:
            log.warning(warning)
        skipped = {t.name: t.skipped for t in tasks if t.skipped}
        if skipped:
            log.warning(skipped_warning(skipped))
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
                    **(
                        {"skipped_rows": {"count": len(t.skipped), "rows": t.skipped}}
                        if source.skip_bad_rows
                        else {}
                    ),
                }
                for t in tasks
            },
            "groups": {},
            "model": identity,
            "data_source": {
                "source": source.source,
                "dir": str(source.root) if source.root else None,
            },
            "truncation": truncation,
            "seconds": round(time.monotonic() - start, 3),
        }
        for t in tasks:  # subject groups of multi-subject tasks (MMLU categories, overall)
            results["groups"].update(per_task[t.name].groups)
        if group is not None and hasattr(group, "aggregate_results"):  # lm-eval groups
            results["groups"].update(group.aggregate_results(per_task, iters, seed))
        elif group is not None:
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
        fault("samples_closed")
        manifest["datasets"] = {t.name: t.origins for t in tasks}
        manifest["tasks"] = {t.name: t.describe() for t in tasks}
        manifest["truncation"] = truncation
        manifest["ranks"] = per_rank
        if store is not None:
            manifest["cache"].update(
                {k: sum(r.get(k, 0) for r in per_rank) for k in ("hits", "computed", "shared")}
            )
            log.info(
                "responses: %d from the cache, %d computed, %d shared",
                *(manifest["cache"][k] for k in ("hits", "computed", "shared")),
            )
        # the commit order: samples, results.json, report.txt, plots/ + report.html, and
        # last the manifest's "succeeded". Until that last write the folder is unfinished
        # (report and compare refuse it) and runner.resume=true completes it from the cache.
        folder.write_results(results)
        fault("results_written")
        title = f"{cfg.task.get('name', '')} | {cfg.model.get('name', '')} | data={source.source}"
        out_console = make_console(stderr=False, mode=mode, record=True)
        out_console.print(results_table(results, title))
        if skipped:
            out_console.print(skipped_warning(skipped), markup=False, highlight=False)
        folder.write_text("report.txt", out_console.export_text())
        fault("report_text")
        report_after_run(folder.path)  # plots/ and report.html, from the files just written
        fault("reports_written")
        log.info("wrote %s", folder.results_path)
        success = True
        return results
    except BaseException as err:
        corrupt = _corrupt_cache(err, cache_dir)
        if main:
            record_failure(manifest, corrupt or err)
            status = manifest["status"]
        if corrupt is not None:
            raise corrupt from err
        raise
    finally:
        if store is not None:
            store.close()
        if main:
            if not success:
                folder.close_samples(success=False)
            manifest["status"] = "succeeded" if success else status
            manifest["seconds"] = round(time.monotonic() - start, 3)
            folder.write_manifest(manifest)
            log.info("run %s (%.1f s)", manifest["status"], manifest["seconds"])
