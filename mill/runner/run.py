"""One run on one rank as phases, each a function with one job, the
:class:`~mill.runner.context.RunContext` flowing one way through them:

``build`` (data, tasks, metrics; the sandbox of code tasks, the sinks, the judge: all
checked on every rank before any model loads) -> ``load`` (the candidate model, behind the
response cache) -> ``score`` (every request, sharded over the ranks; programs run; the
judge's calls) -> ``gather`` (what each rank did) -> ``collect`` (the typed results, rank
0) -> ``write`` (samples, results.json, the reports, rank 0). :func:`mill.runner.execute.
execute` calls them in that order.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mill.data.load import DataSource
from mill.evaluator import Execute, TaskResult, evaluate_tasks, require_judge, to_results
from mill.execution import ExecutionSettings, Verdict
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import device_info
from mill.judging import JudgeSettings, Judging
from mill.metrics.base import Metric
from mill.model.base import LanguageModel
from mill.record import SampleRecord
from mill.results import Results
from mill.runner.build import build_run
from mill.runner.cache import CachedModel, open_shared_store
from mill.runner.context import RunContext
from mill.runner.dist import Dist, agree
from mill.runner.faults import fault
from mill.runner.settings import refuse_device_map
from mill.runner.shard import ShardedDispatch
from mill.schema import already_typed
from mill.sinks import Sink, build_sinks
from mill.task.base import Task, TaskGroup
from mill.types import OnResponse, ReasoningRule, Request, Response

log = logging.getLogger("mill")


@dataclass
class Plan:
    """What ``build`` makes before any model loads."""

    source: DataSource
    tasks: list[Task]
    group: TaskGroup | None
    metrics: dict[str, list[Metric]]
    execution: ExecutionSettings | None
    """The sandbox's settings when a task runs programs, else None."""
    reasoning: ReasoningRule = field(default_factory=ReasoningRule)
    """What of a generation the metrics read (``reasoning.tags``)."""


@dataclass
class Loaded:
    """The candidate as ``load`` leaves it: behind the response cache when there is one."""

    model: LanguageModel
    identity: dict[str, Any]
    dispatcher: ShardedDispatch


# --- build -------------------------------------------------------------------------


def build(run: RunContext) -> Plan:
    """Everything but the model, the same on every rank (a bad setting anywhere stops
    all): data, tasks and metrics; the sandbox of code tasks; the sinks (rank 0 keeps
    them); the judge (built, not loaded)."""
    _seed_everything(run.settings.seed)
    cfg, dist = run.cfg, run.dist
    reasoning = ReasoningRule.parse((run.config.group("reasoning") or {}).get("tags"))
    source = run.config.data
    tasks, group, metrics = agree(
        dist, lambda: build_run(cfg, run.allow, source, run.settings.seed)
    )
    execution = agree(dist, lambda: execution_settings(run.config.group("execution"), tasks))
    sinks = agree(dist, lambda: _sinks(run))
    run.sinks = sinks if run.main else []
    run.clock.mark("data")
    if cfg.get("judge") is not None:
        run.judging = build_judge(run, metrics)
    from mill.judging import SAVED_ANSWERS

    model = cfg.get("model") or {}
    rejudged = model.get("run") if model.get("_target_") == SAVED_ANSWERS else None
    require_judge(metrics, run.judging, None if rejudged is None else str(rejudged))
    return Plan(source, tasks, group, metrics, execution, reasoning)


def _sinks(run: RunContext) -> list[Sink]:
    """The run's sinks, built from its typed ``sink`` group (not checked again)."""
    with already_typed():
        return build_sinks(run.cfg.get("sink"), run.allow)


def _seed_everything(seed: int) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(seed)


def execution_settings(
    node: dict[str, Any] | None, tasks: Sequence[Task]
) -> ExecutionSettings | None:
    """The ``execution`` settings (the run config's typed group) when a task runs programs,
    checked (sandbox available, unsafe mode allowed) before any model loads; None when no
    task runs any."""
    from mill.execution import check_sandbox

    if not any(t.EXECUTES for t in tasks):
        return None
    with already_typed():  # the run config's typed group
        settings = ExecutionSettings.from_config(node)
    check_sandbox(settings)
    return settings


def build_judge(run: RunContext, metrics: dict[str, list[Metric]]) -> Judging:
    """The run's judge: its settings typed, its loading deferred to the judging phase
    (the candidate released first; the judge behind its own response cache)."""
    from mill.runner.judge import build_judging

    def loaded() -> None:
        run.clock.mark("judge model")
        run.scoring = "judging"

    return build_judging(
        JudgeSettings.of_typed(run.config.group("judge")),
        metrics,
        run.allow,
        run.dist,
        lambda: run.cache_dir,
        run.release_candidate,
        loaded,
        run.err_console if run.show else None,
    )


# --- load --------------------------------------------------------------------------


