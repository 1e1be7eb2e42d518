"""The judge of a run: its config (``judge=<model config>``), loading it after the
candidate model is released, its response cache, and what the manifest records of it.

A judge config is a model config (``conf/judge/<name>.yaml`` reuses ``conf/model/<name>``
through the defaults list) plus the judge's own settings (``conf/judge_base.yaml``):
``max_invalid``, ``num_concurrent`` (passed to a backend that takes it: the served
backends' asyncio client), ``revision`` and ``generation``. Judge calls go through the
response cache like the candidate's, keyed by the judge's identity (plus
``judge.revision``); the rubric's text is in every prompt, so the template is part of
every cached request's key.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mill.errors import ConfigError
from mill.evaluator import Judging, is_judged
from mill.instantiate import instantiate, resolve_target
from mill.metrics.base import Metric
from mill.results import judge_label
from mill.runner.dist import Dist, agree
from mill.schema import typed
from mill.types import GenerationArgs

log = logging.getLogger("mill")

JUDGE_SETTINGS = ("max_invalid", "num_concurrent", "generation", "revision", "cache")
"""Keys of a judge config that are the judge's, not its model's."""


def judge_settings(node: DictConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the model config to instantiate, the judge settings) of a ``judge`` node;
    ConfigError for a bad setting."""
    body = OmegaConf.to_container(node, resolve=True)
    assert isinstance(body, dict)
    # typed by their declarations (mill.schema.SETTINGS: judge.max_invalid a share in
    # [0, 1], judge.num_concurrent >= 1, judge.generation.*), as composition checked them
    settings = typed("judge", {k: body.pop(k) for k in JUDGE_SETTINGS if k in body})
    concurrent = settings.get("num_concurrent", 1)
    gen = dict(settings.get("generation") or {})
    unknown = set(gen) - set(GenerationArgs.__dataclass_fields__)
    if unknown:
        raise ConfigError(
            f"judge.generation has unknown keys {sorted(unknown)}; use max_gen_toks, "
            "do_sample, temperature, seed"
        )
    judge_cache_setting(settings.get("cache", "shared"))
    gen.setdefault("max_gen_toks", 2048)
    settings["generation"] = GenerationArgs(**gen)
    accepts = _parameters(str(body.get("_target_") or ""))
    if "num_concurrent" in accepts:
        body["num_concurrent"] = concurrent
    if "revision" in accepts:  # a hub revision (HF) or a served model's label
        body["revision"] = settings.get("revision")
    return body, settings


def judge_cache_setting(value: Any) -> str | None:
    """``judge.cache``: ``shared`` ($MILL_CACHE/judge), ``run`` (the run's response cache),
    false (none) or a folder; ConfigError for anything else."""
    if value is False or value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(
            f"judge.cache={value!r}: use shared ($MILL_CACHE/judge), run (the run's response "
            "cache), false, or a folder"
        )
    return value


def judge_cache_folder(value: Any, run_cache: Callable[[], Path | None]) -> Path | None:
    """Where the judge's calls are cached: by default ``$MILL_CACHE/judge``, so judging the
    same answers again with the same judge identity makes no call, whichever run asks."""
    from mill.files import cache_root

    setting = judge_cache_setting(value)
    if setting is None:
        return None
    if setting == "shared":
        return cache_root() / "judge"
    if setting == "run":
        return run_cache()
    return Path(setting).expanduser()


def _parameters(target: str) -> set[str]:
    try:
        return set(inspect.signature(resolve_target(target)).parameters)
    except Exception:  # an unimportable target fails later, at instantiation, in one line
        return set()


