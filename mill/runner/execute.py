"""The evaluation itself, on one rank: build, score this rank's shard, merge on rank 0.

Called in the Hydra process for a single-process run (or under a user's own launcher),
by :mod:`mill.runner.worker` in each worker the driver starts, and by :func:`mill.evaluate`
(with or without an experiment folder: the one execution path of every run). Only rank 0
writes to the experiment folder (samples, results, report, manifest); other ranks write
only their finished responses to the response cache.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mill.errors import storage_error
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import device_info, record_failure
from mill.model.base import LanguageModel
from mill.progress import NullProgress
from mill.record import SampleRecord
from mill.redact import redact
from mill.results import Manifest, Results
from mill.runner.dist import Dist, agree
from mill.runner.faults import fault
from mill.runner.phases import PhaseClock
from mill.runner.settings import RunnerSettings, refuse_device_map
from mill.sinks import RunRecord, Sink

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


def _load_model(
    cfg: DictConfig, dist: Dist, allow: list[str], console: Any, show: bool, mode: str
) -> LanguageModel:
    """The configured model, its loading steps (imports, tokenizer, weights) on one line
    of the terminal when ``show``."""
    from mill.instantiate import instantiate

    if not show:
        return instantiate(_model_node(cfg, dist), allow)
    from mill.progress import loading_steps
    from mill.report.console import interactive
    from mill.report.progress import LoadingLine

    with LoadingLine(console, interactive(mode), str(cfg.model.get("name", ""))) as line:
        with loading_steps(line.step):
            return instantiate(_model_node(cfg, dist), allow)


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


def _sweep_dir() -> str | None:
    """The sweep folder when this process runs a job of a Hydra multirun, else None."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    hydra_cfg = HydraConfig.get()
    if str(hydra_cfg.mode) != "RunMode.MULTIRUN":
        return None
    return str(Path(str(hydra_cfg.sweep.dir)).resolve())


def execution_settings(cfg: DictConfig, tasks: Sequence[Any]) -> Any:
    """The ``execution`` settings when a task runs programs, checked (settings, sandbox
    available, unsafe mode allowed) before any model loads; None when no task runs any."""
    from mill.execution import ExecutionSettings, check_sandbox

    if not any(t.EXECUTES for t in tasks):
        return None
    node = cfg.get("execution")
    settings = ExecutionSettings.from_config(
        OmegaConf.to_container(node, resolve=True) if node is not None else None  # type: ignore[arg-type]
    )
    check_sandbox(settings)
    return settings


def execution_record(settings: Any) -> dict[str, Any]:
    """What the manifest says about how the programs ran."""
    return {
        **settings.identity(),
        "unsafe": settings.sandbox == "none",
        "workers": settings.workers,
    }


def executor(settings: Any, cache_dir: Path | None) -> Any:
    """The evaluator's :data:`mill.evaluator.Execute`: ``run_programs`` under ``settings``
    with its verdicts cached in Mill's cache folder; None when no task runs programs."""
    if settings is None:
        return None
    from mill.execution import run_programs

    def execute(programs: Sequence[str], on_verdict: Any) -> Any:
        return run_programs(programs, settings, cache_dir=cache_dir, on_verdict=on_verdict)

    return execute


def sink_record(folder: Path | None, results: Results, resolved: dict[str, Any]) -> RunRecord:
    """What the sinks log about a run: its name, results, settings, folder and tags."""
    settings = redact({k: v for k, v in resolved.items() if k != "hydra"})
    task = (resolved.get("task") or {}).get("name") or "+".join(results.tasks)
    model = (resolved.get("model") or {}).get("name") or "?"
    tags = {"mill.task": str(task), "mill.model": str(model)}
    tags["mill.data"] = results.data_source.source
    if folder is not None:
        tags["mill.folder"] = str(folder)
    sweep = _sweep_dir()
    if sweep is not None:  # a job of `mill -m`: its runs share the sweep folder's tag
        tags["mill.sweep"] = sweep
    name = folder.name if folder is not None else f"{task}_{model}"
    return RunRecord(name, results, settings, folder, tags)