def load(run: RunContext, plan: Plan, model: LanguageModel | None) -> Loaded:
    """The candidate on this rank (``model``: a caller's in-memory model instead of the
    config's), behind the response cache when the run has one; the manifest records it."""
    name = run.cfg.model.get("name", "")
    log.info(
        "tasks: %s; data: %s",
        ", ".join(f"{t.name} ({t.describe()['num_fewshot']}-shot)" for t in plan.tasks),
        plan.source.source,
    )
    log.info("loading model %s", name)
    if model is None:
        model = run.candidate = agree(run.dist, lambda: _load_model(run))
    elif run.show:
        run.err_console.print(f"[mill] model {name} (in memory)")
    fault("model_loaded")
    identity = model.identity()
    log.info("model loaded: %s", identity.get("class") or type(model).__name__)
    run.cache_dir = None if identity.get("in_memory") else run.cache_root
    if run.cache_dir is not None:
        run.store = open_shared_store(run.dist, run.cache_dir, identity, run.settings.sample_tokens)
        model = CachedModel(model, run.store)
    if run.writes is not None:
        run.manifest.model = identity
        run.manifest.device = device_info()
        run.manifest.world_size = run.dist.world_size
        if run.store is not None:
            entries = run.store.count()
            run.manifest.cache = {"dir": str(run.cache_dir), "entries_before": entries}
        run.write_manifest()
    dispatcher = ShardedDispatch(run.dist)
    run.clock.mark("model")
    return Loaded(model, identity, dispatcher)


def _model_node(cfg: DictConfig, dist: Dist) -> DictConfig:
    """The model config for this rank: under data parallelism each rank takes its device."""
    node: DictConfig = cfg.model.copy()
    if dist.world_size == 1:
        return node
    refuse_device_map(node, dist.world_size)
    if "device" in node and str(node.get("device") or "auto") == "auto" and dist.device:
        node.device = dist.device
    return node


def _load_model(run: RunContext) -> LanguageModel:
    """The configured model, its loading steps (imports, tokenizer, weights) on one line
    of the terminal when the run shows."""
    from mill.instantiate import instantiate

    model: LanguageModel
    if not run.show:
        with already_typed():  # the run config's typed model group: not checked again
            model = instantiate(_model_node(run.cfg, run.dist), run.allow)
        return model
    from mill.progress import loading_steps
    from mill.report.console import interactive
    from mill.report.progress import LoadingLine

    name = str(run.cfg.model.get("name", ""))
    with LoadingLine(run.err_console, interactive(run.mode), name) as line:
        with loading_steps(line.step), already_typed():
            model = instantiate(_model_node(run.cfg, run.dist), run.allow)
    return model


# --- score -------------------------------------------------------------------------


class TimedDispatch:
    """The evaluator's dispatch on this rank: this rank's share of the requests
    (:class:`~mill.runner.shard.ShardedDispatch`), each round's time on the phase clock."""

    def __init__(self, run: RunContext, dispatcher: ShardedDispatch) -> None:
        self.run = run
        self.dispatcher = dispatcher

    def __call__(
        self, model: LanguageModel, requests: Sequence[Request], on_response: OnResponse
    ) -> None:
        log.info("%d requests built; scoring this rank's share", len(requests))
        self.run.clock.mark("requests")

        def delivered(request: Request, response: Response) -> None:
            on_response(request, response)
            fault("response")

        self.dispatcher(model, requests, delivered)
        self.run.clock.mark(self.run.scoring)


def score(run: RunContext, plan: Plan, loaded: Loaded) -> dict[str, TaskResult]:
    """Every request scored (rounds of turns included), the programs of code tasks run in
    the sandbox, the judged docs judged; each doc's sample recorded as it completes."""
    if run.writes is not None and plan.execution is not None:
        run.manifest.execution = execution_record(plan.execution)
        run.write_manifest()
    per_task = evaluate_tasks(
        plan.tasks,
        plan.metrics,
        loaded.model,
        plan.source,
        _sample_writer(run),
        run.progress,
        bootstrap_iters=run.settings.bootstrap_iters,
        seed=run.settings.seed,
        dispatch_fn=TimedDispatch(run, loaded.dispatcher),
        judging=run.judging,
        execute=executor(plan.execution, run.cache_root),
        reasoning=plan.reasoning,
    )
    if plan.execution is not None:
        run.clock.mark("execution")
    if run.judging is not None and run.main:
        run.manifest.judge = run.judging.manifest()
    log.info("scored %d requests on rank %d", loaded.dispatcher.local_requests, run.dist.rank)
    return per_task


def _no_sample(record: SampleRecord) -> None:
    return None


def _sample_writer(run: RunContext) -> Callable[[SampleRecord], None]:
    """Where each doc's record goes: the folder's samples (rank 0), else ``on_sample``
    (``mill.evaluate`` without a folder), else nowhere."""
    if run.writes is not None:
        return run.writes.write_sample
    return (run.on_sample if run.main else None) or _no_sample