@dataclass
class JudgeRecord:
    """What a run records of its judge (``judge`` in the manifest and results.json)."""

    identity: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    templates: dict[str, dict[str, str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    conversation_format: str | None = None
    cache: dict[str, Any] | None = None
    store: Any = None
    model: Any = None

    def finish(self, judging: Judging, metrics: dict[str, list[Metric]]) -> None:
        self.counts = dict(judging.counts)
        self.conversation_format = judging.conversation_format
        if self.model is not None and hasattr(self.model, "stats") and self.cache is not None:
            self.cache.update(self.model.stats())

    def manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "identity": self.identity,
            "settings": self.settings,
            "templates": self.templates,
            "conversation_format": self.conversation_format,
            "judgments": self.counts,
        }
        if self.cache is not None:
            out["cache"] = self.cache
        return out

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None


def template_hashes(metrics: dict[str, list[Metric]]) -> dict[str, dict[str, str]]:
    """Judged metric -> rubric role -> sha256 of its template."""
    return {
        m.name: m.template_hashes()  # type: ignore[attr-defined]
        for ms in metrics.values()
        for m in ms
        if is_judged(m)
    }


def build_judging(
    cfg: DictConfig,
    allow: list[str],
    dist: Dist,
    cache_dir: Callable[[], Path | None],
    release_candidate: Callable[[], None],
    metrics: dict[str, list[Metric]],
    on_loaded: Callable[[], None] = lambda: None,
    console: Any = None,
) -> tuple[Judging, JudgeRecord]:
    """The run's :class:`Judging` (its ``load`` releases the candidate, builds the judge
    behind its own response cache) and the record the manifest keeps of it."""
    from mill.runner.cache import CachedModel, open_store

    body, settings = judge_settings(cfg.judge)
    record = JudgeRecord(
        settings={
            "max_invalid": settings.get("max_invalid", 0.1),
            "num_concurrent": settings.get("num_concurrent", 1),
            "generation": {**settings["generation"].__dict__, "until": []},
            "revision": settings.get("revision"),
            "cache": judge_cache_setting(settings.get("cache", "shared")) or False,
        },
        templates=template_hashes(metrics),
    )

    def load() -> Any:
        release_candidate()
        if console is not None:
            console.print(f"[mill] loading judge {body.get('name', '')}")
        log.info("loading judge %s", body.get("name", ""))
        model = agree(dist, lambda: instantiate(OmegaConf.create(body), allow))
        identity = dict(model.identity())
        if settings.get("revision") is not None:
            identity["judge_revision"] = settings["revision"]
        record.identity = identity
        folder = judge_cache_folder(settings.get("cache", "shared"), cache_dir)
        if console is not None:
            console.print(f"[mill] judge: {judge_label(identity)}")
        if folder is not None and not identity.get("in_memory"):
            folder.mkdir(parents=True, exist_ok=True)
            store = None
            for turn in (True, False):  # rank 0 creates the database, then the others
                opened = agree(
                    dist,
                    lambda t=turn: open_store(folder, identity) if dist.is_main is t else None,
                )
                store = opened or store
            record.store = store
            record.cache = {"dir": str(folder), "entries_before": store.count()}
            model = CachedModel(model, store)
        record.model = model
        on_loaded()
        return model

    judging = Judging(
        load=load,
        max_invalid=float(settings.get("max_invalid", 0.1)),
        generation=settings["generation"],
    )
    return judging, record


def fastchat_judgments(
    samples: list[dict[str, Any]], metrics: list[Metric], model: str, judge: str
) -> dict[str, list[dict[str, Any]]]:
    """A task's judgments in FastChat's ``model_judgment`` JSON-lines format (what its
    ``show_result.py`` reads), per judged metric: single grades as ``gen_judgment.py``'s
    ``play_a_match_single`` writes them (``score`` -1 for an invalid judgment), pairwise
    verdicts as ``play_a_match_pair`` writes them (``g1_winner`` with the candidate as
    model_1 first, ``g2_winner`` after the swap; ``error`` for an invalid one)."""
    from mill.metrics.judge import PairwiseWinRate

    out: dict[str, list[dict[str, Any]]] = {}
    winner = {"A": "model_1", "B": "model_2", "C": "tie", None: "error"}
    swapped = {"A": "model_2", "B": "model_1", "C": "tie", None: "error"}
    for metric in metrics:
        if not is_judged(metric):
            continue
        lines = out.setdefault(metric.name, [])
        for sample in sorted(samples, key=lambda s: s["doc_id"]):
            extra = sample.get("extra") or {}
            qid = extra.get("id", sample["doc_id"])
            qid = int(qid) if str(qid).isdigit() else qid
            records = (extra.get("judgments") or {}).get(metric.name) or []
            if isinstance(metric, PairwiseWinRate):
                for first, second in zip(records[0::2], records[1::2], strict=True):
                    lines.append(
                        {
                            "question_id": qid,
                            "model_1": model,
                            "model_2": "baseline",
                            "g1_winner": winner[first["judgment"]],
                            "g2_winner": swapped[second["judgment"]],
                            "judge": [judge, first["template"]],
                            "g1_judgment": first["reply"],
                            "g2_judgment": second["reply"],
                            "turn": int(first["key"].split("/")[0][1:]),
                        }
                    )
                continue
            for record in records:
                grade = record["judgment"]
                lines.append(
                    {
                        "question_id": qid,
                        "model": model,
                        "judge": [judge, record["template"]],
                        "judgment": record["reply"],
                        "score": -1 if grade is None else grade,
                        "turn": int(record["key"][1:]),
                    }
                )
    return out


def write_fastchat_judgments(
    folder: Any, tasks: list[Any], metrics: dict[str, list[Metric]], model: str, judge: str
) -> None:
    """``model_judgment/<task>_<metric>.jsonl`` beside the samples, from the samples."""
    import json

    for task in tasks:
        path = folder.path / "samples" / f"{task.name}.jsonl"
        if not path.is_file() or not any(is_judged(m) for m in metrics[task.name]):
            continue
        samples = [json.loads(line) for line in path.read_text().splitlines() if line]
        by_metric = fastchat_judgments(samples, metrics[task.name], model, judge)
        (folder.path / "model_judgment").mkdir(exist_ok=True)
        for name, lines in by_metric.items():
            text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
            folder.write_text(f"model_judgment/{task.name}_{name}.jsonl", text)
