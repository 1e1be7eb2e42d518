"""``mill judge run=<finished run> judge=<judge>``: a finished run's saved answers judged
again into a new experiment folder, through the same job as a run (no candidate model
loads: :class:`mill.model.saved.SavedAnswers` answers from the run's samples)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from omegaconf import DictConfig, OmegaConf

from mill.errors import ConfigError
from mill.schema import typed_command

if TYPE_CHECKING:
    from mill.report.load import RunFolder


class OpenRun(Protocol):
    """Opens a finished run, verified: :meth:`mill.report.load.RunFolder.open`, which the
    CLI hands in (the report layer reads run folders; judging lies below it)."""

    def __call__(self, path: str, *, trust_edited: bool) -> RunFolder: ...


SAVED_ANSWERS = "mill.model.saved.SavedAnswers"
"""The model of a ``mill judge`` run: the source run's saved answers."""


def rejudge_config(
    run: str, judge: DictConfig, open_run: OpenRun, trust_edited: bool = False
) -> dict[str, Any]:
    """The config that judges the finished run in ``run`` with ``judge``: the run's own
    resolved config, its model replaced by the run's saved answers
    (:class:`mill.model.saved.SavedAnswers`), its judge by ``judge``. One line
    (``open_run``'s, or ConfigError) for a folder that is not a finished run or whose
    answers are missing, or one edited since it was written unless ``trust_edited`` (the
    ``trust_edited=true`` its message advises)."""
    source = open_run(run, trust_edited=trust_edited)
    if not source.config:
        raise ConfigError(f"{run} has no resolved.yaml; judge a run Mill wrote")
    missing = [
        t for t in source.task_names if not (source.path / "samples" / f"{t}.jsonl").is_file()
    ]
    if missing:
        raise ConfigError(
            f"{run}: the answers of {', '.join(missing)} are missing (no samples/"
            f"{missing[0]}.jsonl); judge a finished run with its samples"
        )
    resolved = {k: v for k, v in source.config.items() if k != "hydra"}
    model = dict(resolved.get("model") or {})
    resolved["model"] = {
        "_target_": SAVED_ANSWERS,
        "run": str(source.path.resolve()),
        "name": str(model.get("name") or "saved"),
        "model": source.results.model,
    }
    resolved["judge"] = OmegaConf.to_container(judge, resolve=True)
    resolved.setdefault("runner", {})["num_processes"] = 1
    return resolved


def judge_job(cfg: DictConfig, open_run: OpenRun) -> DictConfig:
    """The job ``mill judge run=<finished run> judge=<judge>`` runs (the CLI hands it to
    :func:`mill.runner.job.run_job`): the run's answers (the run opened by ``open_run``),
    this judge, this command's own report and runner settings."""
    run = None if OmegaConf.is_missing(cfg, "run") else cfg.get("run")
    if run is not None:  # a path: a number there is refused, naming `run`
        run = typed_command("judge", {"run": run})["run"]
    if not run:
        raise ConfigError(
            "mill judge needs the finished run: mill judge run=<run dir> judge=<judge>"
        )
    if cfg.get("judge") is None:
        raise ConfigError(f"mill judge needs a judge: mill judge run={run} judge=<judge>")
    trust = typed_command("judge", {"trust_edited": cfg.get("trust_edited", False)})
    resolved = rejudge_config(str(run), cfg.judge, open_run, trust["trust_edited"])
    for key in ("report", "runner"):  # this command's own report and runner settings win
        if cfg.get(key) is not None:
            ours = OmegaConf.to_container(cfg[key], resolve=True)
            assert isinstance(ours, dict)  # a config group is a mapping
            resolved[key] = {**resolved.get(key, {}), **ours}
    resolved["runner"]["num_processes"] = 1
    return OmegaConf.create(resolved)