def execution_record(settings: ExecutionSettings) -> dict[str, Any]:
    """What the manifest says about how the programs ran."""
    return {
        **settings.identity(),
        "unsafe": settings.sandbox == "none",
        "workers": settings.workers,
    }


def executor(settings: ExecutionSettings | None, cache_dir: Path | None) -> Execute | None:
    """The evaluator's :data:`mill.evaluator.Execute`: ``run_programs`` under ``settings``
    with its verdicts cached in Mill's cache folder; None when no task runs programs."""
    if settings is None:
        return None
    from mill.execution import run_programs

    def execute(
        programs: Sequence[str], on_verdict: Callable[[int, Verdict], None]
    ) -> list[Verdict]:
        return run_programs(programs, settings, cache_dir=cache_dir, on_verdict=on_verdict)

    return execute


# --- gather, collect ---------------------------------------------------------------


def gather(run: RunContext, loaded: Loaded) -> list[dict[str, Any]]:
    """What each rank did (its requests, its cache's hits), on every rank."""
    local = {"requests": loaded.dispatcher.local_requests}
    if isinstance(loaded.model, CachedModel):
        local.update(loaded.model.stats())
    return run.dist.all_gather(local)


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


def collect(
    run: RunContext, plan: Plan, loaded: Loaded, per_task: dict[str, TaskResult]
) -> Results:
    """The run's typed results (rank 0), after its warnings: contexts cut to the model's
    window, rows skipped."""
    from mill.report.text import skipped_warning

    truncation = loaded.dispatcher.truncation
    warning = truncation_warning(
        truncation.summary(), truncation.total, loaded.identity.get("max_length")
    )
    if warning:
        log.warning(warning)
    skipped = {t.name: t.skipped for t in plan.tasks if t.skipped}
    if skipped:
        log.warning(skipped_warning(skipped))
    results = to_results(
        plan.tasks,
        per_task,
        plan.metrics,
        plan.group,
        model=loaded.identity,
        source=plan.source,
        truncation=truncation.summary(),
        seconds=time.monotonic() - run.start,
        bootstrap_iters=run.settings.bootstrap_iters,
        seed=run.settings.seed,
        reasoning=plan.reasoning,
    )
    usage = getattr(loaded.model, "usage_summary", None)  # API backends: what the server did
    if callable(usage):
        results.usage = usage()
    if run.manifest.judge is not None:
        results.judge = run.manifest.judge
    return results


# --- write -------------------------------------------------------------------------


def write(
    run: RunContext,
    folder: ExperimentFolder,
    plan: Plan,
    loaded: Loaded,
    results: Results,
    per_rank: list[dict[str, Any]],
) -> None:
    """The folder completed in its commit order: samples, FastChat's judgment files,
    results.json, report.txt, plots/ + report.html; the manifest's "succeeded" comes last
    (:meth:`RunContext.finish`). Until then the folder is unfinished (report and compare
    refuse it) and ``runner.resume=true`` completes it from the cache."""
    from mill.report.console import make_console
    from mill.report.text import print_run_report

    cfg, manifest = run.cfg, run.manifest
    folder.close_samples(success=True)
    results.samples_sha256 = folder.samples_sha256()
    fault("samples_closed")
    if run.judging is not None:  # FastChat's model_judgment files, from the samples
        from mill.judging import fastchat_files

        model, judge = str(cfg.model.get("name", "model")), str(cfg.judge.get("name", "judge"))
        files = fastchat_files(folder.path / "samples", plan.metrics, model, judge)
        if files:
            folder.inside(folder.path / "model_judgment").mkdir(exist_ok=True)
        for name, text in files.items():
            folder.write_text(name, text)
    run.clock.mark("metrics")
    manifest.datasets = {t.name: t.origins for t in plan.tasks}
    manifest.tasks = {t.name: t.describe() for t in plan.tasks}
    manifest.truncation = loaded.dispatcher.truncation.summary()
    manifest.ranks = per_rank
    if run.store is not None and manifest.cache is not None:
        counts = {k: sum(r.get(k, 0) for r in per_rank) for k in ("hits", "computed", "shared")}
        manifest.cache.update(counts)
        log.info("responses: %d from the cache, %d computed, %d shared", *counts.values())
    manifest.results_sha256 = folder.write_results(results)
    folder.write_manifest(manifest)  # still running; the report step reads the checksum
    fault("results_written")
    title = f"{cfg.task.get('name', '')} | {cfg.model.get('name', '')} | data={results.data_label}"
    out_console = make_console(stderr=False, mode=run.mode, record=True)
    unsafe = bool((manifest.execution or {}).get("unsafe"))
    print_run_report(out_console, results, title, unsafe)
    folder.write_text("report.txt", out_console.export_text())
    fault("report_text")
    assert run.drawer is not None  # rank 0 with a folder has its report helper
    run.drawer.render(folder.path)  # plots/ and report.html, from the files just written
    fault("reports_written")
    log.info("wrote %s", folder.results_path)