def execute(
    resolved: dict[str, Any],
    folder_path: Path | None,
    dist: Dist,
    model: LanguageModel | None = None,
    *,
    on_sample: Callable[[SampleRecord], None] | None = None,
    show: bool = True,
    settings: RunnerSettings | None = None,
) -> Results | None:
    """Run the experiment described by ``resolved`` on this rank.

    ``settings``: the runner settings typed once from ``resolved`` (by
    :func:`mill.runner.settings.check_settings` or the worker), else typed here.

    ``model``: an already-built model (``mill.evaluate(model=...)``) instead of
    ``resolved["model"]``; its identity must say ``in_memory`` when it has no files, and
    the response cache is then off (no identity to key scores by).
    ``folder_path`` None (``mill.evaluate`` without ``output_dir``): the same evaluation,
    the same log lines and warnings, but nothing written anywhere (no folder, no response
    or verdict cache, no report); each doc's record goes to ``on_sample``. ``show`` False:
    nothing on the terminal (no progress, no loading line).
    Rank 0 returns the results (also written to ``results.json``); other ranks return None.
    Raises MillError on bad input (the same error on every rank), after rank 0 marked the
    manifest failed.
    """
    from mill.evaluator import evaluate, require_judge, to_results
    from mill.report.background import ReportHelper
    from mill.report.console import interactive, make_console
    from mill.report.progress import PhaseProgress
    from mill.report.text import print_run_report, skipped_warning
    from mill.runner.build import build_run
    from mill.runner.cache import CachedModel, corrupt_cache_error, open_store
    from mill.runner.shard import ShardedDispatch
    from mill.sinks import build_sinks, send

    cfg = OmegaConf.create(resolved)
    settings = settings or RunnerSettings.parse(resolved.get("runner"))
    folder = ExperimentFolder(folder_path) if folder_path is not None else None
    main = dist.is_main
    writes = folder if main else None  # the folder rank 0 writes (None without one)
    manifest = writes.read_manifest() if writes is not None else Manifest()
    mode = str(cfg.report.progress)
    err_console = make_console(stderr=True, mode=mode)
    show = main and show  # ranks other than 0 never render
    progress: Any = (
        PhaseProgress(err_console, interactive(mode), float(cfg.report.every_s))
        if show
        else NullProgress()
    )
    allow = [str(a) for a in cfg.get("allow_targets", [])]
    seed, iters = settings.seed, settings.bootstrap_iters
    start = time.monotonic()
    clock = PhaseClock()
    success = False
    status = "failed"
    store = None
    cache_dir: Path | None = None
    # where this run's caches live (responses, verdicts): none without a folder
    cache_root = settings.cache_dir(folder.path) if folder is not None else None
    sinks: list[Sink] = []
    results: Results | None = None
    judging: Any = None
    # rank 0 draws the plots in a child that imports matplotlib while the model loads
    drawer = ReportHelper() if writes is not None else None
    try:
        _seed_everything(seed)

        source, tasks, group, metrics = agree(dist, lambda: build_run(cfg, allow))
        # code tasks: the sandbox is checked before the model loads (every rank)
        execution = agree(dist, lambda: execution_settings(cfg, tasks))
        # every rank checks the sink settings (a bad one stops all); rank 0 logs
        sinks = agree(dist, lambda: build_sinks(cfg.get("sink"), allow))
        sinks = sinks if main else []
        clock.mark("data")
        if cfg.get("judge") is not None:
            from mill.judging import JudgeSettings
            from mill.runner.judge import build_judging

            built_here = model is None  # a caller's in-memory model is never released

            def release_candidate() -> None:  # the candidate's weights go before the judge's
                if built_here and model is not None:
                    getattr(model, "inner", model).release()
                    log.info("released the candidate model before loading the judge")

            def judge_loaded() -> None:
                clock.mark("judge model")
                phase["name"] = "judging"

            judging = build_judging(
                JudgeSettings.parse(cfg.judge),
                metrics,
                allow,
                dist,
                lambda: cache_dir,
                release_candidate,
                judge_loaded,
                err_console if show else None,
            )
        require_judge(metrics, judging)

        log.info(
            "tasks: %s; data: %s",
            ", ".join(f"{t.name} ({t.describe()['num_fewshot']}-shot)" for t in tasks),
            source.source,
        )
        log.info("loading model %s", cfg.model.get("name", ""))
        if model is None:
            model = agree(dist, lambda: _load_model(cfg, dist, allow, err_console, show, mode))
        elif show:
            err_console.print(f"[mill] model {cfg.model.get('name', '')} (in memory)")
        fault("model_loaded")
        identity = model.identity()
        log.info("model loaded: %s", identity.get("class") or type(model).__name__)
        cache_dir = None if identity.get("in_memory") else cache_root
        if cache_dir is not None:
            for turn in (True, False):  # rank 0 creates the database, then the others
                opened = agree(
                    dist, lambda t=turn: open_store(cache_dir, identity) if main is t else None
                )
                store = opened or store
            model = CachedModel(model, store)
        if writes is not None:
            manifest.model = identity
            manifest.device = device_info()
            manifest.world_size = dist.world_size
            if store is not None:
                manifest.cache = {"dir": str(cache_dir), "entries_before": store.count()}
            writes.write_manifest(manifest)
        dispatcher = ShardedDispatch(dist)
        clock.mark("model")
        phase = {"name": "scoring"}

        def dispatch(model: Any, requests: Any, on_response: Any) -> None:
            log.info("%d requests built; scoring this rank's share", len(requests))
            clock.mark("requests")

            def delivered(request: Any, response: Any) -> None:
                on_response(request, response)
                fault("response")

            dispatcher(model, requests, delivered)
            clock.mark(phase["name"])

        if writes is not None and execution is not None:
            manifest.execution = execution_record(execution)
            writes.write_manifest(manifest)
        if writes is not None:
            write_sample = writes.write_sample
        else:  # no folder (mill.evaluate's on_sample), or a rank other than 0
            write_sample = (on_sample if main else None) or _no_sample
        per_task = evaluate(
            tasks,
            metrics,
            model,
            source,
            write_sample,
            progress,
            bootstrap_iters=iters,
            seed=seed,
            dispatch_fn=dispatch,
            judging=judging,
            execute=executor(execution, cache_root),
        )
        if execution is not None:
            clock.mark("execution")
        if judging is not None and main:
            manifest.judge = judging.manifest()
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
        results = to_results(
            tasks,
            per_task,
            metrics,
            group,
            model=identity,
            source=source,
            truncation=truncation,
            seconds=time.monotonic() - start,
            bootstrap_iters=iters,
            seed=seed,
        )
        usage = getattr(model, "usage_summary", None)  # API backends: what the server did
        if callable(usage):
            results.usage = usage()
        if manifest.judge is not None:
            results.judge = manifest.judge
        if folder is None:  # mill.evaluate without output_dir: nothing to write
            clock.mark("metrics")
            success = True
            return results
        folder.close_samples(success=True)
        results.samples_sha256 = folder.samples_sha256()
        fault("samples_closed")
        if judging is not None:  # FastChat's model_judgment files, from the samples
            from mill.judging import write_fastchat_judgments

            write_fastchat_judgments(
                folder,
                tasks,
                metrics,
                str(cfg.model.get("name", "model")),
                str(cfg.judge.get("name", "judge")),
            )
        clock.mark("metrics")
        manifest.datasets = {t.name: t.origins for t in tasks}
        manifest.tasks = {t.name: t.describe() for t in tasks}
        manifest.truncation = truncation
        manifest.ranks = per_rank
        if store is not None and manifest.cache is not None:
            counts = {k: sum(r.get(k, 0) for r in per_rank) for k in ("hits", "computed", "shared")}
            manifest.cache.update(counts)
            log.info(
                "responses: %d from the cache, %d computed, %d shared",
                *counts.values(),
            )
        # the commit order: samples, results.json, report.txt, plots/ + report.html, and
        # last the manifest's "succeeded". Until that last write the folder is unfinished
        # (report and compare refuse it) and runner.resume=true completes it from the cache.
        manifest.results_sha256 = folder.write_results(results)
        folder.write_manifest(manifest)  # still running; the report step reads the checksum
        fault("results_written")
        data = results.data_label
        title = f"{cfg.task.get('name', '')} | {cfg.model.get('name', '')} | data={data}"
        out_console = make_console(stderr=False, mode=mode, record=True)
        unsafe = bool((manifest.execution or {}).get("unsafe"))
        print_run_report(out_console, results, title, unsafe)
        folder.write_text("report.txt", out_console.export_text())
        fault("report_text")
        assert drawer is not None
        drawer.render(folder.path)  # plots/ and report.html, from the files just written
        fault("reports_written")
        log.info("wrote %s", folder.results_path)
        success = True
        return results
    except BaseException as caught:
        # a corrupt cache file, a full disk or a read-only folder: one line
        err = corrupt_cache_error(caught, cache_dir) or storage_error(caught, folder_path) or caught
        if main:
            record_failure(manifest, err)
            status = manifest.status
        if err is caught:
            raise
        raise err from caught
    finally:
        if drawer is not None:
            drawer.close()
        if store is not None:
            store.close()
        if judging is not None:
            judging.close()
        if main:
            if not success and writes is not None:
                with contextlib.suppress(OSError):  # a full disk fails the close's flush too
                    writes.close_samples(success=False)
            manifest.status = "succeeded" if success else status
            if not success:  # a resumed run writes results.json again
                manifest.results_sha256 = None
            manifest.seconds = round(time.monotonic() - start, 3)
            clock.mark("report" if success else "until failure")
            manifest.phases = clock.seconds()
            try:
                if writes is not None:
                    writes.write_manifest(manifest)
            except OSError:
                if success:  # else the error being raised says more than this one
                    raise
            log.info(clock.line())
            log.info(clock.cpu_line())
            memory = clock.memory_line()
            if memory is not None:
                log.info(memory)
            log.info("run %s (%.1f s)", manifest.status, manifest.seconds)
            if success and sinks and results is not None:  # the folder (if any) is complete
                send(sinks, sink_record(folder_path, results, resolved))
