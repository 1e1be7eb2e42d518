"""Loading the judge of a run: after the candidate model is released, the judge's model
config is built on every rank behind its own response cache (keyed by the judge's
identity plus ``judge.revision``; the rubric's text is in every prompt, so the template
is part of every cached request's key)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from mill.instantiate import instantiate
from mill.judging import JudgeSettings, Judging, LoadedJudge, template_hashes
from mill.metrics.base import Metric
from mill.results import judge_label
from mill.runner.cache import CachedModel, open_shared_store
from mill.runner.dist import Dist, agree
from mill.schema import already_typed

log = logging.getLogger("mill")


def _judge_model(settings: JudgeSettings, allow: list[str]) -> Any:
    """The judge's model, built from the run config's typed ``judge`` group
    (:meth:`JudgeSettings.of_typed`): its settings are not checked again."""
    with already_typed():
        return instantiate(OmegaConf.create(settings.model), allow)


def build_judging(
    settings: JudgeSettings,
    metrics: dict[str, list[Metric]],
    allow: list[str],
    dist: Dist,
    run_cache: Callable[[], Path | None],
    before_load: Callable[[], None] = lambda: None,
    on_loaded: Callable[[], None] = lambda: None,
    console: Any = None,
) -> Judging:
    """The run's :class:`Judging`: its ``load`` calls ``before_load`` (the runner releases
    the candidate), builds the judge behind its response cache (``run_cache()``: the run's,
    for ``judge.cache=run``), then calls ``on_loaded``."""

    def load() -> LoadedJudge:
        before_load()
        name = settings.model.get("name", "")
        if console is not None:
            console.print(f"[mill] loading judge {name}")
        log.info("loading judge %s", name)
        model = agree(dist, lambda: _judge_model(settings, allow))
        identity = dict(model.identity())
        if settings.revision is not None:
            identity["judge_revision"] = settings.revision
        folder = settings.cache_folder(run_cache())
        if console is not None:
            console.print(f"[mill] judge: {judge_label(identity)}")
        loaded = LoadedJudge(model, identity)
        if folder is not None and not identity.get("in_memory"):
            folder.mkdir(parents=True, exist_ok=True)
            store = open_shared_store(dist, folder, identity)
            cached = CachedModel(model, store)
            loaded = LoadedJudge(
                cached,
                identity,
                cache={"dir": str(folder), "entries_before": store.count()},
                stats=cached.stats,
                close=store.close,
            )
        on_loaded()
        return loaded

    return Judging(settings, load, templates=template_hashes(metrics))
